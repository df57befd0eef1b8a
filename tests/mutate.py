"""Mutation testing: plant curated one-line bugs and check the tests catch each one.

    python -m tests.mutate                 # every mutant in tests/mutation/mutants.py
    python -m tests.mutate -k guard -j 2   # those whose name contains "guard", 2 at a time
    python -m tests.mutate --list          # show the mutants, apply nothing
    python -m tests.mutate --baseline      # first check the targeted tests pass unmutated

Each mutant is applied to a *copy* of the repository in a temporary folder (the working tree is
never touched), then its targeted tests run there with ``PYTHONPATH`` pointing at the copy. A
failing run kills the mutant; a passing run means the tests have a blind spot. A snippet that is
not found exactly once is reported as such and counts as a failure of this script, never as a
silent pass. Exit status: 0 when every non-equivalent mutant was killed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.mutation.mutants import MUTANTS, Mutant

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("minicompile", "tests", "pyproject.toml")  # what the tests need of the repository
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")


def apply(mutant: Mutant, root: Path) -> str | None:
    """Plant ``mutant`` in the copy at ``root``; the reason when it cannot be planted."""
    path = root / mutant.file
    if not path.exists():
        return f"file not found: {mutant.file}"
    source = path.read_text()
    count = source.count(mutant.original)
    if count != 1:
        what = "snippet not found" if count == 0 else f"snippet found {count} times"
        return f"{what} in {mutant.file}: {mutant.original!r}"
    path.write_text(source.replace(mutant.original, mutant.replacement))
    return None


def copy_repo(dest: Path) -> None:
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=IGNORE)
        else:
            shutil.copy2(src, dest / name)


def run_tests(root: Path, tests: tuple[str, ...], timeout: float) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "-o", "addopts=", *tests]
    try:
        done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timed out"
    return done.returncode, done.stdout + done.stderr


def first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED", "ERROR")):
            return line[:150]
    return output.strip().splitlines()[-1][:150] if output.strip() else ""


def run_mutant(mutant: Mutant, timeout: float, baseline: bool) -> tuple[str, str, float]:
    """("killed" | "survived" | "error", detail, seconds)."""
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="mc-mutant-") as tmp:
        root = Path(tmp)
        copy_repo(root)
        if baseline:
            rc, out = run_tests(root, mutant.tests, timeout)
            if rc != 0:
                return "error", f"targeted tests fail WITHOUT the mutant: {first_failure(out)}", \
                    time.time() - start
        problem = apply(mutant, root)
        if problem is not None:
            return "error", problem, time.time() - start
        rc, out = run_tests(root, mutant.tests, timeout)
    elapsed = time.time() - start
    if rc == 0:
        return "survived", "every targeted test passed", elapsed
    if rc == 5:
        return "error", "no test collected (check the mutant's test selection)", elapsed
    return "killed", first_failure(out), elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only mutants whose name contains this")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="mutants run at once")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per test run")
    parser.add_argument("--baseline", action="store_true",
                        help="check that each mutant's tests pass before planting it")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args(argv)
    mutants = [m for m in MUTANTS if args.k in m.name]
    if args.list:
        for m in mutants:
            print(f"{m.name:50s} {m.file}\n    {m.why}")
        return 0
    print(f"{len(mutants)} mutants, tests run on a copy of {ROOT}", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [(m, pool.submit(run_mutant, m, args.timeout, args.baseline)) for m in mutants]
        results = []
        for m, f in futures:
            status, detail, secs = f.result()
            label = {"killed": "KILLED  ", "survived": "SURVIVED", "error": "ERROR   "}[status]
            note = "  (equivalent)" if m.equivalent else ""
            print(f"{label} {m.name}{note}  [{secs:.0f}s]\n         {detail}", flush=True)
            results.append((m, status))
    counted = [(m, s) for m, s in results if not m.equivalent]
    killed = sum(s == "killed" for _, s in counted)
    errors = [m.name for m, s in results if s == "error"]
    survivors = [m.name for m, s in counted if s == "survived"]
    equivalent = [m for m, _ in results if m.equivalent]
    print(f"\nkilled {killed}/{len(counted)}"
          + (f" ({len(equivalent)} equivalent, not counted)" if equivalent else ""))
    for m in equivalent:
        print(f"  equivalent: {m.name}: {m.equivalent}")
    if survivors:
        print(f"  survived: {', '.join(survivors)}")
    if errors:
        print(f"  could not be run: {', '.join(errors)}")
    return 0 if killed == len(counted) and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
