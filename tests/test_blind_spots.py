"""Tests for mechanisms whose plausible one-line bugs the rest of the suite did not notice
(issue 17). Each test runs a case where the wrong mechanism gives a wrong user-visible answer,
checked against eager; ``python -m tests.mutate`` plants those bugs and checks they are caught.

Classes covered: tensor guards and strides / requires_grad, globals of an inlined helper from
another module, a graph break in ``no_grad`` at a native call returning a tensor, input mutation
in the inference path, an output view of an input with a storage offset, decompositions on
special values, fusion legality checked by an independent oracle, ``unfold`` with step != 1.
"""

from __future__ import annotations

import itertools
import sys
import types

import pytest
import sympy
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from minicompile.inductor.executor import GraphExecutor
from minicompile.inductor.fx_passes import run_graph_passes
from minicompile.inductor.graph import lower_graph
from minicompile.inductor.scheduler import Scheduler

BACKENDS = ["eager", "aot_eager", "inductor"]
AOT_BACKENDS = ["aot_eager", "inductor"]


# ---- tensor guards: strides and requires_grad ---------------------------------------------------
def reads_layout(x):
    if x.is_contiguous():
        y = x * 2
    else:
        y = x + 100
    return y * x.stride(0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_for_contiguous_input_not_reused_for_transpose(backend):
    cfn = mc.compile(reads_layout, backend=backend)
    x = torch.randn(4, 4)
    for t in (x, x.t(), x, x.t().contiguous(), torch.randn(4, 8)[:, ::2]):
        torch.testing.assert_close(cfn(t), reads_layout(t))


def reads_requires_grad(x):
    return x * 3 if x.requires_grad else x - 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_requires_grad_change_recompiles(backend):
    cfn = mc.compile(reads_requires_grad, backend=backend)
    x = torch.randn(5)
    for t in (x, x.clone().requires_grad_(), x):
        torch.testing.assert_close(cfn(t), reads_requires_grad(t))


# The four layouts of one 3x3 tensor: (transposed, requires_grad). ``st.permutations`` puts every
# one of them in every example, so each example crosses a stride change and a requires_grad
# change: a guard that ignores either is caught on every run, not one run in four.
VARIANTS = list(itertools.product([False, True], [False, True]))


def _variant(base, transposed, requires_grad):
    t = base.t().contiguous().t() if transposed else base.clone()  # same values, other strides
    return t.requires_grad_(requires_grad)


def layout_and_grad(x):
    y = x.sin()
    if not x.is_contiguous():
        y = y + x.stride(1)
    if x.requires_grad:
        y = y * 2
    return y


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(VARIANTS), dynamic=st.sampled_from([None, True, False]),
       repeat=st.booleans())
def test_guard_property_stride_and_requires_grad(order, dynamic, repeat):
    mc.reset()
    cfn = mc.compile(layout_and_grad, backend="eager", dynamic=dynamic)
    base = torch.randn(3, 3)
    for transposed, requires_grad in order + (order[:2] if repeat else []):
        x = _variant(base, transposed, requires_grad)
        out, ref = cfn(x), layout_and_grad(x)
        torch.testing.assert_close(out, ref)
        assert out.requires_grad == ref.requires_grad


# ---- globals read by an inlined helper from another module --------------------------------------
HELPER_SOURCE = """
SCALE = 2.0
def helper(x):
    return x * SCALE
"""
SCALE = 5.0  # the same name in this module: guarding the wrong module's SCALE is wrong too


def _helper_module():
    module = types.ModuleType("_mc_blind_spot_helpers")
    exec(HELPER_SOURCE, module.__dict__)
    sys.modules[module.__name__] = module
    return module


@pytest.mark.parametrize("backend", BACKENDS)
def test_global_of_inlined_helper_in_other_module_changes(backend):
    helpers = _helper_module()

    def fn(x):
        return helpers.helper(x) + SCALE

    cfn = mc.compile(fn, backend=backend)
    x = torch.randn(4)
    for scale in (2.0, 3.0, -1.0, 2.0):
        helpers.SCALE = scale
        torch.testing.assert_close(cfn(x), fn(x))
    del sys.modules[helpers.__name__]


# ---- a graph break inside no_grad at a native call that returns a tensor ------------------------
def _breaking_helper(y):
    print("graph break")  # the call to this helper breaks the caller's graph
    return y * 3


def break_returning_tensor_in_no_grad(x):
    a = x * 2
    with torch.no_grad():
        b = _breaking_helper(a)  # runs natively: must run under no_grad, like in eager
    return a * b


@pytest.mark.parametrize("backend", BACKENDS)
def test_native_call_at_break_runs_under_users_grad_mode(backend, capsys):
    cfn = mc.compile(break_returning_tensor_in_no_grad, backend=backend)
    x1 = torch.randn(5, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    out, ref = cfn(x1), break_returning_tensor_in_no_grad(x2)
    torch.testing.assert_close(out, ref)
    assert mc.metrics.graph_breaks >= 1
    out.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad)  # b is a constant: d/dx = 2 * b only


# ---- input mutation in the inference path -------------------------------------------------------
def add_in_place(x, y):
    x.add_(y)
    return x * 2


@pytest.mark.parametrize("backend", AOT_BACKENDS)
@pytest.mark.parametrize("no_grad", [False, True])
def test_inference_input_mutation_is_copied_back(backend, no_grad):
    cfn = mc.compile(add_in_place, backend=backend)
    x, y = torch.randn(6), torch.randn(6)
    x_ref = x.clone()
    with torch.set_grad_enabled(not no_grad):
        out, ref = cfn(x, y), add_in_place(x_ref, y)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(x, x_ref)


@pytest.mark.parametrize("backend", AOT_BACKENDS)
def test_batch_norm_running_stats_under_no_grad(backend):
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(4).train()
    bn_ref = torch.nn.BatchNorm1d(4).train()
    bn_ref.load_state_dict(bn.state_dict())
    cfn = mc.compile(bn, backend=backend)
    for _ in range(2):
        x = torch.randn(8, 4) * 3 + 1
        with torch.no_grad():
            torch.testing.assert_close(cfn(x), bn_ref(x))
        torch.testing.assert_close(bn.running_mean, bn_ref.running_mean)
        torch.testing.assert_close(bn.running_var, bn_ref.running_var)
    assert bn.num_batches_tracked == bn_ref.num_batches_tracked


# ---- an output that is a view of an input with a storage offset ---------------------------------
def tail_view(y):
    return y[1:], y * 2


@pytest.mark.parametrize("backend", AOT_BACKENDS)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_view_of_offset_input(backend, requires_grad):
    base = torch.arange(12.0, requires_grad=requires_grad)
    base_ref = base.detach().clone().requires_grad_(requires_grad)
    cfn = mc.compile(tail_view, backend=backend)
    (view, doubled), (view_ref, doubled_ref) = cfn(base[4:8]), tail_view(base_ref[4:8])
    torch.testing.assert_close(view, view_ref)
    torch.testing.assert_close(doubled, doubled_ref)
    assert view.storage_offset() == view_ref.storage_offset() == 5
    if requires_grad:
        (view * torch.arange(3.0)).sum().backward()
        (view_ref * torch.arange(3.0)).sum().backward()
        torch.testing.assert_close(base.grad, base_ref.grad)
    else:
        view[0] = -1.0  # a view of the caller's storage: writes reach the base
        assert base[5] == -1.0


def write_through_tail(y):
    y[1:].mul_(10)
    return y + 1


@pytest.mark.parametrize("backend", AOT_BACKENDS)
def test_write_through_view_of_offset_input(backend):
    base, base_ref = torch.arange(12.0), torch.arange(12.0)
    out = mc.compile(write_through_tail, backend=backend)(base[4:8])
    torch.testing.assert_close(out, write_through_tail(base_ref[4:8]))
    torch.testing.assert_close(base, base_ref)


# ---- decompositions and lowerings on special values ---------------------------------------------
INF, NAN = float("inf"), float("nan")


def masked_rows():
    """Rows as after attention masking: fully masked, half masked, +inf, NaN, huge, tiny."""
    x = torch.randn(8, 9)
    x[1] = -INF  # a fully masked row
    x[2, :5] = -INF
    x[3, 2] = INF
    x[4, 5] = NAN
    x[5] *= 1e30
    x[6] *= 1e-30
    x[7] = 1e4 + x[7]  # exp would overflow without subtracting the max
    return x


def near_constant_rows():
    return 100 + 0.01 * torch.randn(6, 256)  # E[x^2] - E[x]^2 loses every digit here


SPECIAL = {
    "logsumexp": (lambda x: torch.logsumexp(x, 1), masked_rows),
    "logsumexp_keepdim": (lambda x: torch.logsumexp(x, -1, keepdim=True), masked_rows),
    "softmax": (lambda x: torch.softmax(x, 1), masked_rows),
    "log_softmax": (lambda x: torch.log_softmax(x, 1), masked_rows),
    "amax": (lambda x: x.amax(1), masked_rows),
    "max_min": (lambda x: (x.max(1).values, x.min(1).values), masked_rows),
    "cross_entropy": (lambda x: F.cross_entropy(x[5:], torch.tensor([0, 3, 8])), masked_rows),
    "var": (lambda x: x.var(1), near_constant_rows),
    "var_mean": (lambda x: torch.var_mean(x, 1), near_constant_rows),
    "std": (lambda x: x.std(-1, correction=0), near_constant_rows),
    "layer_norm": (lambda x: F.layer_norm(x, (256,)), near_constant_rows),
    "batch_norm_train": (lambda x: F.batch_norm(x.t(), None, None, training=True),
                         near_constant_rows),
}


@pytest.mark.parametrize("backend", AOT_BACKENDS)
@pytest.mark.parametrize("name", list(SPECIAL))
def test_special_values(backend, name):
    fn, make = SPECIAL[name]
    x = make()
    out, ref = mc.compile(fn, backend=backend)(x), fn(x)
    torch.testing.assert_close(out, ref, equal_nan=True, atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("backend", AOT_BACKENDS)
def test_logsumexp_of_fully_masked_row_is_minus_inf(backend):
    scores = torch.randn(3, 4).masked_fill(torch.tensor([[True], [False], [True]]), -INF)
    out = mc.compile(lambda s: torch.logsumexp(s, -1), backend=backend)(scores)
    assert out[0] == -INF and out[2] == -INF
    torch.testing.assert_close(out[1], torch.logsumexp(scores[1], -1))


# ---- fusion legality, checked by an oracle that shares no code with the scheduler -------------
def _schedule(fn, *args):
    gm = make_fx(fn, decomposition_table=core_aten_decompositions())(*args)
    run_graph_passes(gm)
    graph = lower_graph(gm, list(args))
    s = Scheduler(graph)
    torch.testing.assert_close(GraphExecutor(graph, s.ordered_nodes())(*args), fn(*args))
    return s


def _points(dep):
    """Brute force: every loop point of ``dep`` (row-major), as (flat position, offset touched),
    masked-off points left out."""
    names = [v for v, _ in dep.var_ranges]
    sizes = [int(n) for _, n in dep.var_ranges]
    for flat, values in enumerate(itertools.product(*[range(n) for n in sizes])):
        env = dict(zip(names, values))
        if all(int(lo) <= env[v] < int(hi) for v, lo, hi in dep.bounds):
            yield flat, int(sympy.sympify(dep.index).xreplace(env))


def _row_of_points(dep, n_rows):
    total = 1
    for _, n in dep.var_ranges:
        total *= int(n)
    per_row = total // n_rows  # a kernel of n_rows rows: each loop point belongs to one row
    return [(flat // per_row, offset) for flat, offset in _points(dep)]


def assert_fusion_legal(s):
    """In each kernel with a reduction (n rows of r), a value produced in the kernel by a
    reduction, or computed from one, exists only row by row: every read of it in the same
    kernel must come from the row that wrote that element."""
    for kernel in s.kernels:
        members = kernel.get_nodes()
        reductions = [m for m in members if m.is_reduction()]
        if kernel.is_extern() or not reductions:
            continue
        n_rows = int(reductions[0].numel)
        row_only: set[str] = set()
        for m in sorted(members, key=lambda m: m.index):  # program order
            reads = {d.name for d in m.read_writes.reads}
            if m.is_reduction() or reads & row_only:
                row_only.add(m.get_name())
        written = {}
        for m in members:
            for dep in m.read_writes.writes:
                for row, offset in _row_of_points(dep, n_rows):
                    written[(dep.name, offset)] = row
        for m in members:
            for dep in m.read_writes.reads:
                if dep.name not in row_only or dep.name == m.get_name():
                    continue
                for row, offset in _row_of_points(dep, n_rows):
                    assert written[(dep.name, offset)] == row, (
                        f"{m.get_name()} reads {dep.name}[{offset}] in row {row}, written in row "
                        f"{written[(dep.name, offset)]}\n{s.describe()}")


FUSION_CASES = [
    (lambda x: x.softmax(0), (12, 7)),
    (lambda x: x.softmax(-1), (12, 7)),
    (lambda x: x - x.mean(0), (12, 7)),
    (lambda x: (x - x.mean(0)) / x.std(0), (12, 7)),
    (lambda x: x.view(3, 4, -1).softmax(1), (12, 7)),
    (lambda x: x - x.sum(1, keepdim=True).t(), (8, 8)),  # the row sums read transposed
    (lambda x: x - x.sum(1, keepdim=True).exp().t(), (8, 8)),  # through a pointwise op
    (lambda x: x * x.amax(1, keepdim=True).sigmoid().t() + x.sum(1, keepdim=True), (8, 8)),
    (lambda x: (x.sum(1).exp() + 1).flip(0).view(-1, 1) * x, (8, 8)),  # rows read reversed
    (lambda x: x.cumsum(1) - x.sum(1, keepdim=True).roll(1, 0), (6, 5)),
    (lambda x: (x * 2).sum(0).exp() + x.amax(0), (12, 7)),
    # a value computed from a reduction and stored (it is also returned): row-bound too
    (lambda x: (x - (x.sum(1, keepdim=True) * x[:, :1]).t(), x.sum(1, keepdim=True) * x[:, :1]),
     (8, 8)),
    (lambda x: ((x.amax(1, keepdim=True) * x[:, -1:]).flip(0) * x,
                x.amax(1, keepdim=True) * x[:, -1:]), (8, 8)),
]


@pytest.mark.parametrize("fn, shape", FUSION_CASES)
def test_fusion_legal_by_independent_oracle(fn, shape):
    assert_fusion_legal(_schedule(fn, torch.randn(*shape)))


# ---- unfold and other strided windows under inductor -------------------------------------------
WINDOWS = {
    "unfold_step2": (lambda x: x.unfold(0, 3, 2), (11, 4)),
    "unfold_step3_dim1": (lambda x: x.unfold(1, 2, 3).sum(-1), (4, 11)),
    "unfold_step_gt_size": (lambda x: x.unfold(-1, 2, 5) * 2, (3, 12)),
    "unfold_twice": (lambda x: x.unfold(0, 3, 2).unfold(1, 2, 2), (9, 8)),
    "unfold_1d": (lambda x: x.unfold(0, 4, 3).mean(-1), (17,)),
    "step_slice": (lambda x: x[1::3, ::2] + 1, (10, 9)),
    "as_strided": (lambda x: x.as_strided((4, 3), (5, 2), 1) * 3, (30,)),
    "diagonal_offset": (lambda x: x.diagonal(1) + x.diagonal(-2).sum(), (6, 6)),
}


@pytest.mark.parametrize("name", list(WINDOWS))
def test_strided_windows_inductor(name):
    fn, shape = WINDOWS[name]
    x = torch.randn(*shape)
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(x), fn(x))


# ---- more mechanisms the mutation script plants bugs in -----------------------------------------
def divide_by(x, s):
    return x / s  # s = 0.0 and s = -0.0 give +inf and -inf


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_argument_signed_zero(backend):
    cfn = mc.compile(divide_by, backend=backend)
    x = torch.ones(3)
    for s in (0.0, -0.0, 0.0, 2.0, -0.0):
        torch.testing.assert_close(cfn(x, s), divide_by(x, s))


def scaled_cumsum(x, w):
    return (x * w).cumsum(1)


@pytest.mark.parametrize("backend", AOT_BACKENDS)
def test_backward_with_non_contiguous_grad(backend):
    x = torch.randn(4, 6, requires_grad=True)
    w = torch.randn(4, 6)
    x_ref = x.detach().clone().requires_grad_()
    out = mc.compile(scaled_cumsum, backend=backend)(x, w)
    grad = torch.randn(6, 4).t()  # a transposed, non-contiguous incoming gradient
    out.backward(grad)
    scaled_cumsum(x_ref, w).backward(grad)
    torch.testing.assert_close(x.grad, x_ref.grad)


def branches_on_grad_mode(x):
    return x * 2 if torch.is_grad_enabled() else x * 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_mode_change_recompiles(backend):
    cfn = mc.compile(branches_on_grad_mode, backend=backend)
    x = torch.randn(4, requires_grad=True)
    for grad in (False, True, False):
        with torch.set_grad_enabled(grad):
            out, ref = cfn(x), branches_on_grad_mode(x)
        torch.testing.assert_close(out, ref)
        assert out.requires_grad == ref.requires_grad


@pytest.mark.parametrize("backend", AOT_BACKENDS)
def test_relu_grad_at_exact_zeros(backend):
    x = torch.tensor([-1.0, 0.0, 2.0, 0.0, -0.0, 3.0], requires_grad=True)  # relu'(0) = 0
    x_ref = x.detach().clone().requires_grad_()
    fn = lambda x: (torch.relu(x) * torch.arange(6.0)).sum()  # noqa: E731
    mc.compile(fn, backend=backend)(x).backward()
    fn(x_ref).backward()
    torch.testing.assert_close(x.grad, x_ref.grad)


def three_writes_through_views(y):
    y[1:].mul_(10)
    y[:2].add_(1)
    y[2:3].sub_(100)
    return y + 1


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("start", [0, 2, 4])
def test_several_writes_through_views_of_offset_input(backend, start):
    base, base_ref = torch.arange(12.0), torch.arange(12.0)
    out = mc.compile(three_writes_through_views, backend=backend)(base[start:start + 4])
    torch.testing.assert_close(out, three_writes_through_views(base_ref[start:start + 4]))
    torch.testing.assert_close(base, base_ref)


def writes_through_2d_views(y):
    y[:, 1].mul_(-3)
    y[1:].add_(y[0])
    y.t()[0].sub_(7)
    return y.sum(0) * 2


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("window", [(0, 0), (1, 2), (2, 1)])
def test_writes_through_views_of_a_2d_window(backend, window):
    """An input that is a window of a larger matrix (offset and row stride both not its own)."""
    r, c = window
    base = torch.randn(6, 7)
    base_ref = base.clone()
    out = mc.compile(writes_through_2d_views, backend=backend)(base[r:r + 3, c:c + 4])
    ref = writes_through_2d_views(base_ref[r:r + 3, c:c + 4])
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(base, base_ref)
