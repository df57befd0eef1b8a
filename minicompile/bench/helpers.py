"""Timing and profiling helpers shared by the notebooks (the role of torch/_inductor/utils.py's
``do_bench`` and ``torch.utils.benchmark``, kept small and visible).

    from minicompile.bench import benchmark, profile_kernels, plot_times
    times = {"eager": benchmark(fn, x), "minicompile": benchmark(cfn, x)}
    plot_times(times, title="fn on CPU")

A timing is something to look at, never something a test asserts.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch


def _sync(device: str | None) -> None:
    if device == "cuda" or (device is None and torch.cuda.is_available()):
        torch.cuda.synchronize()


def benchmark(fn: Callable, *args: Any, warmup: int = 3, reps: int = 20,
              device: str | None = None) -> float:
    """Median wall time of ``fn(*args)`` in seconds, synchronising CUDA around each call."""
    for _ in range(warmup):
        fn(*args)
    _sync(device)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(*args)
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def profile_kernels(fn: Callable, *args: Any, reps: int = 5) -> list[tuple[str, int, float]]:
    """Run ``fn`` under torch.profiler; return (kernel or op name, calls, total microseconds),
    CUDA kernels when on the GPU, otherwise CPU ATen ops, most expensive first."""
    from torch.profiler import ProfilerActivity, profile

    fn(*args)  # warm up: compile, allocate, autotune outside the profile
    activities = [ProfilerActivity.CPU]
    on_gpu = any(isinstance(a, torch.Tensor) and a.is_cuda for a in args)
    if on_gpu:
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        for _ in range(reps):
            fn(*args)
        _sync("cuda" if on_gpu else "cpu")
    rows = []
    for evt in prof.key_averages():
        if on_gpu:  # kernels only: an ATen op's own device time is zero, its kernels hold it
            us = getattr(evt, "self_device_time_total", None)
            us = evt.self_cuda_time_total if us is None else us
            if us <= 0 or evt.key.startswith(("cuda", "Memcpy", "Memset", "Activity")):
                continue
        else:
            if not evt.key.startswith("aten::") or evt.self_cpu_time_total <= 0:
                continue
            us = evt.self_cpu_time_total
        rows.append((evt.key, evt.count // reps, us / reps))
    return sorted(rows, key=lambda r: -r[2])


def format_profile(rows: list[tuple[str, int, float]], limit: int = 12) -> str:
    lines = [f"{'kernel / op':<60} {'calls':>5} {'us/iter':>9}"]
    lines += [f"{name[:60]:<60} {calls:>5} {us:>9.1f}" for name, calls, us in rows[:limit]]
    return "\n".join(lines)


def plot_times(times: dict[str, float], title: str = "", unit: str = "us", ax=None):
    """Bar chart of named timings (seconds in, shown in ``unit``)."""
    import matplotlib.pyplot as plt  # lazy: optional, and slow to import

    scale = {"s": 1, "ms": 1e3, "us": 1e6}[unit]
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 2.5))
    names = list(times)
    ax.barh(names, [times[n] * scale for n in names], color="#5b8def")
    ax.set_xlabel(f"median time ({unit})")
    ax.set_title(title)
    ax.invert_yaxis()
    return ax
