"""The index checks of a Triton kernel (mirrors ``CSEProxy.indirect_indexing`` and
``check_bounds`` in torch/_inductor/codegen/common.py and ``TritonKernel.check_bounds`` in
codegen/triton.py; the checks themselves and eager's errors are ``inductor/checks.py``).

An index loaded from a tensor is checked against its dimension in one of four places, the
cheapest that is sound:

    nowhere          its value range proves it inside (an ``arange``, ``% size``, a clamp):
                     Inductor's ``ValueRanges`` elision (``checks.unchecked_range``)
    on the host      it is loaded straight from a tensor the kernel reads whole, on the CPU:
                     one min and max before the launch (``checks.HostCheck``); the kernel has
                     neither check nor bounds mask
    before the loop  in a looped reduction, an index that does not change along the row
                     (``w[i[x], r]``): loaded and checked once per row, not once per block of it
                     (Inductor lifts such a load out of the loop: ``get_load_buffer``)
    at the load      every other index: a device assert on a GPU (compiled in with Triton's
                     debug flag, as ``config.assert_indirect_indexing`` does), a raise under the
                     interpreter

Wherever the check is, the loads and stores through an index not proved inside are masked to
its bounds, so no lane touches memory outside its tensor, also where the device assert is
compiled out.
"""

from __future__ import annotations

import os
from typing import Callable

import sympy

from ..checks import Check, HostCheck, no_check_comment, site_of, unchecked_range
from ..dependencies import reads_every_element
from ..ir import MemoryDep
from ..kernel_group import RINDEX
from .triton_ops import texpr

# Devices whose index tensors the launcher checks before a launch. On a GPU the min and max would
# come back to the host at every launch (a synchronization, and nothing a CUDA graph can record):
# there the kernel keeps its device assert instead.
HOST_CHECK_DEVICES = {"cpu"}


def checks_emitted(device_asserts: bool) -> bool:
    """Index and divisor checks in the kernel: always under Triton's interpreter (they raise
    eager's error); on a GPU only as device asserts, with ``triton_device_asserts``."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0") or device_asserts


class TritonChecks:
    """The index half of ``TritonKernel`` (a mixin: it writes into the kernel's buffers).

    ``loaded_from`` maps a temporary to the ``(buffer, index)`` it was loaded from, unmasked
    (kept through integer casts): what a host check or a hoisted check re-reads."""

    numel_of: Callable[[str], sympy.Expr] | None
    loaded_from: dict[str, tuple[str, sympy.Expr]]
    host_checks: list[HostCheck]
    in_loop: bool  # emitting the body of a looped reduction's ``for roffset`` loop

    def indirect_indexing(self, value: str, size: sympy.Expr, check: Check = Check()) -> sympy.Symbol:
        """A loaded index as a symbol of the index expression, checked against ``size`` as eager
        checks it (``x[-1]`` is ``x[size - 1]``; ``gather`` rejects it), where the module
        docstring says; the loads and stores through it are masked to its bounds unless it is
        proved inside or checked on the host."""
        name = f"indirect{self._indirect}"
        self._indirect += 1
        symbol = sympy.Symbol(name, integer=True)
        bounds = unchecked_range(value, size, check, self.ranges, {})
        host = None if bounds is not None else self.host_check(value, size, check)
        self.body.writeline(f"{name} = {self.wrapped(value, size, check, bounds)}")
        if bounds is not None:  # no check, no bounds mask: every lane's index is inside
            self.body.writeline(f"# {no_check_comment(value, bounds)}")
            return symbol
        if host is not None:  # checked before the launch: inside when the kernel runs
            self.body.writeline(f"# {value}, from {host} read whole, is checked on the host "
                                "before the launch")
            return symbol
        ok = f"{name}_in_bounds"
        self.body.writeline(f"{ok} = (0 <= {name}) & ({name} < {texpr(size)})")
        if self.checks_emitted and not self.hoist_check(name, value, size, check):
            self.body.writeline(f"triton_helpers.check_index({value}, {ok}, "
                                f"{self.mask(self.level == 'element')}, {texpr(size)}, "
                                f"{site_of(self.checks, check)})  # eager: {check.kind} raises outside")
        self.in_bounds[symbol] = ok
        return symbol

    def wrapped(self, value: str, size: sympy.Expr, check: Check, bounds) -> str:
        """``value`` with a negative index counted from the end, where eager does so and the
        value may be negative."""
        if check.error.wrap and (bounds is None or bounds[0] < 0):
            return f"tl.where({value} < 0, {value} + {texpr(size)}, {value})"
        return value

    def host_check(self, value: str, size: sympy.Expr, check: Check) -> str | None:
        """The argument ``value`` is loaded from when the launcher can check it instead of the
        kernel (``HostCheck``: the kernel's input, read whole, on a device of
        ``HOST_CHECK_DEVICES``, ``size`` in the kernel's parameters); None otherwise."""
        source = self.loaded_from.get(value)
        if source is None or self.numel_of is None or \
                self.group.device.type not in HOST_CHECK_DEVICES:
            return None
        buffer, index = source
        inputs, sizes = self.signature.inputs, self.signature.sizes
        if buffer not in inputs or buffer in self.signature.outputs or \
                not sympy.sympify(size).free_symbols <= set(sizes):
            return None  # (written by this kernel, or a size the launch is not given)
        ranges = tuple((v, r) for v, r in self.group.var_ranges().items()
                       if v in index.free_symbols)
        if not reads_every_element(MemoryDep(buffer, index, ranges), self.numel_of(buffer)):
            return None  # the kernel reads part of it: eager may never see the rest
        first_size = len(self.signature.buffers())
        host = HostCheck(inputs.index(buffer), sympy.sympify(size), check,
                         tuple((s, first_size + i) for i, s in enumerate(sizes)))
        if host not in self.host_checks:  # (x[i] and y[i] in one kernel: one check of i)
            self.host_checks.append(host)
        return self.args[buffer]

    def hoist_check(self, name: str, value: str, size: sympy.Expr, check: Check) -> bool:
        """In a looped reduction, check an index that does not change along the row once per
        row, before the loop: the index is loaded there again (a row's worth, ``xmask``) and
        checked. False where it changes along the row (the check stays at the load)."""
        source = self.loaded_from.get(value)
        if not self.in_loop or source is None or RINDEX in source[1].free_symbols:
            return False
        buffer, index = source
        row = f"{name}_row"
        self.before_loop.writelines([
            f"{row} = tl.load({self.pointer(buffer, index)}, xmask)  # {value}, once per row",
            f"{row}_at = {self.wrapped(row, size, check, None)}",
            f"triton_helpers.check_index({row}, (0 <= {row}_at) & ({row}_at < {texpr(size)}), "
            f"xmask, {texpr(size)}, {site_of(self.checks, check)})  # eager: {check.kind} "
            "raises outside"])
        self.body.writeline(f"# {value} is checked before the loop")
        return True

    def note_load(self, var: str, buffer: str, index: sympy.Expr) -> None:
        """Remember where an unmasked load's temporary came from (for the checks above)."""
        if not self.masks:
            self.loaded_from[var] = (buffer, index)

    def note_cast(self, var: str, source: str, integer: bool) -> None:
        """An integer cast of a loaded index is the same index (a host check reads the tensor's
        own values, which eager checks)."""
        if integer and source in self.loaded_from:
            self.loaded_from[var] = self.loaded_from[source]
