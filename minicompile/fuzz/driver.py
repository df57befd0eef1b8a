"""The fuzz loop behind ``bash course.sh fuzz``: generate, check, shrink, report."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import torch

from .generate import generate_program
from .runner import Outcome, backends_for, check_safely
from .shrink import same_failure, shrink, write_reproducer
from .worker import TIMEOUT, WORKER_COMMAND, Worker


class Progress:
    """One line on stderr, redrawn in place: ``[####....] 120/500 programs, 0 failures``."""

    WIDTH = 30

    def __init__(self, total: int, unit: str):
        self.total, self.unit, self.start = total, unit, time.monotonic()
        self.tty = sys.stderr.isatty()

    def update(self, done: int, failures: int) -> None:
        if not self.tty and done not in (self.total,) and done % max(self.total // 20, 1):
            return  # a log file gets twenty lines, not one per program
        filled = self.WIDTH * done // max(self.total, 1)
        rate = done / max(time.monotonic() - self.start, 1e-9)
        line = (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{self.total} {self.unit}, "
                f"{failures} failures, {rate:.1f}/s")
        print(("\r" if self.tty else "") + line, end="" if self.tty else "\n", file=sys.stderr,
              flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)


FAILURES = ("mismatch", "crash", "signal", "timeout")


def fuzz_programs(n: int, seed: int, backends: list[str] | None, device: str,
                  max_statements: int, out: Path | None, in_process: bool = False,
                  timeout: float | None = None, worker_command: list[str] = WORKER_COMMAND,
                  time_limit: float | None = None) -> int:
    """Check programs ``seed .. seed + n - 1`` with each backend; 1 if any failed. Checks run
    in a worker process (``worker.py``, started by ``worker_command``), each for at most
    ``timeout`` seconds (None: ``worker.TIMEOUT``), unless ``in_process``. Past ``time_limit``
    seconds no new program starts (a run that must fit a slot on a shared machine)."""
    if device == "cuda" and not torch.cuda.is_available():
        print("--device cuda needs a CUDA GPU; none is visible", file=sys.stderr)
        return 2
    known = backends_for(device)
    backends = backends or list(known)
    unknown = [b for b in backends if b not in known]
    if unknown:
        print(f"unknown backend {unknown[0]!r} on {device}; choose from {list(known)}",
              file=sys.stderr)
        return 2
    counts, progress = Counter(), Progress(n, "programs")
    worker = None if in_process else Worker(timeout or TIMEOUT, worker_command)
    check = check_safely if worker is None else worker.check
    deadline = None if time_limit is None else time.monotonic() + time_limit
    done = 0
    for i in range(n):
        if deadline is not None and time.monotonic() > deadline:
            break
        done, program_seed = i + 1, seed + i
        program = generate_program(program_seed, device, max_statements)
        for backend in backends:
            outcome = check(program, backend, device, program_seed)
            counts[outcome.kind] += 1
            counts["raised alike"] += bool(outcome.kind == "ok" and outcome.eager_error)
            if outcome.kind != "ok":
                report(program, outcome, backend, device, program_seed, out, check)
        progress.update(i + 1, sum(counts[kind] for kind in FAILURES))
    progress.close()
    if worker is not None:
        worker.close()
    stopped = f" (stopped at the time limit: seeds {seed}..{seed + done - 1})" if done < n else ""
    print(f"fuzz: {done} programs, {counts['mismatch']} mismatches, {counts['crash']} crashes, "
          f"{counts['signal']} signals, {counts['timeout']} timeouts "
          f"({done * len(backends)} checks on {', '.join(backends)}; "
          f"{device}; in {counts['raised alike']} eager and compiled raised the same error)"
          f"{stopped}")
    return 1 if any(counts[kind] for kind in FAILURES) else 0


def report(program, outcome: Outcome, backend: str, device: str, seed: int,
           out: Path | None, check=check_safely) -> None:
    """Print the failure; shrink it (each candidate checked by ``check``; a timeout is not
    shrunk) and write the reproducer when ``out`` is set."""
    print(f"\n{outcome.kind} with {backend}, program seed {seed}:\n{program.source()}"
          f"{outcome.message.strip()[:3000]}", file=sys.stderr)
    if out is None:
        return
    if outcome.kind == "timeout":  # each candidate that still hung would cost a whole timeout
        small, final = program, outcome
    else:
        small = shrink(program, same_failure(outcome, backend, device, seed, check))
        final = check(small, backend, device, seed)
    path = write_reproducer(out, small, final, backend, device, seed, seed)
    print(f"{'shrunk to' if small is not program else 'unshrunk,'} {len(small.body)} "
          f"statements: {path}", file=sys.stderr)


def fuzz_tracer(n: int, seed: int) -> int:
    from .tracer import fuzz_tracer as run_tracer_fuzz

    return run_tracer_fuzz(n, seed, Progress(n, "functions"))
