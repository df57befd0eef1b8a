"""What a generated kernel checks at run time, and the error eager raises when a check fails
(mini version of the bounds checks of torch/_inductor/codegen/common.py: ``indirect_indexing``
and ``check_bounds``, ``config.assert_indirect_indexing``; cpp.py's ``TORCH_CHECK(0 <= tmp < size)``
and triton.py's ``tl.device_assert``).

An index loaded from a tensor (a token id for ``embedding``, ``x[i]``, ``gather``) is data: a
kernel that trusted it would read whatever lies next to the tensor (or die of SIGSEGV), where eager
raises. So every indirect index is checked against its dimension before it is used, and so is the
divisor of an integer division (x86 traps on ``n // 0``: SIGFPE would kill the process). A failing
check never stops the loop it is in (a parallel loop cannot be left early): it records itself and
goes on with a safe value (index 0, divisor 1); the caller raises eager's error after the kernel.

Each op that indexes with data names its row of :data:`EAGER_ERRORS`: eager's exception type and
message, and whether a negative index counts from the end (``x[-1]``, but not ``gather``'s).
A backend skips a check it can prove always passes (an index made by ``arange`` or ``% size``)
and says so in the generated code.

Where a kernel loads its indices straight from a tensor it reads whole (``embedding``'s token
ids), the launcher can check that tensor before the launch instead (``HostCheck``): one min and
max over the indices, not a comparison per lane, and the kernel then needs no check and no bounds
mask. Real Inductor checks only inside the kernel (``tl.device_assert``); minicompile checks on
the host where the tensor is already there: on the CPU (Triton's interpreter). On a GPU reading
the min and max back would wait for the GPU at every launch (and could not be recorded into a
CUDA graph), so there the kernel keeps its device assert, under the debug flag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy
import torch


@dataclass(frozen=True)
class EagerError:
    """How eager fails for one kind of check."""

    exception: type[Exception]
    message: str  # formatted with the failing ``value``, the ``dim`` and its ``size``
    wrap: bool = False  # a negative index counts from the end of the dimension


OUT_OF_BOUNDS = "index {value} is out of bounds for dimension {dim} with size {size}"

# check kind -> eager's error (the messages are eager's own, as of torch 2.11 - 2.15)
EAGER_ERRORS: dict[str, EagerError] = {
    "index": EagerError(IndexError, OUT_OF_BOUNDS, wrap=True),  # x[i], index_put
    "embedding": EagerError(IndexError, "index out of range in self"),
    "index_select": EagerError(IndexError, "index out of range in self"),
    # (eager's CPU kernel for dim 1 of a tensor of 2 or more dims is another one, its own words)
    "index_select_dim1": EagerError(RuntimeError, "INDICES element is out of DATA bounds, "
                                                  "id={value} axis_dim={size}"),
    "gather": EagerError(RuntimeError, OUT_OF_BOUNDS),
    "scatter": EagerError(RuntimeError, OUT_OF_BOUNDS),  # scatter, scatter_add, index_add
    # (eager's CPU index_add of a 1-d tensor, or along a middle dim, is another kernel)
    "index_add_slices": EagerError(IndexError, "index out of range in self"),
    "division": EagerError(RuntimeError, "ZeroDivisionError"),  # integer // and % by zero
}


@dataclass(frozen=True)
class Check:
    """One check site of a kernel: which kind, along which dimension of the indexed tensor."""

    kind: str = "index"
    dim: int = 0

    @property
    def error(self) -> EagerError:
        return EAGER_ERRORS[self.kind]

    def fail(self, value: int, size: int) -> Exception:
        """The exception eager raises for ``value`` along a dimension of ``size``."""
        return self.error.exception(self.error.message.format(value=value, dim=self.dim,
                                                              size=size))


@dataclass(frozen=True)
class HostCheck:
    """A check the launcher makes before the kernel runs: every value of the index tensor the
    kernel reads whole (its argument ``arg``) passes ``check`` along a dim of ``size``. ``size``
    is in the kernel's size parameters, which ``size_args`` places among its arguments."""

    arg: int
    size: sympy.Expr
    check: Check
    size_args: tuple[tuple[sympy.Symbol, int], ...] = ()

    def run(self, args: tuple) -> None:
        """Raise eager's error for the first index (in the tensor's order) outside."""
        index = args[self.arg]
        size = int(sympy.sympify(self.size).subs({s: args[i] for s, i in self.size_args}))
        if index.numel() == 0:
            return
        low = -size if self.check.error.wrap else 0
        smallest, largest = torch.aminmax(index)  # read once: the cheap test
        if low <= int(smallest) and int(largest) < size:
            return
        flat = index.reshape(-1)
        raise self.check.fail(int(flat[(flat < low) | (flat >= size)][0]), size)


DIVISION = Check("division")
# the integer ops whose divisor is checked (x86 traps on a division by zero)
DIVISIONS = {"floordiv", "truncdiv", "fmod", "remainder", "mod"}


def site_of(checks: list[Check], check: Check) -> int:
    """The site number of ``check`` in a kernel's list of checks (one per kind and dimension):
    what a failed check reports, for the caller to find eager's error."""
    if check not in checks:
        checks.append(check)
    return checks.index(check)


def out_of_range(value: int, size: int, check: Check) -> bool:
    """Whether eager rejects ``value`` as an index into a dimension of ``size``."""
    low = -size if check.error.wrap else 0
    return not low <= value < size


def proven_in_range(low: int | None, high: int | None, size, check: Check) -> bool:
    """Whether every value in ``[low, high]`` passes ``check`` (None: unknown)."""
    if low is None or high is None:
        return False
    try:
        size = int(size)
    except TypeError:  # a symbolic size
        return False
    return not out_of_range(low, size, check) and not out_of_range(high, size, check)


# --- value ranges: which indices are in range without a check ----------------------------------
# (mini version of torch/utils/_sympy/value_ranges.py's ``ValueRangeAnalysis``): an integer op's
# ``[low, high]`` from its operands', where both are known (an ``arange``'s index, a constant);
# an end may be infinite (``maximum(i, 0)``: ``[0, inf]``)
Range = tuple[int | float, int | float]


def _known(rule):  # a rule that needs both operands' ranges
    return lambda a, b: None if a is None or b is None else rule(a, b)


def _mul(a: Range, b: Range) -> Range | None:
    if math.inf in map(abs, a + b):  # (inf * 0 has no value)
        return None
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _clamp(bound):
    """``minimum``/``maximum``: one known operand bounds the result on one side (``clamp(i, 0,
    4)`` is ``minimum(maximum(i, 0), 4)``: ``[0, 4]`` whatever ``i`` is); an end stays infinite
    until another op bounds it."""
    def rule(a: Range | None, b: Range | None) -> Range | None:
        unbounded = (-math.inf, math.inf)
        low, high = (bound(x, y) for x, y in zip(a or unbounded, b or unbounded))
        return None if (low, high) == unbounded else (low, high)
    return rule


def _remainder(a: Range | None, b: Range | None) -> Range | None:
    """Python's ``a % b`` has the sign of ``b``: ``[0, b - 1]`` for a positive constant ``b``."""
    return (0, b[0] - 1) if b is not None and b[0] == b[1] and b[0] > 0 else None


RANGE_RULES = {
    "add": _known(lambda a, b: (a[0] + b[0], a[1] + b[1])),
    "sub": _known(lambda a, b: (a[0] - b[1], a[1] - b[0])),
    "mul": _known(_mul),
    "mod": _remainder,
    "remainder": _remainder,
    "minimum": _clamp(min),
    "maximum": _clamp(max),
}


def known_range(value: str, ranges: dict[str, Range], constants: dict) -> Range | None:
    """``[low, high]`` of a kernel's temporary (``ranges``) or integer literal (``constants``)."""
    constant = constants.get(value)
    if isinstance(constant, (int, sympy.Integer)) and not isinstance(constant, bool):
        return int(constant), int(constant)
    return ranges.get(value)


def op_range(op: str, operands: list[Range | None]) -> Range | None:
    """The range of ``op`` applied to values in ``operands``' ranges; None: unknown."""
    rule = RANGE_RULES.get(op)
    return rule(*operands) if rule is not None and len(operands) == 2 else None


COMPARISONS = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
               "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def decided_comparison(op: str, operands: list[Range | None]) -> bool | None:
    """Whether comparison ``op`` holds for every value in ``operands``' ranges (True), for none
    (False), or it depends (None): a pooling window's ``2*((xindex / 8) % 8) < 16``, always true.
    A comparison is monotone in each operand, so the ranges' four corners decide it."""
    if op not in COMPARISONS or len(operands) != 2 or None in operands:
        return None
    outcomes = {COMPARISONS[op](a, b) for a in operands[0] for b in operands[1]}
    return outcomes.pop() if len(outcomes) == 1 else None


def unchecked_range(value: str, size, check: Check, ranges: dict[str, Range],
                    constants: dict) -> Range | None:
    """``value``'s range where it proves ``check`` always passes along a dim of ``size``: the
    backend then emits no check and no bounds mask, only the wrap of a negative index (``x[-1]``)
    where the range holds one, and a comment giving the range. None: the index is checked."""
    bounds = known_range(value, ranges, constants)
    return bounds if bounds is not None and proven_in_range(*bounds, size, check) else None


def no_check_comment(value: str, bounds: Range) -> str:
    """Why a backend emits no check for an index (the same words in every backend)."""
    return f"no check: {value} is in [{bounds[0]}, {bounds[1]}]"
