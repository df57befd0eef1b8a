"""Checks run in a child process: a signal or a hang in generated code is a failure, not the end
of a run.

A kernel that reads through an unchecked index may die of SIGSEGV, one that divides by an integer
0 of SIGFPE; in the fuzzer's own process that would end the whole run with nothing reported. So
the fuzzer sends each check to a worker process (``python -m minicompile.fuzz.worker``, started
once: a fresh interpreter, not a fork of one that has run OpenMP kernels, which may hang) and
waits for its outcome. When the worker dies, the check it was running is the culprit: its outcome
is a "signal", and the next check starts a fresh worker. The cost is one interpreter start per
run (and per death), not one per program.

A check that hangs (a compile that never ends, a kernel whose loop never exits) would stop the run
as surely as a signal: the worker gets ``timeout`` seconds per check, counted from when the request
is sent (the worker's start-up, importing torch, is not counted: it says when it is ready). Past
that its whole process group is killed (the compiler processes it started die with it), the check's
outcome is a "timeout", and the next check starts a fresh worker.

Requests and outcomes are pickled over the worker's stdin and stdout; the worker's own output
(its prints, C code's) goes to stderr.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import subprocess
import sys
from pathlib import Path

from .program import Program
from .runner import Outcome, check_safely

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the worker imports this minicompile
WORKER_COMMAND = [sys.executable, "-m", "minicompile.fuzz.worker"]
# seconds one check may take: a first call compiles every kernel (a C++ compile of a cold cache
# takes tens of seconds on a busy machine), so "far too long" is minutes, not seconds
TIMEOUT = 300.0
READY = "ready"  # the worker's first reply: imports done, the clock of the first check starts


class Worker:
    """A child process that runs ``check_safely`` on request; ``check`` has its signature.
    ``command`` starts the child (a seam: a test starts a worker that hangs on purpose)."""

    def __init__(self, timeout: float = TIMEOUT, command: list[str] = WORKER_COMMAND):
        self.timeout, self.command = timeout, command
        self.process: subprocess.Popen | None = None

    def check(self, program: Program, backend: str, device: str = "cpu",
              seed: int = 0) -> Outcome:
        if self.process is None:
            self._start()
        try:
            pickle.dump((program, backend, device, seed), self.process.stdin)
            self.process.stdin.flush()
            return self._reply(self.timeout)
        except TimeoutError:
            self._kill()
            return Outcome("timeout", f"the check ran past {self.timeout:g} s (a hang in a "
                                      "compile or a kernel?): its process was killed")
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

    def _reply(self, timeout: float | None):
        """The worker's next reply, or ``TimeoutError`` if none starts within ``timeout``."""
        # (a reply is one pickle written at once: once its first byte is there, the rest follows)
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError
        return pickle.load(self.process.stdout)

    def _start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [PACKAGE_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        # a session of its own: a hung worker is killed with every process it started
        self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env, start_new_session=True)
        if self._reply(None) != READY:
            raise RuntimeError(f"{self.command} did not start a fuzz worker")

    def _kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)  # its group: the worker's own pid
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()
        self.process = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _death(returncode: int) -> str:
    if returncode < 0:
        return f"died of {signal.Signals(-returncode).name} (signal {-returncode})"
    return f"exited with status {returncode}"


def serve(check=check_safely) -> None:
    """The worker's loop: ``check(*request)`` per request read from stdin, until its end."""
    requests, replies = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever else is printed goes to stderr, not into the replies
    pickle.dump(READY, replies)
    replies.flush()
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        pickle.dump(check(*request), replies)
        replies.flush()


if __name__ == "__main__":
    serve()
