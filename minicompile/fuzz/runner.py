"""Run a program in eager and compiled, and say whether they agree (the differential check).

One check compiles the program with one backend and calls it twice, on two sets of inputs of the
same specs (the second call runs from the cache, behind the guards). Each call compares with
eager: the outputs, the inputs afterwards (an in-place op must reach them), and, when an input
requires grad, the gradients of a random weighted sum of the outputs.
"""

from __future__ import annotations

import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import torch

import minicompile as mc
from minicompile import config

from .compare import mismatches
from .program import Program

# backend name on the command line -> (mc.compile backend, config.inductor.cpu_backend)
CPU_BACKENDS = {
    "eager": ("eager", None),
    "aot_eager": ("aot_eager", None),
    "inductor-reference": ("inductor", "reference"),
    "inductor-cpp": ("inductor", "cpp"),
    "inductor-triton": ("inductor", "triton"),
}
GPU_BACKENDS = {"eager": ("eager", None), "aot_eager": ("aot_eager", None),
                "inductor": ("inductor", None)}  # Triton kernels on CUDA tensors


def backends_for(device: str) -> dict[str, tuple[str, str | None]]:
    return CPU_BACKENDS if device == "cpu" else GPU_BACKENDS


@dataclass
class Outcome:
    """``kind``: "ok", "mismatch" (compiled computed something else) or "crash" (compiled
    raised where eager did not, or the other way round)."""

    kind: str
    message: str = ""


@contextmanager
def cpu_backend(name: str | None):
    saved = config.inductor.cpu_backend
    config.inductor.cpu_backend = name or saved
    try:
        yield
    finally:
        config.inductor.cpu_backend = saved


def check_program(program: Program, backend: str, device: str = "cpu", seed: int = 0) -> Outcome:
    """Compile ``program`` with ``backend`` and compare two calls with eager."""
    compile_backend, cpu = backends_for(device)[backend]
    mc.reset()
    compiled = mc.compile(program.function(), backend=compile_backend)
    with cpu_backend(cpu), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fallback warns; it is correct if results agree
        for call in range(2):
            outcome = _check_call(program, compiled, device, seed + call)
            if outcome.kind != "ok":
                outcome.message = f"call {call + 1} of 2: {outcome.message}"
                return outcome
    mc.reset()
    return Outcome("ok")


@dataclass
class Run:
    """What one call did: its outputs, its inputs afterwards, the gradients, or the error."""

    outputs: list = None
    inputs: list = None
    grads: list = None
    error: BaseException | None = None
    where: str = ""


def _check_call(program: Program, compiled: Callable, device: str, seed: int) -> Outcome:
    eager = run(program.function(), program.make_inputs(seed, device), seed)
    actual = run(compiled, program.make_inputs(seed, device), seed)
    if eager.error is not None or actual.error is not None:
        return _compare_errors(eager, actual)
    problems = _problems(eager, actual, None)
    if problems:  # rounding or a real difference: let float64 referee
        reference = run(program.function(), _float64(program.make_inputs(seed, device)), seed)
        perturbed = run(program.function(),
                        _float64(program.make_inputs(seed, device), nudge=True), seed)
        if reference.error is None:
            problems = _problems(eager, actual, reference,
                                 perturbed if perturbed.error is None else None)
    return Outcome("mismatch", "; ".join(problems)) if problems else Outcome("ok")


def _problems(eager: Run, actual: Run, reference: Run | None,
              perturbed: Run | None = None) -> list[str]:
    return [*mismatches("output", eager.outputs, actual.outputs, reference and reference.outputs,
                        perturbed and perturbed.outputs),
            *mismatches("input after the call", eager.inputs, actual.inputs,
                        reference and reference.inputs, perturbed and perturbed.inputs),
            *mismatches("grad", eager.grads or [], actual.grads or [],
                        reference and reference.grads, perturbed and (perturbed.grads or []))]


def _compare_errors(eager: Run, actual: Run) -> Outcome:
    if eager.error is None:
        return Outcome("crash", f"compiled raised in {actual.where}, eager did not:\n"
                       + "".join(traceback.format_exception(actual.error)))
    if actual.error is None:
        return Outcome("mismatch", f"eager raised {eager.error!r} in {eager.where}, "
                       "compiled did not")
    if type(actual.error) is not type(eager.error):
        return Outcome("mismatch", f"eager raised {type(eager.error).__name__}, compiled "
                       f"raised {type(actual.error).__name__}: {actual.error}")
    return Outcome("ok")


def run(fn: Callable, inputs: list[torch.Tensor], seed: int) -> Run:
    """Call ``fn``, then take the gradients of a random weighted sum of its float outputs."""
    result = Run(inputs=inputs)
    try:
        result.outputs = list(fn(*inputs))
    except Exception as e:
        result.error, result.where = e, "the forward"
        return result
    wrt = [t for t in inputs if t.requires_grad]
    outs = [o for o in result.outputs if o.requires_grad]
    if wrt and outs:
        gen = torch.Generator().manual_seed(seed)
        weights = [torch.randn(o.shape, generator=gen).to(o) for o in outs]
        try:
            result.grads = list(torch.autograd.grad(outs, wrt, weights, allow_unused=True))
        except Exception as e:
            result.error, result.where = e, "the backward"
    return result


def _float64(inputs: list[torch.Tensor], nudge: bool = False) -> list[torch.Tensor]:
    """The inputs in float64; ``nudge``: each element moved by about one unit in the last place
    of its own dtype (a fixed pattern of up, down, unchanged), to see whether rounding of that
    size moves the result (an ill-conditioned point)."""
    def widened(t: torch.Tensor) -> torch.Tensor:
        if not t.dtype.is_floating_point:
            return t
        return _nudged(t) if nudge else t.detach().double().requires_grad_(t.requires_grad)
    return [widened(t) for t in inputs]


def _nudged(t: torch.Tensor) -> torch.Tensor:
    x = t.detach().double().contiguous()  # elements sharing memory (stride 0) move apart too
    steps = torch.arange(x.numel(), dtype=torch.float64, device=x.device).remainder(3) - 1
    x = x * (1 + torch.finfo(t.dtype).eps * steps.reshape(x.shape))
    return x.requires_grad_(t.requires_grad)


def runs_in_eager(program: Program, device: str = "cpu", seed: int = 0) -> bool:
    """Whether eager runs ``program`` (forward and backward) without raising."""
    try:
        return run(program.function(), program.make_inputs(seed, device), seed).error is None
    except Exception:  # the text itself is broken (a name the shrinker deleted)
        return False
