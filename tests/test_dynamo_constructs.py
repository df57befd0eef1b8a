"""Python constructs captured in one graph (the categories PyTorch's Dynamo tests exercise and
``tests/dynamo_port/`` counts): user ``__eq__``, namedtuples, deques, dict methods, functions
returned from the frame, lru_cache, modules built in the frame, typing objects, tensor
metadata, and float arguments that do not specialize. Each result is compared with eager, and
each case is written so that the wrong decision gives a wrong answer or a second graph."""

from __future__ import annotations

import collections
import importlib.util
import functools
import pathlib
import typing
from typing import NamedTuple

import pytest
import torch

import minicompile as mc
from dynamo_port import assert_same


def one_graph(fn, *args):
    """Compile with the eager backend: eager's result, in one graph, no frame left to eager."""
    expected = fn(*args)
    mc.reset()
    mc.metrics.reset()
    got = mc.compile(fn, backend="eager")(*args)
    assert_same(got, expected)
    assert (mc.metrics.graphs_compiled, mc.metrics.graph_breaks, mc.metrics.eager_fallbacks) \
        == (1, 0, 0), mc.explain(fn)(*args).break_reasons
    return got


class Version:
    def __init__(self, major, minor):
        self.major, self.minor = major, minor

    def __eq__(self, other):
        return isinstance(other, Version) and (self.major, self.minor) == (other.major, other.minor)


class Token:  # no __eq__: compares by identity
    pass


def test_user_eq_decides_in_and_equality():
    def f(x):
        known = [Version(1, 0), Version(2, 1)]
        hits = (Version(2, 1) in known, Version(3, 0) in known, Version(1, 0) == Version(1, 0),
                Version(1, 0) != Version(1, 1), Token() == Token(), Token() != None)  # noqa: E711
        return x * sum(h * 2 ** i for i, h in enumerate(hits))

    one_graph(f, torch.randn(3))


class Pair(NamedTuple):
    left: torch.Tensor
    right: torch.Tensor

    def total(self):
        return self.left + self.right

    @classmethod
    def name(cls):
        return cls.__name__


def test_namedtuples_made_in_the_frame_and_their_methods():
    def f(a, b):
        Point = collections.namedtuple("Point", ["x", "y"], defaults=(10,))
        p = Point(a)
        q = p._replace(y=b)
        d = q._asdict()
        pair = Pair(a, b)
        flags = hasattr(pair, "_fields") and not hasattr(pair, "missing")
        return p.y + d["x"] * d["y"], pair.total() * flags, pair.name(), Point._fields, q

    got = one_graph(f, torch.randn(3), torch.randn(3))
    assert type(got[-1]).__module__ == __name__  # the class belongs to the function's module


def test_deque_ends_maxlen_and_rotation():
    def f(a, b):
        d = collections.deque([a, b], maxlen=3)
        d.append(a * 2)
        d.append(b * 3)  # full: drops a from the left
        d.appendleft(a - 1)  # full: drops b * 3 from the right
        d.rotate(1)
        d.extendleft([b + 5])
        return d.popleft() - d.pop(), list(d), len(d), d

    one_graph(f, torch.randn(2), torch.randn(2))


def test_dict_methods():
    def f(x, y):
        d = dict.fromkeys(["a", "b"], x)
        d.update([("b", y), ["c", x * 2]], e=y * 3)
        d.update(zip("ab", [y + 1, x + 1]))
        od = collections.OrderedDict.fromkeys("xyz", 0)
        od.move_to_end("x")
        dd = collections.defaultdict.fromkeys("p", 1)
        dd.setdefault("q", 5)
        same_keys = {"a": 1, "b": 2, "c": 3, "e": 4}.keys() == d.keys()
        return d, list(od), dd["q"] * x, same_keys, sorted(d.keys() & {"a", "z"})

    one_graph(f, torch.randn(2), torch.randn(2))


def test_functions_returned_from_the_frame_keep_their_closure():
    def f(x):
        k = 4

        def add_k(t, scale=2):
            return t * scale + k

        return add_k(x), add_k

    result, add_k = one_graph(f, torch.randn(3))
    torch.testing.assert_close(add_k(torch.ones(2)), torch.full((2,), 6.0))
    assert add_k.__qualname__.endswith("f.<locals>.add_k")


@functools.lru_cache
def cached_scale(n):
    return n * 3


def test_lru_cache_is_traced_through():
    def f(x):
        @functools.lru_cache(maxsize=None)
        def shift(n):
            return n + 1

        return x * cached_scale(2) + shift(4)

    one_graph(f, torch.randn(3))


PROBES = []


@functools.lru_cache
@torch._dynamo.assume_constant_result
def package_installed(name):
    """An install probe as transformers writes them (``is_torch_available``): it reads the
    file system, which the tracer could not follow; the mark says its answer never changes."""
    PROBES.append(name)
    return importlib.util.find_spec(name) is not None and pathlib.Path(torch.__file__).exists()


def test_a_function_marked_constant_is_called_while_tracing():
    def f(x):
        return x + 1 if package_installed("torch") else x - 1

    PROBES.clear()
    package_installed.cache_clear()
    x = torch.randn(3)
    torch.testing.assert_close(one_graph(f, x), x + 1)
    assert PROBES  # called for its answer while tracing, its body not traced


def test_a_function_marked_constant_needs_constant_arguments():
    @torch._dynamo.assume_constant_result
    def first(t):
        return t[0].item()

    def f(x):
        return x * first(x)

    explanation = mc.explain(f)(torch.randn(3))
    assert explanation.graph_count >= 1 and any(
        "marked constant" in reason.reason for reason in explanation.break_reasons)


def test_no_grad_decorator_on_a_nested_function():
    def f(x):
        @torch.no_grad()
        def frozen(t):
            return t * 2

        return frozen(x) + x

    x = torch.randn(3, requires_grad=True)
    got = one_graph(f, x)
    assert got.requires_grad  # x itself still carries grad; the doubled part does not
    got.sum().backward()
    torch.testing.assert_close(x.grad, torch.ones(3))


def test_stateless_modules_built_in_the_frame():
    def f(x):
        block = torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Softmax(dim=-1))
        return block(x) + torch.nn.ReLU()(x)

    one_graph(f, torch.randn(2, 3))


def test_module_with_parameters_built_in_the_frame_runs_eagerly_with_a_reason():
    def f(x):
        return torch.nn.Linear(3, 3)(x)

    x = torch.randn(2, 3)
    torch.manual_seed(0)
    expected = f(x)
    torch.manual_seed(0)
    got = mc.compile(f, backend="eager")(x)
    torch.testing.assert_close(got, expected)  # the RNG was not advanced by tracing
    reasons = mc.explain(f)(x).break_reasons
    assert any("parameters or buffers" in str(r) for r in reasons)


def test_typing_objects_and_jit_annotate():
    def f(x):
        out = torch.jit.annotate(typing.List[torch.Tensor], [])
        out.append(torch.jit.annotate(typing.Any, x + 1))
        y: typing.Optional[torch.Tensor] = typing.cast(torch.Tensor, out[0])
        return y * 2

    one_graph(f, torch.randn(3))


def test_tensor_metadata_new_type_class_name():
    def f(x):
        z = x.new(torch.Size([2, 3]))
        assert z.shape == (2, 3)
        name = f"{type(x).__name__}-{x.__class__.__name__}"
        return x.type(torch.float64) * len(name), x.type(), x.is_floating_point(), x.long().is_floating_point()

    one_graph(f, torch.randn(3))


def test_grad_is_none_is_guarded():
    def f(x):
        if x.grad is None:
            return x * 2
        return x * 3

    x = torch.randn(3, requires_grad=True)
    cf = mc.compile(f, backend="eager")
    torch.testing.assert_close(cf(x), x * 2)
    x.grad = torch.ones(3)  # now x has a gradient: the guard must send it elsewhere
    torch.testing.assert_close(cf(x), x * 3)


def test_item_float_does_not_recompile_the_resumed_frame():
    def f(x):
        s = x.sum().item()  # a graph break: s reaches the resumed frame as a Python float
        return x * s + 1

    cf = mc.compile(f, backend="eager")
    mc.reset()
    mc.metrics.reset()
    for _ in range(10):
        x = torch.randn(4)
        torch.testing.assert_close(cf(x), f(x))
    assert mc.metrics.frames_compiled == 2 and mc.metrics.recompiles == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.float16])
def test_float_argument_matches_eager_promotion(dtype):
    """The float's graph input is cast to the dtype eager computes in (an int tensor times a
    float is float32); half precision specializes instead (its kernels keep the scalar in
    float32), so both paths must give eager's result on every call."""
    def f(x, lr):
        return x * lr - x / lr, x > lr

    cf = mc.compile(f, backend="eager")
    mc.reset()
    x = (torch.arange(6) - 2).to(dtype)
    for lr in (0.3, 1.7, -2.5):
        got, expected = cf(x, lr), f(x, lr)
        assert_same(got, expected)


def test_float_in_control_flow_is_specialized_and_guarded():
    def f(x, lr):
        if lr > 1.0:
            return x * 2
        return x * lr

    cf = mc.compile(f, backend="eager")
    mc.reset()
    x = torch.randn(3)
    for lr in (0.5, 2.0, 0.25, 3.0):
        torch.testing.assert_close(cf(x, lr), f(x, lr))


def test_float_input_through_the_inductor_backend():
    def f(x, lr):
        return (x * lr).relu() + lr

    cf = mc.compile(f, backend="inductor")
    mc.reset()
    mc.metrics.reset()
    x = torch.randn(8)
    for lr in (0.5, 1.5, -0.5):
        torch.testing.assert_close(cf(x, lr), f(x, lr))
    assert mc.metrics.recompiles == 0 and mc.metrics.graphs_compiled == 1


@pytest.mark.cpu_only  # Tensor.numpy() needs a CPU tensor, in eager too
def test_numpy_on_tensors_breaks_with_its_own_reason():
    """minicompile does not trace numpy through torch._numpy (real Dynamo does): the numpy part
    runs natively, eager-equal, and the break says so."""
    def f(x):
        y = x.sin()
        return torch.from_numpy(y.numpy() * 2) + 1

    x = torch.randn(3)
    torch.testing.assert_close(mc.compile(f, backend="eager")(x), f(x))
    reasons = [str(r) for r in mc.explain(f)(x).break_reasons]
    assert "torch._numpy" in reasons[0] and "Hint: write the computation with torch ops" in reasons[0]


def test_eq_of_an_object_with_a_c_eq_is_not_folded_to_identity():
    """An ndarray's == is elementwise C code: it must not be answered as object identity."""
    import numpy as np

    def f(x, arr):
        return x + int((arr == 1).sum())

    arr = np.arange(3)
    torch.testing.assert_close(mc.compile(f, backend="eager")(torch.ones(2), arr),
                               f(torch.ones(2), arr))



def test_numpy_scalar_in_a_graph_is_its_python_number():
    """np.float64 subclasses float, so it is a constant, and a node's argument: the graph's
    code printed it as ``np.float64(5.65...)``, a NameError when it ran (CTRL's
    ``inputs_embeds *= np.sqrt(self.d_model_size)``, after the break at np.sqrt)."""
    import numpy as np

    def f(x, s):
        return x * s + 1

    def g(x):
        x = x * 2
        x *= np.sqrt(32)  # a numpy call: a break, its np.float64 result a local of the resume
        return x

    x = torch.randn(4)
    torch.testing.assert_close(mc.compile(f, backend="eager")(x, np.float64(2.5)),
                               f(x, np.float64(2.5)))
    torch.testing.assert_close(mc.compile(g)(x), g(x))

@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_augmented_assignment_to_an_int_is_a_new_value(backend):
    """``c = 0; c += x``: an int has no ``__iadd__``, so Python computes ``c + x`` (a new
    tensor). Recorded as ``operator.iadd(0, x)``, FX wrote ``0 += x``: a SyntaxError."""
    def f(x):
        c = 0
        c += x
        s = 2.0
        s *= x
        n = 3
        n -= x
        n **= 2
        return c, s, n

    x = torch.randn(5)
    for got, expected in zip(mc.compile(f, backend=backend)(x), f(x)):
        torch.testing.assert_close(got, expected)


def test_augmented_assignment_to_a_tensor_stays_in_place():
    def f(x, y):
        z = x
        z += y  # in place: x changes too
        return z

    x, y = torch.randn(3), torch.randn(3)
    x2 = x.clone()
    got = mc.compile(f, backend="eager")(x, y)
    torch.testing.assert_close(got, x2 + y)
    torch.testing.assert_close(x, x2 + y)


# ---- torch._higher_order_ops.associative_scan (Mamba's selective scan under a compiler) -------

def _ssm_combine(left, right):  # h_t = a_t h_{t-1} + b_t, as pairs (a, b)
    a_left, b_left = left
    a_right, b_right = right
    return a_left * a_right, a_right * b_left + b_right


@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_is_traced_as_its_recurrence(reverse):
    """Real Dynamo keeps it as a higher-order op; here it is the recurrence, one element of
    the scanned dim at a time, in the same graph: eager's values, including ``reverse``."""
    from torch._higher_order_ops.associative_scan import associative_scan

    def scan(a, b):
        return associative_scan(_ssm_combine, (a, b), dim=2, reverse=reverse,
                                combine_mode="generic")

    a, b = torch.rand(2, 3, 6, 4), torch.randn(2, 3, 6, 4)
    one_graph(scan, a, b)
    _, h = mc.compile(scan, backend="eager")(a, b)
    steps = range(5, -1, -1) if reverse else range(6)
    state = torch.zeros(2, 3, 4)
    for t in steps:  # the loop Mamba runs eagerly
        state = a[:, :, t] * state + b[:, :, t]
        torch.testing.assert_close(h[:, :, t], state)
    x = torch.randn(7, 3)
    one_graph(lambda x: associative_scan(torch.add, x, 0, combine_mode="generic"), x)


def test_a_python_type_as_a_dtype_is_the_dtype_torch_reads_it_as():
    """``torch.zeros(n, dtype=int)`` (transformers' padding masks), ``x.to(float)``: torch reads
    the types as int64, float64, bool; the graph holds those dtypes (a type in a graph broke it:
    FX cannot write a class into the graph's code). One graph, eager's dtypes and values."""
    def f(x):
        return (torch.zeros(x.shape[0], dtype=int) + 1, x.to(float) * 2,
                torch.ones(3, dtype=bool), torch.full((2,), 1.5, dtype=complex))

    x = torch.randn(5)
    for got, want in zip(mc.compile(f, backend="eager")(x), f(x)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)
    explained = mc.explain(f)(x)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, \
        explained.break_reasons
