"""Launch-bound work (``--suite overhead``): what CUDA graphs are for.

    python -m minicompile.bench --suite overhead            # on the GPU
    python -m minicompile.bench --suite overhead --quick

Each case is timed (wall clock per call, in turns: ``wall_ms_in_turns``), in one process, as eager, real ``torch.compile`` in its default mode and
with ``mode="reduce-overhead"``, and minicompile in both modes; outputs are checked against
eager first. A tiny MLP's kernels take a few microseconds each: the host's work per kernel
(Python, argument packing, the launch) is most of a call, and a replayed CUDA graph pays it
once per graph. On a CPU there are no CUDA graphs: the reduce-overhead rows run as compiled code
(the stage says why: ``MINICOMPILE_LOGS=cudagraphs``).
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

import minicompile as mc

from .timing import ROUNDS, sync, time_in_turns


# key -> (label, how to compile): eager is the baseline
COMPILERS: dict[str, tuple[str, Callable[[Callable], Callable]]] = {
    "tc": ("torch.compile", lambda f: torch.compile(f)),
    "tc_ro": ("torch.compile reduce-overhead", lambda f: torch.compile(f, mode="reduce-overhead")),
    "mc": ("minicompile", lambda f: mc.compile(f)),
    "mc_ro": ("minicompile reduce-overhead", lambda f: mc.compile(f, mode="reduce-overhead")),
}


@dataclass
class Case:
    """``make(device)`` -> (the step to compile, its arguments, whether it trains)."""

    name: str
    make: Callable[[str], tuple[Callable, tuple, bool]]


def tiny_mlp(device: str) -> tuple[Callable, tuple, bool]:
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(device).eval()
    return model, (torch.randn(8, 64, device=device),), False


def encoder_block_train(device: str) -> tuple[Callable, tuple, bool]:
    block = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True,
                                             device=device)

    def loss(x: torch.Tensor) -> torch.Tensor:
        return block(x).square().mean()
    loss.parameters = block.parameters  # (the step zeroes these)
    return loss, (torch.randn(8, 256, 768, device=device),), True


CASES = {"tiny_mlp": Case("tiny MLP (4 x Linear(64, 64) + ReLU, batch 8), inference", tiny_mlp),
         "encoder_block_train": Case("encoder block (batch 8, 256 tokens, width 768), "
                                     "training step", encoder_block_train)}


def step_of(fn: Callable, args: tuple, trains: bool, params: Callable) -> Callable[[], Any]:
    if not trains:
        def infer() -> Any:
            with torch.no_grad():
                return fn(*args)
        return infer

    def train() -> Any:
        for p in params():
            p.grad = None
        out = fn(*args)
        out.backward()
        return out.detach()
    return train


def run(case: Case, device: str, budget: str,
        compilers: dict[str, tuple[str, Callable]] | None = None) -> dict[str, Any]:
    """Eager and each of ``compilers`` (default: all of ``COMPILERS``) on ``case``, checked
    against eager, then timed in turns."""
    fn, args, trains = case.make(device)
    params = getattr(fn, "parameters", lambda: [])
    steps = {"eager": step_of(fn, args, trains, params)}
    expected = steps["eager"]()
    status = {}
    for key, (_, compile_) in (COMPILERS if compilers is None else compilers).items():
        torch._dynamo.reset()
        mc.reset()
        step = step_of(compile_(fn), args, trains, params)
        try:
            for _ in range(3):  # warm up, record, replay
                out = step()
            torch.testing.assert_close(out, expected, rtol=2e-3, atol=2e-3)
            steps[key], status[key] = step, "ok"
        except Exception as error:  # noqa: BLE001 (reported in the table, not fatal)
            status[key] = f"{type(error).__name__}: {str(error).splitlines()[0][:80]}"
    ms = wall_ms_in_turns(steps, device, budget)
    return {"case": case.name, "ms": ms, "status": status}


def wall_ms_in_turns(steps: dict[str, Callable[[], Any]], device: str,
                     budget: str) -> dict[str, float]:
    """Milliseconds per step by the wall clock, over back-to-back calls ended by one
    synchronisation: the host's pace, which is what launch-bound work is bound by (do_bench
    would put a cache-clearing kernel, and its launch, between calls). The steps take turns,
    ``ROUNDS`` times, each step's median over the rounds. CPU: ``time_in_turns``."""
    if device != "cuda":
        return time_in_turns(steps, device, budget)
    calls = 50 if budget == "quick" else 200
    rounds: dict[str, list[float]] = {key: [] for key in steps}
    for _ in range(ROUNDS):
        for key, step in steps.items():
            for _ in range(5):
                step()
            sync(device)
            start = time.perf_counter()
            for _ in range(calls):
                step()
            sync(device)
            rounds[key].append((time.perf_counter() - start) / calls * 1e3)
    return {key: statistics.median(ms) for key, ms in rounds.items()}


def format_table(rows: list[dict[str, Any]]) -> str:
    keys = ["eager", *COMPILERS]
    head = "| case | " + " | ".join(f"{k} ms" for k in keys) + \
        " | mc_ro / tc_ro | mc_ro / mc |\n|---|" + "---|" * (len(keys) + 2)
    lines = [head]
    for r in rows:
        ms = r["ms"]
        cells = [f"{ms[k]:.3f}" if k in ms else r["status"].get(k, "-") for k in keys]

        def ratio(a: str, b: str) -> str:
            return f"{ms[a] / ms[b]:.2f}" if a in ms and b in ms else "-"
        lines.append(f"| {r['case']} | " + " | ".join(cells) +
                     f" | {ratio('mc_ro', 'tc_ro')} | {ratio('mc_ro', 'mc')} |")
    return "\n".join(lines)


def main(device: str, budget: str, cases: list[str] | None = None) -> int:
    names = cases or list(CASES)
    if device != "cuda":
        print("no GPU: CUDA graphs cannot be recorded here, so the reduce-overhead rows run "
              "as compiled code", file=sys.stderr)
    rows = []
    for name in names:
        print(f"[overhead] {name}", file=sys.stderr)
        rows.append(run(CASES[name], device, budget))
    print(format_table(rows))
    return 0
