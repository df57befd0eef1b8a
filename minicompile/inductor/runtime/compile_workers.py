"""Triton kernels compiled in worker processes (mirrors torch/_inductor/async_compile.py and
torch/_inductor/compile_worker/subproc_pool.py).

Triton's compiler is mostly Python: threads of one process take turns holding the GIL, so a
graph's kernels compile about one at a time whatever the number of threads. Worker processes
(``compile_worker.py``) compile one each, into Triton's on-disk cache; the compiler's own
``compile_ahead`` then finds every binary there. A GPT block's forward and backward (15
kernels, 31 candidate binaries) spent 2.6 s of its first call on an H100 compiling in threads;
16 workers took 0.7 s for the forward's and 0.8 s for the backward's, while the compiler went
on (``triton_heuristics.compile_in_background``).

The protocol is Triton's own: ``specialization`` runs the kernel's ``warmup`` in this process
up to the point where Triton would compile, where ``knobs.runtime.jit_cache_hook`` hands over
the *specialisation data* (argument types, alignments, constexprs, options, as JSON) and stops
it. A worker gives that to ``JITFunction.preload``, which compiles exactly the binary this
process would have compiled, under the same cache key.

The workers start the first time a graph has kernels to compile ahead, in the background: that
graph's kernels compile in threads unless it has many (then it waits for the workers, about a
second: each imports Triton, not torch, and compiles one small kernel before it says it is
ready, ``compile_worker.warm_up``). ``MINICOMPILE_COMPILE_WORKERS=0`` (or
the ``compile_workers`` option 0) compiles in threads only.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

from triton import knobs
from triton.runtime.driver import driver


WORKER_SCRIPT = os.path.join(os.path.dirname(__file__), "compile_worker.py")
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
WAIT_FOR_WORKERS = 8  # a graph with this many compile jobs waits for workers still starting
START_TIMEOUT_S = 60
log = logging.getLogger(__name__)


class WorkerPool:
    """``n`` worker processes, each compiling one job at a time (``run``)."""

    def __init__(self, n: int, target: Any = None):
        """``target``: Triton's ``GPUTarget`` the workers warm up for (see ``warm_up``)."""
        argv = [sys.executable, WORKER_SCRIPT, PACKAGE_ROOT]
        if target is not None:
            argv.append(json.dumps([target.backend, target.arch, target.warp_size]))
        self.procs = [subprocess.Popen(
            argv, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
            for _ in range(n)]
        self.pid = os.getpid()  # the process whose workers these are
        self.idle: queue.Queue = queue.Queue()
        self.started = threading.Event()
        self.broken = False
        threading.Thread(target=self._await_ready, daemon=True).start()

    def _await_ready(self) -> None:
        for proc in self.procs:
            if proc.stdout.readline().strip() != "ready":
                self.broken = True
            self.idle.put(proc)
        self.started.set()

    def ready(self, timeout: float = 0.0) -> bool:
        return self.started.wait(timeout) and not self.broken

    def run(self, jobs: list[dict]) -> list[dict]:
        """Compile every job, as many at once as there are workers; one answer per job."""
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(len(self.procs)) as threads:
            answers = list(threads.map(self._run_one, jobs))
        log.debug("%d jobs in %.2f s on %d workers: %s", len(jobs), time.perf_counter() - start,
                  len(self.procs), [a.get("seconds") or a.get("error") for a in answers])
        return answers

    def _run_one(self, job: dict) -> dict:
        while True:  # an idle worker, unless they have died (then nobody would put one back)
            if self.broken:
                return {"ok": False, "error": "compile workers broken"}
            try:
                proc = self.idle.get(timeout=0.5)
                break
            except queue.Empty:
                continue
        try:
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()
            answer = proc.stdout.readline()
        except OSError:  # a broken pipe: the worker had died
            answer = ""
        if not answer:  # it died: this job and those left go to threads, and so do later ones
            self.broken = True
            return {"ok": False, "error": "compile worker exited"}
        self.idle.put(proc)
        return json.loads(answer)

    def close(self) -> None:
        if os.getpid() != self.pid:  # a forked child's copy: the workers are its parent's
            return
        for proc in self.procs:
            try:
                proc.stdin.close()  # a worker exits at the end of its input
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
            proc.stdout.close()


_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def start(workers: int, wait: bool = False) -> WorkerPool | None:
    """The worker pool, started with ``workers`` processes if this is the first time (None if
    there are to be no workers). ``wait``: until they are ready, as a benchmark's warm-up
    does."""
    global _pool
    n = min(workers, os.cpu_count() or 1)
    if n < 2:
        return None
    with _pool_lock:
        # (a pool that broke is not restarted: threads from then on). A forked child must not
        # talk to its parent's workers down the same pipes: it starts its own
        if running() is None:
            _pool = WorkerPool(n, driver.active.get_current_target())
            atexit.register(_pool.close)
    if wait:
        _pool.ready(START_TIMEOUT_S)
    return _pool


def running() -> WorkerPool | None:
    """The worker pool of this process, if it has been started."""
    return _pool if _pool is not None and _pool.pid == os.getpid() else None


def workers_for(num_jobs: int, workers: int) -> WorkerPool | None:
    """The worker pool, if it should compile these jobs: for two or more, started (now, if
    this is the first time); for one, only a pool already running (a worker has its first
    compile behind it, and builds the launcher too: a pointwise graph's one kernel, 16M floats
    on an H100, took 0.58 s to its first call compiled in a thread of this process, whose
    first compile it was). Then ready, or worth waiting for. ``workers``: the compile's
    ``compile_workers`` option (0 or 1: none)."""
    if workers < 2:
        return None
    pool = start(workers) if num_jobs >= 2 else running()
    if pool is None:
        return None
    return pool if pool.ready(START_TIMEOUT_S if num_jobs >= WAIT_FOR_WORKERS else 0.0) else None


_capture_lock = threading.Lock()


def specialization(fn: Any, args: tuple, grid: tuple, kwargs: dict) -> dict | None:
    """A worker's job for the binary ``fn[grid](*args, **kwargs)`` would compile (tensors in
    ``args`` may be dtypes), or None if this process has it already. Triton binds and
    specialises the arguments, calls the cache hook with the result, and compiles nothing."""
    captured: list[str] = []
    me = threading.get_ident()

    def hook(*, compile: dict, **_: Any) -> bool | None:
        if threading.get_ident() != me:  # another thread's compile: not ours to stop
            return previous(compile=compile, **_) if previous else None
        captured.append(compile["specialization_data"])
        return True  # "handled": Triton returns without compiling

    with _capture_lock:
        previous = knobs.runtime.jit_cache_hook
        knobs.runtime.jit_cache_hook = hook
        try:
            fn.warmup(*args, grid=grid, **kwargs)
        finally:
            knobs.runtime.jit_cache_hook = previous
    if not captured:
        return None
    target = driver.active.get_current_target()
    module = sys.modules[fn.fn.__module__]
    return {"path": module.__file__, "module": module.__name__, "fn": fn.fn.__name__,
            "data": captured[0], "target": [target.backend, target.arch, target.warp_size],
            "env": {k: v for k, v in os.environ.items() if k.startswith("TRITON_")}}
