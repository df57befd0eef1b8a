"""Mutated graph inputs written in place (fx_passes/reinplace.py, lowerings/mutation.py,
ir/mutation.py): each pattern against eager on every CPU backend, the caller's tensor checked
after the call and still the same storage; the hazards that must keep the copy-back (or stay
correct in place); and the copy-back no longer running where the write is in place."""

from __future__ import annotations

import pytest
import torch
from eager_errors import eager_exception, raises_as_eager, raises_like
from torch.utils._python_dispatch import TorchDispatchMode

import minicompile as mc
from minicompile import config

aten = torch.ops.aten
BACKENDS = ["cpp", "triton", "reference"]


def idx(*rows):
    return torch.tensor(rows)


def cols():  # scatter indices along dim 0 of a (10, 4) tensor, distinct in each column
    return torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])


def _column_sin(x, y):
    x[:, 0] = y.sin()


def _row(x, y):
    x[3] = y


def _slice_copy(x, y):
    x[2:5].copy_(y)


def _strided_slice(x, y):
    x[::2, 1] = y


def _add_to_column(x):
    x[:, 0] += 1


def _index_put(x, i, v):
    x.index_put_((i,), v)


def _index_put_accumulate(x, i, v):
    x.index_put_((i,), v, accumulate=True)


def _scatter(x, i, src):
    x.scatter_(0, i, src)


def _scatter_value(x, i):
    x.scatter_(0, i, 2.0)


def _scatter_add(x, i, src):
    x.scatter_add_(0, i, src)


def _scatter_reduce(x, i, src):
    x.scatter_reduce_(0, i, src, "amax")


def _copy_whole(x, y):
    x.copy_(y)


def _two_writes(x, y):
    x[0] = y
    x[2] = y * 2


def _index_put_then_row(x, i, v, y):
    x.index_put_((i,), v)
    x[0] = y


def _write_then_read(x, y):
    x[:, 0] = y.sin()
    return x.sum(1)


def r(*shape):
    return torch.randn(*shape)


# (name, fn, inputs): the first input is mutated; every case is written in place
PATTERNS = [
    ("column", _column_sin, lambda: [r(10, 10), r(10)]),
    ("row", _row, lambda: [r(10, 10), r(10)]),
    ("slice copy_", _slice_copy, lambda: [r(10, 4), r(3, 4)]),
    ("strided slice", _strided_slice, lambda: [r(10, 4), r(5)]),
    ("x[:, 0] += 1", _add_to_column, lambda: [r(4, 5)]),
    ("index_put_", _index_put, lambda: [r(10, 4), idx(1, 3), r(2, 4)]),
    ("index_put_ accumulate", _index_put_accumulate, lambda: [r(10, 4), idx(1, 3, 1), r(3, 4)]),
    ("scatter_", _scatter, lambda: [r(10, 4), cols(), r(2, 4)]),
    ("scatter_ value", _scatter_value, lambda: [r(10, 4), cols()]),
    ("scatter_add_", _scatter_add, lambda: [r(10, 4), cols(), r(2, 4)]),
    ("scatter_reduce_", _scatter_reduce, lambda: [r(10, 4), cols(), r(2, 4)]),
    ("copy_ whole", _copy_whole, lambda: [r(6, 4), r(6, 4)]),
    ("mutated twice", _two_writes, lambda: [r(5, 4), r(4)]),
    ("index_put_ then a row", _index_put_then_row, lambda: [r(10, 4), idx(1, 3), r(2, 4), r(4)]),
    ("written then read", _write_then_read, lambda: [r(10, 10), r(10)]),
]


def check_against_eager(fn, args, calls=2):
    """Compile, call ``calls`` times on copies of ``args`` next to eager; the mutated first input
    must match eager after each call and keep its storage. Returns the compiled function."""
    compiled = mc.compile(fn, backend="inductor")
    mine, ref = [a.clone() for a in args], [a.clone() for a in args]
    ptr = mine[0].data_ptr()
    for _ in range(calls):
        torch.testing.assert_close(compiled(*mine), fn(*ref))
        torch.testing.assert_close(mine[0], ref[0])
        assert mine[0].data_ptr() == ptr
    return compiled


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, fn, make", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_pattern_matches_eager_in_place(name, fn, make, backend, monkeypatch, compiled_graphs):
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    check_against_eager(fn, make())
    (graph,) = compiled_graphs
    assert graph.pass_report.reinplaced == {"primals_1": "in place"}


class CountCopies(TorchDispatchMode):
    """Counts ``aten.copy_`` calls: the runtime wrapper's copy-back is one."""

    def __init__(self):
        super().__init__()
        self.copies = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.copies += func is aten.copy_.default
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("name, fn, make", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_no_copy_back(name, fn, make, monkeypatch):
    """Written in place, nothing is copied into the input after the graph; the aot_eager
    backend (no reinplacing) still copies the whole new value back. (Kernels by the reference
    backend: Triton's interpreter copies each kernel's arguments to and from the host.)"""
    monkeypatch.setattr(config.inductor, "cpu_backend", "reference")
    args = make()
    for backend, copies in (("inductor", 0), ("aot_eager", 1)):
        mc.reset()
        compiled = mc.compile(fn, backend=backend)
        compiled(*[a.clone() for a in args])  # compiles
        with CountCopies() as count:
            compiled(*[a.clone() for a in args])
        assert count.copies == copies, backend


def test_version_counter_bumps():
    """A kernel writing the input does not tell autograd; the wrapper bumps the version as the
    in-place op would, so a tensor saved for backward and then overwritten is still caught."""
    def saved_then_overwritten(write_column, x, y):
        write_column(x, y)
        loss = (torch.ones(10, 10, requires_grad=True) * x).sum()  # saves x
        write_column(x, y)
        return loss

    x, y = r(10, 10), r(10)
    compiled = mc.compile(_column_sin, backend="inductor")
    before = x._version
    compiled(x, y)
    assert x._version > before
    eager_loss = saved_then_overwritten(_column_sin, x.clone(), y)
    loss = saved_then_overwritten(compiled, x.clone(), y)
    with raises_like(eager_exception(eager_loss.backward)):
        loss.backward()


def test_written_in_place_code(compiled_graphs):
    """The wrapper binds the new value to the input instead of allocating, and the one kernel
    stores 10 elements of it."""
    x, y = r(10, 10), r(10)
    mc.compile(_column_sin, backend="inductor")(x, y)
    source = compiled_graphs[0].source
    assert "= primals_1  # primals_1 written in place" in source
    assert "empty(" not in source


# --- hazards: the old value needed after the write ---------------------------------------------

def _old_value_read_after(x):
    y = x.clone()
    x[0] = 1
    return y + x


def _old_value_used_after(x):
    y = x * 2
    x[0] = 1
    return y + x


def _shift_with_clone(x):
    x[1:] = x[:-1].clone()


def _other_row(x):
    x[0] = x[1] * 2


def _read_between_writes(x, y):
    x[0] = y
    s = x.sum()
    x[1] = y
    return s


def _whole_then_part(x):
    y = x * 2
    x[0] = y[1]
    return y.sum()


def _sgd_step(p, g, buf):  # a whole new value of each input, computed from scratch
    buf.mul_(0.9).add_(g)
    p.add_(buf, alpha=-0.01)


def _update_then_read_old(p, g):
    q = p * 2  # the old p, read by an output the write does not wait for
    p.add_(g)
    return q + p


HAZARDS = [  # (name, fn, inputs, written in place?)
    # the new value computed straight into the input (no buffer, no copy back)
    ("optimizer update", _sgd_step, lambda: [r(6), r(6), r(6)], True),
    ("old value read after an update", _update_then_read_old, lambda: [r(5), r(5)], False),
    ("old value read after the write", _old_value_read_after, lambda: [r(5)], False),
    # (in place, the sum would read the new x: it runs after the write, which it also reads)
    ("old value used after the write", _old_value_used_after, lambda: [r(5)], False),
    ("value read between two writes", _read_between_writes, lambda: [r(5, 4), r(4)], False),
    # in place, but the read of other elements stays out of the writing kernel
    ("overlapping shift", _shift_with_clone, lambda: [r(9)], True),
    ("another row of x", _other_row, lambda: [r(4, 3)], True),
    ("x * 2 read by the write and after it", _whole_then_part, lambda: [r(4, 3)], True),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, fn, make, in_place", HAZARDS, ids=[h[0] for h in HAZARDS])
def test_hazards(name, fn, make, in_place, backend, monkeypatch, compiled_graphs):
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    check_against_eager(fn, make())
    decision = compiled_graphs[0].pass_report.reinplaced["primals_1"]
    assert (decision == "in place") == in_place, decision


def test_overlapping_shift_is_two_kernels(compiled_graphs):
    """``x[1:] = x[:-1].clone()``: the copy must be complete before the write starts (in one
    kernel, point i would read x[i] after point i - 1 wrote it)."""
    check_against_eager(_shift_with_clone, [torch.arange(9.0)])
    assert len(compiled_graphs[0].scheduler.kernels) == 2
    decisions = compiled_graphs[0].scheduler.decisions
    assert any("writes primals_1 in place" in d.reason for d in decisions)


def test_shift_without_clone():
    """Eager refuses ``x[1:] = x[:-1]`` (overlapping memory); compiled, it means what the
    functional graph says, ``x[1:] = x[:-1].clone()``: never values carried along by the write."""
    def shift(t):
        t[1:] = t[:-1]

    x = torch.arange(6.0)
    assert isinstance(eager_exception(shift, x.clone()), RuntimeError)
    mine, ref = x.clone(), x.clone()
    mc.compile(shift, backend="inductor")(mine)
    _shift_with_clone(ref)
    torch.testing.assert_close(mine, ref)


def test_mutated_input_also_returned():
    def fn(x, y):
        x[:, 0] = y
        return x

    x, y = r(5, 5), r(5)
    out = check_against_eager(fn, [x, y])
    z = x.clone()
    assert out(z, y) is z


def test_input_that_requires_grad():
    """A write into x from y that requires grad: x's new value comes out of the compiled
    autograd.Function and is copied into x where autograd sees it; the gradient is eager's."""
    def fn(x, y):
        x[:, 0] = y.sin()
        return x.sum()

    y1, y2 = r(4).requires_grad_(), None
    y2 = y1.detach().clone().requires_grad_()
    x1, x2 = r(4, 4), None
    x2 = x1.clone()
    mc.compile(fn, backend="inductor")(x1, y1).backward()
    fn(x2, y2).backward()
    torch.testing.assert_close(x1, x2)
    torch.testing.assert_close(y1.grad, y2.grad)


# ---- inputs that require grad, written in place ---------------------------------------------
# The caller's intermediates (the input of a resume function after a graph break: DeBERTa's
# ``score += ...``, CTRL's ``inputs_embeds *= sqrt(d)``): the compiled autograd.Function returns
# each one's new value, with its gradient, and the runtime wrapper copies it into the input
# outside the Function, so that autograd records the write as eager's in-place op does.

def _scale(x):
    x.mul_(2)
    return x.sin()


def _add_and_return(x):
    x.add_(1)
    return x


def _add_and_view(x):
    x.add_(1)
    return x.t(), x[0]


def _view_taken_before(x):
    v = x[0]
    x.mul_(3)
    return v


def _through_a_view(x):
    x[0].mul_(2)
    return x.cos()


def _old_value_in_backward(x, w):  # d/dw needs x as it was before the write
    x.mul_(w)
    return x.sum()


def _two_written(x, y):
    x.add_(y)
    y.mul_(x)
    return x * y


def _under_no_grad(x):  # autograd does not see this write: today's path, inside the Function
    with torch.no_grad():
        x.mul_(2)
    return x * x


def _nothing_returned(x):
    x.mul_(2)


def _column_from(x, y):  # x does not require grad; its new value does
    x[:, 0] = y.sin()
    return x.sum(1)


WRITTEN_WITH_GRAD = [  # (name, fn, shapes of the leaves, the inputs made from them)
    ("scale", _scale, [(4, 5)], lambda w: [w * 3]),
    ("also_returned", _add_and_return, [(4, 5)], lambda w: [w * 3]),
    ("also_viewed", _add_and_view, [(4, 5)], lambda w: [w * 3]),
    ("view_taken_before", _view_taken_before, [(4, 5)], lambda w: [w * 3]),
    ("through_a_view", _through_a_view, [(4, 5)], lambda w: [w * 3]),
    ("old_value_in_backward", _old_value_in_backward, [(4, 5), (5,)], lambda a, w: [a * 3, w]),
    ("transposed_input", _scale, [(5, 4)], lambda w: [(w * 3).t()]),
    ("two_written", _two_written, [(4,), (4,)], lambda a, b: [a * 3, b * 2]),
    ("under_no_grad", _under_no_grad, [(4,)], lambda w: [w * 3]),
    ("nothing_returned", _nothing_returned, [(4,)], lambda w: [w * 3]),
    ("column_from", _column_from, [(4,)], lambda y: [torch.ones(4, 4), y]),
]


def _step(f, leaves, make):
    """``f`` on inputs made from fresh copies of ``leaves``; the loss reads the outputs and the
    inputs after the call (later readers of a written input differentiate through the write)."""
    leaves = [w.detach().clone().requires_grad_() for w in leaves]
    args = make(*leaves)
    out = f(*args)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, torch.Tensor)]
    loss = sum((t.sin() * (i + 1)).sum() for i, t in enumerate(outs + args) if t.requires_grad)
    loss.backward()
    return [o.detach() for o in outs], [a.detach() for a in args], [w.grad for w in leaves]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("name, fn, shapes, make", WRITTEN_WITH_GRAD,
                         ids=[w[0] for w in WRITTEN_WITH_GRAD])
def test_input_that_requires_grad_written_in_place(name, fn, shapes, make, backend):
    leaves = [r(*shape) for shape in shapes]
    compiled = mc.compile(fn, backend=backend)
    for _ in range(2):
        torch.testing.assert_close(_step(compiled, leaves, make), _step(fn, leaves, make))
    assert mc.metrics.eager_fallbacks == 0, mc.metrics.fallback_reasons


def _written_after_a_break(w, b):
    y = w * 3
    torch._dynamo.graph_break()
    y += 1  # y: an input of the resume function, an intermediate of the caller
    y.mul_(b)
    return y.sin(), y


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_input_written_after_a_graph_break(backend):
    leaves = [r(4, 5), r(5)]
    compiled = mc.compile(_written_after_a_break, backend=backend)
    for _ in range(2):
        torch.testing.assert_close(_step(compiled, leaves, lambda *a: list(a)),
                                   _step(_written_after_a_break, leaves, lambda *a: list(a)))
    assert mc.metrics.eager_fallbacks == 0, mc.metrics.fallback_reasons
    assert mc.explain(_written_after_a_break)(*leaves).graph_count == 2


def test_input_that_requires_grad_written_with_dynamic_sizes():
    """With symbolic sizes, Dynamo's fake of an input that is an intermediate of the caller is
    no leaf either (as ``from_tensor`` makes it for static sizes): the write is in the graph,
    not a break of its own ("a leaf Variable that requires grad is being used in an in-place
    operation")."""
    compiled = mc.compile(_through_a_view, backend="aot_eager", dynamic=True)
    for n in (4, 6):
        leaves = [r(n, 5)]
        torch.testing.assert_close(_step(compiled, leaves, lambda w: [w * 3]),
                                   _step(_through_a_view, leaves, lambda w: [w * 3]))
    assert mc.metrics.graph_breaks == 0 and mc.metrics.frames_compiled == 1
    assert mc.metrics.eager_fallbacks == 0, mc.metrics.fallback_reasons


@pytest.mark.parametrize("make", [lambda w: w, lambda w: w[1:]], ids=["leaf", "view_of_leaf"])
def test_leaf_that_requires_grad_written_raises_as_eager(make):
    w = r(4, 5).requires_grad_()
    with raises_as_eager(_scale, make(w)):
        mc.compile(_scale, backend="aot_eager")(make(w))


def test_leaf_that_requires_grad_under_no_grad():
    x, y = r(4, 4).requires_grad_(), r(4)
    ref = x.detach().clone()
    with torch.no_grad():
        mc.compile(_column_sin, backend="inductor")(x, y)
        ref[:, 0] = y.sin()
    torch.testing.assert_close(x.detach(), ref)


def test_input_aliasing_another_input():
    """Two inputs sharing storage: a write into one shows through the other (never in place;
    here functionalization refuses and the function runs eagerly)."""
    def fn(a, b):
        a[0] = 1
        return b * 2

    base = r(4, 3)
    mine, ref = base.clone(), base.clone()
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(mine, mine[0]), fn(ref, ref[0]))
    torch.testing.assert_close(mine, ref)


def test_aliasing_inputs_read_only_before_the_write(caplog):
    """The graph is traced for distinct inputs (where writing ``a`` in place is safe), and a
    call where the written ``a`` holds ``b`` runs eagerly."""
    def fn(a, b):
        s = b.sum()
        a[0] = s
        return s

    base = r(4, 3)
    mine, ref = base.clone(), base.clone()
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(mine, mine[1]), fn(ref, ref[1]))
    torch.testing.assert_close(mine, ref)
    assert "L['a'] is written in place and shares memory with L['b']" in caplog.text


def _scale_second_read_first(x, y):
    y.mul_(2)
    return x + 1


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("first", ["distinct", "overlapping"])
def test_overlapping_views_one_written(backend, first, caplog):
    """Two views of one tensor passed as two arguments, the second written in place, the first
    read after the write: the compiled graph, functional, assumes distinct inputs (it would read
    x before the write). Whichever call compiles the frame, a call whose written input overlaps
    another runs the graph eagerly (saying so), and a call with distinct tensors runs it compiled."""
    mc.reset()
    fn = mc.compile(_scale_second_read_first, backend=backend)

    def check(make):
        mine, ref = make(), make()
        out = fn(*mine[1:]) if len(mine) == 3 else fn(*mine)
        expected = _scale_second_read_first(*ref[1:]) if len(ref) == 3 else \
            _scale_second_read_first(*ref)
        torch.testing.assert_close(out, expected)
        torch.testing.assert_close(mine[0], ref[0])

    def overlapping():
        base = torch.arange(1., 9.)
        return base, base[:4], base[2:6]

    def distinct():
        return torch.arange(1., 5.), torch.arange(5., 9.)

    calls = [distinct, overlapping] if first == "distinct" else [overlapping, distinct]
    for make in calls + calls:
        check(make)
    assert "L['y'] is written in place and shares memory with L['x']" in caplog.text


def test_disjoint_slices_of_one_tensor_stay_compiled(caplog):
    """Views of one storage that do not overlap (the two halves of a buffer) are distinct memory:
    the compiled graph is right for them and runs."""
    def fn(x, y):
        y.mul_(2)
        return x + y

    mc.reset()
    base, ref = torch.arange(8.), torch.arange(8.)
    out = mc.compile(fn, backend="inductor")(base[:4], base[4:])
    torch.testing.assert_close(out, fn(ref[:4], ref[4:]))
    torch.testing.assert_close(base, ref)
    assert "shares memory" not in caplog.text


def test_written_input_overlapping_one_that_requires_grad():
    """Training: a leaf's two overlapping views, one written under no_grad, the other used for the
    loss: values and gradients as eager's."""
    def fn(w, x, y):
        with torch.no_grad():
            y.add_(1)
        return (w * x).sum()

    mc.reset()
    compiled = mc.compile(fn, backend="inductor")
    for _ in range(2):
        results = []
        for f in (compiled, fn):
            base = torch.arange(6.)
            w = torch.ones(4, requires_grad=True)
            loss = f(w, base[:4], base[2:])
            loss.backward()
            results.append((loss.detach(), w.grad, base))
        torch.testing.assert_close(results[0], results[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_contiguous_and_offset_inputs(backend, monkeypatch):
    """A transposed input and one starting inside its storage: the region is found in the
    input's own storage, and the base around it is untouched."""
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    for fn, make in [(_column_sin, lambda b: b.t()), (_column_sin, lambda b: b[2:]),
                     (_index_put, None), (_slice_copy, lambda b: b[:, 1:5])]:
        mc.reset()
        base = r(12, 10)
        mine_base, ref_base = base.clone(), base.clone()
        if fn is _index_put:
            args = lambda b: [b.t(), idx(1, 3), r(2, 12)]  # noqa: E731
            rest = args(mine_base)[1:]
            mine, ref = [mine_base.t(), *rest], [ref_base.t(), *rest]
        else:
            x_m, x_r = make(mine_base), make(ref_base)
            y = r(x_m.shape[0]) if fn is _column_sin else r(3, 4)
            mine, ref = [x_m, y], [x_r, y]
        compiled = mc.compile(fn, backend="inductor")
        for _ in range(2):
            compiled(*mine)
            fn(*ref)
            torch.testing.assert_close(mine_base, ref_base)


def test_expanded_input_raises_like_eager():
    """x[:, 0] of an expanded x is one element three times: eager refuses the write, and so
    does the compiled function (functionalization leaves it to eager)."""
    x, y = r(1, 4).expand(3, 4), r(3)
    with raises_as_eager(_column_sin, x, y):
        mc.compile(_column_sin, backend="inductor")(x, y)


def test_called_with_another_layout():
    """Compiled for a contiguous x, called with a transposed one: whatever the compiled code
    does, the caller's tensor ends up as eager's."""
    compiled = mc.compile(_column_sin, backend="inductor")
    compiled(r(6, 6), r(6))
    base = r(6, 6)
    mine, ref = base.clone(), base.clone()
    y = r(6)
    compiled(mine.t(), y)
    _column_sin(ref.t(), y)
    torch.testing.assert_close(mine, ref)


def test_module_buffer_updated_in_place(compiled_graphs):
    """A module's buffer written by forward (a lifted input): in place, like the inputs."""
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("hist", torch.zeros(8))

        def forward(self, i, v):
            self.hist.index_put_((i,), v, accumulate=True)
            return self.hist.sum()

    mine, ref = Counter(), Counter()
    i, v = idx(1, 5, 1), r(3)
    compiled = mc.compile(mine, backend="inductor")
    ptr = mine.hist.data_ptr()
    for _ in range(2):
        torch.testing.assert_close(compiled(i, v), ref(i, v))
    torch.testing.assert_close(mine.hist, ref.hist)
    assert mine.hist.data_ptr() == ptr
    assert "in place" in compiled_graphs[0].pass_report.reinplaced.values()


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_graph_forward_writes_in_place(backend, monkeypatch):
    """A graph with gradients is split into forward and backward (the partitioner); the forward
    keeps the knowledge of which outputs are new input values, so it writes the column in place
    too: no copy-back, the caller's storage, gradients as eager's. When the backward needs the
    new value of the input (``x * w``), it stays a separate tensor and the copy-back stays."""
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)

    def column_then_sum(x, w, y):
        x[:, 0] = y.sin()
        return (x.sum(0) * w).sum()

    def column_then_product(x, w, y):
        x[:, 0] = y.sin()
        return (x * w).sum()

    for fn, copies in ((column_then_sum, 0), (column_then_product, 1)):
        mc.reset()
        torch.manual_seed(0)
        x, y = r(10, 10), r(10)
        w = torch.randn(*((10,) if fn is column_then_sum else (10, 10)), requires_grad=True)
        want_x, want_w = x.clone(), w.detach().clone().requires_grad_()
        fn(want_x, want_w, y).backward()
        compiled, storage = mc.compile(fn, backend="inductor"), x.data_ptr()
        compiled(x.clone(), w, y)  # compiles
        w.grad = None
        with CountCopies() as count:
            compiled(x, w, y).backward()
        if backend != "triton":  # (the interpreter copies each kernel's arguments)
            assert count.copies == copies, fn.__name__
        assert x.data_ptr() == storage
        torch.testing.assert_close(x, want_x)
        torch.testing.assert_close(w.grad, want_w.grad)


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_write_into_an_input_with_a_size_one_dim(backend, monkeypatch):
    """Fuzzer seed 5003756: ``x.narrow(0, 0, 1).add_(1)`` on a (1, 2) input with strides
    (1, 1), in a graph with gradients. The new value came back as x's memory with strides
    (2, 1), the wrapper did not see it was x (the stride of a size-1 dim says nothing), and
    ``x.copy_`` of a view of itself raised."""
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)

    def fn(x0, x1):
        x0.narrow(0, 0, 1).add_(1)
        return x1.abs().sum(-1)

    x, y = torch.randn(2, 1).t(), torch.randn(3, 4, requires_grad=True)
    want_x = x.clone()
    want = fn(want_x, y)
    got = mc.compile(fn, backend="inductor")(x, y)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x, want_x)
