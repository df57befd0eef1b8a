"""Where a GPU-bound step's time goes, kernel by kernel, per compiler (``--suite overhead``'s
cases, or a model of the suites): the GPU time per step from ``torch.profiler`` and the kernels
that take most of it, beside the step's wall time (a step whose wall time is well above its GPU
time is bound by the host: the Python between launches, not the kernels).

    python -m minicompile.bench.kernel_profile encoder_block_train      # on the GPU
    python -m minicompile.bench.kernel_profile --model regnetx_002 --dtype bfloat16

A wall-clock ratio says which compiler is faster; this says which kernels make the
difference (the library's matmuls are the same in every compiler: the rest is each one's own).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
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


def wall_us(step: Callable[[], Any], steps: int = 30) -> float:
    """Microseconds of one step, synchronised at the end of ``steps`` of them."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e6


def per_compiler(step_with: Callable[[Callable], Callable[[], Any]]
                 ) -> dict[str, Callable[[], Callable[[], Any]]]:
    """Label -> a maker of one step run through that compiler (eager first): ``step_with``
    takes the compiler's ``compile`` and is called only when ``table`` has reset the caches."""
    return {label: functools.partial(step_with, compile_)
            for label, compile_ in {"eager": ("eager", lambda f: f), **COMPILERS}.values()}


def report(name: str, top: int = 12) -> str:
    fn, args, trains = CASES[name].make("cuda")
    params = getattr(fn, "parameters", lambda: [])
    return table(CASES[name].name, per_compiler(
        lambda compile_: step_of(compile_(fn), args, trains, params)), top)


def model_report(name: str, mode: str, dtype: str, top: int = 12, size: str = "cuda",
                 device: str = "cuda") -> str:
    """One model of the suites (``--suite huggingface|timm``) at the benchmark's CUDA size, as
    the model benchmark runs it: each compiler on its own copy of the model."""
    from .models.cli import SUITES
    from .models.runner import Runner
    from .models.zoo import SIZES, to_device

    spec = next((s for suite in SUITES.values() for s in suite() if s.name == name), None)
    if spec is None:
        raise SystemExit(f"no model {name!r} in the suites")
    if spec.unavailable:
        raise SystemExit(f"{name}: {spec.unavailable}")
    model, inputs = spec.build(SIZES[size])
    base = Runner(spec, mode, model.to(device), to_device(inputs, device),
                  torch.bfloat16 if dtype == "bfloat16" else None)

    def step_with(compile_: Callable) -> Callable[[], Any]:
        runner, compiled = base.copy(), compile_(base.fn)
        return lambda: runner.step(compiled)

    return table(f"{name}, {mode}, {dtype}", per_compiler(step_with), top)


def table(title: str, makers: dict[str, Callable[[], Callable[[], Any]]], top: int) -> str:
    """Each compiler's GPU time and wall time per step, and its ``top`` kernels by GPU time."""
    lines = [f"{title}: per step, GPU time (torch.profiler) and wall time"]
    for label, make in makers.items():
        torch._dynamo.reset()
        mc.reset()
        step = make()
        times = kernel_times(step)
        total = sum(us for _, us in times.values())
        launches = sum(n for n, _ in times.values())
        lines.append(f"  {label:32s} {total:8.0f} us GPU  {launches:4.0f} kernels  "
                     f"{wall_us(step):8.0f} us wall")
        for kernel, (n, us) in sorted(times.items(), key=lambda kv: -kv[1][1])[:top]:
            lines.append(f"      {us:8.1f} us  x{n:<4.1f} {kernel[:90]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m minicompile.bench.kernel_profile",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="case",
                        help=f"cases of --suite overhead (default: all): {', '.join(CASES)}")
    parser.add_argument("--top", type=int, default=12, help="kernels listed per compiler")
    parser.add_argument("--model", action="append", default=[], metavar="NAME",
                        help="a model of --suite huggingface|timm instead (repeatable)")
    parser.add_argument("--mode", choices=["inference", "training"], default="inference")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                        help="bfloat16: autocast, as the model benchmark runs it")
    args = parser.parse_args(argv)
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"no such case: {', '.join(unknown)} (choose from {', '.join(CASES)})")
    if not torch.cuda.is_available():
        sys.exit("kernel_profile needs a GPU")
    for model in args.model:
        print(model_report(model, args.mode, args.dtype, args.top))
    for case in args.cases or ([] if args.model else list(CASES)):
        print(report(case, args.top))


if __name__ == "__main__":
    main()
