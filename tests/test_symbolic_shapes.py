"""Tests for minicompile/dynamo/symbolic_shapes.py and sym_node.py (the ShapeEnv on SymPy).

The soundness property checked here: trace an op once with symbolic sizes; for any *other*
sizes that satisfy the recorded guards, the symbolic output shape evaluated at those sizes equals
the shape eager PyTorch produces.
"""

import pytest
import sympy
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch._subclasses import FakeTensorMode

from minicompile.shapes.sym_node import SymNode
import minicompile as mc
from minicompile.shapes.symbolic_shapes import (
    PythonPrinter,
    ShapeEnv,
    expr_of,
    fake_from_sizes,
    hint_of,
    is_symbolic,
    symbolic_dispatch,
)


def test_create_symbol_hints_and_names():
    env = ShapeEnv()
    s0 = env.create_symbol(8, "L['a'].size()[0]")
    s1 = env.create_symbol(5, "L['a'].size()[1]")
    assert (str(s0), str(s1)) == ("s0", "s1")
    assert env.var_to_val == {s0: 8, s1: 5}


def test_zero_one_specialization():
    env = ShapeEnv()
    assert env.create_symbol(0, "x") == 0 and env.create_symbol(1, "y") == 1
    assert env.var_to_val == {}
    assert env.create_symint(1, "z") == 1 and type(env.create_symint(1, "z")) is int


def test_duck_sizing_shares_a_symbol_and_guards_equality():
    env = ShapeEnv()
    a = env.create_symbol(8, "L['a'].size()[0]")
    b = env.create_symbol(8, "L['b'].size()[0]")
    c = env.create_symbol(3, "L['b'].size()[1]")
    assert a is b and c is not a
    assert "L['b'].size()[0] == L['a'].size()[0]" in env.render_guards()
    no_duck = ShapeEnv(duck_shape=False)
    assert no_duck.create_symbol(8, "p") != no_duck.create_symbol(8, "q")


def test_seed_example_guard_rendering():
    env = ShapeEnv()
    s0 = env.create_symint(8, "L['a'].size()[0]")
    assert is_symbolic(s0) and hint_of(s0) == 8
    taken = bool(s0 * 2 < 16)  # the branch Python takes for the example
    assert taken is False
    assert env.render_guards() == ["2*L['a'].size()[0] >= 16"]


def test_static_eval_uses_the_size_range():
    env = ShapeEnv()
    s0, s1 = env.create_symbol(4, "a"), env.create_symbol(6, "b")
    assert env.static_eval(sympy.Ne(s0, 1)) is True
    assert env.static_eval(s0 * s1 >= 2) is True
    assert env.static_eval(sympy.Eq(s0, 0)) is False
    assert env.static_eval(s0 > 4) is None
    n_before = len(env.guards)
    assert env.evaluate_expr(sympy.Ne(s0, 1)) is True
    assert len(env.guards) == n_before  # statically known: no guard


def test_equality_guard_specializes_symbol():
    env = ShapeEnv()
    s0 = env.create_symint(8, "L['x'].size()[0]")
    assert int(s0) == 8  # a Python int was needed
    assert env.replacements == {expr_of(s0): 8}
    assert env.render_guards() == ["L['x'].size()[0] == 8"]
    assert env.static_eval(expr_of(s0) * 2) == 16


def test_symint_arithmetic_keeps_hints():
    env = ShapeEnv()
    s0 = env.create_symint(10, "n")
    for f, expect in [(lambda s: s + 3, 13), (lambda s: s * s, 100), (lambda s: s // 3, 3),
                      (lambda s: s % 4, 2), (lambda s: -s + 1, -9), (lambda s: 7 - s, -3)]:
        r = f(s0)
        assert isinstance(r, torch.SymInt) and hint_of(r) == expect
        assert env.size_hint(expr_of(r)) == expect
    assert isinstance(s0 / 4, torch.SymFloat) and hint_of(s0 / 4) == 2.5
    assert isinstance(s0 < 3, torch.SymBool)


def test_python_rendering_of_operators():
    env = ShapeEnv()
    s0 = env.create_symbol(9, "L['x'].size()[0]")
    for expr, code in [(sympy.floor(s0 / 2), "(L['x'].size()[0] // 2)"),
                       (sympy.Mod(s0, 3), "(L['x'].size()[0] % 3)"),
                       (sympy.Eq(s0, 9), "L['x'].size()[0] == 9"),
                       (sympy.Max(s0, 4), "max(4, L['x'].size()[0])")]:
        assert env.render(expr) == code
        assert eval(code, {}, {"L": {"x": torch.empty(9)}}) == env.size_hint(expr)


# ---- shape propagation through fake tensors with our SymInts ------------------------------------
OPS = {
    "add_broadcast": lambda a, b: a + b[0],
    "mul_scalar": lambda a, b: a * 3,
    "sum0": lambda a, b: a.sum(0),
    "mean_keep": lambda a, b: a.mean(-1, keepdim=True),
    "matmul": lambda a, b: a @ b.T,
    "view_flat": lambda a, b: a.view(-1),
    "reshape_t": lambda a, b: a.t().reshape(-1),
    "cat": lambda a, b: torch.cat([a, b], 0),
    "stack": lambda a, b: torch.stack([a, a]),
    "index0": lambda a, b: a[0],
    "slice": lambda a, b: a[1:, ::2],
    "unsqueeze": lambda a, b: a.unsqueeze(1).expand(-1, 3, -1),
    "softmax": lambda a, b: a.softmax(-1),
    "permute_contig": lambda a, b: a.permute(1, 0).contiguous(),
    "linear": lambda a, b: torch.nn.functional.linear(a, b),
}


def _trace(op, a, b, dynamic=True):
    env = ShapeEnv()
    mode = FakeTensorMode()
    fakes = []
    for name, t in (("a", a), ("b", b)):
        dims = set(range(t.dim())) if dynamic else set()
        sizes, strides = env.create_symbolic_sizes_strides(t, f"L['{name}']", dims)
        fakes.append(fake_from_sizes(mode, t, sizes, strides))
    with mode, symbolic_dispatch():
        out = op(*fakes)
    return env, fakes, out


def _holds(env, inputs):
    return all(eval(code, {}, {"L": inputs}) for code in env.render_guards())


@settings(max_examples=6, deadline=None)
@given(m=st.integers(2, 9), n=st.integers(2, 9), m2=st.integers(1, 12), n2=st.integers(1, 12))
def test_symbolic_shape_formulas_match_eager(m, n, m2, n2):
    for name, op in OPS.items():
        a, b = torch.randn(m, n), torch.randn(m, n)
        env, (fa, fb), out = _trace(op, a, b)
        assert tuple(hint_of(s) for s in out.shape) == tuple(op(a, b).shape), name
        assert _holds(env, {"a": a, "b": b}), name  # the example satisfies its own guards
        a2, b2 = torch.randn(m2, n2), torch.randn(m2, n2)
        if _holds(env, {"a": a2, "b": b2}):  # guards say the graph is reusable ...
            sub = {sym: sympy.Integer(v) for sym, v in zip(
                [expr_of(s) for s in (*fa.shape, *fb.shape)], (*a2.shape, *b2.shape))}
            predicted = tuple(int(sympy.sympify(expr_of(s)).xreplace(sub)) for s in out.shape)
            assert predicted == tuple(op(a2, b2).shape), name  # ... and it is right


def test_noncontiguous_strides_are_symbolic_where_dense():
    env = ShapeEnv()
    t = torch.randn(6, 4).t()  # (4, 6) with strides (1, 4)
    sizes, strides = env.create_symbolic_sizes_strides(t, "L['t']", {0, 1})
    assert [str(expr_of(s)) for s in strides] == ["1", "s0"]
    assert [hint_of(s) for s in strides] == [1, 4]


def test_symnode_is_the_node_behind_symint():
    env = ShapeEnv()
    s = env.create_symint(5, "n")
    assert isinstance(s.node, SymNode) and s.node.shape_env is env
    assert str(s * 2 + 1) == "2*s0 + 1"


FLOOR_DIV_AND_MOD = [  # a product on the right of // or %: bare, Python reads (a // 2) * s
    lambda s, t: sympy.floor((3 * s - 3) / (2 * sympy.floor(s / 2))),
    lambda s, t: sympy.Mod(s, 2 * t), lambda s, t: sympy.Mod(2 * s, t),
    lambda s, t: sympy.floor(2 * s / 3), lambda s, t: sympy.floor(s / (t * (s + 1))),
    lambda s, t: sympy.ceiling(s / (2 * t)), lambda s, t: sympy.Mod(s * t + 1, 3 * t),
    # a float's floor (eager's int(s * 1/3), a scale factor's size): 1/3 * 6 is 2.0 in double,
    # 1.999999999999998 with the 15 digits SymPy prints, and no floor at all as ``p // 1``
    lambda s, t: sympy.floor(sympy.Float(1 / 3) * s) + sympy.ceiling(sympy.Float(1.7) * t),
]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 60), st.integers(1, 12))  # (s // 2 is a divisor)
def test_printed_floor_division_and_modulo_evaluate_as_sympy(s_val, t_val):
    s, t = sympy.symbols("s t", integer=True, positive=True)
    for make in FLOOR_DIV_AND_MOD:
        expr = make(s, t)
        code = PythonPrinter().doprint(expr)
        assert eval(code, {}, {"s": s_val, "t": t_val}) == int(expr.subs({s: s_val, t: t_val})), code


def test_a_guard_with_a_product_divisor_holds_for_the_shape_it_was_made_for():
    """``reshape(n // 2, 2, -1)`` of ``n - 1`` rows guards ``3*s - 3 == 2*(s // 2)*(...)``:
    printed without parentheses around the divisor, the guard was false for the very shape
    it was compiled for, and every call compiled again."""
    def f(x):
        n = x.shape[0]
        return x[: n - 1].reshape(n // 2, 2, -1).sum(1)

    graphs = []
    compiled = mc.compile(f, backend=lambda gm, ex: graphs.append(gm) or gm.forward)
    for n in (5, 7, 7, 7):
        x = torch.randn(n, 3)
        torch.testing.assert_close(compiled(x), f(x))
    assert len(graphs) == 2  # the first size, then one dynamic graph


@pytest.mark.cpu_only
@pytest.mark.parametrize("backend", ["cpp", "reference", "triton"])
def test_a_size_from_a_float_scale_is_floored_in_the_wrapper_and_kernels(backend, monkeypatch):
    """``interpolate(scale_factor=1/3)`` of a dynamic size: the output size is eager's
    ``int(s2 * (1/3))``, ``floor(0.333...*s2)`` in SymPy, a float's floor. It was printed as
    integer division of ``0.333...*s2`` by 1: the wrapper allocated ``0.333*s2`` elements (a
    float: torch refused it), the kernels looped over an unfloored size, and AOT tracing gave
    ``_upsample_bilinear2d_aa`` a float output size."""
    if backend == "triton":
        pytest.importorskip("triton")
    monkeypatch.setattr(mc.config.inductor, "cpu_backend", backend)
    mc.metrics.reset()

    def f(x):
        return F.interpolate(x, scale_factor=1 / 3, mode="nearest") * 2

    def g(x):
        return torch.ops.aten._upsample_bilinear2d_aa(x, None, False, [1.7, 1 / 3])
    compiled_f, compiled_g = mc.compile(f, dynamic=True), mc.compile(g, dynamic=True)
    for n in (6, 9, 10):  # 6 * (1/3) is 2.0 in double: the sizes must be floored as eager's
        x = torch.randn(2, 3, n)
        torch.testing.assert_close(compiled_f(x), f(x))
        x = torch.randn(2, 3, n, n)
        torch.testing.assert_close(compiled_g(x), g(x))
    assert mc.metrics.eager_fallbacks == 0  # compiled (the AA op as an extern call)
