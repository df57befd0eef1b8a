"""Guards and recompiles, shown and measured (notebook 02's helpers).

    from minicompile.viz.guards import torch_guards, recompile_timeline, plot_recompile_timelines
    print(torch_guards(fn, x, dynamic=True))     # real torch.compile's guard tree for the same fn
    timeline = recompile_timeline(fn, inputs, dynamic=None)   # compiles so far, after each call
"""

from __future__ import annotations

import logging
import re
import timeit
from typing import Any, Callable, Sequence

import torch

import minicompile as mc
from ..dynamo.eval_frame import cache_entries, frame_locals
from ..metrics import metrics


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def torch_guards(fn: Callable, *args: Any, dynamic: bool | None = None) -> str:
    """The guard tree real ``torch.compile`` builds for ``fn(*args)`` (what TORCH_LOGS=guards
    prints), with object ids and torch-internal file references removed for readability."""
    import torch._dynamo  # lazy: real Dynamo is only needed for this comparison

    capture = _Capture()
    loggers = [logging.getLogger(n) for n in ("torch.__guards", "torch._dynamo.guards")]
    torch._logging.set_logs(guards=True)
    for lg in loggers:
        lg.addHandler(capture)
    saved = [lg.propagate for lg in loggers]
    for lg in loggers:
        lg.propagate = False  # keep torch's own stderr copy out of the notebook
    try:
        torch._dynamo.reset()
        torch.compile(fn, backend="eager", dynamic=dynamic)(*args)
    finally:
        torch._logging.set_logs()
        for lg, p in zip(loggers, saved):
            lg.removeHandler(capture)
            lg.propagate = p
        torch._dynamo.reset()
    trees = [m for m in capture.messages if "TREE_GUARD_MANAGER" in m]
    text = trees[-1] if trees else "\n".join(capture.messages)
    text = re.sub(r"___check_type_id\((.*?), \d+\)", r"___check_type_id(\1, <id>)", text)
    text = re.sub(r"___check_obj_id\((.*?), \d+\)", r"___check_obj_id(\1, <id>)", text)
    text = re.sub(r"GLOBAL_STATE: ___check_global_state\(\) against \{.*\}",
                  "GLOBAL_STATE: ___check_global_state() against {grad_mode, default_dtype, ...}",
                  text)
    return text.strip()


def recompile_timeline(compiled_fn: Callable, inputs: Sequence[tuple]) -> list[int]:
    """Call ``compiled_fn(*args)`` for each args tuple; return ``mc.metrics.frames_compiled``
    after each call (a flat line means cache hits, a step means a recompile)."""
    counts = []
    for args in inputs:
        compiled_fn(*args)
        counts.append(metrics.frames_compiled)
    return counts


def plot_recompile_timelines(timelines: dict[str, list[int]], sizes: Sequence[int],
                             title: str = "compiles as the input size changes", ax=None):
    """One step line per configuration: x = call number (labelled with the size), y = compiles."""
    import matplotlib.pyplot as plt  # lazy: optional, and slow to import

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    for label, counts in timelines.items():
        ax.step(range(len(counts)), counts, where="post", marker="o", label=label)
    ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    ax.set_xlabel("input size of each call")
    ax.set_ylabel("frames compiled so far")
    ax.set_title(title)
    ax.legend()
    return ax


def guard_check_cost(input_counts: Sequence[int], reps: int = 2000) -> list[tuple[int, float]]:
    """(number of guards, microseconds per guard check) for a function of N tensor inputs:
    compile it once, then time its cache entry's guard function alone."""
    def add_all(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out

    rows = []
    for n in input_counts:
        mc.reset()
        cfn = mc.compile(add_all, backend="eager", dynamic=False)
        xs = [torch.randn(4) for _ in range(n)]
        cfn(*xs)
        guard = cache_entries(cfn)[0].guard
        L, G = frame_locals(add_all, tuple(xs), {}), add_all.__globals__
        seconds = timeit.timeit(lambda: guard(L, G), number=reps) / reps
        rows.append((len(guard.guards), seconds * 1e6))
    mc.reset()
    return rows


def plot_guard_cost(rows: list[tuple[int, float]], label: str = "minicompile (Python)", ax=None):
    import matplotlib.pyplot as plt  # lazy: optional, and slow to import

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3))
    ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-", label=label)
    ax.set_xlabel("guards in the check function")
    ax.set_ylabel("µs per check")
    ax.set_title("cost of checking guards, per call")
    ax.legend()
    return ax
