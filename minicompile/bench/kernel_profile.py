"""Where a GPU-bound step's time goes, kernel by kernel, per compiler (``--suite overhead``'s
cases): the GPU time per step from ``torch.profiler`` and the kernels that take most of it.

    python -m minicompile.bench.kernel_profile encoder_block_train      # on the GPU

A wall-clock ratio says which compiler is faster; this says which kernels make the
difference (the library's matmuls are the same in every compiler: the rest is each one's own).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile

import minicompile as mc

from .overhead import CASES, COMPILERS, step_of

STEPS = 10  # profiled steps, after five that warm up (and record)


def kernel_times(step: Callable[[], Any], steps: int = STEPS) -> dict[str, tuple[float, float]]:
    """Kernel name -> (launches per step, GPU microseconds per step)."""
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    rows: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            row = rows.setdefault(event.name, [0, 0.0])
            row[0] += 1
            row[1] += event.device_time_total
    return {name: (n / steps, us / steps) for name, (n, us) in rows.items()}


def report(name: str, top: int = 12) -> str:
    fn, args, trains = CASES[name].make("cuda")
    params = getattr(fn, "parameters", lambda: [])
    lines = [f"{CASES[name].name}: GPU time per step"]
    for key, (label, compile_) in {"eager": ("eager", lambda f: f), **COMPILERS}.items():
        torch._dynamo.reset()
        mc.reset()
        times = kernel_times(step_of(compile_(fn), args, trains, params))
        total = sum(us for _, us in times.values())
        launches = sum(n for n, _ in times.values())
        lines.append(f"  {label:32s} {total:8.0f} us  {launches:4.0f} kernels")
        for kernel, (n, us) in sorted(times.items(), key=lambda kv: -kv[1][1])[:top]:
            lines.append(f"      {us:8.1f} us  x{n:<4.1f} {kernel[:90]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m minicompile.bench.kernel_profile",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="case",
                        help=f"cases of --suite overhead (default: all): {', '.join(CASES)}")
    parser.add_argument("--top", type=int, default=12, help="kernels listed per compiler")
    args = parser.parse_args(argv)
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"no such case: {', '.join(unknown)} (choose from {', '.join(CASES)})")
    if not torch.cuda.is_available():
        sys.exit("kernel_profile needs a GPU")
    for case in args.cases or list(CASES):
        print(report(case, args.top))


if __name__ == "__main__":
    main()
