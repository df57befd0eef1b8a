"""Timing and profiling helpers shared by the notebooks (the role of torch/_inductor/utils.py's
``do_bench`` and ``torch.utils.benchmark``, kept small and visible).

    from minicompile.bench import benchmark, profile_kernels, plot_times, bandwidth_table
    times = {"eager": benchmark(fn, x), "minicompile": benchmark(cfn, x)}
    plot_times(times, title="fn on CPU")
    print(bandwidth_table(times, nbytes, copy_gbs=copy_bandwidth(x)))

Timings use the benchmark's method (``timing.py``): on the GPU ``triton.testing.do_bench``
(CUDA events, the L2 cache flushed between calls), on the CPU ``torch.utils.benchmark`` medians,
never one wall-clock reading per call. A timing is something to look at, never something a test
asserts.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any, Callable, Iterable, Iterator

import torch
from torch.autograd import DeviceType

from .timing import NOISY_SPREAD, copy_bandwidth_gbs, time_ms_spread


def device_of(args: Iterable[Any]) -> str:
    """``"cuda"`` when any argument is a CUDA tensor, else ``"cpu"``."""
    return "cuda" if any(isinstance(a, torch.Tensor) and a.is_cuda for a in args) else "cpu"


def benchmark(fn: Callable, *args: Any, device: str | None = None,
              budget: str = "quick") -> float:
    """Median seconds of one ``fn(*args)``, after a warm-up call (which also compiles).

    ``device`` defaults to where the tensor arguments live; pass it for a closure without
    arguments. ``budget`` is the benchmark's ("full", "quick", "tiny")."""
    device = device or device_of(args)
    ms, spread = time_ms_spread(lambda: fn(*args), device, budget)
    say_if_noisy(getattr(fn, "__name__", "fn"), spread)
    return ms / 1e3


def say_if_noisy(what: str, spread: float) -> None:
    """A line under a notebook's timing when its repeats disagree (``timing.spread`` above
    ``NOISY_SPREAD``): the number then says more about the machine than about the code."""
    if spread > NOISY_SPREAD:
        print(f"(noisy: {what}'s repeats spread by {spread:.0%}: something else ran on the "
              "machine; time it again before trusting it)")


def copy_bandwidth(like: torch.Tensor, budget: str = "quick") -> float:
    """GB/s of a device-to-device copy as large as ``like`` (bytes read + written): the most a
    memory-bound kernel can reach on this machine, measured in the same run."""
    return copy_bandwidth_gbs(like.device.type, like.numel(), budget)


FASTER_THAN_COPY = 1.2  # above this fraction of copy bandwidth a memory-bound time is suspect


def bandwidth_table(times: dict[str, float], nbytes: dict[str, int] | int,
                    copy_gbs: float) -> str:
    """One line per timing: milliseconds, achieved GB/s for ``nbytes`` (one count for all, or one
    per name: the bytes that implementation must move), and the percentage of copy bandwidth."""
    lines = [f"{'':32} {'ms':>9} {'GB/s':>8} {'% of copy':>9}"]
    for name, seconds in times.items():
        moved = nbytes[name] if isinstance(nbytes, dict) else nbytes
        gbs = moved / seconds / 1e9
        suspect = " ?" if gbs > FASTER_THAN_COPY * copy_gbs else ""
        lines.append(f"{name:32} {seconds * 1e3:9.3f} {gbs:8.1f} {gbs / copy_gbs:9.0%}{suspect}")
    lines.append(f"{'copy bandwidth (measured)':32} {'':>9} {copy_gbs:8.1f} {1:9.0%}")
    if any(line.endswith(" ?") for line in lines):
        lines.append("? faster than copying as many bytes: the data stays in cache, or the copy "
                     "was timed on a busy machine; not a measure of memory bandwidth")
    return "\n".join(lines)


@contextlib.contextmanager
def quiet_profiler() -> Iterator[None]:
    """The profiler's own chatter stays out of notebooks: its Python warning about cleared
    events, and the ``USDT ... profiler_start/stop`` lines its C++ side writes to file
    descriptor 2 (below Python's ``sys.stderr``, so only redirecting the descriptor hides them).
    """
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def profile_kernels(fn: Callable, *args: Any, reps: int = 5) -> list[tuple[str, int, float]]:
    """Run ``fn`` under torch.profiler; return (kernel or op name, calls, microseconds per
    iteration), most expensive first: the GPU kernels when the arguments are on the GPU,
    otherwise the CPU ATen ops."""
    from torch.profiler import ProfilerActivity, profile

    fn(*args)  # warm up: compile, allocate, autotune outside the profile
    on_gpu = device_of(args) == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with quiet_profiler(), profile(activities=activities) as prof:
        for _ in range(reps):
            fn(*args)
        if on_gpu:
            torch.cuda.synchronize()
    return kernel_rows(prof.key_averages(), reps, on_gpu)


# Device activity that is not a kernel of the program: runtime calls and copies the profiler
# records on the GPU timeline too.
NOT_KERNELS = ("cuda", "Memcpy", "Memset", "Activity")


def kernel_rows(events: Iterable[Any], reps: int, on_gpu: bool) -> list[tuple[str, int, float]]:
    """(name, calls per iteration, microseconds per iteration) from ``key_averages()``.

    On the GPU only the kernels themselves count: an ATen op (``aten::mm``) also carries the
    device time of the kernels it launched, so keeping it would list every op twice, once as the
    ATen op and once as its kernel. Kernels are the events whose device type is CUDA."""
    rows = []
    for evt in events:
        if on_gpu:
            if evt.device_type != DeviceType.CUDA or evt.key.startswith(NOT_KERNELS):
                continue
            us = evt.self_device_time_total
        else:
            if not evt.key.startswith("aten::"):
                continue
            us = evt.self_cpu_time_total
        if us > 0:
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
