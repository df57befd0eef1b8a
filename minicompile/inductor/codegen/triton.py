"""The Triton backend: one ``@triton.jit`` kernel per loop kernel (mirrors ``TritonScheduling``
in torch/_inductor/codegen/triton.py; the kernel writer is ``triton_kernel.py``, the op
templates ``triton_ops.py``, the launcher ``runtime/triton_heuristics.py``).

For each ``KernelGroup`` it writes a module of Triton source, loads it (``@triton.jit`` reads
its function's source with ``inspect``, so the module must be a real file), wraps the kernel in
a ``TritonLauncher`` and writes the wrapper line that calls it::

    triton_per_fused__softmax_0(arg0_1, buf2, 8, 33)      # buffers, sizes, xnumel, rnumel

On CUDA tensors the kernels compile for the GPU; on CPU tensors (``MINICOMPILE_CPU_BACKEND=
triton``) they run under ``TRITON_INTERPRET=1``, Triton's NumPy interpreter: slow, but the same
source, so every kernel can be tested on a machine without a GPU.

``TritonKernelObject.bytes_from_code`` counts the bytes the generated loads and stores touch
(each distinct buffer and index once, as ``dependencies.footprint`` counts the scheduler's
``num_bytes_accessed``), so the metric can be checked against the code that really runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sympy

from ... import debug
from .. import codecache
from ..dependencies import footprint
from ..kernel_group import KernelGroup
from ..runtime.triton_helpers import CheckFailed
from ..runtime.triton_heuristics import (CHECKED_OPTIONS, COMPILE_OPTIONS, TritonLauncher,
                                         compile_in_background)
from . import triton_combo
from .common import BaseScheduling, same_code_key
from .triton_kernel import OUTER_PERSISTENT_RNUMEL, TritonKernel
from .triton_tiling import choose_tile
from .wrapper import pexpr

PREFIX = {"pointwise": "triton_poi", "tiled": "triton_poi", "persistent": "triton_per",
          "looped": "triton_red"}

MODULE_HEADER = """\
import triton
import triton.language as tl

from minicompile.inductor.runtime import triton_helpers
from minicompile.inductor.runtime.triton_helpers import libdevice


"""

@dataclass
class CodeBytes:
    """Bytes the generated code reads and writes, counted from its loads and stores."""

    read: sympy.Expr
    write: sympy.Expr

    @property
    def total(self) -> sympy.Expr:
        return self.read + self.write


def count_code_bytes(kernel: TritonKernel, scheduler: Any) -> CodeBytes:
    """Each buffer's distinct elements over every load (store) of it, times its item size."""
    totals = {"load": sympy.Integer(0), "store": sympy.Integer(0)}
    for kind in totals:
        deps: dict[str, dict] = {}
        for k, name, dep in kernel.accesses:
            if k == kind:
                deps.setdefault(name, {})[(dep.index, dep.var_ranges)] = dep
        for name, by_index in deps.items():
            elements = footprint(list(by_index.values()), scheduler.numel(name))
            totals[kind] += elements * scheduler.itemsize(name)
    return CodeBytes(totals["load"], totals["store"])


class TritonKernelObject(TritonLauncher):
    """The launcher, plus what a reader of the generated code asks about it: its kernel group
    and the bytes its loads and stores touch (counted when first asked: enumerating the
    distinct offsets of every access took 4 of the 16 seconds a GPT block's first compile
    took, for a number only notebooks and tests read). A kernel with index checks is compiled
    with its device asserts; under the interpreter a failed check raises eager's error."""

    def __init__(self, name: str, fn: Any, kind: str, source: str, group: KernelGroup,
                 kernel: TritonKernel, scheduler: Any, knobs: Any):
        super().__init__(name, fn, kind, source,
                         options=CHECKED_OPTIONS if kernel.checks else COMPILE_OPTIONS,
                         hint=kernel.reduction_hint(), knobs=knobs,
                         itemsize=kernel.row_itemsize())
        self.group, self._counted = group, (kernel, scheduler)
        self.pointers = len(kernel.signature.buffers())
        self.checks, self.host_checks = kernel.checks, kernel.host_checks

    def __call__(self, *args: Any) -> None:
        for check in self.host_checks:  # index tensors read whole, checked before the launch
            check.run(args)
        try:
            super().__call__(*args)
        except Exception as error:  # the interpreter wraps what a helper raises
            failed = error.__cause__ if isinstance(error.__cause__, CheckFailed) else error
            if not isinstance(failed, CheckFailed):
                raise
            raise self.checks[failed.site].fail(failed.value, failed.size) from None

    @functools.cached_property
    def bytes_from_code(self) -> CodeBytes:
        return count_code_bytes(*self._counted)


class TritonScheduling(BaseScheduling):
    """Generates Triton kernels (``cuda_backend``; ``MINICOMPILE_CPU_BACKEND=triton``)."""

    name = "triton"
    max_parts = triton_combo.MAX_PARTS

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.compile_jobs: list = []  # (launcher, its jobs): ``flush`` compiles them at once
        self.written: dict[KernelGroup, TritonKernel] = {}  # ``kernel_for``
        self.by_code: dict[str, str] = {}  # ``same_code_key`` -> the name of the kernel defined

    def codegen_kernel(self, group: KernelGroup, wrapper: Any) -> None:
        scheduler = wrapper.scheduler
        kernel = self.kernel_for(group, scheduler)
        name = wrapper.kernel_name(PREFIX[kernel.kind], group)
        kernel.name = name
        source = MODULE_HEADER + kernel.codegen()
        sizes = kernel.numels()
        call_args = kernel.signature.call_args() + [pexpr(n) for n in sizes]
        # the same code as a kernel before (the next layer's GELU): called again, not compiled.
        # Its buffers' dtypes are part of the key: Triton's text does not spell them (a sum of
        # int64 and one of float64 read the same), but its binary is compiled for them
        dtypes = [scheduler.buffers[n].get_dtype() for n in kernel.signature.buffers()]
        key = same_code_key(source, name, "#", repr((kernel.kind, kernel.reduction_hint(),
                                                     kernel.row_itemsize(), kernel.checks,
                                                     kernel.host_checks, dtypes)))
        twin = self.by_code.get(key)
        if twin is not None:
            wrapper.write_kernel_call(twin, call_args, group)
            return
        self.by_code[key] = name
        fn = getattr(codecache.PyCodeCache.load(source, name), name)  # in the checked cache
        if self.options.debug:  # each kernel's source in the debug folder (the GPU adds TTIR and PTX)
            debug.dump_artifact("triton_kernel", source, title=name)
        launcher = TritonKernelObject(name, fn, kernel.kind, source, group, kernel, scheduler,
                                      self.options)
        wrapper.define_kernel(name, launcher, source)
        wrapper.write_kernel_call(name, call_args, group)
        if group.device.type == "cuda" and not kernel.signature.sizes and \
                all(isinstance(sympy.sympify(n), sympy.Integer) for n in sizes):  # static sizes
            jobs = launcher.compile_jobs((*dtypes, *map(int, sizes)), group.device.index or 0)
            if jobs:
                self.compile_jobs.append((launcher, jobs))

    def combinable(self, group: KernelGroup, wrapper: Any) -> bool:
        if not self.options.combo_kernels or group.kind != "pointwise":
            return False
        kernel = self.kernel_for(group, wrapper.scheduler)
        return triton_combo.combinable(kernel)

    def kernel_for(self, group: KernelGroup, scheduler: Any) -> TritonKernel:
        """The kernel ``group`` is written as (asked again by ``codegen_combo``: written once)."""
        if group not in self.written:
            self.written[group] = self.select_tiling(
                group, lambda n: scheduler.buffers[n].get_dtype(), scheduler.numel)
        return self.written[group]

    def codegen_combo(self, groups: list[KernelGroup], wrapper: Any) -> None:
        parts = [self.kernel_for(g, wrapper.scheduler) for g in groups]
        for part, group in zip(parts, groups):
            part.name = wrapper.kernel_name("triton_poi", group)
        name = wrapper.kernel_name("triton_combo", groups[0])
        source = MODULE_HEADER + triton_combo.combo_source(name, parts)
        fn = getattr(codecache.PyCodeCache.load(source, name), name)
        if self.options.debug:
            debug.dump_artifact("triton_kernel", source, title=name)
        numels = [int(g.numel) for g in groups]
        args = [a for p in parts for a in p.signature.call_args()]
        wrapper.define_kernel(name, triton_combo.ComboLauncher(name, fn, source, numels,
                                                               len(args), self.options), source)
        wrapper.write_kernel_call(name, args + [str(sum(numels))], groups[0])

    def select_tiling(self, group: KernelGroup, dtype_of: Any, numel_of: Any = None) -> TritonKernel:
        """A pointwise kernel is written once flat, to see its accesses; where they are
        contiguous along different dims (a transpose, a permute, a channels-last input), it is
        written again over a 2-D tile (``triton_tiling.py``), else kept as written. A reduction
        written in one block whose loads turn out to be an outer reduction's over more than
        ``OUTER_PERSISTENT_RNUMEL`` rows is written again with a loop, in wide tiles."""
        kernel = TritonKernel(group, "kernel", dtype_of, self.options, numel_of=numel_of)
        if kernel.kind == "persistent":
            kernel.emitted  # its accesses are known
            if kernel.reduction_hint() == "outer" and \
                    int(group.rnumel) > OUTER_PERSISTENT_RNUMEL:
                return TritonKernel(group, "kernel", dtype_of, self.options, numel_of=numel_of,
                                    looped=True)
            return kernel
        if kernel.kind != "pointwise":
            return kernel
        kernel.emitted  # written flat: its accesses are known
        tile = choose_tile([dep.index for _, _, dep in kernel.accesses], group.numel)
        if tile is None:
            return kernel  # (its code, already written, is kept)
        return TritonKernel(group, "kernel", dtype_of, self.options, tile, numel_of)

    def flush(self) -> None:
        """Start compiling the graph's kernels, every candidate of each, in the background."""
        pending, self.compile_jobs = self.compile_jobs, []
        if pending:
            future = compile_in_background([job for _, jobs in pending for job in jobs],
                                           self.options)
            for launcher, _ in pending:
                launcher.compiling = future
