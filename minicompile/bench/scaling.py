"""Compile time against graph size (``--suite scaling``): does compiling stay linear as a model
grows? Real Inductor's answer is in the same table (the role of PyTorch's compile-time
dashboard, which reports compilation seconds and peak memory per model).

Two families, each a training step (forward and backward, so the backward graph's compile is
part of the first call), at growing sizes:

    mlp    N layers of Linear(64, 64) + ReLU, loss = out.sum()                N = 25 .. 200
    lstm   an LSTM cell unrolled T steps (gates = x@W + h@U + b, chunked in 4,  T = 4 .. 64
           sigmoid/tanh, c = f*c + i*g, h = o*tanh(c)), loss = sum of the h's

For each compiler: reset its caches, turn its on-disk caches off (``timing.cold_*``), time the
first forward + backward call and record the peak resident memory the process reached above
its level before the call (sampled; compiler subprocesses such as g++ are not counted); then
check the loss and the gradients against eager. ``per unit`` divides the seconds by N or T:
a flat column is linear growth.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

from .run import COMPILERS, _first_line

SIZES = {"mlp": [25, 50, 100, 200], "lstm": [4, 8, 16, 32, 64]}
UNIT = {"mlp": "N", "lstm": "T"}
WIDTH, BATCH = 64, 16  # the MLP's
HIDDEN, LSTM_BATCH = 32, 8  # the LSTM's


def lstm_steps(steps: int) -> Callable:
    def step(x, h, c, W, U, b):  # x: (T, B, H)
        loss = x.new_zeros(())
        for t in range(steps):
            gates = x[t] @ W + h @ U + b  # (B, 4H)
            i, f, g, o = gates.chunk(4, 1)
            i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
            c = f * c + i * g
            h = o * c.tanh()
            loss = loss + h.sum()
        return loss
    return step


@dataclass
class Training:
    """One training step to compile: ``fn(*args)`` returns a scalar loss; ``params`` get grads."""

    fn: Callable
    args: tuple
    params: list[torch.Tensor]

    def step(self, fn: Callable) -> list[torch.Tensor]:
        for p in self.params:
            p.grad = None
        loss = fn(*self.args)
        loss.backward()
        return [loss.detach()] + [p.grad.clone() for p in self.params]


def make(family: str, size: int) -> Training:
    torch.manual_seed(0)
    if family == "mlp":
        layers = [m for _ in range(size) for m in (nn.Linear(WIDTH, WIDTH), nn.ReLU())]
        model = nn.Sequential(*layers)
        return Training(lambda x: model(x).sum(), (torch.randn(BATCH, WIDTH),),
                        list(model.parameters()))
    x, h, c = (torch.randn(size, LSTM_BATCH, HIDDEN), torch.zeros(LSTM_BATCH, HIDDEN),
               torch.zeros(LSTM_BATCH, HIDDEN))
    W, U = (torch.randn(HIDDEN, 4 * HIDDEN) / HIDDEN ** 0.5 for _ in range(2))
    params = [W.requires_grad_(), U.requires_grad_(), torch.zeros(4 * HIDDEN, requires_grad=True)]
    return Training(lstm_steps(size), (x, h, c, *params), params)


class PeakRSS:
    """Peak resident memory of this process while the ``with`` block runs, above its level at
    the start (``/proc/self/statm``, sampled every 20 ms)."""

    def __enter__(self) -> "PeakRSS":
        self.start = self.peak = self._rss()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def mib(self) -> float:
        return (self.peak - self.start) / 2**20

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, self._rss())

    @staticmethod
    def _rss() -> int:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * 4096
        except OSError:  # not Linux: no memory column
            return 0


@dataclass
class ScalingResult:
    family: str
    size: int
    seconds: dict[str, float] = field(default_factory=dict)  # tc / mc -> first-call seconds
    peak_mib: dict[str, float] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)  # ok | WRONG | ERROR | skipped
    notes: list[str] = field(default_factory=list)


def measure(family: str, size: int, compilers: list[str]) -> ScalingResult:
    result = ScalingResult(family, size)
    work = make(family, size)
    expected = work.step(work.fn)  # eager is the oracle
    for key in compilers:
        compiler = COMPILERS[key]
        compiler.reset()
        gc.collect()
        try:
            compiled = compiler.compile(work.fn)
            with compiler.cold(), PeakRSS() as memory:
                start = time.perf_counter()
                out = work.step(compiled)
                result.seconds[key] = time.perf_counter() - start
            result.peak_mib[key] = memory.mib
            torch.testing.assert_close(out, expected, rtol=1e-3, atol=1e-3)
            result.status[key] = "ok"
        except AssertionError as e:
            result.status[key] = "WRONG"
            result.notes.append(f"{compiler.name} WRONG: {_first_line(e)}")
        except Exception as e:  # noqa: BLE001 -- one broken size must not stop the run
            result.status[key] = "ERROR"
            result.notes.append(f"{compiler.name} ERROR: {type(e).__name__}: {_first_line(e)}")
        compiler.reset()
    return result


def plan(max_size: int | None, families: list[str]) -> list[tuple[str, int]]:
    return [(f, n) for f in families for n in SIZES[f] if max_size is None or n <= max_size]


COLUMNS = ["case", "size", "tc s", "mc s", "mc/tc", "tc s/unit", "mc s/unit", "tc MiB", "mc MiB"]


def _cell(r: ScalingResult, key: str, value: float | None, fmt: str) -> str:
    if r.status.get(key) not in (None, "ok"):
        return r.status[key]
    return "-" if value is None else format(value, fmt)


def row(r: ScalingResult) -> list[str]:
    tc, mc = r.seconds.get("tc"), r.seconds.get("mc")
    ratio = mc / tc if tc and mc and r.status.get("tc") == r.status.get("mc") == "ok" else None
    return [r.family, f"{UNIT[r.family]}={r.size}", _cell(r, "tc", tc, ".1f"),
            _cell(r, "mc", mc, ".1f"), "-" if ratio is None else f"{ratio:.2f}",
            _cell(r, "tc", tc and tc / r.size, ".3f"), _cell(r, "mc", mc and mc / r.size, ".3f"),
            _cell(r, "tc", r.peak_mib.get("tc"), ".0f"), _cell(r, "mc", r.peak_mib.get("mc"), ".0f")]


def format_table(results: list[ScalingResult]) -> str:
    rows = [COLUMNS] + [row(r) for r in results]
    widths = [max(len(rw[i]) for rw in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(cells, widths))) for cells in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"  {r.family} {UNIT[r.family]}={r.size}: {n}" for r in results for n in r.notes]
    legend = ("s: first forward + backward call after a reset, caches off (compile of both "
              "graphs, and one run); s/unit: seconds per layer or step (flat = linear); MiB: "
              "peak resident memory above the level before the call")
    return "\n".join(lines + (["", "notes:", *notes] if notes else []) + ["", legend])


def run(max_size: int | None, families: list[str], compilers: list[str]) -> list[ScalingResult]:
    results = []
    for family, size in plan(max_size, families):
        print(f"scaling: {family} {UNIT[family]}={size}", file=sys.stderr, flush=True)
        results.append(measure(family, size, compilers))
    return results


__all__ = ["SIZES", "make", "measure", "run", "format_table", "PeakRSS", "lstm_steps"]
