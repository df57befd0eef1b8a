"""Graded exercises: registry of checks, and loading a learner's work.

Layout (see CONVENTIONS.md, "Exercises"):

- ``solutions/exNN_topic.py`` is the single source. Each solution region is fenced::

      def binary_op_table():
          ### BEGIN SOLUTION 1.1: map each BINARY_OP name to a Python operator
          ...
          ### END SOLUTION

- ``exercises/exNN_topic.py`` is generated from it (``bash course.sh python -m minicompile.grading.generate``):
  each region becomes ``raise NotImplementedError("Exercise 1.1: ... (roughly N lines)")``, and
  ``stubs.sha256`` records every pristine stub (a learner's edited file is never overwritten).
- ``minicompile/grading/checks/exNN_topic.py`` holds the checks, one per exercise::

      @exercise("1.1", points=10, hints=("a nudge", "more", "more still, never the answer"))
      def check_binary_op_table(sol):        # sol: the learner's module
          ...                                # assert against eager PyTorch / real Python

- ``bash course.sh grade`` runs every check against ``exercises/`` (``--solutions`` for
  the reference solutions) and prints a table of exercises, points and the total.
"""

from __future__ import annotations

import importlib.util
import os
import pkgutil
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class Exercise:
    id: str  # "1.1": notebook number . exercise number
    module: str  # "ex01_bytecode": the file in exercises/ and solutions/
    points: int
    hints: tuple[str, ...]  # in tiers: a nudge first, each one says more, none the solution
    check: Callable[[ModuleType], None]

    @property
    def title(self) -> str:
        doc = (self.check.__doc__ or self.check.__name__).strip()
        return doc.splitlines()[0]

    @property
    def sort_key(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.id.split("."))


EXERCISES: dict[str, Exercise] = {}


def exercise(id: str, points: int, hints: str | tuple[str, ...]) -> Callable:
    """Register ``check(sol)`` as the grader of exercise ``id`` (its docstring is the title);
    ``hints`` is one hint or tiers of them (``minicompile.grade.hint(id, level)``)."""

    def register(check: Callable[[ModuleType], None]) -> Callable[[ModuleType], None]:
        module = check.__module__.rsplit(".", 1)[-1]
        tiers = (hints,) if isinstance(hints, str) else tuple(hints)
        EXERCISES[id] = Exercise(id, module, points, tiers, check)
        return check

    return register


def load_checks() -> list[Exercise]:
    """Import every checks module, which registers its exercises."""
    from . import checks  # here: every checks module imports this package (exercise)

    for info in pkgutil.iter_modules(checks.__path__):
        importlib.import_module(f"{checks.__name__}.{info.name}")
    return sorted(EXERCISES.values(), key=lambda e: e.sort_key)


def load_learner_module(module: str, folder: str) -> ModuleType:
    """Import ``<folder>/<module>.py`` fresh, under a private name (no sys.path changes)."""
    path = os.path.join(folder, f"{module}.py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist")
    name = f"_learner_{os.path.basename(os.path.normpath(folder))}_{module}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(mod)
    return mod
