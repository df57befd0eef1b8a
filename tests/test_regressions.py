"""Regression tests for bugs found after the fact (issue 17), one test per bug, each checked
against eager PyTorch."""

import logging

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc
from minicompile.aot_autograd.functionalize import functional_variant, functionalize

aten = torch.ops.aten


# ---- dropout with the default p = 0.5 ------------------------------------------------------------
# F.dropout(x, 0.5) traces ``bernoulli_(x, 1 - p)`` with 1 - p = 0.5, bernoulli_'s default: the
# traced call leaves p out, and functionalisation mapped it to bernoulli.p, where p is required.

def _check_dropout(out, x, p):
    kept = out != 0
    torch.testing.assert_close(out[kept], (x / (1 - p))[kept])
    assert abs(kept.float().mean().item() - (1 - p)) < 0.05  # 20000 draws: 7 standard deviations


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_functional_dropout_default_p(backend):
    x = torch.randn(20000).abs() + 1  # never 0, so a 0 in the output is a dropped element
    out = mc.compile(lambda x: F.dropout(x, training=True), backend=backend)(x)
    _check_dropout(out, x, 0.5)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_dropout_module_default_p_trains(backend):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout())
    x = torch.randn(4000, 8)
    out = mc.compile(model, backend=backend)(x)
    ref = model[0](x)
    kept = out != 0
    torch.testing.assert_close(out[kept], (ref * 2)[kept])
    assert abs(kept.float().mean().item() - 0.5) < 0.05
    out.sum().backward()  # the backward of the mask-and-scale runs too
    assert model[0].weight.grad is not None


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_bernoulli_inplace_default_p(backend):
    def fn(x):
        return x.clone().bernoulli_()  # p = 0.5 by default, left out of the traced call

    out = mc.compile(fn, backend=backend)(torch.zeros(20000))
    assert set(out.unique().tolist()) <= {0.0, 1.0}
    assert abs(out.mean().item() - 0.5) < 0.05


def test_every_inplace_default_is_written_out():
    """The rule, for every in-place op of aten: after the rewrite, each argument the traced
    call left to the in-place op's default is passed explicitly with that default, so the
    functional variant never falls back on its own (missing or different) default."""
    checked = 0
    for name in dir(aten):
        packet = getattr(aten, name, None)
        if not name.endswith("_") or not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            try:
                functional_variant(op)
            except Exception:  # no functional variant: the op falls back, nothing to map
                continue
            defaults = [a for a in op._schema.arguments if a.has_default_value()]
            if not defaults:
                continue
            graph = torch.fx.Graph()  # a call passing only the required arguments
            required = [graph.placeholder(a.name) for a in op._schema.arguments
                        if not a.has_default_value() and not a.kwarg_only]
            node = graph.call_function(op, tuple(required))
            graph.output(node)
            try:
                functionalize(torch.fx.GraphModule({}, graph))
            except Exception:  # writes more than self: refused as a whole, nothing to map
                continue
            assert node.target == functional_variant(op)
            passed = dict(zip([a.name for a in op._schema.arguments], node.args))
            passed.update(node.kwargs)
            for a in defaults:
                assert a.name in passed and passed[a.name] == a.default_value, (op, a.name)
            checked += 1
    assert checked > 10


# ---- stale defaults after an eager fallback ------------------------------------------------------
def test_defaults_change_after_eager_fallback(capsys):
    def fn(x, k=2):
        def scaled():
            return x * k  # x and k are cells: the frame falls back to eager at the break

        print("a graph break")
        return scaled()

    compiled = mc.compile(fn, backend="eager")
    x = torch.randn(5)
    torch.testing.assert_close(compiled(x), x * 2)
    assert mc.metrics.eager_fallbacks == 1  # the case of the bug: the frame runs eagerly
    fn.__defaults__ = (7,)
    torch.testing.assert_close(compiled(x), x * 7)
    fn.__defaults__ = (3,)
    torch.testing.assert_close(compiled(x), x * 3)


def test_kwdefaults_change_after_eager_fallback(capsys):
    def fn(x, *, k=2):
        def scaled():
            return x * k

        print("a graph break")
        return scaled()

    compiled = mc.compile(fn, backend="eager")
    x = torch.randn(5)
    torch.testing.assert_close(compiled(x), x * 2)
    fn.__kwdefaults__ = {"k": 5}
    torch.testing.assert_close(compiled(x), x * 5)


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp"])
@pytest.mark.parametrize("n", [2, 5, 8])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_of_many_computed_inputs(cpu_backend, n, dim, monkeypatch):
    """cat of n pointwise results then a pointwise op. Each input's loads must be masked to its
    own slice: with only the upper bound, an input read before its start (a negative offset),
    which raised IndexError from 5 inputs on and read outside the input's memory in kernels."""
    monkeypatch.setattr(mc.config.inductor, "cpu_backend", cpu_backend)
    xs = [torch.randn(3 + k, 4 + k, requires_grad=True) if dim == 0 else
          torch.randn(3, 4 + k, requires_grad=True) for k in range(n)]
    if dim == 0:
        xs = [x[:, :4].detach().requires_grad_() for x in xs]

    def fn(*ts):
        return torch.cat([t * (k + 1) for k, t in enumerate(ts)], dim).sin() + 1

    refs = [x.detach().clone().requires_grad_() for x in xs]
    out, ref = mc.compile(fn)(*xs), fn(*refs)
    torch.testing.assert_close(out, ref)
    out.sum().backward()
    ref.sum().backward()
    for x, r in zip(xs, refs):
        torch.testing.assert_close(x.grad, r.grad)


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack_is_a_kernel_not_an_aten_call(cpu_backend, dim, monkeypatch, caplog):
    """``aten.stack`` reaches the lowerings as itself (ATen implements it explicitly, so tracing
    does not take it apart): it is a ``cat`` of its inputs seen with a new size-1 dim, fused with
    what reads it. It ran as an ATen fallback, which cumprod's backward on CUDA tensors meets."""
    monkeypatch.setattr(mc.config.inductor, "cpu_backend", cpu_backend)
    a, b = torch.randn(3, 5, requires_grad=True), torch.randn(5, 3).t().requires_grad_()

    def fn(x, y):
        return torch.stack([x.sin(), y, x * y], dim).cos() * 2

    with caplog.at_level(logging.INFO, logger="minicompile.inductor.lowering"):
        out = mc.compile(fn)(a, b)
    assert not [r for r in caplog.records if "fallback" in r.getMessage()], caplog.text
    ref = fn(a, b)
    torch.testing.assert_close(out, ref)
    grads = torch.autograd.grad(out.sum(), (a, b))
    torch.testing.assert_close(grads, torch.autograd.grad(ref.sum(), (a, b)))


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp"])
def test_a_computed_index_of_a_scatter_stays_a_buffer(cpu_backend, monkeypatch):
    """Positions computed from ``arange`` (BART's learned positions, offset by 2) index an
    embedding; its backward adds the gradient rows into the weight's at those positions (a
    Scatter). The positions are substituted into the Scatter's body, but its destination index
    loads them outside that body: they stay a buffer (bart's training step fell back to eager
    with ``KeyError: 'buf0'``)."""
    monkeypatch.setattr(mc.config.inductor, "cpu_backend", cpu_backend)
    weight = torch.randn(34, 32, requires_grad=True)
    g = torch.randn(2, 16, 32)

    def fn(w):
        pos = torch.arange(16).expand(2, 16) + 2
        return (F.embedding(pos, w) * g).sum()

    mc.reset()
    loss = mc.compile(fn)(weight)
    (grad,) = torch.autograd.grad(loss, weight)
    assert mc.metrics.eager_fallbacks == 0
    expected = fn(weight)
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(grad, torch.autograd.grad(expected, weight)[0])


class _Config:
    """A config class whose class attributes a compiled function reads."""
    scale = 2.0
    mode = "a"

    class Inner:
        k = 3


def _uses_config(x):
    y = x * _Config.scale + _Config.Inner.k
    return y if _Config.mode == "a" else -y


def test_class_attribute_changes_are_guarded():
    """Reading a class attribute guards it: a changed value recompiles instead of returning the
    stale graph's result; an unchanged one reuses the graph."""
    saved = (_Config.scale, _Config.mode, _Config.Inner.k)
    f = mc.compile(_uses_config)
    x = torch.randn(5)
    try:
        for scale, mode, k in [(2.0, "a", 3), (2.0, "a", 3), (5.0, "a", 3), (5.0, "b", 3),
                               (5.0, "b", 7)]:
            _Config.scale, _Config.mode, _Config.Inner.k = scale, mode, k
            torch.testing.assert_close(f(x), _uses_config(x))
        assert mc.metrics.frames_compiled == 4  # the repeated setting reused its graph
    finally:
        _Config.scale, _Config.mode, _Config.Inner.k = saved


HOSTILE_NAMES = ["<lambda>", "<genexpr>", "a b", "it's", 'say "hi"', "class", "9lives", "naïve",
                 "x-y", "__init__", "", "f\nnewline"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_function_names_reach_no_generated_source(name):
    """A callee with a graph break inside gets a compiled wrapper whose variable name is made
    from the callee's name (a lambda's is ``<lambda>``, once a SyntaxError): every such name is
    an identifier, whatever the function is called."""
    def inner(x):
        print(end="")  # a graph break inside the callee
        return x.sin() + 1

    inner.__name__ = inner.__qualname__ = name
    inner.__code__ = inner.__code__.replace(co_name=name or "_")

    def outer(x):
        return inner(x * 2) * 3

    outer.__name__ = name
    x = torch.randn(4)
    torch.testing.assert_close(mc.compile(outer)(x), outer(x))
    torch.testing.assert_close(mc.compile(inner)(x), inner(x))


class _Scaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, scale):
        ctx.save_for_backward(x, y)
        ctx.scale = scale  # a non-tensor on ctx
        return x * y * scale, x + y

    @staticmethod
    def backward(ctx, g_prod, g_sum):
        x, y = ctx.saved_tensors
        gx = g_prod * y * ctx.scale + g_sum if ctx.needs_input_grad[0] else None
        gy = g_prod * x * ctx.scale + g_sum if ctx.needs_input_grad[1] else None
        return gx, gy, None


class _StraightThrough(torch.autograd.Function):
    """round() forward, identity backward: the gradient differs from the forward's derivative
    (zero almost everywhere), so a wrong mechanism that differentiates forward is caught."""

    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, g):
        return g


def _uses_functions(x, y):
    p, s = _Scaled.apply(x.sin(), y, 3.0)
    return (_StraightThrough.apply(p * 4) + s).sum(-1)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("y_requires_grad", [True, False])
def test_autograd_function_apply_is_traced_with_its_backward(backend, y_requires_grad):
    """autograd.Function.apply is captured in one graph (it failed with an AttributeError from
    the graph), with the user's forward and backward, needs_input_grad and ctx attributes."""
    x = torch.randn(4, 5, requires_grad=True)
    y = torch.randn(4, 5, requires_grad=y_requires_grad)
    xr, yr = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_(y_requires_grad)
    out, ref = mc.compile(_uses_functions, backend=backend)(x, y), _uses_functions(xr, yr)
    torch.testing.assert_close(out, ref)
    out.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)
    if y_requires_grad:
        torch.testing.assert_close(y.grad, yr.grad)
    assert mc.explain(_uses_functions)(x, y).graph_count == 1


# torch 2.14 made ``Function.apply`` the C classmethod of ``_C._FunctionBase``: ``MyFunction.apply``
# became a bound builtin (no ``__module__``, no ``__func__``), which the tracer no longer knew, and
# every custom Function broke the graph. Both layouts are checked on whichever torch runs.
APPLY_LAYOUTS = {
    "installed torch": None,
    "C apply (torch 2.14 on)": torch._C._FunctionBase.__dict__["apply"],
}
_scaled = _Scaled.apply  # the common module-level alias of a Function's apply


def _uses_alias(x, y):
    return _scaled(x, y, 2.0)[0].sum()


def _overrides_apply(x):
    return _Overriding.apply(x.cos()) + 1


class _Overriding(_StraightThrough):
    @classmethod
    def apply(cls, x):  # not torch's apply: a user's classmethod, inlined like any other
        return super().apply(x * 2)


@pytest.fixture(params=list(APPLY_LAYOUTS))
def apply_layout(request, monkeypatch):
    c_apply = APPLY_LAYOUTS[request.param]
    if c_apply is not None:
        monkeypatch.setattr(torch.autograd.Function, "apply", c_apply)
    monkeypatch.setitem(globals(), "_scaled", _Scaled.apply)  # the alias, made in this layout
    return request.param


@pytest.mark.parametrize("fn, args", [(_uses_functions, (4, 5)), (_uses_alias, (3, 7))],
                         ids=["MyFunction.apply", "alias of apply"])
def test_function_apply_is_one_graph_however_torch_implements_it(apply_layout, fn, args):
    x, y = torch.randn(*args, requires_grad=True), torch.randn(*args)
    compiled = mc.compile(fn, backend="aot_eager")
    for _ in range(3):  # the same Function again: no recompile (a bound method is a new object)
        torch.testing.assert_close(compiled(x, y), fn(x, y))
    assert mc.metrics.frames_compiled == 1 and mc.metrics.recompiles == 0
    explained = mc.explain(fn)(x, y)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    grad, = torch.autograd.grad(compiled(x, y).sum(), x)
    torch.testing.assert_close(grad, torch.autograd.grad(fn(x, y).sum(), x)[0])


def test_an_overridden_apply_is_the_users_code(apply_layout):
    x = torch.randn(6, requires_grad=True)
    out = mc.compile(_overrides_apply, backend="aot_eager")(x)
    torch.testing.assert_close(out, _overrides_apply(x))
    grad, = torch.autograd.grad(out.sum(), x)
    torch.testing.assert_close(grad, torch.autograd.grad(_overrides_apply(x).sum(), x)[0])


@pytest.mark.parametrize("fn", [lambda t: t[:, -20:] * 2, lambda t: t[:, 3:-20] + 1,
                                lambda t: t[-4:].sin()], ids=["tail", "both", "rows"])
def test_a_slice_from_the_end_of_a_symbolic_dim_is_clamped_at_zero(fn):
    """``t[:, -20:]`` of a dim of size 9 starts at 0: compiled with a symbolic size the start
    was ``s1 - 20``, and the kernel read 11 elements before each row (a wrong result, and a read
    outside the tensor)."""
    f = mc.compile(fn, dynamic=True)
    for shape in [(6, 9), (6, 30), (3, 20), (2, 1)]:
        x = torch.randn(*shape)
        torch.testing.assert_close(f(x), fn(x))


# ---- loss.detach() after loss.backward() -------------------------------------------------------
# A training step returning ``loss.detach()`` breaks at ``backward()``; the resumed graph returns a
# view of its input (detach aliases it), which the runtime wrapper rebuilt with ``as_strided`` on
# the input: a tensor with a grad_fn, through which a later backward reached the model again.

@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_detached_loss_returned_after_backward_has_no_grad_fn(backend):
    torch.manual_seed(0)
    model, x = torch.nn.Linear(4, 3), torch.randn(5, 4)

    def step(x):
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss.detach()

    got = mc.compile(step, backend=backend)(x)
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    expected = step(x)
    assert not got.requires_grad and got.grad_fn is None
    torch.testing.assert_close(got, expected)
    for g, p in zip(grads, model.parameters()):
        torch.testing.assert_close(g, p.grad)


# ---- a view of an intermediate, returned at a graph break, then written in place ----------------
# The graph's output was the view itself, returned from the autograd.Function: autograd forbids
# writing into such a view in place (wav2vec2 and its family's training steps crashed). The
# graph now returns the base, and the view is made of it outside the Function, as real
# AOTAutograd does.

@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_view_of_an_intermediate_returned_at_a_break_can_be_written_in_place(backend):
    def f(x):
        y = x * 2
        v, w = y.transpose(0, 1), y[1:]  # two views of one intermediate
        torch._dynamo.graph_break()
        v[0].mul_(3)
        return (v * w.sum()).sum(), y

    x = torch.randn(3, 4, requires_grad=True)
    rx = x.detach().clone().requires_grad_()
    (got, y), (expected, ry) = mc.compile(f, backend=backend)(x), f(rx)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(y, ry)
    got.backward(), expected.backward()
    torch.testing.assert_close(x.grad, rx.grad)


# ---- a column reduction in tiles, its row count not a multiple of the tile ---------------------
# The C++ column reduction writes its body over ``xindex = x0 + 64*x1`` when some index has a
# division (here one over the reduced positions: ``m`` read transposed). The tile's variable
# ``x1`` was given range(80 // 64) = range(1), and an index simplified over it dropped ``64*x1``:
# the last 16 columns summed the first 16 again (a LayerNorm2d's weight gradient in ConvNeXt's
# backward, once its gradients were channels-last). A short last tile now counts in the range.

@pytest.mark.parametrize("columns", [80, 64, 200])
def test_column_reduction_with_a_short_last_tile(columns):
    def f(g, m):
        return (g * m.transpose(1, 2)).sum((0, 1, 2))

    g, m = torch.randn(2, 4, 4, columns), torch.randn(2, 4, 4, 1)
    torch.testing.assert_close(mc.compile(f)(g, m), f(g, m))


# ---- an in-place ATen overload called directly ---------------------------------------------------
# ``aten.add_.Tensor(x, y)`` writes ``x`` and its result goes unused. Dynamo's dead-code
# elimination keeps in-place calls by their name ending in "_", but an overload is named
# "add_.Tensor": the call was dropped and ``x`` never written (test_cpu_repro's
# test_inplace_add_alpha). A mutable overload now counts as a side effect.

def test_an_in_place_aten_overload_whose_result_is_unused_still_writes():
    def f(x, y):
        aten.add_.Tensor(x, y, alpha=0.55)
        return (x,)

    y = torch.randn(10)
    x, expected = torch.zeros(10), torch.zeros(10)
    f(expected, y)
    mc.compile(f, backend="inductor")(x, y)
    torch.testing.assert_close(x, expected)


# ---- unsigned 32- and 64-bit tensors ---------------------------------------------------------
# The C++ backend had no type for uint32/uint64 (``x * x`` fell back to the reference backend),
# and the reference backend stores with ``index_put_``, which eager has for none of
# uint16/uint32/uint64: a crash. C++ now has uint32_t and uint64_t; the reference backend
# writes an unsigned buffer through its signed twin's view. (CPU tensors: eager's CUDA kernels
# have no product of these types, so there is no oracle on the GPU.)

@pytest.mark.cpu_only
@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_unsigned_products_wrap_around_as_in_eager(dtype):
    bits = torch.iinfo(dtype).bits
    x = torch.randint(0, 2 ** min(bits, 62), (37, 37)).to(dtype)
    f = lambda x: (x * x, x.sum(dim=1))  # noqa: E731
    mc.metrics.reset()
    for got, expected in zip(mc.compile(f, backend="inductor")(x), f(x)):
        assert torch.equal(got, expected)
    if dtype != torch.uint16:  # uint16 is left to the reference backend on purpose
        assert not mc.metrics.backend_fallbacks


# ---- float8 tensors ---------------------------------------------------------------------------
# No kernel backend has a float8 type: a cast to float8 in a kernel raised KeyError in the C++
# code generator, and AOT autograd ran the whole graph eagerly. The ops that read or make a
# float8 tensor now run in ATen, with their reason, and the rest of the graph is compiled.

def test_float8_casts_run_in_aten_and_the_rest_compiles():
    def f(x):
        return x.to(torch.float8_e4m3fn).to(x.dtype).sin() + 1

    x = torch.rand(15, 3, 13)
    mc.metrics.reset()
    torch.testing.assert_close(mc.compile(f, backend="inductor")(x), f(x))
    assert not mc.metrics.fallback_reasons  # no whole-graph fallback


# ---- argmax of the flattened tensor with keepdim -------------------------------------------------
# ``x.argmax(None, keepdim=True)`` is eager's index into the flattened tensor, in a tensor of the
# input's rank, every size 1. The lowering flattened the input and kept the one dim of the flat
# view: a (7, 100) input gave shape (1,), not (1, 1).

@pytest.mark.parametrize("op", [torch.argmax, torch.argmin])
@pytest.mark.parametrize("shape", [(7, 100), (2, 3, 5)])
def test_argmax_of_the_flattened_tensor_keeps_every_dim(op, shape):
    def f(x):
        return op(x.transpose(0, 1), None, keepdim=True)

    x = torch.randn(shape)
    got, expected = mc.compile(f)(x), f(x)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected)


# ---- a power of a sum in a Triton kernel's expression --------------------------------------------
# Triton's printer wrote ``(s1 - 1)**2`` as ``(s1 - 1 * s1 - 1)``: the base of a power was not
# parenthesised. Indices expand their powers, but a size used as a value keeps them: the count
# a dynamic ``mean`` over a square crop divides by (a batch norm after a convolution, whose
# output is ``(s1 - s3 + 1)**2`` pixels) was ``2*s1 - 2``, not ``(s1 - 1)**2``.

def test_a_power_of_a_sum_is_parenthesised(kernel_backend):
    def f(x):
        return x[:, 1:, 1:].mean((1, 2))

    x = torch.randn(3, 5, 5)
    torch.testing.assert_close(mc.compile(f, dynamic=True)(x), f(x))


# ---- shifts by an amount outside [0, bits) -------------------------------------------------------
# C++ leaves such a shift undefined and LLVM (which Triton compiles through) makes it poison;
# ATen defines it: a left shift is 0, a right shift the sign (0 for an unsigned type), an amount
# read as signed. Both backends emitted a plain << and >>: on the GPU, PyTorch's bitwise case
# (tests/inductor_port/cpu_repro_corpus.py::test_vec_bitwise) differed from eager; on this
# CPU the hardware's vector shifts happened to agree. Both now write ATen's rule out.

@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_shifts_past_the_width_are_atens(dtype):
    info = torch.iinfo(dtype)
    values = [info.min, -5, -1, 0, 1, 7, info.max] if dtype.is_signed else [0, 1, 7, 128, 255]
    amounts = [a for a in (-70, -9, -1, 0, 1, 7, 8, 15, 16, 31, 32, 63, 64, 65, 200)
               if info.min <= a <= info.max]
    x = torch.tensor(values, dtype=dtype).repeat_interleave(len(amounts))
    y = torch.tensor(amounts, dtype=dtype).repeat(len(values))

    def f(x, y):
        return torch.bitwise_left_shift(x, y), torch.bitwise_right_shift(x, y), x << 3, x >> 2

    for got, expected in zip(mc.compile(f, backend="inductor")(x, y), f(x, y)):
        assert torch.equal(got, expected)
