"""A fuzzed program: its inputs' specs and its statements, printable as Python source.

A program is straight-line code over tensors, one statement a line::

    def fn(x0, x1):
        v0 = torch.relu(x0)                  # (5, 3) float32
        v1 = v0.sum(dim=1, keepdim=True)     # (5, 1) float32
        return (v1,)

Keeping it as source text (not as a graph) is what makes a failure easy to read: the shrinker
deletes lines, and the reproducer it writes is the same text, pasted into a pytest test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable

import torch

DTYPES = {  # spec name -> torch dtype (names, so a reproducer prints as plain Python)
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "bool": torch.bool, "complex64": torch.complex64,
}
FLOAT_DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class InputSpec:
    """How to make one input: its logical shape, dtype and memory layout.

    layout: "contiguous"; "transposed" (the last two dims swapped in memory); "sliced" (every
    other element of a wider last dim, with a storage offset); "expanded" (dims of size 1 in
    memory, broadcast to ``shape`` with stride 0 where ``expand_dims`` says).
    low, high: int64 inputs are drawn from [low, high): an index input in range, or not (an
    index out of range, a divisor of 0: eager raises, and compiled code must raise the same).
    harmless: for values eager may reject, how to make them ones it accepts (a row of
    :data:`HARMLESS` and its argument: ``("remainder", 5)`` for indices into a dim of 5).
    """

    shape: tuple[int, ...]
    dtype: str = "float32"
    layout: str = "contiguous"
    requires_grad: bool = False
    high: int = 8
    expand_dims: tuple[int, ...] = ()
    low: int = 0
    harmless: tuple = ()

    def make(self, gen: torch.Generator, device: str) -> torch.Tensor:
        base_shape = [1 if d in self.expand_dims else s for d, s in enumerate(self.shape)]
        if self.layout == "transposed":
            base_shape[-2], base_shape[-1] = base_shape[-1], base_shape[-2]
        if self.layout == "sliced":
            base_shape[-1] = 2 * base_shape[-1] + 1
        base = _random(tuple(base_shape), self.dtype, self.low, self.high, gen).to(device)
        t = LAYOUTS[self.layout](base)
        if self.expand_dims:
            t = t.expand(self.shape)
        return t.detach().requires_grad_(self.requires_grad)

    def made_harmless(self, t: torch.Tensor) -> torch.Tensor:
        """``t`` with the values eager may reject replaced by ones it accepts."""
        if not self.harmless:
            return t
        kind, *args = self.harmless
        return HARMLESS[kind](t, *args)


# the harmless twin of values eager may reject (InputSpec.harmless)
HARMLESS = {
    "remainder": lambda t, size: t.remainder(size),  # an index out of range -> one in [0, size)
    "nonzero": lambda t: t.masked_fill(t == 0, 1),  # a divisor of 0 -> 1
}


def _random(shape: tuple[int, ...], dtype: str, low: int, high: int,
            gen: torch.Generator) -> torch.Tensor:
    if dtype == "int64":
        return torch.randint(low, max(high, low + 1), shape, generator=gen)
    if dtype == "bool":
        return torch.rand(shape, generator=gen) > 0.5
    return torch.randn(shape, generator=gen, dtype=DTYPES[dtype] if dtype == "complex64"
                       else torch.float32).to(DTYPES[dtype])


LAYOUTS = {  # layout -> the view of a base tensor that gives the logical shape
    "contiguous": lambda t: t,
    "transposed": lambda t: t.transpose(-1, -2),
    "sliced": lambda t: t[..., 1::2],
    "expanded": lambda t: t,  # InputSpec.make expands the size-1 dims afterwards
}


@dataclass
class Statement:
    """``target = expr``; ``uses`` are the names ``expr`` reads (for dead-code elimination)."""

    target: str
    expr: str
    comment: str = ""

    def uses(self) -> set[str]:
        return set(re.findall(r"\b[xv]\d+\b", self.expr))


@dataclass
class Program:
    inputs: list[InputSpec]
    body: list[Statement] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def source(self, name: str = "fn") -> str:
        params = ", ".join(f"x{i}" for i in range(len(self.inputs)))
        lines = [f"def {name}({params}):"]
        for s in self.body:
            comment = f"  # {s.comment}" if s.comment else ""
            lines.append(f"    {s.target} = {s.expr}{comment}")
        lines.append(f"    return ({''.join(o + ', ' for o in self.outputs)})")
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, source: str, inputs: list[InputSpec]) -> Program:
        """The program ``source()`` printed (a reproducer stores the text, not the object)."""
        body, outputs = [], []
        for line in source.splitlines()[1:]:
            if m := re.fullmatch(r"\s+(v\d+) = (.*?)(?:  # (.*))?", line):
                body.append(Statement(m[1], m[2], m[3] or ""))
            elif m := re.fullmatch(r"\s+return \((.*)\)", line):
                outputs = [o.strip() for o in m[1].split(",") if o.strip()]
        return cls(list(inputs), body, outputs)

    def function(self):
        """A fresh function object (a fresh code object: nothing cached from another run)."""
        namespace = {"torch": torch, "F": torch.nn.functional}
        exec(compile(self.source(), "<fuzzed program>", "exec"), namespace)
        return namespace["fn"]

    def make_inputs(self, seed: int, device: str, harmless: bool = False) -> list[torch.Tensor]:
        """The inputs; ``harmless``: with the values eager may reject made ones it accepts."""
        gen = torch.Generator().manual_seed(seed)
        inputs = [spec.make(gen, device) for spec in self.inputs]
        return self.made_harmless(inputs) if harmless else inputs

    def made_harmless(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [spec.made_harmless(t) for spec, t in zip(self.inputs, inputs)]

    def returning(self, outputs: list[str],
                  side_effect: Callable[[Statement], bool] = lambda s: True) -> Program:
        """The same program returning ``outputs``, without the statements they do not need.
        An in-place op whose result is not needed stays while ``side_effect`` says it may
        change an input (by default, always: its receiver may be a view of one)."""
        live, body = set(outputs), []
        for s in reversed(self.body):
            if s.target in live or (_mutates(s) and (_receiver(s) in live or side_effect(s))):
                body.append(s)
                live |= s.uses()
        return replace(self, body=body[::-1], outputs=list(outputs)).without_unused_inputs()

    def without_unused_inputs(self) -> Program:
        """Drop the inputs no statement reads, renumbering the rest (``x2`` may become ``x0``)."""
        used = set().union(*(s.uses() for s in self.body), self.outputs)
        kept = [i for i in range(len(self.inputs)) if f"x{i}" in used]
        new_name = {f"x{old}": f"x{new}" for new, old in enumerate(kept)}

        def rename(text: str) -> str:
            return re.sub(r"\bx\d+\b", lambda m: new_name[m[0]], text)

        body = [replace(s, expr=rename(s.expr)) for s in self.body]
        return replace(self, inputs=[self.inputs[i] for i in kept], body=body,
                       outputs=[rename(o) for o in self.outputs])

    def without(self, index: int) -> Program:
        return replace(self, body=self.body[:index] + self.body[index + 1:])

    def with_input(self, index: int, spec: InputSpec) -> Program:
        inputs = list(self.inputs)
        inputs[index] = spec
        return replace(self, inputs=inputs)


def _mutates(s: Statement) -> bool:
    """An in-place method (``x0.add_(1)``) changes its receiver: kept while the program runs."""
    return re.match(r"[xv]\d+\.\w+_\(", s.expr) is not None


def _receiver(s: Statement) -> str:
    return s.expr.split(".", 1)[0]
