"""The twin contract: `transformer_course.numpy` and `transformer_course.torch` pair up module by module, name by
name, argument by argument, except where `transformer_course.twins` lists a difference and its reason.

The packages are read as source (ast), not imported, so a divergence is found wherever it hides; each test
collects every problem it sees and fails with the whole list.
"""
from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from transformer_course import twins

PACKAGE = Path(__file__).resolve().parents[1] / "transformer_course"
REPOSITORY = PACKAGE.parent


def _modules(side: str) -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text(encoding="utf-8"))
            for path in sorted((PACKAGE / side).glob("*.py")) if path.stem != "__init__"}


NUMPY, TORCH = _modules("numpy"), _modules("torch")


def _matches(name: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _key(name: str) -> str:
    """The name both twins share: MultiHeadAttention, multi_head_attention(_forward) -> multiheadattention."""
    return name.removesuffix("_forward").replace("_", "").lower()


def _arguments(node: ast.FunctionDef) -> list[str]:
    a = node.args
    names = [arg.arg for arg in (*a.posonlyargs, *a.args)]
    if a.vararg is not None:
        names.append("*" + a.vararg.arg)
    return names + [arg.arg for arg in a.kwonlyargs]


def _constants(node: ast.AST) -> set:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant)}


@dataclass
class Twin:
    """One public function or method of one side, under the name it shares with its twin."""

    key: str
    where: str                                           # e.g. "attention.MultiHeadAttention.forward"
    node: ast.FunctionDef
    constructor: list[str] = field(default_factory=list)  # the arguments of the class it belongs to (torch)


def _public(node) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")


def numpy_twins(module: str, tree: ast.Module) -> list[Twin]:
    return [Twin(_key(node.name), f"{module}.{node.name}", node) for node in tree.body
            if _public(node) and isinstance(node, ast.FunctionDef)
            and not _matches(node.name, twins.BY_NATURE["names"])]


def torch_twins(module: str, tree: ast.Module) -> list[Twin]:
    found = []
    for node in tree.body:
        if not _public(node):
            continue
        if isinstance(node, ast.FunctionDef):
            found.append(Twin(_key(node.name), f"{module}.{node.name}", node))
            continue
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        constructor = _arguments(init) if init is not None else []
        for method in node.body:
            if not isinstance(method, ast.FunctionDef) or method.name.startswith("_") \
                    or _matches(method.name, twins.BY_NATURE["names"]):
                continue
            key = _key(node.name) if method.name == "forward" else _key(method.name)
            found.append(Twin(key, f"{module}.{node.name}.{method.name}", method, constructor))
        if not any(t.where.startswith(f"{module}.{node.name}.") for t in found):
            found.append(Twin(_key(node.name), f"{module}.{node.name}", init or node))
    return found


def _listed(twin: Twin, listed) -> bool:
    """Listed one-sided: the name itself, or the class it belongs to."""
    return any(twin.where == name or twin.where.startswith(name + ".") for name in listed)


def _pair_name(module: str, numpy_twin: Twin) -> str:
    """How twins.py names a pair: the NumPy function without `_forward`, e.g. "attention.multi_head_attention"."""
    return f"{module}.{numpy_twin.node.name.removesuffix('_forward')}"


def _pairs():
    """[(module, numpy Twin, torch Twin)] and the problems met on the way (names that do not pair)."""
    pairs, problems = [], []
    for module in sorted(set(NUMPY) & set(TORCH)):
        ours = [t for t in numpy_twins(module, NUMPY[module]) if not _listed(t, twins.NUMPY_ONLY_NAMES)]
        theirs = [t for t in torch_twins(module, TORCH[module]) if not _listed(t, twins.TORCH_ONLY_NAMES)]
        if [t.key for t in ours] != [t.key for t in theirs]:
            problems.append(f"{module}: public names differ (twin keys in order of definition)\n"
                            f"    numpy: {[t.where for t in ours]}\n    torch: {[t.where for t in theirs]}")
            continue
        pairs.extend((module, a, b) for a, b in zip(ours, theirs))
    return pairs, problems


def _compared_arguments(numpy_twin: Twin, torch_twin: Twin) -> tuple[list[str], list[str]]:
    """Both argument lists, less what one side takes by nature and the other does not (an argument both take,
    such as `training` of a function, is compared) and the NumPy arguments the PyTorch module holds."""
    ours, theirs = _arguments(numpy_twin.node), _arguments(torch_twin.node)
    ours_compared = [name for name in ours if name not in torch_twin.constructor
                     and (name in theirs or not _matches(name, twins.BY_NATURE["numpy_arguments"]))]
    theirs_compared = [name for name in theirs
                       if name in ours or not _matches(name, twins.BY_NATURE["torch_arguments"])]
    return ours_compared, theirs_compared


def _hyper_parameters(numpy_twin: Twin, torch_twin: Twin) -> tuple[list[str], list[str]]:
    """The arguments a PyTorch module takes in its constructor and its NumPy twin in its call, in each one's
    order (a module's own extras, such as its sizes, are not compared)."""
    ours = [name for name in _arguments(numpy_twin.node) if name in torch_twin.constructor]
    theirs = [name for name in torch_twin.constructor if name in ours]
    return ours, theirs


def _signature(node: ast.FunctionDef) -> dict[str, tuple[str | None, str | None]]:
    """{argument: (its default as source, its annotation with the library taken out)}."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    pairs = [*zip(positional, defaults), *zip(a.kwonlyargs, a.kw_defaults)]
    return {arg.arg: (None if default is None else _library_out(ast.unparse(default)),
                      None if arg.annotation is None else _type(arg.annotation)) for arg, default in pairs}


# ---------------------------------------------------------------- returns

def _type(node) -> str:
    """An annotation with the library taken out: np.ndarray and torch.Tensor are both "Array", NumPy's
    DTypeLike and torch.dtype both "DType"."""
    text = re.sub(r"\b(np\.ndarray|torch\.Tensor)\b", "Array", ast.unparse(node))
    return re.sub(r"\b(DTypeLike|torch\.dtype)\b", "DType", text)


def _library_out(default: str) -> str:
    """A default with the library taken out: np.float32 and torch.float32 are one default."""
    return re.sub(r"\b(np|torch)\.(float16|float32|float64|bfloat16|int64)\b", r"\2", default)


def _elements(node) -> list[str]:
    """A return annotation as the list of values returned; `X | tuple[X, W]` (a value, or the value and the
    attention weights on request) counts as (X, W)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and isinstance(node.right, ast.Subscript) \
            and ast.unparse(node.right.value) == "tuple":
        return _elements(node.right)
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "tuple":
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [_type(item) for item in items]
    return [_type(node)]


def _is_layer(twin: Twin, module: str) -> bool:
    """A NumPy function that returns (out, cache): it has a backward partner and is not a softmax."""
    name = twin.node.name.removesuffix("_forward")
    has_backward = any(isinstance(n, ast.FunctionDef) and n.name == f"{name}_backward" for n in NUMPY[module].body)
    return has_backward and name not in twins.OUTPUT_IS_CACHE


def _cache_holds_weights(node: ast.FunctionDef) -> bool:
    """The function builds a dict with the key "weights" (its cache), e.g. `cache = {"weights": w, ...}` or
    `dict(weights=w)`; the word in a message or a docstring does not count."""
    for child in ast.walk(node):
        if isinstance(child, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "weights"
                                               for k in child.keys):
            return True
        if isinstance(child, ast.Call) and getattr(child.func, "id", None) == "dict" \
                and any(k.arg == "weights" for k in child.keywords):
            return True
    return False


def _returns_match(module: str, numpy_twin: Twin, torch_twin: Twin) -> tuple[bool, str]:
    if numpy_twin.node.returns is None or torch_twin.node.returns is None:
        return False, "a return annotation is missing"
    ours, theirs = _elements(numpy_twin.node.returns), _elements(torch_twin.node.returns)
    if _is_layer(numpy_twin, module):
        ours = ours[:-1]                                 # the cache
        weights_in_cache = _cache_holds_weights(numpy_twin.node)
        if theirs[:-1] == ours and weights_in_cache:
            return True, ""
    return ours == theirs, f"numpy returns {ours} (besides a cache), torch {theirs}"


# ---------------------------------------------------------------- the contract

def test_the_same_modules_on_both_sides_except_the_listed_ones():
    problems = []
    for side, modules, other, listed in (("numpy", NUMPY, TORCH, twins.NUMPY_ONLY_MODULES),
                                         ("torch", TORCH, NUMPY, twins.TORCH_ONLY_MODULES)):
        one_sided = set(modules) - set(other)
        if one_sided != set(listed):
            problems.append(f"{side}: one-sided modules {sorted(one_sided)}, listed {sorted(listed)}")
    assert not problems, "\n".join(problems)


def test_public_names_pair_up_in_the_same_order():
    _, problems = _pairs()
    for side, finder, modules, listed in (("numpy", numpy_twins, NUMPY, twins.NUMPY_ONLY_NAMES),
                                          ("torch", torch_twins, TORCH, twins.TORCH_ONLY_NAMES)):
        known = [t for module, tree in modules.items() for t in finder(module, tree)]
        problems += [f"twins.{side.upper()}_ONLY_NAMES lists {name!r}, which {side} does not define"
                     for name in listed if not any(_listed(t, [name]) for t in known)]
    assert not problems, "\n".join(problems)


def test_twins_take_the_same_arguments_in_the_same_order():
    pairs, _ = _pairs()
    problems = []
    listed = dict(twins.ARGUMENT_DIFFERENCES)
    for module, numpy_twin, torch_twin in pairs:
        ours, theirs = _compared_arguments(numpy_twin, torch_twin)
        pair = _pair_name(module, numpy_twin)
        difference, _reason = listed.pop(pair, ({"numpy": [], "torch": []}, ""))
        for side, names, own in (("numpy", ours, difference["numpy"]), ("torch", theirs, difference["torch"])):
            problems += [f"twins.ARGUMENT_DIFFERENCES: {pair} lists {side} argument {n!r}, which it does not take"
                         for n in own if n not in names]
        ours = [n for n in ours if n not in difference["numpy"]]
        theirs = [n for n in theirs if n not in difference["torch"]]
        if ours != theirs:
            problems.append(f"{numpy_twin.where} {ours} != {torch_twin.where} {theirs}")
        ours, theirs = _hyper_parameters(numpy_twin, torch_twin)
        if ours != theirs:
            problems.append(f"{numpy_twin.where} takes the hyper-parameters {ours}, the constructor of "
                            f"{torch_twin.where.rsplit('.', 1)[0]} {theirs}")
    problems += [f"twins.ARGUMENT_DIFFERENCES lists {pair!r}, which is not a pair of twins" for pair in listed]
    assert not problems, "\n".join(problems)


def test_twins_give_each_argument_the_same_default_and_type():
    """Every argument both twins take (a module's hyper-parameters from its constructor) has the same default
    and the same annotation, np.ndarray and torch.Tensor counting as one."""
    pairs, _ = _pairs()
    problems = []
    listed = set(twins.TYPE_DIFFERENCES)
    for _module, numpy_twin, torch_twin in pairs:
        pair = _pair_name(_module, numpy_twin)
        ours = _signature(numpy_twin.node)
        theirs = _signature(torch_twin.node)
        if torch_twin.constructor:
            init = next(n for n in ast.walk(TORCH[_module]) if isinstance(n, ast.FunctionDef)
                        and n.name == "__init__" and _arguments(n) == torch_twin.constructor)
            theirs = {**_signature(init), **theirs}
        for name in sorted(set(ours) & set(theirs) - {"self"}):
            if name == "self":
                continue
            if ours[name][0] != theirs[name][0]:
                problems.append(f"{numpy_twin.where}({name}=...): default {ours[name][0]} != "
                                f"{torch_twin.where}({name}=...): default {theirs[name][0]}")
            if ours[name][1] != theirs[name][1] and pair not in twins.TYPE_DIFFERENCES:
                problems.append(f"{numpy_twin.where}({name}): type {ours[name][1]} != "
                                f"{torch_twin.where}({name}): type {theirs[name][1]}")
            elif ours[name][1] != theirs[name][1]:
                listed.discard(pair)
    problems += [f"twins.TYPE_DIFFERENCES lists {pair!r}, whose twins annotate every argument alike"
                 for pair in listed]
    assert not problems, "\n".join(problems)


def test_twins_return_the_same_values():
    pairs, _ = _pairs()
    problems = []
    listed = set(twins.RETURN_DIFFERENCES)
    for module, numpy_twin, torch_twin in pairs:
        same, why = _returns_match(module, numpy_twin, torch_twin)
        pair = _pair_name(module, numpy_twin)
        if pair in listed:
            listed.discard(pair)
            if same:
                problems.append(f"twins.RETURN_DIFFERENCES lists {pair!r}, whose twins return the same values")
        elif not same:
            problems.append(f"{numpy_twin.where} / {torch_twin.where}: {why}")
    problems += [f"twins.RETURN_DIFFERENCES lists {pair!r}, which is not a pair of twins" for pair in listed]
    assert not problems, "\n".join(problems)


def test_all_lists_exactly_the_public_names_of_every_module():
    problems = []
    for side, modules in (("numpy", NUMPY), ("torch", TORCH)):
        for module, tree in modules.items():
            public = [n.name for n in tree.body if _public(n)] + [
                target.id for n in tree.body if isinstance(n, ast.Assign) for target in n.targets
                if isinstance(target, ast.Name) and re.fullmatch(r"[A-Z][A-Z0-9_]*", target.id)]
            declared = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                             and any(getattr(t, "id", None) == "__all__" for t in n.targets)), None)
            if declared is not None and set(declared) != set(public):
                problems.append(f"{side}.{module}: __all__ {sorted(declared)} != defined {sorted(public)}")
    assert not problems, "\n".join(problems)


def _compared_numerically() -> dict[str, list[str]]:
    """{pair: [tests]} from the `@pytest.mark.twins(...)` marks of tests/test_parity/ (whose conftest fails a test
    that does not run both twins of each pair its mark names)."""
    compared: dict[str, list[str]] = {}
    for path in sorted((REPOSITORY / "tests" / "test_parity").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            # a mark on the test, or on one of its parameters (pytest.param(..., marks=pytest.mark.twins(...)))
            for decorator in node.decorator_list:
                for call in ast.walk(decorator):
                    if isinstance(call, ast.Call) and ast.unparse(call.func) == "pytest.mark.twins":
                        for arg in call.args:
                            compared.setdefault(ast.literal_eval(arg), []).append(f"{path.name}::{node.name}")
    return compared


def test_every_pair_of_twins_is_compared_numerically():
    """Names and signatures say nothing of what a function computes: every pair must also be run on both sides
    on the same input (float64, converted weights) and agree, outputs and gradients, in tests/test_parity/."""
    pairs, _ = _pairs()
    names = {_pair_name(module, numpy_twin) for module, numpy_twin, _ in pairs}
    compared = _compared_numerically()
    problems = [f"{pair}: no test in tests/test_parity/ compares the twins (mark it @pytest.mark.twins)"
                for pair in sorted(names - set(compared))]
    problems += [f"{', '.join(tests)} marks {pair!r}, which is not a pair of twins"
                 for pair, tests in sorted(compared.items()) if pair not in names]
    assert not problems, "\n".join(problems)


def test_the_listed_intended_duplicates_exist():
    missing = [path for path in twins.INTENDED_DUPLICATES if not (REPOSITORY / path).exists()]
    assert not missing, f"twins.INTENDED_DUPLICATES names paths that do not exist: {missing}"


# ---------------------------------------------------------------- the NumPy convention

def test_every_numpy_backward_has_its_forward_and_takes_dout_and_cache():
    problems = []
    for module, tree in NUMPY.items():
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
        for name, node in functions.items():
            if not name.endswith("_backward"):
                continue
            stem = name.removesuffix("_backward")
            args = _arguments(node)
            if f"{stem}_forward" in functions:
                if len(args) != 2 or not args[0].startswith("d") or args[1] != "cache":
                    problems.append(f"numpy.{module}.{name}{tuple(args)}: expected (d<out>, cache)")
                returns = functions[f"{stem}_forward"].returns
                if returns is None or not _elements(returns) or len(_elements(returns)) < 2:
                    problems.append(f"numpy.{module}.{stem}_forward: expected a return annotation (out, cache)")
            elif stem in functions and stem in twins.OUTPUT_IS_CACHE:
                if len(args) < 2 or not args[0].startswith("d"):
                    problems.append(f"numpy.{module}.{name}{tuple(args)}: expected (d<out>, <output>, ...)")
            else:
                problems.append(f"numpy.{module}.{name}: no {stem}_forward beside it")
    assert not problems, "\n".join(problems)


def _weight(node) -> bool:
    """W_q, U_a, params["W_o"], W.T: a learned matrix."""
    if isinstance(node, ast.Attribute) and node.attr == "T":
        node = node.value
    if isinstance(node, ast.Name):
        return re.fullmatch(r"[WU](_\w+)?", node.id) is not None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return re.fullmatch(r"[WU]_\w+", str(node.slice.value)) is not None
    return False


def test_numpy_projections_go_through_linear_forward_and_linear_backward():
    """Only functional.py multiplies by a weight matrix: every other module calls linear_forward /
    linear_backward, so the linear backward is written once."""
    problems = []
    for module, tree in NUMPY.items():
        if module == "functional":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) \
                    and (_weight(node.left) or _weight(node.right)):
                problems.append(f"numpy/{module}.py:{node.lineno}: {ast.unparse(node)}")
    assert not problems, "hand-written linear maps:\n" + "\n".join(problems)


def test_the_contract_test_sees_both_packages():
    """Guards the guard: the parser finds the modules on both sides and most names pair up, so an empty
    comparison can never pass for a kept contract."""
    pairs, _ = _pairs()
    assert len(NUMPY) >= 13 and len(TORCH) >= 13 and len(pairs) >= 35


# ---------------------------------------------------------------- show_diff on the twins

def test_show_diff_puts_each_step_of_the_twins_on_one_row():
    pytest.importorskip("torch")
    from transformer_course.display import show_diff
    from transformer_course.numpy.attention import multi_head_attention_forward
    from transformer_course.torch.attention import MultiHeadAttention

    view = show_diff(multi_head_attention_forward, MultiHeadAttention.forward)
    text = repr(view)
    assert text.splitlines()[:2] == [f"--- {view.left.location}", f"+++ {view.right.location}"]
    assert "+ def forward(self, x_q: torch.Tensor" in text            # the method at a function's indentation
    assert '"""' not in text                                           # docstrings left out by default
    shared = [a for a, b in view.rows if a is not None and b is not None and a.split() == b.split()]
    assert "B, Tq, D = x_q.shape" in [line.strip() for line in shared]
    merged = [b.strip() for a, b in view.rows if a is not None and b is not None
              and a.strip().startswith("merged = heads.transpose(0, 2, 1, 3).reshape(B, Tq, D)")]
    assert len(merged) == 1 and merged[0].startswith("merged = heads.transpose(1, 2).reshape(B, Tq, D)")
    html = view._repr_html_()
    assert html.count("<tr") == len(view.rows) + 1 and "background:#ffd54f" in html  # words that differ marked
    assert '"""' in repr(show_diff(multi_head_attention_forward, MultiHeadAttention.forward, docstrings=True))
