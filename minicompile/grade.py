"""The grader: ``bash course.sh grade [--solutions] [-k 04] [--hint 2.3] [--pipeline]``
(``python -m minicompile.grade`` run by the course's Python).

In a notebook, grade in-process (the same Python that runs the notebook, whatever ``python`` is
on PATH)::

    from minicompile.grade import grade, hint, pipeline
    grade("02")          # every exercise of notebook 02; grade("2.3") for one
    hint("2.3")          # a nudge; hint("2.3", 2) says more
    pipeline()           # the whole compiler with your solved pieces in it, on one model
    learner_pieces()     # your solved pieces, for plugged_in(pieces) (grading.pipeline)

Runs every registered check against the learner's ``exercises/`` folder (or the reference
``solutions/``), printing progress as it goes and then a table of exercises, points and the total.
An exercise scores its points when its check passes, and zero when the stub still raises
NotImplementedError, the check fails, or anything else goes wrong. A failure is shown whole: the
check's message with its numbers and inputs, or the learner's own exception and where in their
file it was raised.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
import traceback
from dataclasses import dataclass
from types import ModuleType
from typing import Iterator

import torch

from .grading import REPO_ROOT, Exercise, load_checks, load_learner_module
from .grading.pipeline import PLUGS, run_pipeline

CLI = "bash course.sh grade"  # the grader as a learner types it, from the course's folder


@dataclass
class Result:
    exercise: Exercise
    score: int
    status: str  # "pass", "todo" (stub untouched), "fail", "error"
    detail: str = ""
    seconds: float = 0.0


@contextlib.contextmanager
def compiler_warnings_off() -> Iterator[None]:
    """While a check runs, a stub or a wrong piece makes the compiler fall back to eager with a
    logged warning (``aot_autograd falls back to eager: NotImplementedError: Exercise 7.4``);
    the grade already says what went wrong (checks re-raise the learner's exception), so the
    warning would only repeat it, in the middle of a progress line. Errors still show."""
    logger = logging.getLogger("minicompile")
    saved = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(saved)


def grade_one(ex: Exercise, folder: str) -> Result:
    start = time.perf_counter()
    try:
        sol = load_learner_module(ex.module, folder)
        with compiler_warnings_off():
            ex.check(sol)
        result = Result(ex, ex.points, "pass")
    except NotImplementedError as e:
        result = Result(ex, 0, "todo", str(e))
    except AssertionError as e:
        result = Result(ex, 0, "fail", _failure(e, folder))
    except Exception as e:  # a learner's bug must not stop the grader
        result = Result(ex, 0, "error", _failure(e, folder))
    result.seconds = time.perf_counter() - start
    return result


def _failure(e: BaseException, folder: str) -> str:
    """The whole message, then where the learner's code raised it (and what it was caused by:
    the checks re-raise a learner's exception that the compiler turned into a fallback)."""
    lines = [f"{type(e).__name__}: {e}" if not isinstance(e, AssertionError) or not str(e)
             else str(e)]
    cause = e.__cause__
    if cause is not None and str(cause) not in lines[0]:
        lines.append(f"caused by {type(cause).__name__}: {cause}")
    where = _learner_frames(cause or e, folder)
    if where:
        lines.append("raised in your code at " + " <- ".join(where))
    elif not str(e):
        lines.append(traceback.format_exc(limit=-1).strip())
    return "\n".join(lines)


def _learner_frames(e: BaseException, folder: str) -> list[str]:
    """``file:line in function`` for each frame of the traceback inside ``folder``, innermost
    first."""
    folder = os.path.abspath(folder)
    frames = traceback.extract_tb(e.__traceback__)
    return [f"{_shown_path(f.filename)}:{f.lineno} in {f.name}"
            for f in reversed(frames) if os.path.abspath(f.filename).startswith(folder + os.sep)]


def _shown_path(path: str) -> str:
    """Relative to the course when inside it (exercises/ex01_bytecode.py), else absolute."""
    path = os.path.abspath(path)
    inside = path.startswith(REPO_ROOT + os.sep)
    return os.path.relpath(path, REPO_ROOT) if inside else path


def select(only: str | None) -> list[Exercise]:
    """The exercises ``only`` names: an id ("2.3"), a notebook ("02", "2") or a file name part
    ("guards"); all when None. Naming nothing is an error, not an empty (and passing) run."""
    exercises = load_checks()
    if only is None:
        return exercises
    chosen = [e for e in exercises
              if e.id == only or e.id.startswith(only.lstrip("0") + ".")
              or e.module.startswith(f"ex{only}") or only in e.module]
    if not chosen:
        ids = ", ".join(e.id for e in exercises)
        raise ValueError(f"no exercise matches {only!r}: name an exercise ({ids}), a notebook "
                         f"(01 to {max(e.module[2:4] for e in exercises)}) or a file "
                         f"(e.g. 'guards')")
    return chosen


def run_checks(folder: str, only: str | None = None, verbose: bool = True) -> list[Result]:
    exercises = select(only)
    results = []
    for i, ex in enumerate(exercises, 1):
        if verbose:
            print(f"[{i}/{len(exercises)}] {ex.id} {ex.title} ...", end=" ", flush=True)
        r = grade_one(ex, folder)
        results.append(r)
        if verbose:
            print(f"{r.status} ({r.seconds:.1f}s)", flush=True)
    return results


def format_table(results: list[Result]) -> str:
    rows = [("exercise", "title", "points", "status")]
    for r in results:
        rows.append((r.exercise.id, r.exercise.title[:56], f"{r.score}/{r.exercise.points}", r.status))
    total = sum(r.score for r in results)
    possible = sum(r.exercise.points for r in results)
    rows.append(("", "total", f"{total}/{possible}", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(len(lines) - 1, "  ".join("-" * w for w in widths))
    notes = [_note(r) for r in results if r.status in ("fail", "error")]
    return "\n".join(lines + ([""] + notes if notes else []))


def _note(r: Result) -> str:
    detail = "\n".join("    " + line for line in r.detail.splitlines())
    return (f"{r.exercise.id} [{r.status}]\n{detail}\n"
            f"    stuck? hint({r.exercise.id!r}) in a notebook, or "
            f"{CLI} --hint {r.exercise.id}")


def grade(only: str | None = None, *, solutions: bool = False, folder: str | None = None,
          verbose: bool = True) -> None:
    """Grade in-process and print the table: ``grade("02")``, ``grade("2.3")``, ``grade()``.

    Prints rather than returns, so that a notebook cell shows the table once; ``run_checks``
    returns the results."""
    folder = folder or os.path.join(REPO_ROOT, "solutions" if solutions else "exercises")
    results = run_checks(folder, only, verbose)
    print()
    print(format_table(results))


def pipeline(*, solutions: bool = False, folder: str | None = None, verbose: bool = True) -> bool:
    """Run the whole compiler with your pieces plugged in and print the report: each exercise
    of ``grading.pipeline.PLUGS`` whose check passes puts your function into its stage, then
    one model trains a step compiled end to end, against eager. True when it matches."""
    pieces, not_plugged = learner_pieces(solutions=solutions, folder=folder, verbose=verbose)
    report = run_pipeline(pieces, not_plugged)
    print(report.format())
    return not report.error


def learner_pieces(*, solutions: bool = False, folder: str | None = None, verbose: bool = True
                   ) -> tuple[dict[str, ModuleType], dict[str, str]]:
    """Grade the exercises whose pieces plug into the compiler. Returns ``(pieces, not_plugged)``:
    ``{exercise: your module}`` for each whose check passes, ``{exercise: why not}`` for the
    others. ``plugged_in(pieces)`` (``grading.pipeline``) then runs the compiler with them."""
    folder = folder or os.path.join(REPO_ROOT, "solutions" if solutions else "exercises")
    ids = {plug.exercise for plug in PLUGS}
    exercises = [e for e in load_checks() if e.id in ids]
    if verbose:
        print(f"grading the {len(exercises)} exercises whose pieces plug into the compiler")
    results = [grade_one(e, folder) for e in exercises]
    passed = {r.exercise.module for r in results if r.status == "pass"}
    modules = {name: load_learner_module(name, folder) for name in passed}
    pieces = {r.exercise.id: modules[r.exercise.module] for r in results if r.status == "pass"}
    reasons = {"todo": "not solved yet", "fail": "your check fails", "error": "your check fails"}
    return pieces, {r.exercise.id: reasons[r.status] for r in results if r.status != "pass"}


def hint(exercise_id: str, level: int = 1, *, cli: bool = False) -> None:
    """Print the hints of an exercise up to ``level`` (1: a nudge; each level says more); ``cli``:
    say how to get the next one on the command line rather than in a notebook."""
    ex = next((e for e in load_checks() if e.id == exercise_id), None)
    if ex is None:
        raise ValueError(f"no exercise {exercise_id!r}: hints are per exercise, e.g. '2.3'")
    tiers = ex.hints[:max(level, 1)]
    for i, text in enumerate(tiers, 1):
        print(f"{ex.id} hint {i}/{len(ex.hints)}: {text}")
    if len(tiers) < len(ex.hints):
        more = len(tiers) + 1
        print(f"(more: {CLI} --hint {ex.id} --level {more})" if cli
              else f"(more: hint({ex.id!r}, {more}))")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=CLI, description=__doc__.split("\n")[0])
    p.add_argument("--solutions", action="store_true", help="grade the reference solutions/")
    p.add_argument("--dir", help="grade this folder instead of exercises/")
    p.add_argument("-k", dest="only", help="only exercises whose id or file matches, e.g. 04 or 1.2")
    p.add_argument("--expect", choices=["full", "zero"], help="exit 1 unless the score is this (CI)")
    p.add_argument("--hint", metavar="ID", help="print a hint for exercise ID instead of grading")
    p.add_argument("--level", type=int, default=1, help="with --hint: how much to say (1, 2, ...)")
    p.add_argument("--pipeline", action="store_true",
                   help="compile one model end to end with every solved piece plugged in")
    args = p.parse_args(argv)
    try:
        if args.hint:
            hint(args.hint, args.level, cli=True)
            return 0
        if args.pipeline:
            return 0 if pipeline(solutions=args.solutions, folder=args.dir) else 1
        folder = args.dir or os.path.join(REPO_ROOT, "solutions" if args.solutions else "exercises")
        results = run_checks(folder, args.only)
    except ValueError as e:
        p.error(str(e))
    print()
    print(format_table(results))
    total = sum(r.score for r in results)
    possible = sum(r.exercise.points for r in results)
    if args.expect == "full" and total != possible:
        return 1
    if args.expect == "zero" and total != 0:
        return 1
    return 0


def _rerun_with_triton_interpreter() -> None:
    """Without a GPU, Triton kernels (a learner's and the compiler's) run on CPU tensors in
    Triton's interpreter, which is chosen when Triton and minicompile's runtime are imported:
    ``TRITON_INTERPRET=1`` must be set before Python starts, so the grader starts again with it
    (as ``bash course.sh lab`` and ``test`` do). A variable the learner set is kept."""
    import torch

    if os.environ.get("TRITON_INTERPRET") is None and not torch.cuda.is_available():
        env = {**os.environ, "TRITON_INTERPRET": "1"}
        os.execve(sys.executable, [sys.executable, "-m", "minicompile.grade", *sys.argv[1:]], env)


if __name__ == "__main__":
    _rerun_with_triton_interpreter()
    sys.exit(main())
