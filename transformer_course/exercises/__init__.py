"""Automatic checks for the book's coding exercises: `check_*` functions give specific, kind feedback.

Each chapter's checks live in their own module; `ExerciseError` is raised when an answer is not right yet.
"""
from ._feedback import ExerciseError

__all__ = ["ExerciseError"]
