"""Run a program in eager and compiled, and say whether they agree (the differential check).

One check compiles the program with one backend and calls it twice, on two sets of inputs of the
same specs (the second call runs from the cache, behind the guards). Each call compares with
eager: the outputs, the inputs afterwards (an in-place op must reach them), and, when an input
requires grad, the gradients of a random weighted sum of the outputs.
"""

from __future__ import annotations

import re
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
    """``kind``: "ok", "mismatch" (compiled computed something else, or raised another error
    than eager's), "crash" (compiled raised where eager did not), "signal" (the process
    checking it died: generated code read wild memory or divided by zero; ``worker.py``) or
    "timeout" (the check ran far too long: a compile or a kernel hung; ``worker.py``)."""

    kind: str
    message: str = ""
    eager_error: str = ""  # the exception type eager raised (and compiled too, when "ok")


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
    raised = ""
    with cpu_backend(cpu), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fallback warns; it is correct if results agree
        for call in range(2):
            outcome = _check_call(program, compiled, device, seed + call)
            if outcome.kind != "ok":
                outcome.message = f"call {call + 1} of 2: {outcome.message}"
                return outcome
            raised = raised or outcome.eager_error
    mc.reset()
    return Outcome("ok", eager_error=raised)


def check_safely(program: Program, backend: str, device: str = "cpu", seed: int = 0) -> Outcome:
    """``check_program``, with an exception of the fuzzer's own machinery reported as a crash."""
    try:
        return check_program(program, backend, device, seed)
    except Exception:
        return Outcome("crash", "the check itself raised:\n" + traceback.format_exc())


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
    harmless = raised_from_data(eager.error) and actual.error is None
    if harmless:
        # The values eager rejects may sit only in elements nothing reads (``(x // d)[1:]``
        # with ``d[0] == 0``): compiled code computes only what is read, as graph capture drops
        # a statement nothing reads. Not having raised, it read none of them, so it must have
        # computed what eager computes from harmless inputs (only those values replaced).
        eager = run(program.function(), program.make_inputs(seed, device, harmless), seed)
        actual.inputs = program.made_harmless(actual.inputs)
    if eager.error is not None or actual.error is not None:
        return _compare_errors(eager, actual)
    problems = _problems(eager, actual)
    if problems:  # rounding or a real difference: let float64 referee
        reference = run(program.function(),
                        _float64(program.make_inputs(seed, device, harmless)), seed)
        if reference.error is None:
            neighbours = [n for k in range(NEIGHBOURS)
                          if (n := _neighbour(program, device, seed, k, harmless))]
            problems = _problems(eager, actual, reference, neighbours)
    if problems and harmless:
        problems.append("(eager raised an error from the inputs' values, compiled did not; "
                        "compared with eager on harmless inputs)")
    return Outcome("mismatch", "; ".join(problems)) if problems else Outcome("ok")


def _problems(eager: Run, actual: Run, reference: Run | None = None,
              neighbours: list[tuple[Run, Run]] = ()) -> list[str]:
    def values(run: Run, what: str) -> list:
        return getattr(run, what) or []
    return [problem for what, label in (("outputs", "output"), ("inputs", "input after the call"),
                                        ("grads", "grad"))
            for problem in mismatches(label, values(eager, what), values(actual, what),
                                      reference and values(reference, what),
                                      [(values(low, what), values(high, what))
                                       for low, high in neighbours])]


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
    return Outcome("ok", eager_error=type(eager.error).__name__)


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


# The referee's neighbouring points: each pattern moves every floating input element up, down or
# not at all, by about one unit in the last place; across the patterns each element moves both ways.
NEIGHBOURS = 3


def _float64(inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The inputs in float64 (the referee's exact arithmetic)."""
    def wider(t: torch.Tensor) -> torch.Tensor:
        return t.detach().to(torch.complex128 if t.is_complex() else torch.float64)
    return [wider(t).requires_grad_(t.requires_grad) if t.is_floating_point() or t.is_complex()
            else t for t in inputs]


def _nudged(t: torch.Tensor, pattern: int) -> torch.Tensor:
    """``t`` with each element moved by about one unit in the last place of its dtype, up, down
    or not at all by ``pattern``; elements that share memory (stride 0) move apart too."""
    if not t.dtype.is_floating_point:
        return t
    x = t.detach().double().contiguous()
    steps = (torch.arange(x.numel(), device=x.device) + pattern).remainder(3).double() - 1
    x = x * (1 + torch.finfo(t.dtype).eps * steps.reshape(x.shape))
    return x.to(t.dtype).requires_grad_(t.requires_grad)


def _neighbour(program: Program, device: str, seed: int, pattern: int,
               harmless: bool = False) -> tuple[Run, Run] | None:
    """Eager at a neighbouring point (``_nudged``), in the inputs' dtypes and in float64: how
    far float64 moves there (an ill-conditioned point), and another sample of the rounding
    error eager makes near this point (eager may be lucky at one point)."""
    def nudged() -> list[torch.Tensor]:  # fresh inputs for each run: a program may mutate them
        return [_nudged(t, pattern) for t in program.make_inputs(seed, device, harmless)]
    low, high = run(program.function(), nudged(), seed), run(program.function(),
                                                             _float64(nudged()), seed)
    return None if low.error is not None or high.error is not None else (low, high)


# eager's errors that come from the values of the inputs, not from the program's text or shapes:
# an index out of range (embedding, x[i], index_select, gather, scatter, index_put) and an
# integer division by zero. A program may raise them: compiled code must raise the same.
DATA_ERRORS = re.compile(r"out of (range|bounds)|out of DATA bounds|ZeroDivisionError")


def raised_from_data(error: BaseException | None) -> bool:
    return isinstance(error, (IndexError, RuntimeError)) and bool(DATA_ERRORS.search(str(error)))


def runs_in_eager(program: Program, device: str = "cpu", seed: int = 0) -> bool:
    """Whether eager runs ``program`` (forward and backward), or raises only because of the
    inputs' values (``raised_from_data``)."""
    try:
        error = run(program.function(), program.make_inputs(seed, device), seed).error
    except Exception:  # the text itself is broken (a name the shrinker deleted)
        return False
    return error is None or raised_from_data(error)
