"""Moved to minicompile/course/artifacts.py (course tooling); re-exported for old imports."""

from .course.artifacts import Artifacts, compile_with_artifacts  # noqa: F401
