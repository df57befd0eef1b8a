"""Math library calls that a row kernel makes once and keeps in memory for a later loop over the
same row, instead of making them again there (no counterpart in Inductor, whose C++ kernels
recompute; ATen's CPU softmax keeps ``exp(x - max)`` in its output row in the same way).

A reduction kernel runs one loop over the row per phase (``KernelGroup.phases``), and a later
loop sees none of an earlier loop's values: it recomputes what it needs. Mostly that is the right
call: loading ``x`` again and subtracting the max costs what storing a copy and loading it back
would. A call into the math library (exp, log, erf: tens of instructions per element) costs more.
Softmax's last loop would compute every ``exp(x - max)`` that its sum loop has just computed, so
the sum loop keeps them in the output row, and the last loop scales them there:

    for (rindex ...)                                   // the sum of exp(x - max)
        auto tmp3 = mc::exp(tmp2);
        acc1 = acc1 + tmp3;
        out_ptr0[rindex + 1024*xindex] = tmp3;         // kept for a later loop
    for (rindex ...)                                   // exp(x - max) * (1 / sum)
        auto tmp6 = out_ptr0[rindex + 1024*xindex];    // the exp an earlier loop kept
        out_ptr0[rindex + 1024*xindex] = static_cast<float>(tmp6 * tmp7);

**Finding repeats.** ``KeptValues`` gives every temporary a value number: its expression with the
temporaries in it replaced by their numbers. Two temporaries of two loops with one number compute
the same thing from the same loads at the same point of the row, so the value an earlier loop made
is the one a later loop would make: the kernel's inputs do not change while it runs (unless a
member writes one in place: then nothing is kept), and each vector math function has one
implementation at every vector width (``cpp_prefix.h``), and g++ fuses no multiply-add
(``-ffp-contract=off``, ``cpp_build.py``): to the last bit. When a loop is about to make a math library call that an earlier loop made at its top level, it loads the
value back instead; the earlier loop gets the store, and the arguments of the call, computed for
nothing now, are dropped at the end.

**Where a value is kept.** In an output that a later loop of the kernel writes at the same
points, borrowed until then. Scribbling on it must be invisible:

- its own value is written by a loop that comes after (or is) the one loading the kept value
  back, after the load, and nothing else writes it in between;
- it is a buffer the kernel allocates, not a graph input updated in place (``ir/mutation.py``),
  so no buffer the kernel reads shares its storage (storage that a new buffer takes over was
  freed after its last reader had run: ``memory_planning.py``);
- its C++ type is the value's (float or double): a bfloat16 output would round an exp that the
  kernel computes in float, and the loop loading it back would compute with another value;
- a row of it is a run of consecutive elements (a strided one costs more than it saves);
- each of its points has an element of its own (a dense layout), so that the rows a thread owns
  are its own. A single-row kernel shares its row among threads, but in separate parallel loops:
  the end of one is a barrier before the next loads back what any thread stored.
Where no output qualifies (softmax of bfloat16 or float16: a 16-bit output would round the
exp), the kernel keeps the row in an array of its own, ``float kept0[512]``, declared for each
row inside the loop over rows (each thread its own), when the row's length is known and at most
``SCRATCH_ROW``: storing a float and loading it back costs far less than an exp (a float16
softmax's kernel: 172 -> 130 us).
"""

from __future__ import annotations

import collections
import functools
import re
from dataclasses import dataclass
from typing import Any

import sympy

from ..kernel_group import RINDEX, KernelGroup, KernelMember
from .cpp_math import BOOL_OPS, STD_BINARY, STD_UNARY, VECTOR_MATH_CALLED_BY
from .cpp_ops import LoopCode, storage_type

# calls of the math library (exp, log, erf...: tens of instructions per element; sqrt: one slow
# instruction): dearer to recompute in a later loop than to store and load back
LIBRARY_CALLS = {*STD_UNARY, *STD_BINARY, "pow", *VECTOR_MATH_CALLED_BY} - {"signbit"}
TEMPORARY = re.compile(r"\btmp\d+\b")
DEFINITION = re.compile(r"\s*auto (tmp\d+) = ")
TYPED_LITERAL = re.compile(r"-?(?:static_cast|std::numeric_limits)<(\w+)>")


@dataclass
class Made:
    """Where a value was first computed at the top level of a loop over the row."""

    position: int  # the loop's phase (``KernelGroup.phases``)
    loop: LoopCode
    var: str
    ctype: str | None


SCRATCH_ROW = 8192  # the longest row kept in an array of the kernel's own (32 KB of floats)


@dataclass
class Slot:
    """Where a kept value lives: the output ``buffer`` at ``index``, the points its member
    stores; or (``scratch``) the kernel's own array named ``buffer``, at the row's position."""

    buffer: str
    index: sympy.Expr
    scratch: bool = False

    def element(self, ops: Any) -> str:
        array = self.buffer if self.scratch else ops.pointers[self.buffer]
        return f"{array}[{ops.index(self.index)}]"


class KeptValues:
    """The value numbers and C++ types of a kernel's temporaries, and the values it keeps."""

    def __init__(self, group: KernelGroup):
        self.group = group
        self.inputs_stay = not any(m.node.get_mutation_names() for m in group.members)
        self.types: dict[str, str | None] = {}  # temporary -> its C++ type, where known
        self.numbers: dict[str, str] = {}  # temporary -> its value number
        self.numbering: dict[str, str] = {}  # expression over value numbers -> its number
        self.made: dict[str, Made] = {}  # value number -> where it was first computed
        self.slots: dict[str, Slot] = {}  # value number -> where it is kept
        self.scratch: list[tuple[str, str]] = []  # (name, C++ type) of the kernel's own rows
        self.position: int | None = None  # the loop being written (None: no loop over a row)
        self.loop: LoopCode | None = None

    @functools.cached_property
    def phase_of(self) -> dict[str, int]:
        """The phase of each member (asked for only when a loop repeats a call)."""
        return {m.get_name(): p for p, phase in enumerate(self.group.phases())
                for m in phase.members}

    def start(self, position: int | None, loop: LoopCode | None) -> None:
        """The ops handler now writes the loop over the row at phase ``position`` (None: per-row
        code, or a pointwise kernel's loop)."""
        self.position, self.loop = position, loop

    def number(self, expr: str) -> str:
        key = TEMPORARY.sub(lambda m: self.numbers.get(m[0], m[0]), expr)
        return self.numbering.setdefault(key, f"v{len(self.numbering)}")

    def note(self, ops: Any, var: str, expr: str, ctype: str | None) -> None:
        """``var`` holds ``expr`` (made, found by CSE, or loaded back)."""
        number = self.number(expr)
        self.numbers[var], self.types[var] = number, ctype
        # made at the top level of a loop body, not in a masked lambda: the rest of the loop
        # cannot see the lambda's values (the lambda's lines go to ``ops.code.body`` too, swapped
        # for the lambda's own buffer, so it is the handler that knows where it writes)
        if self.loop is not None and not ops.invariants.masked and number not in self.made:
            self.made[number] = Made(self.position, self.loop, var, ctype)

    def type_of(self, operand: str) -> str | None:
        if operand in self.types:
            return self.types[operand]
        if operand in ("true", "false"):
            return "bool"
        literal = TYPED_LITERAL.match(operand)  # static_cast<float>(0.5)
        return literal[1] if literal else None

    def result_type(self, op: str, operands: tuple[str, ...]) -> str | None:
        """The C++ type of ``op``'s result: bool for a comparison or a test, else the type of its
        operands when they all have one (the IR is type-promoted; C++ keeps float and double as
        they are; a narrower integer type is cast back to itself: ``cpp_math.narrowed``)."""
        if op in BOOL_OPS:
            return "bool"
        types = {self.type_of(a) for a in operands}
        return types.pop() if len(types) == 1 else None

    def kept_copy(self, ops: Any, expr: str, op: str | None) -> str | None:
        """A temporary holding a math library call ``expr`` that an earlier loop over the row made
        at its top level, loaded back from where that loop keeps it; None: compute it here."""
        if (op not in LIBRARY_CALLS or self.loop is None or expr in ops.cse.cache
                or not self.inputs_stay):
            return None
        number = self.number(expr)
        made = self.made.get(number)
        if made is None or made.position >= self.position or made.ctype not in ("float", "double"):
            return None
        slot = self.slot(ops, number, made)
        if slot is None:
            return None
        var = ops.cse.newvar()
        ops.code.body.writeline(f"auto {var} = {slot.element(ops)};  // the {op} an earlier loop kept")
        ops.cse.cache[expr] = var
        return var

    def slot(self, ops: Any, number: str, made: Made) -> Slot | None:
        """Where value ``number`` is kept, if its output is still to be written; else a new slot:
        of the outputs it may borrow, the one written last (it serves the most loops), and the
        store into it at the end of the loop that made the value."""
        slot = self.slots.get(number)
        if slot is not None and (slot.scratch or self.unwritten(ops, slot.buffer)):
            return slot
        outputs = [m for m in self.group.members if self.can_borrow(ops, m, made.ctype)]
        if outputs:
            output = max(outputs, key=lambda m: self.phase_of[m.get_name()])
            slot = Slot(output.get_name(), store_index(output))
        elif self.scratch_fits():  # an array of the kernel's own, one row long
            slot = Slot(f"kept{len(self.scratch)}", RINDEX, scratch=True)
            self.scratch.append((slot.buffer, made.ctype))
        else:
            return None
        self.slots[number] = slot
        made.loop.body.writeline(f"{slot.element(ops)} = {made.var};  // kept for a later loop")
        return slot

    def scratch_fits(self) -> bool:
        rnumel = sympy.sympify(self.group.rnumel)
        return isinstance(rnumel, sympy.Integer) and 0 < rnumel <= SCRATCH_ROW

    def scratch_declarations(self) -> list[str]:
        """The kernel's own rows, declared where the row's code starts."""
        return [f"{ctype} {name}[{self.group.rnumel}];  // values kept for a later loop"
                for name, ctype in self.scratch]

    def unwritten(self, ops: Any, name: str) -> bool:
        """Is output ``name`` written by the current loop or a later one, and not yet? (Its
        member's value is in the loop's scope once the member has run, and stored it.)"""
        return self.phase_of[name] >= self.position and name not in ops.scope

    def can_borrow(self, ops: Any, member: KernelMember, ctype: str) -> bool:
        """May a value of C++ type ``ctype`` be kept in ``member``'s output (the module's list)?"""
        name = member.get_name()
        return (name in self.group.stored and member.level == "element"
                and not member.is_reduction() and name not in {s.buffer for s in self.slots.values()}
                and storage_type(member.node.get_dtype()) == ctype
                and not member.node.get_mutation_names() and member.node.layout.is_dense()
                and is_contiguous_row(store_index(member)) and self.unwritten(ops, name))


def drop_unused_temporaries(lines: list[str]) -> list[str]:
    """``lines`` (a whole kernel: temporaries have kernel-wide names) without the definitions of
    temporaries nobody reads: the arguments of a math call loaded back from where an earlier loop
    kept it, a rounding that a store does itself. (g++ drops them too: this is for the reader.)
    A definition that may fail a check (``error``) stays, as its run-time check must."""
    while True:
        # (a loop's vectors and its tail define the same temporaries: names, not lines)
        definitions = [m for line in lines if (m := DEFINITION.match(line))]
        uses = collections.Counter(TEMPORARY.findall("\n".join(lines)))
        uses.subtract(m[1] for m in definitions)
        dead = {m[1] for m in definitions if "error" not in m.string and uses[m[1]] == 0}
        if not dead:
            return lines
        lines = [line for line in lines
                 if not ((m := DEFINITION.match(line)) and m[1] in dead)]


def store_index(member: KernelMember) -> sympy.Expr:
    """Where ``member`` stores its value, in the kernel's variables (``ComputedBuffer``'s
    ``store_output``)."""
    return member.node.layout.make_indexer()(member.index)


def is_contiguous_row(index: sympy.Expr) -> bool:
    """Are a row's points consecutive elements (``rindex + f(xindex)``)? Then keeping a value
    costs vector stores into cache lines the later loop writes anyway; a strided row (softmax
    over dim 0) would take a line per element, more than recomputing (16 -> 28 ms on 1024 x
    1024 floats, one thread)."""
    return RINDEX not in sympy.expand(index - RINDEX).free_symbols
