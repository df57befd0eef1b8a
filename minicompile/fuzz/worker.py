"""Checks run in a child process: a signal from generated code is a failure, not the end of a run.

A kernel that reads through an unchecked index may die of SIGSEGV, one that divides by an integer
0 of SIGFPE; in the fuzzer's own process that would end the whole run with nothing reported. So
the fuzzer sends each check to a worker process (``python -m minicompile.fuzz.worker``, started
once: a fresh interpreter, not a fork of one that has run OpenMP kernels, which may hang) and
waits for its outcome. When the worker dies, the check it was running is the culprit: its outcome
is a "signal", and the next check starts a fresh worker. The cost is one interpreter start per
run (and per death), not one per program.

Requests and outcomes are pickled over the worker's stdin and stdout; the worker's own output
(its prints, C code's) goes to stderr.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

from .program import Program
from .runner import Outcome, check_safely

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the worker imports this minicompile


class Worker:
    """A child process that runs ``check_safely`` on request; ``check`` has its signature."""

    def __init__(self):
        self.process: subprocess.Popen | None = None

    def check(self, program: Program, backend: str, device: str = "cpu",
              seed: int = 0) -> Outcome:
        if self.process is None:
            self._start()
        try:
            pickle.dump((program, backend, device, seed), self.process.stdin)
            self.process.stdin.flush()
            return pickle.load(self.process.stdout)
        except (EOFError, pickle.UnpicklingError, BrokenPipeError):  # the child died mid-check
            outcome = Outcome("signal", f"the process checking it {_death(self.process.wait())}")
            self.process = None
            return outcome

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()  # the worker's loop ends at end of input
            self.process.wait()
            self.process.stdout.close()
            self.process = None

    def _start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [PACKAGE_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        self.process = subprocess.Popen([sys.executable, "-m", "minicompile.fuzz.worker"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _death(returncode: int) -> str:
    if returncode < 0:
        return f"died of {signal.Signals(-returncode).name} (signal {-returncode})"
    return f"exited with status {returncode}"


def serve() -> None:
    """The worker's loop: a check per request read from stdin, until its end."""
    requests, replies = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever else is printed goes to stderr, not into the replies
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        pickle.dump(check_safely(*request), replies)
        replies.flush()


if __name__ == "__main__":
    serve()
