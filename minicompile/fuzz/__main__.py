"""``bash course.sh fuzz -n N --seed S [--backend B] [--device D]``: the long fuzz run.

Prints a progress bar, shrinks every failure to a pytest reproducer (``--out``, default
fuzz_failures/), ends with ``fuzz: N programs, M mismatches, C crashes, S signals, T timeouts`` and exits
non-zero on any of them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bash course.sh fuzz", description=__doc__)
    parser.add_argument("-n", type=int, default=100, help="how many programs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first program")
    parser.add_argument("--backend", action="append",
                        help="a backend to compile with (repeatable; default: all of the "
                        "device's: eager, aot_eager, inductor-reference, inductor-cpp, "
                        "inductor-triton on cpu; eager, aot_eager, inductor on cuda)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--max-statements", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("fuzz_failures"),
                        help="where shrunk reproducers are written")
    parser.add_argument("--no-shrink", action="store_true", help="report failures unshrunk")
    parser.add_argument("--in-process", action="store_true",
                        help="check in this process, not a worker process (a signal from "
                        "generated code then ends the run)")
    parser.add_argument("--timeout", type=float,
                        help="seconds one check may take before its worker is killed and the "
                        "check reported as a timeout (default: worker.TIMEOUT, 5 minutes)")
    parser.add_argument("--time-limit", type=float, metavar="SECONDS",
                        help="start no new program after this many seconds; the summary says "
                        "how many were checked (to fit a run into a slot)")
    parser.add_argument("--tracer", action="store_true",
                        help="fuzz the bytecode tracer instead (Python functions vs CPython)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device == "cpu":  # the Triton CPU backend is Triton's interpreter: set before import
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from .driver import fuzz_programs, fuzz_tracer  # imports torch, minicompile, maybe triton

    if args.tracer:
        return fuzz_tracer(args.n, args.seed)
    return fuzz_programs(args.n, args.seed, args.backend, args.device, args.max_statements,
                         None if args.no_shrink else args.out, args.in_process,
                         args.timeout, time_limit=args.time_limit)


if __name__ == "__main__":
    sys.exit(main())
