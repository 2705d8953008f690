"""Every chapter's checks are importable from `transformer_course.exercises`, as its docstring promises."""
import importlib
import pkgutil

import transformer_course.exercises as exercises


def test_every_check_of_every_chapter_module_is_re_exported():
    missing = []
    for module in pkgutil.iter_modules(exercises.__path__):
        if module.name.startswith("_"):
            continue
        chapter = importlib.import_module(f"transformer_course.exercises.{module.name}")
        for name in getattr(chapter, "__all__", []):
            if name.startswith("check_") and (name not in exercises.__all__ or not hasattr(exercises, name)):
                missing.append(f"{module.name}.{name}")
    assert not missing, f"add to transformer_course/exercises/__init__.py (import and __all__): {missing}"
