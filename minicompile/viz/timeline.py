"""Launch timelines read off a ``torch.profiler`` trace (a course tool: what the profiler's Chrome
trace shows, drawn with matplotlib): when the host runs operators and launches kernels, and
when the GPU runs them.

    spans = launch_timeline(step, "cuda")      # step() profiled a few calls, after two warm-ups
    draw_timeline(ax, spans, "reduce-overhead")
    print(summary(spans, calls=3))

Three lanes: the host's top-level operators (``aten::linear``; what eager's Python calls), the
host's launch calls (``cudaLaunchKernel`` per kernel, or one ``cudaGraphLaunch`` per replayed
graph), and the kernels on the GPU. On a CPU only the first lane has anything in it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

LANES = ("host: operators", "host: launches", "GPU: kernels")
COLOURS = {"host: operators": "tab:blue", "host: launches": "tab:orange",
           "GPU: kernels": "tab:green"}
# runtime and driver calls that put work on a stream: one per kernel, or one per graph
LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
            "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync")


@dataclass(frozen=True)
class Span:
    lane: str  # one of LANES
    name: str
    start_us: float  # from the first event of the trace
    end_us: float


def lane_of(event: Any) -> str | None:
    """Which lane a profiler event belongs to, or None to leave it out."""
    if getattr(event, "device_type", None) == DeviceType.CUDA:
        return "GPU: kernels"
    if event.name.startswith(LAUNCHES):
        return "host: launches"
    if event.name.startswith("aten::") and getattr(event, "cpu_parent", None) is None:
        return "host: operators"
    return None


def launch_timeline(step: Callable[[], Any], device: str, calls: int = 3) -> list[Span]:
    """``step()`` profiled ``calls`` times, after two calls that warm up (and, under
    ``mode="reduce-overhead"``, record)."""
    for _ in range(2):
        step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    if device == "cuda":
        torch.cuda.synchronize()
    with profile(activities=activities) as prof:
        for _ in range(calls):
            step()
        if device == "cuda":
            torch.cuda.synchronize()
    rows = [(lane_of(e), e) for e in prof.events()]
    rows = [(lane, e) for lane, e in rows if lane is not None]
    if not rows:
        return []
    origin = min(e.time_range.start for _, e in rows)
    return sorted((Span(lane, e.name, e.time_range.start - origin, e.time_range.end - origin)
                   for lane, e in rows), key=lambda s: (LANES.index(s.lane), s.start_us))


def summary(spans: list[Span], calls: int) -> str:
    """Per call: the span of the trace, the host's operators and launches, the GPU's kernels."""
    if not spans:
        return "no events"
    count = Counter(s.lane for s in spans)
    wall = max(s.end_us for s in spans) - min(s.start_us for s in spans)
    busy = sum(s.end_us - s.start_us for s in spans if s.lane == "GPU: kernels")
    parts = [f"{wall / calls:7.1f} us per call", *(f"{count[lane] / calls:5.1f} {lane}"
                                                   for lane in LANES)]
    if count["GPU: kernels"]:
        parts.append(f"GPU busy {100 * busy / wall:4.1f}% of the time")
    return ", ".join(parts)


def draw_timeline(ax: Any, spans: list[Span], title: str) -> None:
    """One row of bars per lane, time in microseconds."""
    for row, lane in enumerate(LANES):
        bars = [(s.start_us, max(s.end_us - s.start_us, 0.5)) for s in spans if s.lane == lane]
        ax.broken_barh(bars, (row - 0.4, 0.8), color=COLOURS[lane])
    ax.set_yticks(range(len(LANES)), LANES)
    ax.set_xlabel("microseconds")
    ax.set_title(title, fontsize=10)
