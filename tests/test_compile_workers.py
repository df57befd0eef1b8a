"""Compile workers (runtime/compile_workers.py, compile_worker.py): a worker process compiles a
Triton kernel into Triton's on-disk cache, and the process that asked then finds that very
binary there.

Compiling for a GPU needs no GPU: Triton's wheel brings ``ptxas``, and a driver that names the
target (``FixedTargetDriver``) stands in for the device, there as in the workers. The test's
compiling process is a fresh one: this one runs Triton's interpreter (no GPU), under which
``triton.jit`` makes functions that compile nothing."""

import json
import os
import subprocess
import sys

import pytest
import torch

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402
from minicompile import config  # noqa: E402
from minicompile.inductor.runtime import compile_workers  # noqa: E402

KERNEL = """\
import triton
import triton.language as tl
from minicompile.inductor.runtime import triton_helpers


@triton.jit
def double_max(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    mask = xindex < xnumel
    x = tl.load(in_ptr0 + xindex, mask)
    tl.store(out_ptr0 + xindex, triton_helpers.maximum(x, x * 2.0), mask)
"""

COMPILER = """\
import importlib.util, json, os, sys
import torch
from triton.backends.compiler import GPUTarget
from triton.runtime.driver import driver
from minicompile.inductor.runtime import compile_workers
from minicompile.inductor.runtime.compile_worker import FixedTargetDriver

spec = importlib.util.spec_from_file_location("kmod_workers", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["kmod_workers"] = module
spec.loader.exec_module(module)
kernel = module.double_max
driver.set_active(FixedTargetDriver(GPUTarget("cuda", 90, 32)))  # an H100, not this machine
OPTIONS = {"num_warps": 4, "enable_fp_fusion": False}
cached = lambda name="double_max": sum(f == name + ".cubin" for _, _, files in os.walk(
    os.environ["TRITON_CACHE_DIR"]) for f in files)  # the kernel's binaries
warmup = lambda xblock: kernel.warmup(torch.float32, torch.float32, 4096, grid=(1,),
                                      XBLOCK=xblock, **OPTIONS)
job = lambda xblock: compile_workers.specialization(
    kernel, (torch.float32, torch.float32, 4096), (1,), {"XBLOCK": xblock, **OPTIONS})
out = {}
jobs = [job(128), job(256)]
out["jobs"] = jobs
os.makedirs(os.environ["TRITON_CACHE_DIR"], exist_ok=True)
out["cached_after_capture"] = cached()
pool = compile_workers.WorkerPool(2, driver.active.get_current_target())
out["ready"] = pool.ready(timeout=60)
out["warmed_up"] = cached("warm_up_kernel")  # each worker compiled one before it was ready
broken = {**jobs[0], "fn": "no_such_kernel"}  # the worker answers with its error, lives on
out["answers"] = pool.run([broken, *jobs])
pool.close()
out["cached_after_workers"] = cached()
out["has_ptx"] = ["ptx" in warmup(xblock).asm for xblock in (128, 256)]  # cache hits
out["cached_after_hits"] = cached()
warmup(64)  # a config no worker compiled: compiled here
out["cached_after_new"] = cached()
out["job_for_compiled"] = job(64)
print(json.dumps(out))
"""


def test_a_worker_compiles_what_the_compiler_then_finds_in_the_cache(tmp_path):
    (tmp_path / "kmod_workers.py").write_text(KERNEL)
    (tmp_path / "compiler.py").write_text(COMPILER)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton_cache")
    root = os.path.dirname(os.path.dirname(os.path.abspath(mc.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    run = subprocess.run([sys.executable, str(tmp_path / "compiler.py"),
                          str(tmp_path / "kmod_workers.py")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert [j["fn"] for j in out["jobs"]] == ["double_max"] * 2
    assert all(j["target"] == ["cuda", 90, 32] for j in out["jobs"])
    assert out["cached_after_capture"] == 0  # capturing the jobs compiled nothing
    assert out["ready"] and out["warmed_up"] >= 1
    broken, *answers = out["answers"]
    assert broken["ok"] is False and "no_such_kernel" in broken["error"]
    assert [a["ok"] for a in answers] == [True, True], answers
    assert out["cached_after_workers"] == 2
    assert out["has_ptx"] == [True, True]
    assert out["cached_after_hits"] == 2  # found, not compiled again
    assert out["cached_after_new"] == 3
    assert out["job_for_compiled"] is None  # already in the compiler's process: no job


def test_a_workers_launcher_is_built_while_the_binary_compiles():
    """The cache hook Triton calls before it compiles starts the launcher's build in a thread,
    from the argument types and constants, and lets the compile go on (it returns None); a
    build that fails raises nothing (the compiled kernel's launcher is built after)."""
    from minicompile.inductor.runtime.compile_worker import PLAIN_METADATA, LauncherWhileCompiling

    built = []

    class Driver:
        def launcher_cls(self, src, metadata):
            if "broken" in src.signature:
                raise RuntimeError("gcc failed")
            built.append((src.signature, src.constants, src.fn, metadata))

    early = LauncherWhileCompiling("the kernel", Driver())
    early.join()  # no hook call (a Triton that has none): nothing to wait for
    hook_answer = early(key="k", compile={"signature": {"in_ptr0": "*fp32", "xnumel": "i32"},
                                          "constants": {(3,): 128}})
    early.join()
    assert hook_answer is None
    assert built == [({"in_ptr0": "*fp32", "xnumel": "i32"}, {(3,): 128}, "the kernel",
                      PLAIN_METADATA)]
    failing = LauncherWhileCompiling("k", Driver())
    failing(compile={"signature": {"broken": "*fp32"}, "constants": {}})
    failing.join()
    assert len(built) == 1


def test_jobs_after_the_workers_died_come_back_as_failures():
    """A worker that dies while compiling (or before) does not hang the compile: every job
    left is answered as failed (the compiler then builds those kernels itself), and a pool that
    broke is not ready for the next graph."""
    pool = compile_workers.WorkerPool(2)
    try:
        assert pool.ready(timeout=60)
        for proc in pool.procs:
            proc.kill()
            proc.wait()
        answers = pool.run([{"path": "-", "module": "-", "fn": "-"}] * 5)
    finally:
        pool.close()
    assert len(answers) == 5 and not any(a["ok"] for a in answers)
    assert not pool.ready()


def test_workers_start_only_for_several_jobs(monkeypatch):
    """A single job does not start the workers (a thread compiles it), but goes to them once
    they run and are ready; never to another process's pool (a forked child's copy)."""
    assert compile_workers.workers_for(40, workers=1) is None  # off
    monkeypatch.setattr(compile_workers, "_pool", None)
    assert compile_workers.workers_for(1, workers=2) is None and compile_workers._pool is None

    class ReadyPool:
        pid = os.getpid()

        def ready(self, timeout=0.0):
            return True

    pool = ReadyPool()
    monkeypatch.setattr(compile_workers, "_pool", pool)
    assert compile_workers.workers_for(1, workers=2) is pool
    pool.pid = os.getpid() + 1
    assert compile_workers.workers_for(1, workers=2) is None


@pytest.mark.gpu
def test_a_graphs_kernels_compile_in_workers(monkeypatch):
    """A static graph's candidates go to the workers, every one compiles there, and the
    first call (its binaries found in the cache) is right."""
    monkeypatch.setattr(config.inductor, "compile_workers", 2)
    monkeypatch.setattr(compile_workers, "WAIT_FOR_WORKERS", 1)
    answers = []
    run = compile_workers.WorkerPool.run

    def run_and_keep(self, jobs):
        answers.extend(run(self, jobs))
        return answers[-len(jobs):]

    monkeypatch.setattr(compile_workers.WorkerPool, "run", run_and_keep)
    fn = lambda x: torch.softmax(x * 3, -1) + x.sum(-1, keepdim=True)  # noqa: E731
    x = torch.randn(1024, 1000, device="cuda")  # rows enough for two candidate configs
    mc.reset()
    torch.testing.assert_close(mc.compile(fn)(x), fn(x))
    assert len(answers) >= 2 and all(a["ok"] for a in answers), answers
