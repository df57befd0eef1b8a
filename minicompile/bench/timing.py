"""How the benchmark times things (the role of ``triton.testing.do_bench`` in
torch/_inductor/runtime/benchmarking.py, and of ``torch.utils.benchmark`` on the CPU).

GPU: CUDA events around each call, the L2 cache flushed between calls, the median of the reps
(``do_bench(..., return_mode="median")``). CPU: ``Timer.blocked_autorange`` medians with as many
threads as torch uses. On both, eager and the compilers take turns (``time_in_turns``). Never
one wall-clock reading per call.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch
import torch._inductor.config as inductor_config
from torch.utils import benchmark

try:  # triton is a GPU dependency; the CPU path never needs it
    from triton.testing import do_bench
except ImportError:  # pragma: no cover
    do_bench = None

# (warm-up, repeat) for do_bench in milliseconds; CPU: min_run_time in seconds
GPU_BUDGET = {"full": (25, 100), "quick": (10, 30), "tiny": (1, 5)}
CPU_BUDGET = {"full": 1.0, "quick": 0.2, "tiny": 0.01}


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# A time whose repeats spread by more than this (a fraction of its median) says more about the
# machine (another process, a busy host) than about the code: reported as untrustworthy.
NOISY_SPREAD = 0.10


def spread(samples: list[float]) -> float:
    """How far apart repeated timings of one thing are: (slowest - fastest) / median."""
    return (max(samples) - min(samples)) / statistics.median(samples) if samples else 0.0


def time_ms_spread(step: Callable[[], Any], device: str, budget: str = "full"
                   ) -> tuple[float, float]:
    """Median milliseconds of one ``step()`` timed on its own and the spread of the repeats it
    is the median of (GPU: the 10th to 90th percentile of ``do_bench``'s reps; CPU:
    ``blocked_autorange``'s blocks, each the mean of many calls). Comparisons take turns:
    ``time_in_turns``."""
    if device == "cuda":
        warmup, rep = GPU_BUDGET[budget]
        low, median, high = do_bench(step, warmup=warmup, rep=rep, quantiles=[0.1, 0.5, 0.9])
        return float(median), (high - low) / median
    step()  # warm up outside the measurement
    timer = benchmark.Timer(stmt="step()", globals={"step": step},
                            num_threads=torch.get_num_threads())
    m = timer.blocked_autorange(min_run_time=CPU_BUDGET[budget])
    return m.median * 1e3, spread(m.times)


def time_ms(step: Callable[[], Any], device: str, budget: str = "full") -> float:
    """Median milliseconds of one ``step()``."""
    return time_ms_spread(step, device, budget)[0]


ROUNDS = 5  # the steps take turns this many times (``time_in_turns``)


def time_in_turns(steps: dict[str, Callable[[], Any]], device: str, budget: str = "full",
                  started: Callable[[str], None] = lambda key: None) -> dict[str, float]:
    """Median milliseconds of each step (``time_and_spread_in_turns`` without the spreads)."""
    return {key: ms for key, (ms, _) in
            time_and_spread_in_turns(steps, device, budget, started).items()}


def time_and_spread_in_turns(steps: dict[str, Callable[[], Any]], device: str,
                             budget: str = "full",
                             started: Callable[[str], None] = lambda key: None
                             ) -> dict[str, tuple[float, float]]:
    """Median milliseconds of each step, and the spread of its rounds' medians. The steps take
    turns: ``ROUNDS`` rounds, each timing every step once (GPU: one ``do_bench`` of the whole
    budget; CPU: ``blocked_autorange`` for a fifth of it), and each step's median over the
    rounds. A shared machine drifts (another process, the host's load) over seconds: timed one
    after the other, eager could get a quiet second and a compiler a busy one; in turns, each
    sees the same stretches of time. On the GPU this matters wherever a step is bound by the
    host (a training step launching hundreds of kernels: a ResNet-18 step's host time moved by
    up to 17% between three back-to-back timings of the same compiled step), as on the CPU.
    ``started(key)`` is called before a step is first timed."""
    rounds: dict[str, list[float]] = {key: [] for key in steps}
    for r in range(ROUNDS):
        for key, step in steps.items():
            if r == 0:
                started(key)
            rounds[key].append(round_ms(step, device, budget, warm_up=r == 0))
    return {key: (statistics.median(ms), spread(ms)) for key, ms in rounds.items()}


def round_ms(step: Callable[[], Any], device: str, budget: str, warm_up: bool) -> float:
    """One round's median milliseconds of ``step()`` (``time_and_spread_in_turns``)."""
    if device == "cuda":
        warmup, rep = GPU_BUDGET[budget]  # (do_bench warms up itself)
        return float(do_bench(step, warmup=warmup, rep=rep, return_mode="median"))
    if warm_up:
        step()  # outside the measurement
    timer = benchmark.Timer(stmt="step()", globals={"step": step},
                            num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=CPU_BUDGET[budget] / ROUNDS).median * 1e3


# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_MAX = 32 << 20  # glibc's largest (64-bit)


def keep_freed_memory() -> bool:
    """Let glibc's allocator keep freed memory, as tcmalloc and jemalloc do (PyTorch's CPU
    performance guides preload one). By default glibc hands the top of its heap back to the
    system when more than a threshold is free, and its thresholds move with the process's
    history: whether a 4 MB output comes back as fresh pages to fault in (1024 page faults,
    about 1 ms on this VM) depends on where earlier allocations left the top of the heap. Seen
    here: ``F.gelu(y + b)`` on 1024x1024 took 0.36 ms in a fresh process and 2.8 ms after an
    ``import``, for eager, real Inductor and minicompile alike. Fixed thresholds make every
    case's time its steady state. Returns whether glibc took the settings."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)
                    and libc.mallopt(M_TRIM_THRESHOLD, 1 << 30))
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False


def copy_bandwidth_gbs(device: str, numel: int, budget: str = "full") -> float:
    """Achieved GB/s of a large device-to-device ``y.copy_(x)``, counting bytes read + written:
    the ceiling every memory-bound case is compared against."""
    x = torch.randn(numel, device=device)
    y = torch.empty_like(x)
    ms = time_ms(lambda: y.copy_(x), device, budget)
    return 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9


@contextmanager
def cold_inductor() -> Iterator[None]:
    """No cache of real Inductor may answer: FX graph cache, AOT autograd cache, kernel caches."""
    with inductor_config.patch(force_disable_caches=True), \
            torch.compiler.config.patch(force_disable_caches=True), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*force disabled by.*force_disable_caches")
        yield


@contextmanager
def cold_minicompile() -> Iterator[None]:
    """Nor any of minicompile's: its kernel cache (C++ shared objects and their precompiled
    header, Triton kernel files) and Triton's (compiled binaries, launchers built with gcc)
    are empty temporary folders for the first call: on a second run of the benchmark, or after
    the tests, the kernels would otherwise be found on disk instead of compiled."""
    names = ("MINICOMPILE_CACHE_DIR", "TRITON_CACHE_DIR")
    saved = {name: os.environ.get(name) for name in names}
    with tempfile.TemporaryDirectory(prefix="minicompile-cold-") as tmp:
        for name in names:
            os.environ[name] = os.path.join(tmp, name.split("_")[0].lower())
        try:
            yield
        finally:
            wait_for_background_compiles()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def wait_for_background_compiles() -> None:
    """Let Triton kernels still compiling in the background finish: they write into the cache
    folder ``cold_minicompile`` is about to delete (a candidate config no launch has asked for
    yet). Without the Triton backend loaded there are none."""
    heuristics = sys.modules.get("minicompile.inductor.runtime.triton_heuristics")
    if heuristics is not None:
        heuristics.wait_for_background_compiles()


def first_call_s(step: Callable[[], Any], device: str) -> tuple[Any, float]:
    """Wall seconds of the first call (tracing + compiling + running once), and its result."""
    sync(device)
    start = time.perf_counter()
    out = step()
    sync(device)
    return out, time.perf_counter() - start
