"""Checks for exercises/ex02_guards.py (notebook 02: guards and dynamic shapes)."""

from __future__ import annotations

import random

import sympy
import torch

from minicompile.shapes.symbolic_shapes import ShapeEnv
from minicompile.grading import exercise


def _reference_match(t: torch.Tensor, x, dynamic_dims: set[int]) -> bool:
    if not isinstance(x, torch.Tensor):
        return False
    if (x.dtype, x.device, x.requires_grad, x.dim()) != (t.dtype, t.device, t.requires_grad, t.dim()):
        return False
    if any(x.shape[d] != n for d, n in enumerate(t.shape) if d not in dynamic_dims):
        return False
    return bool(dynamic_dims) or x.stride() == t.stride()


def _variants(t: torch.Tensor) -> list:
    """Values a guard for ``t`` must tell apart: each differs from ``t`` in one property (two
    for the grown tensor of another rank), plus a clone that must match."""
    shape = list(t.shape)
    grown = [n + 1 for n in shape]
    return [t.clone(), t.detach().clone().requires_grad_(not t.requires_grad), t.double(),
            torch.randn(grown), torch.randn(shape + [2]), torch.randn(shape[:-1]), 1.0, [t],
            torch.randn(grown + [2]),  # another rank and other sizes: the rank is reported
            torch.randn(shape[::-1]).transpose(0, -1),  # same shape, other strides
            torch.randn(shape + [2])[..., 0],  # same shape, strides doubled
            torch.empty_strided(shape, t.stride(), device="meta"),  # same but the device
            torch.randn([shape[0] + 3] + shape[1:])]


def _example(rng: random.Random) -> torch.Tensor:
    """A random tensor to guard on: sometimes a non-contiguous view, so that a guard on
    contiguity instead of strides is caught."""
    shape = [rng.randint(2, 6) for _ in range(rng.randint(1, 3))]
    t = torch.randn(*shape)
    if rng.random() < 0.4:
        t = torch.randn(shape[::-1]).transpose(0, -1)
    return t.requires_grad_(rng.random() < 0.5)


@exercise("2.1", points=10, hints=(
    "A guard must be False for every value the compiled code would get wrong.",
    "List every property of a tensor the compiled code depends on: its type, dtype, "
    "device, requires_grad, rank, sizes, strides.",
    "A dynamic dim's size may change, and then so may the strides; two tensors of the "
    "same shape can still have different strides.",
))
def check_tensor_match_guard(sol):
    """Generate a TENSOR_MATCH guard"""
    rng = random.Random(0)
    for _ in range(12):
        t = _example(rng)
        shape = list(t.shape)
        dynamic = {d for d in range(len(shape)) if rng.random() < 0.4}
        code = sol.tensor_match_guard("x", t, dynamic)
        assert isinstance(code, str), "return the guard as a Python expression string"
        for x in _variants(t):
            got = eval(code, {"torch": torch}, {"L": {"x": x}})
            want = _reference_match(t, x, dynamic)
            desc = (f"x of {tuple(x.shape)}, strides {x.stride()}, {x.dtype} on {x.device}, "
                    f"requires_grad={x.requires_grad}"
                    if isinstance(x, torch.Tensor) else repr(type(x)))
            assert bool(got) == want, (f"guard for {tuple(shape)} (dynamic dims {dynamic}) says "
                                       f"{bool(got)} for {desc}; expected {want}")


class _LearnerShapeEnv(ShapeEnv):
    def __init__(self, create_symbol):
        super().__init__()
        self._learner_create_symbol = create_symbol

    def create_symbol(self, hint: int, source_name: str, duck: bool = True):
        if not duck:
            return super().create_symbol(hint, source_name, duck)
        return sympy.sympify(self._learner_create_symbol(self, int(hint), source_name))


@exercise("2.2", points=10, hints=(
    "Sizes 0 and 1 behave differently from the others (broadcasting, empty tensors), so "
    "they are never symbolic.",
    "Duck sizing: two sizes with the same value at the first call get the same symbol.",
    "The ShapeEnv later guards that the sizes sharing a symbol stay equal: it needs to "
    "know every source that uses it.",
))
def check_duck_sizing(sol):
    """Duck sizing and 0/1 specialization"""
    rng = random.Random(1)
    for _ in range(10):
        tensors = [torch.randn(*[rng.choice([0, 1, 2, 3, 5]) for _ in range(rng.randint(1, 3))])
                   for _ in range(rng.randint(1, 4))]
        ref, mine = ShapeEnv(), _LearnerShapeEnv(sol.create_symbol)
        for env in (ref, mine):
            env.sizes = [env.create_symbolic_sizes_strides(t, f"L['t{i}']", set(range(t.dim())))[0]
                         for i, t in enumerate(tensors)]
        shapes = [tuple(t.shape) for t in tensors]
        assert [[str(s) for s in sz] for sz in mine.sizes] == [[str(s) for s in sz] for sz in ref.sizes], \
            f"symbolic sizes for {shapes}: {mine.sizes} but expected {ref.sizes}"
        assert mine.render_guards() == ref.render_guards(), \
            f"guards for {shapes}: {mine.render_guards()} but expected {ref.render_guards()}"


@exercise("2.3", points=10, hints=(
    "Two things: the answer for the hints, and a condition under which that answer stays "
    "right.",
    "The answer comes from substituting the hints into the relation.",
    "When the answer is False, the guard is the condition under which it stays False: a "
    "SymPy relation can give you its opposite.",
))
def check_evaluate_and_guard(sol):
    """Turn a symbolic comparison into a guard"""
    rng = random.Random(2)
    s0, s1 = sympy.symbols("s0 s1", positive=True, integer=True)
    makers = [sympy.Lt, sympy.Le, sympy.Gt, sympy.Ge, sympy.Eq, sympy.Ne]
    for _ in range(30):
        lhs = rng.randint(1, 3) * s0 + rng.randint(0, 2) * s1 - rng.randint(0, 4)
        relation = rng.choice(makers)(lhs, rng.randint(4, 20), evaluate=False)
        hints = {s0: rng.randint(2, 9), s1: rng.randint(2, 9)}
        value, guard = sol.evaluate_and_guard(relation, hints)
        assert value == bool(relation.xreplace(hints)), f"{relation} at {hints} is not {value}"
        for a in range(2, 10):
            for b in range(2, 10):
                point = {s0: a, s1: b}
                holds = bool(guard.xreplace(point))
                same = bool(relation.xreplace(point)) == value
                assert holds == same, (f"guard {guard} for {relation} (hints {hints}) is {holds} "
                                       f"at s0={a}, s1={b}, but the branch would be "
                                       f"{'the same' if same else 'different'} there")


def _spec_matches(spec, v) -> bool:
    if not isinstance(v, torch.Tensor) or type(v) is not spec.type:
        return False
    if (v.dtype, str(v.device), v.requires_grad, v.dim()) != (
            spec.dtype, str(spec.device), spec.requires_grad, len(spec.shape)):
        return False
    return all(e is None or e == a for dims, actual in ((spec.shape, v.shape), (spec.stride, v.stride()))
               for e, a in zip(dims, actual))


@exercise("2.4", points=10, hints=(
    "Check the fields in the order the docstring gives and return at the first "
    "difference.",
    "type(value) must be exactly the spec's type: a subclass (a Parameter) is a mismatch.",
    "A None size or stride in the spec is dynamic: it never mismatches.",
))
def check_tensor_mismatch_reason(sol):
    """Word the recompile reason of a TENSOR_MATCH"""
    from minicompile.dynamo.guards import Guard, GuardKind, TensorSpec, _tensor_reason
    from minicompile.dynamo.source import LocalSource

    rng = random.Random(3)
    for _ in range(12):
        t = _example(rng)
        shape = list(t.shape)
        spec = TensorSpec.of(t)
        if rng.random() < 0.5:  # some dims dynamic
            dyn = rng.randrange(len(shape))
            spec = TensorSpec(spec.type, spec.dtype, spec.device,
                              tuple(None if d == dyn else n for d, n in enumerate(spec.shape)),
                              tuple(None if d == dyn else n for d, n in enumerate(spec.stride)),
                              spec.requires_grad)
        guard = Guard(LocalSource("x"), GuardKind.TENSOR_MATCH, spec)
        for value in _variants(t) + [torch.nn.Parameter(t.detach().clone())]:
            got = sol.tensor_mismatch_reason("L['x']", spec, value)
            want = None if _spec_matches(spec, value) else _tensor_reason(guard, value)
            assert got == want, f"for {spec} and a {type(value).__name__}: {got!r}, expected {want!r}"
