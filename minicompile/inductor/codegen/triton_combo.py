"""Combo kernels: several independent pointwise kernels launched as one (mirrors Inductor's
``ComboKernel`` in torch/_inductor/codegen/triton_combo_kernel.py, which its foreach lowering
uses for an optimizer step).

An optimizer step updates each parameter with a kernel of its own: a model with a hundred
parameters launches a hundred small kernels, each a few microseconds of host time and each a
fraction of a wave on the GPU. No fusion joins them: their sizes differ, so they share no loop.
A combo kernel runs them side by side instead: each kernel becomes a *part*, a ``@triton.jit``
function that takes the number of its program, and one launch covers the programs of every
part. Program ``p`` finds its part by comparing ``p`` with the parts' running totals of
programs::

    @triton.jit
    def triton_combo_0(k0_in_ptr0, k0_out_ptr0, k1_in_ptr0, k1_out_ptr0, xnumel, XBLOCK: tl.constexpr):
        pid = tl.program_id(0)
        end0 = (4096 + XBLOCK - 1) // XBLOCK
        end1 = end0 + (32 + XBLOCK - 1) // XBLOCK
        if pid < end0:
            triton_poi_fused_add_0(k0_in_ptr0, k0_out_ptr0, pid, XBLOCK)
        elif pid < end1:
            triton_poi_fused_add_1(k1_in_ptr0, k1_out_ptr0, pid - end0, XBLOCK)

What may join (``Scheduler.kernel_runs`` asks ``combinable``): pointwise kernels written flat
(a 2-D tile has programs of another shape), with static sizes (the running totals are
constants), no index checks, and none reading or writing what another part writes (they run at
the same time). The launch is not autotuned: one ``XBLOCK`` for every part, the smallest power
of two that holds the largest part, at most ``COMBO_XBLOCK``.
"""

from __future__ import annotations

from typing import Any

import sympy

from ..runtime.triton_heuristics import Config, TritonLauncher, grid, pow2
from .triton_kernel import TritonKernel

MAX_PARTS = 16  # parts per combo kernel (an ``if`` chain: its compile time grows with it)
COMBO_XBLOCK = 1024  # the largest block a part's program covers


def combinable(kernel: TritonKernel) -> bool:
    """Whether ``kernel`` can be a part: flat pointwise, static size, no checks or helpers."""
    return kernel.kind == "pointwise" and not kernel.signature.sizes and \
        sympy.sympify(kernel.group.numel).is_number and not kernel.checks and \
        not kernel.host_checks and not kernel.helpers


def programs(numel: int) -> str:
    """The programs a part of ``numel`` elements takes, as the kernel computes it."""
    return f"({numel} + XBLOCK - 1) // XBLOCK"


def combo_source(name: str, parts: list[TritonKernel]) -> str:
    """The source of the part functions and of the combo kernel that dispatches to them."""
    lines: list[str] = []
    for part in parts:
        lines += [part.codegen_part(), ""]
    params = [f"k{k}_{a}" for k, part in enumerate(parts) for a in part.arguments()]
    lines += ["@triton.jit",
              f"def {name}({', '.join(params + ['xnumel', 'XBLOCK: tl.constexpr'])}):",
              f"    # {len(parts)} independent pointwise kernels in one launch: part k runs on "
              "programs end{k-1} to end{k} - 1",
              "    pid = tl.program_id(0)"]
    for k, part in enumerate(parts):
        before = f"end{k - 1} + " if k else ""
        lines.append(f"    end{k} = {before}{programs(int(part.group.numel))}")
    for k, part in enumerate(parts):
        args = [f"k{k}_{a}" for a in part.arguments()] + [f"pid - end{k - 1}" if k else "pid",
                                                         "XBLOCK"]
        lines += [f"    {'elif' if k else 'if'} pid < end{k}:",
                  f"        {part.name}({', '.join(args)})"]
    return "\n".join(lines) + "\n"


class ComboLauncher(TritonLauncher):
    """Launches a combo kernel: one config for every part, and as many programs as the parts'
    together (``launcher(*buffers, xnumel)``, ``xnumel`` the parts' total of elements)."""

    def __init__(self, name: str, fn: Any, source: str, numels: list[int], pointers: int,
                 knobs: Any):
        super().__init__(name, fn, "pointwise", source, autotune=False, knobs=knobs)
        self.numels, self.pointers = numels, pointers

    def config_and_grid(self, args: tuple, xnumel: int, rnumel: int) -> tuple[Config, int]:
        block = min(COMBO_XBLOCK, pow2(max(self.numels)))
        cfg = Config(XBLOCK=block, num_warps=4 if block >= 512 else 2)
        return cfg, sum(grid(n, block) for n in self.numels)
