"""Random programs (the generator of the differential fuzzer).

A program grows one statement at a time: pick a value (recent ones more often, so programs get
deep), pick an op that applies to it (ops.py), write the expression, and run it eagerly on
example inputs. An expression eager rejects (a shape that does not fit, an in-place op on a
leaf that requires grad) is dropped and another is tried, so every program the generator returns
runs in eager; what it computes does not matter, only that compiled code computes the same.
"""

from __future__ import annotations

import random
import re
import warnings

import torch

from .ops import LAYOUT_CHOICES, OPS, WEIGHTS
from .program import DTYPES, FLOAT_DTYPES, InputSpec, Program, Statement

# How often an index drawn on the CPU may fall outside its dimension (on the GPU eager's error is
# a device-side assert that ends the process, not an exception to compare)
OUT_OF_RANGE_CHANCE = 0.5

SIZES = [1, 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31]  # 1 and odd primes on purpose
MAX_NUMEL = 4096  # keeps Triton's interpreter fast enough for thousands of programs
TRIES_PER_STATEMENT = 8


def device_dtypes(device: str) -> list[str]:
    """Input dtypes to draw from: float16 and bfloat16 only on the GPU (their CPU kernels are not
    what minicompile generates code for)."""
    floats = ["float32"] * 4 + (["float16", "bfloat16"] if device != "cpu" else [])
    return floats + ["int64", "bool"] + (["complex64"] if device == "cpu" else [])


class Builder:
    """The program under construction, with an eager example of every value in it."""

    def __init__(self, rng: random.Random, device: str):
        self.rng, self.device = rng, device
        self.program = Program(inputs=[])
        self.values: dict[str, torch.Tensor] = {}
        # values whose shape depends on the inputs' data (a boolean mask's result, and what is
        # computed from it): their example's shape is not the shape at run time
        self.data_dependent: set[str] = set()
        self.seed = rng.randrange(2**31)
        self.gen = torch.Generator().manual_seed(self.seed)

    def value(self, name: str) -> torch.Tensor:
        return self.values[name]

    # -- inputs ----------------------------------------------------------------------------------
    def random_shape(self) -> tuple[int, ...]:
        rank = self.rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        shape = [self.rng.choice(SIZES) for _ in range(rank)]
        while shape and torch.Size(shape).numel() > MAX_NUMEL:
            shape[self.rng.randrange(len(shape))] = 1
        return tuple(shape)

    def new_input(self, shape: tuple[int, ...], dtype: torch.dtype | str, *,
                  requires_grad: bool | None = None, layout: str | None = None,
                  low: int = 0, high: int = 8, harmless: tuple = ()) -> str:
        """A new input ``xN``. ``harmless`` (``InputSpec.harmless``) makes the example the
        generator computes with harmless (an index in range, a divisor not 0) where the spec
        draws values eager may reject: the later statements get a value to build on, and the
        program's own inputs keep the bad values that eager and compiled code must reject
        alike."""
        dtype = dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")
        if requires_grad is None:
            requires_grad = self.rng.random() < 0.4
        requires_grad = requires_grad and dtype in FLOAT_DTYPES
        layout = layout or self.rng.choice(LAYOUT_CHOICES + ["expanded"])
        expand_dims: tuple[int, ...] = ()
        if layout == "expanded":
            expand_dims = tuple(d for d in range(len(shape)) if self.rng.random() < 0.5)
        if not _layout_fits(layout, shape, expand_dims):
            layout, expand_dims = "contiguous", ()
        spec = InputSpec(tuple(shape), dtype, layout, requires_grad, high, expand_dims, low,
                         harmless)
        name = f"x{len(self.program.inputs)}"
        self.program.inputs.append(spec)
        self.values[name] = spec.made_harmless(spec.make(self.gen, self.device))
        return name

    def index_input(self, shape: tuple[int, ...], size: int, wraps: bool = False) -> str:
        """Indices into a dimension of ``size``: in range, or (sometimes, on the CPU) drawn past
        it, and below 0 where negative indices count from the end (``wraps``, as ``x[i]``)."""
        if self.device != "cpu" or self.rng.random() >= OUT_OF_RANGE_CHANCE:
            return self.new_input(shape, "int64", layout="contiguous", high=size)
        high = self.rng.choice([size + 1, 2 * size, 2**31])  # just past the end, or far past it
        low = self.rng.choice([-2 * size, -size - 1]) if wraps else self.rng.choice([0, -1])
        return self.new_input(shape, "int64", layout="contiguous", low=low, high=high,
                              harmless=("remainder", size))

    def divisor_input(self, shape: tuple[int, ...]) -> str:
        """An integer divisor that may hold 0 (eager raises ZeroDivisionError) and -1
        (``INT64_MIN // -1`` overflows: a trap in C). On the GPU eager does not raise for 0
        (the quotient is whatever the hardware gives): divisors there are positive."""
        if self.device != "cpu":
            return self.new_input(shape, "int64", layout="contiguous", low=1, high=8)
        return self.new_input(shape, "int64", layout="contiguous", low=-7, high=8,
                              harmless=("nonzero",))

    def broadcast_partner(self, x: str, dtype: str | None = None) -> str:
        """A value that broadcasts with ``x`` (of ``x``'s dtype unless told): an earlier value
        when one fits, else a new input whose shape drops or sets to 1 some of ``x``'s dims."""
        t = self.values[x]
        dtype_ = DTYPES[dtype] if dtype else t.dtype
        fits = [n for n, v in self.values.items() if n != x and v.dtype == dtype_ and
                _broadcasts(v.shape, t.shape)]
        if fits and self.rng.random() < 0.5:
            return self.rng.choice(fits)
        return self.new_input(self.broadcast_shape(x), dtype or dtype_)

    def broadcast_shape(self, x: str) -> tuple[int, ...]:
        """``x``'s shape with some dims set to 1, and maybe some leading dims dropped."""
        shape = [1 if self.rng.random() < 0.3 else s for s in self.values[x].shape]
        shape = shape[self.rng.randrange(len(shape) + 1):] if self.rng.random() < 0.3 else shape
        return tuple(shape)

    def changes_an_input(self, statement: Statement) -> bool:
        """Whether an in-place op writes into an input's memory (its receiver is an input or a
        view of one). One on a temporary nobody reads afterwards is dead code, which a compiler
        removes with what it reads: an error eager raises there (an index out of range) would
        not be raised compiled, as with ``torch.compile``."""
        receiver = self.values[statement.expr.split(".", 1)[0]]
        return any(receiver.untyped_storage().data_ptr() == self.values[f"x{i}"]
                   .untyped_storage().data_ptr() for i in range(len(self.program.inputs)))

    # -- statements ------------------------------------------------------------------------------
    def pick_value(self) -> str:
        names = list(self.values)
        recent = names[-3:]
        return self.rng.choice(recent if self.rng.random() < 0.7 else names)

    def try_statement(self) -> bool:
        """Add one statement that eager accepts; False if no attempt worked."""
        for _ in range(TRIES_PER_STATEMENT):
            x = self.pick_value()
            ops = [op for op in OPS if op.applies(self.values[x])]
            op = self.rng.choices(ops, [WEIGHTS.get(o.name, 1) for o in ops])[0]
            if self._try(op, x):
                return True
        return False

    def _try(self, op, x: str) -> bool:
        snapshot = (list(self.program.inputs), dict(self.values), self.gen.get_state())
        try:
            expr = op.build(self, x)
            if expr is None:
                raise ValueError("op does not fit")
            result = self._eval(expr)
        except Exception:  # eager rejects it: forget the inputs the attempt added
            inputs, self.values, state = snapshot
            self.program.inputs[:] = inputs
            self.gen.set_state(state)
            return False
        target = f"v{len(self.program.body)}"
        comment = f"{tuple(result.shape)} {str(result.dtype).removeprefix('torch.')}"
        self.program.body.append(Statement(target, expr, comment))
        self.values[target] = result
        if op.name == "boolean_mask" or self.data_dependent & set(re.findall(r"\w+", expr)):
            self.data_dependent.add(target)
        return True

    def _eval(self, expr: str) -> torch.Tensor:
        scope = {"torch": torch, "F": torch.nn.functional, **self.values}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # std() of one element: NaN, rejected below
            result = eval(expr, scope)
        if not isinstance(result, torch.Tensor) or result.numel() > MAX_NUMEL * 4:
            raise ValueError("not a tensor, or too big")
        if (result.is_floating_point() or result.is_complex()) and not result.isfinite().all():
            raise ValueError("not finite: would compare infinities and NaNs")
        return result


def _layout_fits(layout: str, shape: tuple[int, ...], expand_dims: tuple[int, ...]) -> bool:
    """A 0-d tensor has only one layout; transposing takes two dims, expanding at least one."""
    needs = {"transposed": len(shape) >= 2, "expanded": bool(expand_dims)}
    return len(shape) >= 1 and needs.get(layout, True)


def _broadcasts(a: torch.Size, b: torch.Size) -> bool:
    try:
        return torch.broadcast_shapes(a, b) == b
    except RuntimeError:
        return False


def generate_program(seed: int, device: str = "cpu", max_statements: int = 10) -> Program:
    """A random program that runs in eager; the same seed gives the same program."""
    rng = random.Random(seed)
    b = Builder(rng, device)
    for _ in range(rng.randint(1, 2)):
        b.new_input(b.random_shape(), rng.choice(device_dtypes(device)))
    for _ in range(rng.randint(1, max_statements)):
        b.try_statement()
    values = [s.target for s in b.program.body] or ["x0"]
    outputs = sorted(set(rng.sample(values, min(len(values), rng.randint(1, 2)))) | {values[-1]})
    return b.program.returning(outputs, b.changes_an_input)
