"""The grader: ``python -m minicompile.grade [--solutions] [-k 04]``.

Runs every registered check against the learner's ``exercises/`` folder (or the reference
``solutions/``), printing progress as it goes and then a table of exercises, points and the total.
An exercise scores its points when its check passes, and zero when the stub still raises
NotImplementedError, the check fails, or anything else goes wrong (the reason is shown).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from dataclasses import dataclass

from .grading import REPO_ROOT, Exercise, load_checks, load_learner_module


@dataclass
class Result:
    exercise: Exercise
    score: int
    status: str  # "pass", "todo" (stub untouched), "fail", "error"
    detail: str = ""
    seconds: float = 0.0


def grade_one(ex: Exercise, folder: str) -> Result:
    start = time.perf_counter()
    try:
        sol = load_learner_module(ex.module, folder)
        ex.check(sol)
        result = Result(ex, ex.points, "pass")
    except NotImplementedError as e:
        result = Result(ex, 0, "todo", str(e))
    except AssertionError as e:
        result = Result(ex, 0, "fail", str(e) or traceback.format_exc(limit=-1).strip())
    except Exception as e:  # a learner's bug must not stop the grader
        result = Result(ex, 0, "error", f"{type(e).__name__}: {e}")
    result.seconds = time.perf_counter() - start
    return result


def grade(folder: str, only: str | None = None, verbose: bool = True) -> list[Result]:
    exercises = [e for e in load_checks() if only is None or e.module.startswith(f"ex{only}")
                 or e.id.startswith(only) or only in e.module]
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
    notes = [f"{r.exercise.id} [{r.status}] {r.detail.splitlines()[0] if r.detail else ''}\n"
             f"    hint: {r.exercise.hint}" for r in results if r.status in ("fail", "error")]
    return "\n".join(lines + ([""] + notes if notes else []))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minicompile.grade", description=__doc__.split("\n")[0])
    p.add_argument("--solutions", action="store_true", help="grade the reference solutions/")
    p.add_argument("--dir", help="grade this folder instead of exercises/")
    p.add_argument("-k", dest="only", help="only exercises whose id or file matches, e.g. 04 or 1.2")
    p.add_argument("--expect", choices=["full", "zero"], help="exit 1 unless the score is this (CI)")
    args = p.parse_args(argv)
    folder = args.dir or os.path.join(REPO_ROOT, "solutions" if args.solutions else "exercises")
    results = grade(folder, args.only)
    print()
    print(format_table(results))
    total = sum(r.score for r in results)
    possible = sum(r.exercise.points for r in results)
    if args.expect == "full" and total != possible:
        return 1
    if args.expect == "zero" and total != 0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
