"""Graph capture of small tensor functions: every result equals eager, and each function that
should be captured whole gives exactly one graph and no eager fallback."""

from __future__ import annotations

import functools
import math
import operator

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc

W = torch.randn(4, 4)  # a global tensor: becomes a graph input G['W']
SCALE = 3  # a global constant: guarded by value


def helper(x, k=2):
    return x * k + 1


def outer_helper(x):
    return helper(x, k=3).relu()


def assert_same(got, expected):
    """assert_close for tensors, == for everything else, recursively."""
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e)
    elif isinstance(expected, dict):
        assert list(got) == list(expected)
        for k in expected:
            assert_same(got[k], expected[k])
    elif isinstance(expected, torch.Tensor):
        torch.testing.assert_close(got, expected)
        assert got.requires_grad == expected.requires_grad
    else:
        assert got == expected and type(got) is type(expected)


def check(fn, *args, graphs: int = 1, **kwargs):
    """Compile with the eager backend, compare with eager on the given inputs, count graphs."""
    expected = fn(*args, **kwargs)
    mc.metrics.reset()
    got = mc.compile(fn, backend="eager")(*args, **kwargs)
    assert_same(got, expected)
    assert mc.metrics.eager_fallbacks == 0, mc.explain(fn)(*args, **kwargs).break_reasons
    assert mc.metrics.graphs_compiled == graphs
    return got


x4 = lambda *s: torch.randn(*s) if s else torch.randn(4, 4)  # noqa: E731


def f_arith(x, y):
    return (x + y) * 2 - x / (y.abs() + 1) + x ** 2 - (x // 3) % 2 + (-x) + (+y)


def f_matmul(x, y):
    return x @ y.T + (x @ y).mT


def f_compare(x, y):
    return (x > y) & (x <= 0.5) | ~(y == 0) ^ (x != y), x >= y, x < 1


def f_unary(x):
    return torch.sin(x).exp().neg().abs().sqrt() + x.tanh() + torch.sigmoid(x).log1p()


def f_index(x):
    return x[0], x[1:3], x[:, ::2], x[..., -1], x[None, 1], x[[0, 2]], x[x.shape[0] - 1]


def f_setitem(x):
    y = x.clone()
    y[0] = 1.0
    y[1:3, 0] = y[1:3, 1] * 2
    return y


def f_tuple_in_out(pair):
    a, b = pair
    return (a + b, (a * b, a - b))


def f_list_in_out(xs):
    out = []
    for x in xs:
        out.append(x.cos())
    return out


def f_dict_in_out(d):
    return {"sum": d["a"] + d["b"], "diff": d["a"] - d["b"], "n": len(d)}


def f_range_loop(x):
    for i in range(3):
        x = x + i
    for i in range(1, 7, 2):
        x = x * i
    return x


def f_zip_enumerate(xs, ys):
    total = 0
    for i, (a, b) in enumerate(zip(xs, ys)):
        total = total + a * b * i
    return total


def f_if_const(x, flag=True, mode="add"):
    if flag and mode == "add":
        return x + 1
    elif mode == "mul":
        return x * 2
    return x


def f_if_shape(x):
    if x.shape[0] > 3 and x.dim() == 2:
        x = x.sum(0)
    if x.dtype == torch.float32:
        x = x.double()
    if x.ndim == 1 and x.size(0) == 4:
        x = x + x.numel()
    return x


def f_closure(x):
    scale = 2.5

    def inner(y):
        return y * scale

    return inner(x) + inner(x + 1)


def make_closure():
    bias = torch.randn(4)
    k = 3

    def fn(x):
        return x * k + bias

    return fn


def f_nested_calls(x):
    return outer_helper(x) + helper(x)


def f_globals(x):
    return x @ W + SCALE


def f_varargs(*args, **kwargs):
    return sum(args) * kwargs["scale"] + kwargs.get("shift", 0)


def f_defaults_kwargs(x, y=None, *, alpha=1.0):
    if y is None:
        y = torch.ones_like(x)
    return torch.add(x, y, alpha=alpha)


def f_methods(x):
    return x.view(-1).reshape(2, 8).transpose(0, 1).contiguous().sum(dim=1, keepdim=True)


def f_listcomp(xs):
    ys = [x * 2 for x in xs if x.dim() == 1]
    zs = {i: y.sum() for i, y in enumerate(ys)}
    return torch.stack(ys), zs[0], [i * i for i in range(4)]


def f_fstring(x):
    name = f"layer_{x.dim()}_{x.shape[0]:03d}"
    return x + len(name), name


def f_isinstance(x, n):
    if isinstance(x, torch.Tensor) and isinstance(n, int) and not isinstance(n, bool):
        return x * n
    return x


def f_builtins(x, xs):
    n = len(xs) + max(1, 3) + min(x.shape) + abs(-2) + int(2.7) + round(1.4)
    m = float(n) + math.sqrt(16) + sum([1, 2, 3])
    return x * n + m + getattr(x, "T").sum() + hasattr(x, "shape")


def f_operator_module(x, y):
    return operator.add(x, y), operator.mul(x, 2), operator.getitem(x, 0)


def f_tensor_attrs(x):
    a = x.T + x.mT
    dev = x.device
    return a, torch.zeros(x.shape, device=dev, dtype=x.dtype), x.is_cuda, x.requires_grad


def f_functional(x):
    return F.relu(x) + F.gelu(x) + F.softmax(x, dim=-1) + F.layer_norm(x, x.shape[-1:])


def f_creation(x):
    return torch.ones(x.shape[0], 3) * 2 + torch.arange(3.0) + torch.full((1, 3), 0.5)


def f_unpack_ex(xs):
    first, *rest = xs
    return first + sum(rest)


def f_no_grad(x):
    with torch.no_grad():
        y = x * 2
    return y + x, y.requires_grad


def f_chunk(x):
    a, b = x.chunk(2, dim=0)
    parts = torch.split(x, [1, 3], dim=0)
    return a + b, parts[1].sum(), x.max(dim=0).values, x.max(dim=0)[1]


def f_while(x):
    i = 0
    while i < 3:
        x = x + 1
        i += 1
    return x


def f_lambda(x):
    act = lambda t, s=2: t * s  # noqa: E731
    return act(x) + act(x, s=3)


def f_inplace(x):
    y = x.clone()
    y.add_(1)
    y *= 2
    return y


def f_generators(xs):
    def scaled(ts):
        for i, t in enumerate(ts):
            yield t * (i + 1)

    if any(t.dim() == 2 for t in xs) and all(t.shape[0] == 4 for t in xs):
        return sum(scaled(xs)), tuple(t.sum() for t in xs)
    return xs[0]


Pair = __import__("collections").namedtuple("Pair", "a b")


def f_namedtuple(p, d):
    q = Pair(p.a + p.b, b=p.a * 2)
    return q, q.a + q.b, [d[k] * 2 for k in sorted(d)]


def f_return_input(x, y):
    return x, y + 1, None, "tag"



LEAKY = functools.partial(F.leaky_relu, negative_slope=0.2)  # a global partial: guarded by parts


def f_partial(x, pow_fn):
    add2 = functools.partial(torch.add, alpha=2)  # built while tracing
    return add2(x, LEAKY(x)) + pow_fn(x) + functools.partial(helper, k=3)(x)


CASES = {
    "arith": (f_arith, (x4(), x4())),
    "matmul": (f_matmul, (x4(), x4())),
    "compare": (f_compare, (x4(), x4())),
    "unary": (f_unary, (x4(),)),
    "index": (f_index, (x4(),)),
    "setitem": (f_setitem, (x4(),)),
    "tuple_in_out": (f_tuple_in_out, ((x4(), x4()),)),
    "list_in_out": (f_list_in_out, ([x4(), x4(3), x4(2, 5)],)),
    "dict_in_out": (f_dict_in_out, ({"a": x4(), "b": x4()},)),
    "range_loop": (f_range_loop, (x4(),)),
    "zip_enumerate": (f_zip_enumerate, ([x4(), x4()], [x4(), x4()])),
    "if_const": (f_if_const, (x4(), True, "add")),
    "if_const_mul": (f_if_const, (x4(), False, "mul")),
    "if_shape": (f_if_shape, (x4(),)),
    "closure": (f_closure, (x4(),)),
    "closure_factory": (make_closure(), (x4(),)),
    "nested_calls": (f_nested_calls, (x4(),)),
    "globals": (f_globals, (x4(),)),
    "methods": (f_methods, (x4(),)),
    "listcomp": (f_listcomp, ([x4(3), x4(3)],)),
    "fstring": (f_fstring, (x4(),)),
    "isinstance": (f_isinstance, (x4(), 3)),
    "builtins": (f_builtins, (x4(), [1, 2])),
    "operator_module": (f_operator_module, (x4(), x4())),
    "tensor_attrs": (f_tensor_attrs, (x4(),)),
    "functional": (f_functional, (x4(),)),
    "creation": (f_creation, (x4(),)),
    "unpack_ex": (f_unpack_ex, ([x4(), x4(), x4()],)),
    "no_grad": (f_no_grad, (torch.randn(4, requires_grad=True),)),
    "chunk": (f_chunk, (x4(),)),
    "while": (f_while, (x4(),)),
    "lambda": (f_lambda, (x4(),)),
    "inplace": (f_inplace, (x4(),)),
    "noncontiguous": (f_arith, (x4(4, 8)[:, ::2], x4(4, 4).T)),
    "odd_sizes": (f_unary, (x4(1823, 781),)),
    "generators": (f_generators, ([x4(), x4()],)),
    "namedtuple": (f_namedtuple, (Pair(x4(), x4()), {"b": x4(), "a": x4()})),
    "partial": (f_partial, (x4(), functools.partial(torch.pow, exponent=2))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_capture_matches_eager(name):
    fn, args = CASES[name]
    check(fn, *args)


def test_varargs_kwargs():
    check(f_varargs, x4(), x4(), scale=2.0, shift=1)


def test_defaults_and_keywords():
    check(f_defaults_kwargs, x4())
    check(f_defaults_kwargs, x4(), x4(), alpha=0.5)


def test_returning_inputs_keeps_identity():
    x, y = x4(), x4()
    out = mc.compile(f_return_input, backend="eager")(x, y)
    assert out[0] is x and out[2] is None and out[3] == "tag"
    torch.testing.assert_close(out[1], y + 1)


def test_graph_count_through_explain():
    e = mc.explain(f_nested_calls)(x4())
    assert e.graph_count == 1 and e.graph_break_count == 0
    assert "__compiled_fn_" in e.transformed_program() and "def guard_0(L, G)" in str(e)


def test_cache_reuse_and_recompile_on_shape_change():
    cf = mc.compile(f_unary, backend="eager")
    cf(x4(4, 4))
    cf(x4(4, 4))
    assert mc.metrics.frames_compiled == 1
    x = x4(2, 3)
    torch.testing.assert_close(cf(x), f_unary(x))
    assert mc.metrics.frames_compiled == 2 and mc.metrics.recompiles == 1


def test_constant_argument_is_guarded():
    cf = mc.compile(f_if_const, backend="eager")
    x = x4()
    torch.testing.assert_close(cf(x, True, "add"), x + 1)
    torch.testing.assert_close(cf(x, False, "mul"), x * 2)
    torch.testing.assert_close(cf(x, False, "none"), x)
    assert mc.metrics.frames_compiled == 3


def test_global_change_is_seen():
    global SCALE
    cf = mc.compile(f_globals, backend="eager")
    x = x4()
    torch.testing.assert_close(cf(x), x @ W + 3)
    SCALE = 5
    try:
        torch.testing.assert_close(cf(x), x @ W + 5)
    finally:
        SCALE = 3


def test_grad_mode_is_guarded():
    cf = mc.compile(lambda x: x * 2, backend="eager")
    x = torch.randn(3, requires_grad=True)
    assert cf(x).requires_grad
    with torch.no_grad():
        assert not cf(x).requires_grad
    assert cf(x).requires_grad


def test_backward_through_captured_graph():
    x = torch.randn(5, requires_grad=True)
    mc.compile(f_unary, backend="eager")(x).sum().backward()
    g = x.grad.clone()
    x.grad = None
    f_unary(x).sum().backward()
    torch.testing.assert_close(g, x.grad)


def test_decorator_form():
    @mc.compile(backend="eager")
    def f(x):
        return x.cos() * 2

    x = x4()
    torch.testing.assert_close(f(x), x.cos() * 2)
    assert f.__name__ == "f"


def test_partial_arguments_are_guarded():
    """A partial passed in is guarded through its func, args and keywords: new keywords recompile."""
    x, cf = x4(), mc.compile(f_partial, backend="eager")
    for exponent in (2, 3):
        pow_fn = functools.partial(torch.pow, exponent=exponent)
        torch.testing.assert_close(cf(x, pow_fn), f_partial(x, pow_fn))
    assert mc.metrics.recompiles == 1


def test_explain_and_compile_an_already_compiled_function():
    """mc.explain / mc.compile of something mc.compile returned start from the original."""
    cf = mc.compile(helper, backend="eager")
    x = x4()
    out = mc.explain(cf)(x)
    assert out.graph_count == 1 and out.graph_break_count == 0
    torch.testing.assert_close(mc.compile(cf, backend="eager")(x), helper(x))
    module = torch.nn.Linear(4, 2)
    cm = mc.compile(mc.compile(module, backend="eager"), backend="eager")
    torch.testing.assert_close(cm(x), module(x))
    assert mc.explain(cm)(x).graph_count == 1
