"""The fuzzer's worker process (minicompile/fuzz/worker.py): a check that hangs is killed after
its timeout and reported as a failure with a reproducer, and the run goes on in a fresh worker;
a run with a time limit stops starting programs in time.

The hang is made through the worker's seam (``Worker(command=...)``, ``serve(check=...)``): this
file, run as a script, is a worker whose check blocks for ever on one seed, as a compile or a
kernel that never ends would. Nothing sleeps: the test takes a timeout of seconds.
"""

import os
import sys
import threading

import pytest

from minicompile.fuzz.driver import fuzz_programs
from minicompile.fuzz.program import InputSpec, Program
from minicompile.fuzz.runner import check_safely
from minicompile.fuzz.worker import Worker, serve

HANG_SEED = 34_999_000  # the seed of the check this file's worker hangs on
HANGING_WORKER = [sys.executable, __file__]

RELU = Program.parse("def fn(x0):\n    v0 = torch.relu(x0)\n    return (v0, )\n",
                     [InputSpec((3,))])


def hang_on_one_seed(program, backend, device="cpu", seed=0):
    if seed == HANG_SEED:
        # blocks, as a compile or a kernel that never ends would; were the timeout not to
        # kill it, the check would come back "ok" after a minute and the test fail
        threading.Event().wait(60)
    return check_safely(program, backend, device, seed)


def test_a_check_that_hangs_is_killed_and_the_next_check_runs():
    with Worker(timeout=3.0, command=HANGING_WORKER) as worker:
        outcome = worker.check(RELU, "eager", seed=HANG_SEED)
        assert outcome.kind == "timeout", outcome
        assert worker.process is None  # killed, not left running
        assert worker.check(RELU, "eager", seed=0).kind == "ok"  # in a fresh worker
        killed_before = worker.process.pid
    with pytest.raises(ProcessLookupError):  # (closed: the fresh worker ended too)
        os.kill(killed_before, 0)


def test_a_fuzz_run_reports_a_hang_with_its_reproducer_and_goes_on(tmp_path, capsys):
    status = fuzz_programs(2, HANG_SEED, ["eager"], "cpu", max_statements=3, out=tmp_path,
                           timeout=3.0, worker_command=HANGING_WORKER)
    assert status == 1
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith("fuzz: 2 programs, 0 mismatches, 0 crashes, 0 signals, "
                              "1 timeouts"), summary  # the second program was checked: ok
    reproducer = (tmp_path / f"test_fuzz_{HANG_SEED}_eager_cpu.py").read_text()
    assert "a timeout" in reproducer and "with Worker() as worker:" in reproducer


def test_a_time_limit_stops_starting_programs_and_says_so(capsys):
    """``--time-limit``: a run fits a slot; the summary counts the programs really checked."""
    assert fuzz_programs(2, 0, ["eager"], "cpu", 3, None, in_process=True, time_limit=600) == 0
    assert capsys.readouterr().out.startswith("fuzz: 2 programs,")
    assert fuzz_programs(2, 0, ["eager"], "cpu", 3, None, in_process=True, time_limit=0) == 0
    out = capsys.readouterr().out
    assert out.startswith("fuzz: 0 programs,") and "stopped at the time limit" in out


if __name__ == "__main__":  # the worker HANGING_WORKER starts
    serve(check=hang_on_one_seed)
