"""The wrapper: one straight-line Python program per graph that allocates buffers, launches the
kernels, calls the library and returns the outputs (mirrors torch/_inductor/codegen/wrapper.py,
``PythonWrapperCodegen``: what ``TORCH_LOGS=output_code`` prints as ``def call(args)``).

    def call(args):
        arg0_1, arg1_1 = args
        s0 = arg0_1.size(0)                                 # sizes read off the inputs
        arg0_1 = laid_out_as(arg0_1, (s0, 8), (8, 1))       # laid out as the kernels index it
        args.clear()                                        # the caller's list: now empty
        buf0 = empty_strided((s0,), (1,), dtype=torch.float32, device=cpu)
        triton_per_fused_sum_0(arg0_1, buf0, s0)            # a generated kernel
        buf1 = torch.mm(arg0_1, arg1_1.t())                 # a library call
        del arg0_1                                          # an input's last reader done
        del arg1_1
        del buf0                                            # a buffer's: memory back
        return (buf1,)

A buffer variable holds a tensor whose data pointer is the start of the buffer's storage;
kernels index it with the IR's flat SymPy indices (offsets included), and ``reinterpret`` gives
the strided view a library call or the caller sees (``.t()`` / ``.permute`` where that view
permutes the variable's own dims). An input only library calls read is passed on as the caller
gave it (``arg1_1`` above): a library call takes any layout. A buffer is allocated in its own layout, so
where that is the view wanted (most of the time) the variable is passed on as it is: no
``reinterpret`` is written, and no Python runs for it per call. The memory plan is made here: a
buffer is allocated before the kernel that first stores it, its storage is handed to a later
buffer of the same device, dtype and size once its last reader has run (``buf5 = buf2  #
reuse``), and it is deleted otherwise (Inductor's ``AllocateLine``, ``ReuseLine``,
``FreeIfNotReusedLine``). Local buffers never appear. The inputs are taken out of ``args``, which
is then emptied, and each is deleted after its last reader (``free_inputs``): for a backward,
whose inputs are the activations its forward saved, that is where a step's memory goes back.
"""

from __future__ import annotations

import itertools
import collections
import math
import re
from typing import Any, Callable

import sympy
import torch
import torch.utils._pytree as pytree
from sympy.printing.str import StrPrinter

from ...metrics import metrics
from ...names import literal, readable
from ..ir import Buffer, ExternKernel, IRNode, MultiOutput, ReinterpretView, storage_owner
from ..kernel_group import KernelGroup
from ..lowerings.extern import FRESH_CONTIGUOUS, python_binding
from ..memory_planning import BufferLifetime, plan_memory
from ..sizevars import integer_fraction
from .library_threads import OneThreadRegions, one_thread, restore_threads
from .wrapper_lines import (AllocateLine, ExternCallLine, FreeLine, KernelCallLine, ReturnLine,
                            ReuseLine, WrapperBody, WrapperLine)

try:  # torch's C++ tensor check (torch/csrc/dynamo/guards.cpp): a faster path, not needed
    from torch._C._dynamo.guards import TensorGuards
except ImportError:  # pragma: no cover
    TensorGuards = None

aten = torch.ops.aten


class PythonPrinter(StrPrinter):
    """SymPy size expressions as Python integer arithmetic (``FloorDiv`` prints as ``//``)."""

    def _print_Max(self, expr):
        return f"max({', '.join(map(self._print, expr.args))})"

    def _print_Min(self, expr):
        return f"min({', '.join(map(self._print, expr.args))})"

    def _print_floor(self, expr):
        if (fraction := integer_fraction(expr.args[0])) is None:  # int(1.7 * s2): an int
            return f"math.floor({self._print(expr.args[0])})"
        num, den = fraction
        return f"(({self._print(num)}) // ({self._print(den)}))"

    def _print_ceiling(self, expr):
        if (fraction := integer_fraction(expr.args[0])) is None:
            return f"math.ceil({self._print(expr.args[0])})"
        num, den = fraction
        return f"(-((-({self._print(num)})) // ({self._print(den)})))"

    def _print_Float(self, expr):  # every digit of the double (a scale factor 1/3 too)
        return repr(float(expr))

    def _print_Mod(self, expr):
        return f"(({self._print(expr.args[0])}) % ({self._print(expr.args[1])}))"


def pexpr(expr: Any) -> str:
    return PythonPrinter().doprint(sympy.sympify(expr))


def ptuple(values: list) -> str:
    items = [pexpr(v) for v in values]
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


# --- runtime helpers the program calls --------------------------------------------------------

def storage(x: torch.Tensor, size: tuple, stride: tuple, offset: int) -> torch.Tensor:
    """A tensor whose data pointer is the first element of the storage that ``x`` is a
    ``size/stride/offset`` view of: what kernels index from. That is ``x`` itself when it starts
    its storage (the common case: no view to make); else a flat view from the storage's start
    to the layout's end (``as_strided`` takes offsets in the storage, whatever the view's size;
    asking the storage for its size costs ~5 us); a laid-out copy when ``x`` is laid out
    otherwise (never a wrong read)."""
    as_laid_out = x.storage_offset() == offset and x.stride() == stride and x.shape == size
    if as_laid_out and offset == 0:
        return x
    numel = offset + sum((sz - 1) * st for sz, st in zip(size, stride)) + 1 if all(size) else 0
    if as_laid_out:
        return x.as_strided((numel,), (1,), 0)
    out = torch.empty((numel,), dtype=x.dtype, device=x.device)
    torch.as_strided(out, size, stride, offset).copy_(x)
    return out


def laid_out_as(x: torch.Tensor, size: tuple, stride: tuple) -> torch.Tensor:
    """``x`` when it starts its storage with this size and stride, else a copy laid out so
    (``storage`` for an offset-0 layout, that leaves the variable the layout's view itself: no
    ``reinterpret`` of it is written later). A dim of size 1 is never stepped along, so its
    stride does not count: ATen gives a channels-last ``[240, 64, 1, 1]`` weight gradient
    strides ``(64, 1, 64, 64)``, the same memory as ``(64, 1, 1, 1)``."""
    if x.stride() == stride and x.shape == size and not x.storage_offset():
        return x
    if x.shape == size and not x.storage_offset() and all(
            a == b or n == 1 for a, b, n in zip(x.stride(), stride, size)):
        return x
    return torch.empty_strided(size, stride, dtype=x.dtype, device=x.device).copy_(x)


class LayoutCheck:
    """Whether every input at ``positions`` has its compiled size and stride at storage offset
    0, so that none needs ``laid_out_as``: one call of torch's C++ tensor check
    (``TensorGuards``, as the guards use it) for them all, built from the first inputs that
    pass the check in Python. The C check also compares dtype, device and requires_grad: where
    those differ it says no and the ``laid_out_as`` lines decide, as without it."""

    AT_LEAST = 4  # inputs; fewer are checked one by one

    def __init__(self, positions: list[int], layouts: list[tuple[tuple, tuple]]):
        self.positions, self.layouts = positions, layouts
        self.check: Any = None

    def __call__(self, args: list) -> bool:
        tensors = [args[i] for i in self.positions]
        if self.check is not None:
            return self.check(*tensors) and not any(map(torch.Tensor.storage_offset, tensors))
        ok = all(t.shape == size and t.stride() == stride and not t.storage_offset()
                 for t, (size, stride) in zip(tensors, self.layouts))
        if ok and TensorGuards is not None:
            sizes = [list(size) for size, _ in self.layouts]
            strides = [list(stride) for _, stride in self.layouts]
            self.check = TensorGuards(*tensors, dynamic_dims_sizes=sizes,
                                      dynamic_dims_strides=strides).check
        return ok


def flat_storage(x: torch.Tensor) -> torch.Tensor:
    """All of ``x``'s storage as a 1-D tensor, from its first element."""
    return x.as_strided((x.untyped_storage().nbytes() // x.element_size(),), (1,), 0)


def reinterpret(buf: torch.Tensor, size: tuple, stride: tuple, offset: int) -> torch.Tensor:
    """The ``size/stride/offset`` view of ``buf``'s storage: ``buf`` itself when it is that view
    already (an input or an extern kernel's result passed straight on)."""
    if offset == 0 and buf.stride() == stride and tuple(buf.shape) == size:
        return buf  # (``storage`` only hands on a tensor that starts its storage)
    return torch.as_strided(buf, size, stride, offset)


def on_cuda_device(index: int, call: Callable, args: list) -> Any:
    """``call(args)`` with CUDA device ``index`` current: the program allocates its buffers and
    launches its kernels on the current device (the first lines of a CUDA program send a call
    made with another device current here; torch's ``DeviceGuard``, as Inductor's wrapper)."""
    with torch.cuda.device(index):
        return call(args)


# torch's allocator without the dispatcher (Inductor's ``empty_strided_cpu/cuda``): a buffer's
# allocation took 3.4 us through ``torch.empty_strided`` on an H200's host, 58 of them a step
# in a MobileNet; the CUDA one allocates on the current device
_guards = torch._C._dynamo.guards
RUNTIME = {"storage": storage, "laid_out_as": laid_out_as, "reinterpret": reinterpret, "empty": torch.empty,
           "empty_strided": torch.empty_strided, "empty_strided_cpu": _guards._empty_strided_cpu,
           "empty_strided_cuda": _guards._empty_strided_cuda, "on_cuda_device": on_cuda_device,
           "current_cuda_device": torch._C._cuda_getDevice if torch.cuda.is_available() else None,
           "torch": torch, "one_thread": one_thread,
           "restore_threads": restore_threads,
           "aten": torch.ops.aten, "inf": math.inf, "nan": math.nan, "math": math}


class WrapperCodeGen:
    """Builds the program for one scheduled graph; ``generate()`` returns ``(source, call)``."""

    def __init__(self, graph: Any, scheduler: Any):
        self.graph, self.scheduler = graph, scheduler
        self.namespace: dict[str, Any] = dict(RUNTIME)
        self.kernel_sources: list[tuple[str, str]] = []  # (name, source) for the output code
        self.body = WrapperBody()  # typed lines (wrapper_lines.py)
        self.threads = OneThreadRegions(self.body)  # small products on one thread
        self._counter = itertools.count()
        self._consts = itertools.count()
        # variable -> the layout its tensor is known to have (allocated so): no reinterpret
        self.laid_out: dict[str, Any] = {}
        # input -> its traced layout, for inputs passed to library calls as the caller gave them
        self.as_given: dict[str, Any] = {}
        self.cuda_index: int | None = None  # the CUDA device the program allocates on

    # --- called by the backends -----------------------------------------------------------
    def kernel_name(self, prefix: str, group: KernelGroup) -> str:
        """``cpp_fused_add_mul_0``: a Python and C++ identifier whatever the ops are called."""
        return f"{prefix}_{readable(group.fused_name())}_{next(self._counter)}"

    def define_kernel(self, name: str, kernel: Callable, source: str) -> None:
        metrics.kernels_generated += 1  # (every backend defines its kernels here)
        self.namespace[name] = kernel
        self.kernel_sources.append((name, source))

    def write_kernel_call(self, name: str, call_args: list[str], group: KernelGroup) -> None:
        self.threads.close()
        self.body.append(KernelCallLine(name, list(call_args)))

    # --- the program ------------------------------------------------------------------------
    def bind(self, value: Any, prefix: str = "const") -> str:
        """A name in the program's namespace for a value that has no literal form."""
        name = f"_{prefix}{next(self._consts)}"
        self.namespace[name] = value
        return name

    def layout_args(self, layout) -> str:
        return f"{ptuple(layout.size)}, {ptuple(layout.stride)}, {pexpr(layout.offset)}"

    def codegen_inputs(self) -> None:
        graph = self.graph
        names = list(graph.graph_inputs)
        self.body.writeline(f"{', '.join(names)}{',' if len(names) == 1 else ''} = args"
                            if names else "pass")
        for symbol, (pos, kind, dim) in sorted(graph.symbol_sources.items(), key=str):
            source = names[pos] if kind == "value" else f"{names[pos]}.{kind}({dim})"
            self.body.writeline(f"{symbol} = {source}")
        as_given = self.library_only_inputs()
        checked: list[tuple[int, str, Any]] = []  # (position, name, layout) of laid_out_as lines
        for pos, (name, buf) in enumerate(graph.graph_inputs.items()):
            if name in as_given:
                self.as_given[name] = buf.layout
            elif isinstance(buf, Buffer):
                if buf.layout.offset == 0 and all(sympy.sympify(e).is_number for e in
                                                  (*buf.layout.size, *buf.layout.stride)):
                    checked.append((pos, name, buf.layout))
                else:
                    self.body.writeline(f"{name} = {self.laid_out_value(name, buf.layout)}")
        self.codegen_layout_checks(checked)
        for name, value in graph.constants.items():
            self.namespace[name] = storage(value, tuple(value.shape), value.stride(),
                                           value.storage_offset())

    def codegen_layout_checks(self, checked: list[tuple[int, str, Any]]) -> None:
        """``x = laid_out_as(x, size, stride)`` for each input a kernel indexes, under one
        check of them all (``LayoutCheck``) when there are several: a model's graph has an
        input per parameter, and each ``laid_out_as`` is a microsecond of Python per call."""
        lines = [f"{name} = {self.laid_out_value(name, layout)}" for _, name, layout in checked]
        if len(checked) < LayoutCheck.AT_LEAST:
            for line in lines:
                self.body.writeline(line)
            return
        check = self.bind(LayoutCheck([p for p, _, _ in checked],
                                      [(tuple(map(int, layout.size)), tuple(map(int, layout.stride)))
                                       for _, _, layout in checked]), "layouts")
        self.body.writeline(f"if not {check}(args):  # {len(checked)} inputs' sizes and strides, "
                            "one C check")
        self.body.level += 1
        for line in lines:
            self.body.writeline(line)
        self.body.level -= 1

    def library_only_inputs(self) -> set[str]:
        """Inputs that only library calls read, each as traced or with its dims permuted (a
        linear layer's weight and its transpose): the caller's tensor, or its ``.permute``,
        is what the library gets, whatever its strides or storage offset (a library call
        takes any layout), so no ``laid_out_as`` check runs for it on every call. An input a
        loop kernel reads or writes in place, or the graph returns, is indexed by its layout:
        not one of them."""
        graph = self.graph
        names = {n for n, b in graph.graph_inputs.items() if isinstance(b, Buffer)}
        buffers = self.scheduler.buffers
        for g in self.scheduler.kernel_groups:
            if g.is_loop_kernel():  # what it reads, and the inputs it writes in place
                names -= {*g.reads, *(storage_owner(buffers, n) for n in g.stored
                                      if buffers[n].get_mutation_names())}
        for o in graph.graph_outputs:
            names.discard(o.data.get_name() if isinstance(o, ReinterpretView)
                          else o.get_name() if isinstance(o, Buffer) else None)
        for g in self.scheduler.kernel_groups:
            if g.is_loop_kernel() or not isinstance(g.extern, ExternKernel):
                continue
            for a in pytree.tree_leaves((g.extern.args, g.extern.kwargs)):
                if isinstance(a, ReinterpretView):
                    name, layout = a.data.get_name(), a.layout
                elif isinstance(a, Buffer):
                    name, layout = a.get_name(), a.layout
                else:
                    continue
                if name in names and permutation(graph.graph_inputs[name].layout, layout) is None:
                    names.discard(name)
        return names

    # --- the memory plan (memory_planning.py) as lines --------------------------------------
    def plan_lifetimes(self) -> None:
        plan = plan_memory(self.scheduler)
        self.starts = {b.name: b for b in plan.lifetimes}
        self.ends: dict[int, list[BufferLifetime]] = {}
        for b in plan.lifetimes:
            if not b.is_output:
                self.ends.setdefault(b.last, []).append(b)
        self.holder: dict[str, str] = {}  # storage -> the buffer variable that holds it now
        self.donors = {b.in_place_of for b in plan.lifetimes if b.in_place_of}  # written over
        self.plan = plan
        # a multi-output library call's result (a tuple) -> how many of its outputs are still
        # to be taken out of it: the tuple is deleted after the last, else it would keep every
        # output alive to the end of the call (an attention's output and statistics, each
        # layer's, all at once)
        self.untaken = collections.Counter(
            g.extern.parent.get_name() for g in self.scheduler.kernel_groups
            if not g.is_loop_kernel() and isinstance(g.extern, MultiOutput))

    def allocation(self, layout: Any) -> str:
        """A buffer that starts its storage: ``empty_strided_cpu/cuda(size, stride, dtype)``
        (``RUNTIME``), or ``empty_strided`` on any other device."""
        size, stride, device = ptuple(layout.size), ptuple(layout.stride), layout.device
        if device.type == "cpu":
            return f"empty_strided_cpu({size}, {stride}, {layout.dtype})"
        if device.type == "cuda":
            self.cuda_index = torch.cuda.current_device() if device.index is None else device.index
            return f"empty_strided_cuda({size}, {stride}, {layout.dtype})"
        return f"empty_strided({size}, {stride}, dtype={layout.dtype}, device={self.device(device)})"

    def device(self, device: torch.device) -> str:
        """A name bound to ``device`` in the program (``cpu``, ``cuda0``): an allocation given
        the string ``'cpu'`` parses it on every call (a microsecond, as long as the allocation)."""
        name = f"{device.type}{'' if device.index is None else device.index}"
        self.namespace[name] = device
        return name

    def begin_kernel(self, group: KernelGroup) -> None:
        """Allocate what a loop kernel stores, or take over a dead buffer's storage."""
        if not group.is_loop_kernel():
            return
        for name in group.stored:
            if self.scheduler.buffers[name].get_mutation_names():  # ir/mutation.py: the new
                owner = storage_owner(self.scheduler.buffers, name)  # value lives in the input
                self.body.append(ReuseLine(name, owner, f"{owner} written in place"))
                continue
            b = self.starts[name]
            layout = self.scheduler.buffers[name].layout
            if b.storage == name and layout.offset == 0:
                self.body.append(AllocateLine(name, self.allocation(layout)))
                self.laid_out[name] = layout
            elif b.storage == name:
                self.body.append(AllocateLine(name, f"empty(({pexpr(layout.storage_size())},), "
                                              f"dtype={layout.dtype}, "
                                              f"device={self.device(layout.device)})"))
            elif b.in_place_of is not None:  # the donor is still read by this kernel
                old = self.holder.get(b.storage, b.in_place_of)
                self.body.append(ReuseLine(name, old, f"in place: this kernel reads {old} last"))
                if self.laid_out.get(old):
                    self.laid_out[name] = self.laid_out[old]
            else:
                old = self.holder[b.storage]
                self.body.append(ReuseLine(name, old, "reuse", delete_old=True))
                if self.laid_out.get(old):
                    self.laid_out[name] = self.laid_out[old]
            self.holder[b.storage] = name

    def allocates_fresh(self, group: KernelGroup) -> bool:
        """Whether every buffer ``group`` stores is an input written in place or an allocation
        of its own, not storage another kernel's buffer leaves (a combo kernel's parts run at
        the same time: one must not write where another still reads)."""
        buffers = self.scheduler.buffers
        return all(buffers[n].get_mutation_names() or (
            self.starts[n].storage == n and self.starts[n].in_place_of is None)
            for n in group.stored)

    def end_kernel(self, group: KernelGroup) -> None:
        """Delete buffers whose last reader just ran, unless a later buffer takes them over."""
        for b in self.ends.get(group.position, []):
            if b.name in self.donors:
                self.body.append(FreeLine(b.name))  # its storage lives on, written in place
                continue
            later = any(o.storage == b.storage and o.first > group.position
                        for o in self.plan.lifetimes)
            if not later:
                self.body.append(FreeLine(self.holder.get(b.storage, b.name)))

    def laid_out_value(self, name: str, layout, value: str | None = None) -> str:
        """Source for ``value`` (default: the variable ``name``) as the tensor kernels index for
        buffer ``name``: laid out as ``layout`` when that starts at offset 0 (then
        ``name`` is that view: no ``reinterpret`` of it later), else its flat storage."""
        value = value or name
        if layout.offset == 0:
            self.laid_out[name] = layout
            return f"laid_out_as({value}, {ptuple(layout.size)}, {ptuple(layout.stride)})"
        return f"storage({value}, {self.layout_args(layout)})"

    def view(self, name: str, layout) -> str:
        """The ``layout`` view of buffer ``name``'s storage: the variable itself when its tensor
        was allocated so, its ``.t()`` / ``.permute(...)`` when that is the view (half the cost
        of ``as_strided``: a linear layer's transposed weight, every call), else
        ``reinterpret``."""
        args = self.layout_args(layout)
        have = self.laid_out.get(name, self.as_given.get(name))
        if have is not None:
            if self.layout_args(have) == args:
                return name
            perm = permutation(have, layout)
            if perm is not None:
                return f"{name}.t()" if perm == [1, 0] else f"{name}.permute({perm})"
        return f"reinterpret({name}, {args})"

    def arg(self, a: Any) -> str:
        """An extern kernel's argument as Python source."""
        if isinstance(a, ReinterpretView):
            return self.view(a.data.get_name(), a.layout)
        if isinstance(a, Buffer):
            return self.view(a.get_name(), a.layout)
        if isinstance(a, IRNode):
            raise NotImplementedError(f"extern argument {a} is not a buffer")
        if isinstance(a, sympy.Basic):
            return pexpr(a)
        if isinstance(a, (list, tuple)):
            inner = ", ".join(self.arg(x) for x in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
        if isinstance(a, torch.dtype):
            return str(a)
        if isinstance(a, torch.device):
            return f"torch.device({str(a)!r})"
        if literal(a) is not None:  # exact types: a str-Enum member's repr is no Python
            return literal(a)
        if type(a) is float:
            return repr(a) if math.isfinite(a) else ("inf" if a > 0 else "-inf" if a < 0 else "nan")
        return self.bind(a)

    def codegen_extern(self, group: KernelGroup) -> None:
        node = group.extern
        name = node.get_name()
        self.threads.extern(node)
        if isinstance(node, MultiOutput):
            value = node.parent.get_name() + "".join(f"[{i}]" for i in node.indices)
        else:
            op = node.kernel
            op_name = python_binding(op) or (str(op) if str(op).startswith("aten.")
                                             else self.bind(op, "extern"))
            direct = FRESH_CONTIGUOUS.get(op)
            if direct and set(node.kwargs) <= {"beta", "alpha", "use_gelu"} \
                    and node.layout is not None and node.layout.is_contiguous():
                op_name = direct  # a fresh contiguous result: it is the layout's view
                self.laid_out[name] = node.layout
                op_name = self.autotuned_product(node) or op_name
            args = [self.arg(a) for a in node.args]
            args += [f"{k}={self.arg(v)}" for k, v in node.kwargs.items()]
            value = f"{op_name}({', '.join(args)})"
        if node.layout is None or name in self.laid_out:  # several outputs: MultiOutput
            self.body.append(ExternCallLine(name, value))  # lines take them apart
        else:
            self.body.append(ExternCallLine(name, self.laid_out_value(name, node.layout, value)))
        if node.layout is not None and name not in self.starts \
                and not node.get_mutation_names():  # a result nothing reads (an attention's
            self.body.append(FreeLine(name))           # statistics, in inference): gone now
        if isinstance(node, MultiOutput):
            parent = node.parent.get_name()
            self.untaken[parent] -= 1
            if not self.untaken[parent]:
                self.body.append(FreeLine(parent))

    def autotuned_product(self, node: Any) -> str | None:
        """Under ``max_autotune``, a GPU ``mm``/``addmm`` is a choice between the library and a
        Triton template, made by timing both at the first call (runtime/mm_autotune.py)."""
        op = {aten.mm.default: "mm", aten.addmm.default: "addmm"}.get(node.kernel)
        if op is None or node.kwargs or not self.scheduler.options.max_autotune \
                or node.layout.device.type != "cuda":
            return None
        from ..runtime.mm_autotune import MatmulChoice  # (Triton: imported only on a GPU)
        return self.bind(MatmulChoice(op), f"{op}_choice")

    def codegen_outputs(self) -> None:
        self.threads.close()
        outs = []
        for o in self.graph.graph_outputs:
            if isinstance(o, ReinterpretView):
                outs.append(self.view(o.data.get_name(), o.layout))
            elif isinstance(o, Buffer):
                outs.append(self.view(o.get_name(), o.layout))
            elif isinstance(o, sympy.Basic):
                outs.append(pexpr(o))
            else:
                outs.append(self.arg(o))
        self.body.append(ReturnLine(outs))

    def generate(self, codegen_kernels: Callable[["WrapperCodeGen"], None]) -> tuple[str, Callable]:
        """``codegen_kernels(self)`` writes every kernel's lines (``Scheduler.codegen``)."""
        self.codegen_inputs()
        if self.graph.graph_inputs:
            self.body.writeline("args.clear()  # the inputs are locals now, each freed after "
                                "its last reader")
        self.plan_lifetimes()
        codegen_kernels(self)  # (each backend has built its kernels when this returns)
        for name, _ in self.kernel_sources:  # a built kernel's own launcher, where it has one
            kernel = self.namespace[name]
            self.namespace[name] = getattr(kernel, "wrapper_call", kernel)
        self.codegen_outputs()
        self.free_inputs()
        program = "def call(args):\n" + self.device_check() + self.body.getvalue()
        exec(compile(program, f"<minicompile wrapper {self.graph.name}>", "exec"), self.namespace)
        return self.output_code(program), self.namespace["call"]

    def device_check(self) -> str:
        """A program that allocates on a CUDA device runs with that device current."""
        if self.cuda_index is None:
            return ""
        return (f"    if current_cuda_device() != {self.cuda_index}:  # buffers go to the "
                f"current device\n        return on_cuda_device({self.cuda_index}, call, args)\n")

    def free_inputs(self) -> None:
        """``del`` each input after the statement that reads it last, unless the program returns
        it. With ``args.clear()`` the program then holds the only reference the call made: a
        backward's inputs are the tensors its forward saved, which the runtime hands over
        (``CompiledFxGraph.boxed_call``), so each activation goes back to the allocator as
        soon as the gradient that needs it is computed, as eager's autograd frees a node's
        saved tensors after it runs (Inductor's wrapper does the same), not all at the end."""
        lines = self.body.lines
        end: dict[int, int] = {}  # a statement's first line -> its last (a block's included)
        last: dict[str, int] = {}  # a name -> the first line of the last statement naming it
        statement = 0
        for i, line in enumerate(lines):
            statement = statement if _continues(line) else i
            end[statement] = i
            for word in _IDENTIFIER.findall(line.text()):
                last[word] = statement
        returned = set(_IDENTIFIER.findall(lines[-1].text()))
        frees: dict[int, list[str]] = {}  # after which line -> the inputs freed there
        for name in self.graph.graph_inputs:
            if name in last and name not in returned:
                frees.setdefault(end[last[name]], []).append(name)
        for end_line in sorted(frees, reverse=True):
            for name in reversed(frees[end_line]):
                line = FreeLine(name)
                line.level = 1
                lines.insert(end_line + 1, line)

    def output_code(self, program: str) -> str:
        kernels = "\n".join(f"# kernel {name}\n{src}" for name, src in self.kernel_sources)
        return f"{kernels}\n\n{program}" if kernels else program


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _continues(line: WrapperLine) -> bool:
    """Whether ``line`` is part of the statement before it: a line of a block (``if``, ``try``)
    or the clause that closes one (``finally:`` and its body)."""
    text = line.text()
    return line.level > 1 or text[:1].isspace() or text.split(" ", 1)[0].rstrip(":") in (
        "finally", "except", "else", "elif")


def permutation(have: Any, want: Any) -> list[int] | None:
    """``perm`` with ``want`` = ``have`` with its dims permuted (``want.size[i] ==
    have.size[perm[i]]``, strides likewise, both at offset 0), or None (also where equal
    sizes are written differently: ``reinterpret`` is always right)."""
    if have.offset != 0 or want.offset != 0 or len(have.size) != len(want.size):
        return None
    dims, perm = list(zip(have.size, have.stride)), []
    for dim in zip(want.size, want.stride):
        match = next((i for i, d in enumerate(dims) if i not in perm and d == dim), None)
        if match is None:
            return None
        perm.append(match)
    return perm


def unflatten_outputs(graph: Any, outs: tuple) -> Any:
    if graph.output_is_flat_list:  # what an ATen graph returns: no pytree walk per call
        return list(outs)
    return pytree.tree_unflatten(list(outs), graph.output_spec)
