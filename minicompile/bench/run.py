"""Runs one benchmark case: eager, real ``torch.compile`` and minicompile in one process.

For each compiler: drop its caches, compile, time the first call (cold compile), check the result
against eager (outputs, and gradients for training), and only then time it. A compiler whose
result differs is reported as WRONG and not timed; one that raises is reported as ERROR.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

import minicompile as mc

from .cases import Workload
from .timing import cold_inductor, cold_minicompile, first_call_s, time_and_spread_in_turns


@dataclass
class Compiler:
    name: str
    reset: Callable[[], None]
    compile: Callable[[Callable], Callable]
    cold: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext


COMPILERS: dict[str, Compiler] = {  # key -> how to compile cold; eager is the baseline
    "tc": Compiler("torch.compile", torch._dynamo.reset,
                   lambda fn: torch.compile(fn, backend="inductor"), cold_inductor),
    "mc": Compiler("minicompile", mc.reset, lambda fn: mc.compile(fn, backend="inductor"),
                   cold_minicompile),
}

# ``--index-checks``: minicompile again with its Triton kernels' device asserts compiled in (the
# debug flag, ``config.inductor.triton_device_asserts``), timed in the same turns, so the cost of
# the checks is a ratio of one process (C++ kernels check always: on the CPU the two are alike)
CHECKED = Compiler("minicompile, index checks on", mc.reset,
                   lambda fn: mc.compile(fn, backend="inductor",
                                         options={"triton_device_asserts": True}),
                   cold_minicompile)


@dataclass
class Result:
    case: str
    size: str
    kind: str                                             # memory | compute | train
    bytes: int = 0                                        # fewest bytes one step must move
    flops: float = 0.0
    ms: dict[str, float] = field(default_factory=dict)    # eager / tc / mc -> median ms
    spread: dict[str, float] = field(default_factory=dict)  # eager / tc / mc -> timing.spread
    cold_s: dict[str, float] = field(default_factory=dict)  # tc / mc -> first-call seconds
    status: dict[str, str] = field(default_factory=dict)  # tc / mc -> ok | WRONG | ERROR
    notes: list[str] = field(default_factory=list)

    def ratio(self, key: str, base: str) -> float | None:
        """``ms[key] / ms[base]``: below 1 means ``key`` is faster."""
        if key in self.ms and base in self.ms:
            return self.ms[key] / self.ms[base]
        return None

    def gbs(self, key: str) -> float | None:
        return self.bytes / (self.ms[key] * 1e-3) / 1e9 if key in self.ms else None

    def tflops(self, key: str) -> float | None:
        return self.flops / (self.ms[key] * 1e-3) / 1e12 if key in self.ms else None


def check(workload: Workload, out: Any, expected: list[torch.Tensor]) -> None:
    rtol, atol = workload.tolerance()
    torch.testing.assert_close(workload.results(out), expected, rtol=rtol, atol=atol)


def steps_per_case(compilers: dict[str, Compiler]) -> int:
    return 2 + 2 * len(compilers)  # eager check, compile each, time eager and each


STEPS_PER_CASE = steps_per_case(COMPILERS)


def run_case(name: str, workload: Workload, device: str, budget: str,
             progress: Callable[[str], None],
             compilers: dict[str, Compiler] | None = None) -> Result:
    """Check and time eager and each of ``compilers`` (default: ``COMPILERS``) on ``workload``."""
    compilers = COMPILERS if compilers is None else compilers
    result = Result(name, workload.size, workload.kind, flops=workload.flops)
    workload.restore()
    expected = workload.results(workload.step(workload.fn))  # eager is the oracle
    if workload.kind == "memory":
        result.bytes = workload.min_bytes(expected)
    progress(f"{name} {workload.size}: eager")
    runnable: dict[str, Callable] = {"eager": workload.fn}
    for key, compiler in compilers.items():
        progress(f"{name} {workload.size}: compile {compiler.name}")
        compiler.reset()
        try:
            compiled = compiler.compile(workload.fn)
            workload.restore()  # an in-place step starts from the inputs eager started from
            with compiler.cold():
                out, result.cold_s[key] = first_call_s(lambda: workload.step(compiled), device)
            check(workload, out, expected)
        except AssertionError as e:  # assert_close: wrong answer, never timed
            result.status[key] = "WRONG"
            result.notes.append(f"{compiler.name} WRONG: {_first_line(e)}")
            continue
        except Exception as e:  # noqa: BLE001 -- one broken case must not stop the run
            result.status[key] = "ERROR"
            result.notes.append(f"{compiler.name} ERROR: {type(e).__name__}: {_first_line(e)}")
            continue
        result.status[key] = "ok"
        runnable[key] = compiled
    for key in ("eager", *compilers):
        if key not in runnable:
            progress(f"{name} {workload.size}: {key} not timed")
    steps = {key: (lambda fn=fn: workload.step(fn)) for key, fn in runnable.items()}
    def started(key: str) -> None:
        progress(f"{name} {workload.size}: timing {key}")

    timed = time_and_spread_in_turns(steps, device, budget, started)
    result.ms = {key: ms for key, (ms, _) in timed.items()}
    result.spread = {key: sp for key, (_, sp) in timed.items()}
    return result


def warm_up(device: str, compilers: dict[str, Compiler] | None = None) -> None:
    """Compile a throwaway function once with each compiler, so one-time costs of the process
    (imports, worker pools, C++ toolchain checks) don't land in the first case's cold
    compile time."""
    def throwaway(x):  # a pointwise kernel and a reduction (several candidate configs)
        return (x * 2 + 1).softmax(-1)

    if device == "cuda":  # minicompile's Triton compile workers; Inductor starts its pool itself
        from ..inductor.options import InductorOptions
        from ..inductor.runtime import compile_workers
        compile_workers.start(InductorOptions.build().compile_workers, wait=True)
    x = torch.randn(8, 64, device=device)
    for compiler in (COMPILERS if compilers is None else compilers).values():
        compiler.reset()
        compiler.compile(throwaway)(x)
        compiler.reset()


def _first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return "; ".join(lines[:3])[:300]
