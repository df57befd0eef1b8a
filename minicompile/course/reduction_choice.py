"""Persistent or looped: how a Triton reduction holds its row, minicompile's rule beside real
Inductor's, and both kernels forced at every size so that the choice can be measured.

A *persistent* kernel (``triton_per_*``) loads a whole row into registers (``RBLOCK >= rnumel``)
and reduces it at once: every later use of the row (softmax's exp and quotient) reads registers.
A *looped* kernel (``triton_red_*``) walks the row in ``RBLOCK`` blocks with an accumulator per
lane: any row length, few registers, but a second pass over the row reads it from memory again.
A persistent row too long for the registers spills to local memory (slower than a second read).

    print(inductor_rule().source)                 # InductorChoices.should_use_persistent_reduction
    with forced_reduction("looped"):
        print(output_code(softmax, x))            # the triton_red_ kernel at any size
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass
from typing import Callable, Iterator

import sympy
import torch

from .. import compile as mc_compile
from .. import reset
from ..inductor.codegen import triton_kernel


@dataclass
class Rule:
    where: str  # file:line in the installed package
    source: str


def _rule_of(fn: Callable, root: str) -> Rule:
    file = inspect.getsourcefile(fn) or "?"
    lines, start = inspect.getsourcelines(fn)
    return Rule(f"{root}{file.rsplit('/' + root, 1)[-1]}:{start}", "".join(lines))


def inductor_rule() -> Rule:
    """The installed torch's persistent-reduction heuristic: ``InductorChoices.
    should_use_persistent_reduction`` (torch/_inductor/choices.py), where the thresholds are (1024
    elements for an inner reduction, 64 otherwise, times 16 under ``triton.multi_kernel``);
    older releases kept it on ``TritonKernel`` (codegen/triton.py)."""
    try:
        from torch._inductor.choices import InductorChoices

        fn = InductorChoices.should_use_persistent_reduction
    except (ImportError, AttributeError):
        from torch._inductor.codegen.triton import TritonKernel

        fn = TritonKernel.should_use_persistent_reduction
    return _rule_of(fn, "torch/")


def minicompile_rule() -> Rule:
    """minicompile's: ``TritonKernel.fits_in_one_block`` with its two thresholds."""
    return _rule_of(triton_kernel.TritonKernel.fits_in_one_block, "minicompile/")


def thresholds() -> dict[str, int]:
    return {"one pass over the row (a sum)": triton_kernel.PERSISTENT_RNUMEL,
            "several passes (softmax), or several values a lane (argmax, Welford)":
                triton_kernel.PERSISTENT_MULTIPASS_RNUMEL}


@contextlib.contextmanager
def forced_reduction(kind: str) -> Iterator[None]:
    """Every Triton reduction with a static row length is written ``kind`` ("persistent" or
    "looped") inside the block, whatever its length (compiled code is reset on entry and exit)."""
    assert kind in ("persistent", "looped")
    fits = triton_kernel.TritonKernel.__dict__["fits_in_one_block"]

    def forced(group) -> bool:  # (a symbolic row stays looped: RBLOCK is a constant)
        return kind == "persistent" and sympy.sympify(group.rnumel).is_number

    triton_kernel.TritonKernel.fits_in_one_block = staticmethod(forced)
    reset()
    try:
        yield
    finally:
        triton_kernel.TritonKernel.fits_in_one_block = fits
        reset()


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


def reduction_sweep(sizes: list[int], total: int, device: str) -> dict[str, list[float]]:
    """GB/s of minicompile's softmax kernel, forced persistent and forced looped, over rows of
    each length in ``sizes`` (``total // size`` rows, float32), counting the compulsory bytes
    (one read, one write), so that a kernel which reads a row twice shows it as lower GB/s.
    Each kernel is checked against eager first."""
    from ..bench.timing import time_ms

    result: dict[str, list[float]] = {"persistent": [], "looped": []}
    for size in sizes:
        x = torch.randn(max(1, total // size), size, device=device)
        for kind, gbs in result.items():
            with forced_reduction(kind):
                compiled = mc_compile(softmax)
                torch.testing.assert_close(compiled(x), softmax(x))
                ms = time_ms(lambda: compiled(x), device, "quick")
            gbs.append(2 * x.numel() * x.element_size() / (ms * 1e6))
    return result
