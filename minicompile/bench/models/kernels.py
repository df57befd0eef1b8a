"""Where a model's step spends its GPU time: the kernels of one step under eager, real
``torch.compile`` and minicompile, side by side in one process (``torch.profiler``).

    bash course.sh python -m minicompile.bench.models.kernels resnet18 --mode training
    bash course.sh python -m minicompile.bench.models.kernels llama --mode inference --dtype bfloat16 --top 20

A suite's row says how long a step takes; this says why. A step that takes longer than its
kernels is host-bound (the launches, guards and library calls of the Python side); kernels that
take longer than Inductor's are listed by name, the slowest first, so that the one that differs
stands out (a fused kernel's name lists the aten ops it computes). Built the suite's way
(``runner.Runner``: the suite's sizes for the device, SGD inside the training step).
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import torch

import minicompile as mc

from ..helpers import profile_kernels
from . import huggingface, timm_models
from .runner import Runner
from .zoo import SIZES, to_device

COMPILERS: dict[str, Callable[[Callable], Callable]] = {
    "eager": lambda fn: fn,
    "torch.compile": lambda fn: torch.compile(fn, backend="inductor"),
    "minicompile": lambda fn: mc.compile(fn, backend="inductor"),
}


def runner_for(name: str, mode: str, dtype: str, device: str) -> Runner:
    specs = {s.name: s for s in [*huggingface.specs(), *timm_models.specs()]}
    spec = specs[name]
    model, inputs = spec.build(SIZES[device])
    autocast = torch.bfloat16 if dtype == "bfloat16" else None
    return Runner(spec, mode, model.to(device), to_device(inputs, device), autocast)


def step_ms(step: Callable[[], object], steps: int) -> float:
    """Wall time of one step, the device waited for at both ends only."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e3


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bash course.sh python -m minicompile.bench.models.kernels",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a suite model's name (docs/models.md lists them)")
    p.add_argument("--mode", choices=("inference", "training"), default="training")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--steps", type=int, default=5, help="steps profiled (after 3 warm-up steps)")
    p.add_argument("--top", type=int, default=12, help="kernels listed per compiler")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("profiles CUDA kernels: needs a GPU")
    base = runner_for(args.model, args.mode, args.dtype, "cuda")
    print(f"{args.model}, {args.mode}, {args.dtype}, {torch.cuda.get_device_name()}")
    for label, compile_fn in COMPILERS.items():
        runner = base.copy()
        fn = compile_fn(runner.fn)
        step = lambda: runner.step(fn)  # noqa: E731
        for _ in range(3):  # compiles, then the caches settle
            step()
        wall = min(step_ms(step, 10) for _ in range(3))
        # (name, launches, us), slowest first; a CUDA tensor among the arguments makes the
        # profile one of kernels, not of ATen ops
        a_tensor = next(t for t in runner.inputs.values() if isinstance(t, torch.Tensor))
        rows = profile_kernels(lambda _: step(), a_tensor, reps=args.steps)
        total, launches = sum(us for _, _, us in rows) / 1e3, sum(n for _, n, _ in rows)
        print(f"\n{label}: step {wall:.3f} ms, kernels {total:.3f} ms ({launches} launches)")
        for name, n, us in rows[:args.top]:
            print(f"  {us:9.1f} us {n:4d}x  {name[:100]}")


if __name__ == "__main__":
    main()
