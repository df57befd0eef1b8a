"""Graph passes (minicompile/inductor/fx_passes): each keeps eager's results and really changes
the graph. Graphs are ATen graphs from make_fx with torch's core decompositions."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from minicompile.inductor import fx_passes
from minicompile.inductor.fx_passes import (
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
    fold_conv_bn,
    run_graph_passes,
    simplify_algebra,
)

aten = torch.ops.aten


def aten_graph(fn, *args):
    return make_fx(fn, decomposition_table=core_aten_decompositions())(*args)


def targets(gm) -> list:
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def count(gm, target) -> int:
    return targets(gm).count(target)


def check_pass(fn, args, run_pass, expect_change=True):
    """Run ``run_pass`` on fn's ATen graph; results must equal eager; return the graph."""
    gm = aten_graph(fn, *args)
    before = str(gm.graph)
    run_pass(gm)
    gm.graph.lint()
    torch.testing.assert_close(gm(*args), fn(*args), equal_nan=True)
    assert (str(gm.graph) != before) == expect_change, gm.graph
    return gm


# --- dead-code elimination ---------------------------------------------------------------------

def test_dce_removes_unused_chain():
    def fn(x):
        unused = torch.exp(x).sum()  # noqa: F841 - the dead chain under test
        return x + 1

    gm = check_pass(fn, [torch.randn(5, 3)], eliminate_dead_code)
    assert count(gm, aten.exp.default) == 0 and count(gm, aten.sum.default) == 0


def test_dce_keeps_inplace_writes():
    def fn(x):
        y = x.clone()
        y.add_(1)  # result unused, but the write is the point
        return y

    gm = aten_graph(fn, torch.randn(4))
    # make_fx functionalises nothing here: the in-place add stays and must survive DCE.
    n_inplace = count(gm, aten.add_.Tensor)
    eliminate_dead_code(gm)
    assert count(gm, aten.add_.Tensor) == n_inplace
    x = torch.randn(4)
    torch.testing.assert_close(gm(x), fn(x))


# --- common-subexpression elimination ------------------------------------------------------------

def test_cse_merges_duplicates():
    def fn(x):
        return torch.sin(x) * torch.sin(x) + torch.sin(x)

    gm = check_pass(fn, [torch.randn(7, 5).t()], eliminate_common_subexpressions)  # non-contiguous
    assert count(gm, aten.sin.default) == 1


def test_cse_keeps_random_draws_apart():
    def fn(x):
        return torch.rand_like(x) + torch.rand_like(x)

    gm = aten_graph(fn, torch.randn(3))
    n_random = sum("rand" in str(t) for t in targets(gm))
    assert eliminate_common_subexpressions(gm) == 0
    assert sum("rand" in str(t) for t in targets(gm)) == n_random


def test_cse_distinguishes_int_and_float_scalars():
    def fn(x):
        return torch.div(x, 2, rounding_mode="floor") + torch.div(x, 2.0, rounding_mode="floor")

    x = torch.arange(-5, 5)
    gm = aten_graph(fn, x)
    eliminate_common_subexpressions(gm)
    torch.testing.assert_close(gm(x), fn(x))


# --- constant folding ------------------------------------------------------------------------------

class ScaledLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(6, 4))
        self.register_buffer("scale", torch.rand(6) + 0.5)

    def forward(self, x):  # (B, 4) -> (B, 6); w * scale depends on constants only
        return x @ (self.w * self.scale[:, None]).t().exp()


def test_constant_folding_precomputes_weight_chain():
    m = ScaledLinear()
    gm = check_pass(m, [torch.randn(3, 4)], fold_constants)
    assert count(gm, aten.exp.default) == 0 and count(gm, aten.mul.Tensor) == 0
    assert any(n.op == "get_attr" and "folded" in n.target for n in gm.graph.nodes)


def test_constant_folding_leaves_factories_and_inputs_alone():
    def fn(x):
        return x + torch.ones(3) * 2

    gm = aten_graph(fn, torch.randn(3))
    before = targets(gm)
    assert fold_constants(gm) == 0
    assert targets(gm) == before


# --- algebraic simplification ----------------------------------------------------------------------

# (function, op that must disappear) - one row per rule family of algebraic.RULES.
ALGEBRA_CASES = [
    (lambda x: torch.sin(x) ** 2 + torch.cos(x) ** 2, aten.sin.default),  # -> 1
    (lambda x: torch.sin(x) * torch.sin(x) + torch.cos(x) * torch.cos(x), aten.cos.default),
    (lambda x: x * 1 + 2, aten.mul.Tensor),
    (lambda x: 1 * x + 2, aten.mul.Tensor),
    (lambda x: x / 1 + 2, aten.div.Tensor),
    (lambda x: (x + 0) * 3, aten.add.Tensor),
    (lambda x: (x - 0) * 3, aten.sub.Tensor),
    (lambda x: x ** 1 * 3, aten.pow.Tensor_Scalar),
    (lambda x: x ** 2, aten.pow.Tensor_Scalar),  # -> x * x
    (lambda x: x * -1, aten.mul.Tensor),  # -> neg
    (lambda x: -(-x) * 3, aten.neg.default),
    (lambda x: x + (-x.exp()), aten.neg.default),  # -> sub
    (lambda x: x - (-x.exp()), aten.neg.default),  # -> add
    (lambda x: torch.relu(torch.relu(x)) * 2, aten.relu.default),  # two relus -> one
    (lambda x: torch.abs(torch.abs(x)) * 2, aten.abs.default),
    (lambda x: torch.abs(-x) * 2, aten.neg.default),
    (lambda x: torch.where(x > 0, x, x) * 2, aten.where.self),
    (lambda x: x.view(x.shape) * 2, aten.view.default),
    (lambda x: x.view(-1).view(x.shape[1], x.shape[0]) * 2, aten.view.default),  # two views -> one
]


@pytest.mark.parametrize("fn, gone", ALGEBRA_CASES, ids=[f"rule{i}" for i in range(len(ALGEBRA_CASES))])
def test_algebraic_rule(fn, gone):
    x = torch.randn(5, 3)
    gm = aten_graph(fn, x)
    n_before = count(gm, gone)
    assert n_before >= 1, gm.graph  # the pattern really is in the graph
    assert simplify_algebra(gm), "no rule fired"
    assert count(gm, gone) < n_before, gm.graph
    for inp in (x, torch.randn(5, 3) * 100):
        torch.testing.assert_close(gm(inp), fn(inp), equal_nan=True)


def test_sin_cos_identity_keeps_nan_for_infinite_inputs():
    fn = lambda x: torch.sin(x) ** 2 + torch.cos(x) ** 2  # noqa: E731
    x = torch.tensor([0.0, 1.5, float("inf"), float("-inf"), float("nan"), 1e30])
    gm = check_pass(fn, [x], simplify_algebra)
    assert count(gm, aten.sin.default) == count(gm, aten.cos.default) == 0


def test_rewrite_refused_when_dtype_would_change():
    def fn(x):
        return x * 1.0  # int tensor * float scalar is a float tensor: not "x"

    x = torch.arange(6)
    gm = aten_graph(fn, x)
    assert simplify_algebra(gm) == []
    assert gm(x).dtype == torch.float32


def test_rewrite_refused_when_shape_would_change():
    def fn(x, c):
        return torch.where(c, x, x)  # c broadcasts x up to (4, 3)

    args = [torch.randn(3), torch.rand(4, 3) > 0.5]
    gm = aten_graph(fn, *args)
    assert simplify_algebra(gm) == []
    torch.testing.assert_close(gm(*args), fn(*args))


def test_rewrite_refused_when_output_would_alias_input():
    def fn(x):
        return x * 1  # returning x itself would let a caller write into its own input

    x = torch.randn(3)
    gm = aten_graph(fn, x)
    assert simplify_algebra(gm) == []
    assert gm(x).data_ptr() != x.data_ptr()


@pytest.mark.parametrize("fn", [
    lambda x: x[:, 0] * 1,
    lambda x: x[:, 0] + 0,
    lambda x: x[:, 0] / 1,
    lambda x: x[:, 0] ** 1,
    lambda x: x[1:] - 0,
    lambda x: x[:, :1].expand(4, 6) * 1,  # the expand has stride 0
], ids=["select_mul", "select_add", "select_div", "select_pow", "slice_sub", "expand_mul"])
def test_rewrite_keeps_a_returned_view_of_an_input_fresh(fn):
    """``x[:, 0] * 1`` is a new tensor in eager; simplified to ``x[:, 0]`` it would be a view of
    the caller's ``x``: a write into the result would reach ``x``, strides would differ."""
    x = torch.randn(4, 6)
    gm = aten_graph(fn, x)
    assert simplify_algebra(gm) == []
    mc.reset()
    out = mc.compile(fn, backend="inductor")(x)
    expected = fn(x)
    torch.testing.assert_close(out, expected)
    assert out.stride() == expected.stride()
    before = x.clone()
    out.add_(1)
    torch.testing.assert_close(x, before)  # the caller's input is untouched


def test_rewrite_keeps_a_snapshot_of_a_later_mutated_input():
    def fn(x):
        y = x[0] * 1  # a copy of row 0 before the write below
        x.add_(1)
        return y

    mc.reset()
    out = mc.compile(fn, backend="inductor")(torch.zeros(2, 3))
    torch.testing.assert_close(out, torch.zeros(3))


def test_rewrite_of_a_view_still_fires_inside_the_graph():
    fn = lambda x: x.t() * 1 + 2  # noqa: E731  (the view keeps its strides: only read inside)
    check_pass(fn, [torch.randn(4, 6)], simplify_algebra)


def test_pattern_honours_non_default_arguments():
    from minicompile.inductor.fx_passes import Op, Var, pattern_matcher

    g = torch.fx.Graph()
    x = g.placeholder("x")
    plain = g.call_function(aten.add.Tensor, (x, 0))
    scaled = g.call_function(aten.sub.Tensor, (x, x), {"alpha": 2})  # x - 2x, not x - x
    add, sub = Op(aten.add.Tensor, commutative=True), Op(aten.sub.Tensor)
    X = Var("x")
    assert pattern_matcher.match(add(X, 0), plain, {})
    assert pattern_matcher.match(sub(X, X), g.call_function(aten.sub.Tensor, (x, x)), {})
    assert not pattern_matcher.match(sub(X, X), scaled, {})
    assert not pattern_matcher.match(sub(X, X), g.call_function(aten.sub.Tensor, (x, plain)), {})


# --- conv-batchnorm folding ------------------------------------------------------------------------

def _cbr(conv: torch.nn.Module, channels: int, bn_cls=torch.nn.BatchNorm2d) -> torch.nn.Module:
    bn = bn_cls(channels)
    with torch.no_grad():  # non-trivial statistics, or folding would be a no-op
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    return torch.nn.Sequential(conv, bn, torch.nn.ReLU()).eval()


@pytest.mark.parametrize("bias", [True, False])
def test_conv_bn_relu_folds_to_conv_relu(bias):
    model = _cbr(torch.nn.Conv2d(3, 5, 3, padding=1, bias=bias), 5)
    x = torch.randn(2, 3, 9, 7)
    gm = aten_graph(model, x)
    assert fold_conv_bn(gm) == 1
    fold_constants(gm)
    assert not any("batch_norm" in str(t) for t in targets(gm))
    assert targets(gm) == [aten.convolution.default, aten.relu.default]
    torch.testing.assert_close(gm(x), model(x))
    x_nc = torch.randn(2, 3, 7, 9).transpose(2, 3)  # non-contiguous input
    torch.testing.assert_close(gm(x_nc), model(x_nc))


def test_conv1d_bn_folds():
    model = _cbr(torch.nn.Conv1d(4, 6, 3), 6, torch.nn.BatchNorm1d)
    x = torch.randn(3, 4, 11)
    gm = check_pass(model, [x], fold_conv_bn)
    assert not any("batch_norm" in str(t) for t in targets(gm))


def test_conv_bn_not_folded_in_training():
    model = _cbr(torch.nn.Conv2d(3, 4, 3), 4).train()
    gm = aten_graph(model, torch.randn(2, 3, 6, 6))
    assert fold_conv_bn(gm) == 0


def test_conv_bn_not_folded_when_conv_output_is_reused():
    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cbr = _cbr(torch.nn.Conv2d(3, 4, 3), 4)

        def forward(self, x):
            y = self.cbr[0](x)
            return self.cbr[2](self.cbr[1](y)) + y  # y is needed unnormalised too

    model = Branchy().eval()
    x = torch.randn(1, 3, 6, 6)
    gm = aten_graph(model, x)
    assert fold_conv_bn(gm) == 0
    torch.testing.assert_close(gm(x), model(x))


# --- the whole pipeline ---------------------------------------------------------------------------

def test_run_graph_passes_on_seed_examples():
    def fn(x):
        return torch.sin(x) ** 2 + torch.cos(x) ** 2 + x * 1 + (x + 0) - (-(-x))

    x = torch.randn(33, 17)
    gm = aten_graph(fn, x)
    report = run_graph_passes(gm)
    assert len(report.rewrites) >= 5 and "rewrites" in str(report)
    assert count(gm, aten.sin.default) == count(gm, aten.cos.default) == 0
    assert count(gm, aten.neg.default) == 0
    torch.testing.assert_close(gm(x), fn(x))


def test_run_graph_passes_on_cbr():
    model = _cbr(torch.nn.Conv2d(3, 8, 3), 8)
    x = torch.randn(2, 3, 10, 10)
    gm = aten_graph(model, x)
    report = run_graph_passes(gm)
    assert report.conv_bn_folded == 1 and report.constants_folded == 2
    assert targets(gm) == [aten.convolution.default, aten.relu.default]
    torch.testing.assert_close(gm(x), model(x))


def test_rules_table_has_algebra_comments():
    import inspect

    src = inspect.getsource(fx_passes.algebraic)
    rows = [line for line in src.splitlines() if line.strip().startswith("(") and "lambda" in line
            or line.strip().startswith("(add(pow_")]
    assert rows and all("->" in line.split("#")[-1] for line in rows if "#" in line)
    assert len(fx_passes.RULES) >= 15


def test_decomposed_batchnorm_folds_into_conv():
    from minicompile.decompositions import decomposition_table

    model = _cbr(torch.nn.Conv2d(3, 6, 3, bias=False), 6)
    x = torch.randn(2, 3, 11, 9)
    gm = make_fx(model, decomposition_table=decomposition_table)(x)
    assert not any("batch_norm" in str(t) for t in targets(gm))  # BN is ATen arithmetic here
    report = run_graph_passes(gm)
    assert report.conv_bn_folded >= 2
    assert targets(gm) == [aten.convolution.default, aten.relu.default]
    torch.testing.assert_close(gm(x), model(x))


def test_binary_folding_leaves_non_channel_constants_alone():
    class ConvPlusMap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 3, 1)
            self.register_buffer("bias_map", torch.randn(3, 4, 4))  # varies over space

        def forward(self, x):
            return self.conv(x) + self.bias_map

    model = ConvPlusMap().eval()
    x = torch.randn(1, 2, 4, 4)
    gm = aten_graph(model, x)
    assert fx_passes.fold_conv_binary(gm) == 0
    torch.testing.assert_close(gm(x), model(x))


# --- no-op elimination -----------------------------------------------------------------------

@pytest.mark.parametrize("fn, args, op", [
    (lambda a, b: torch.slice_scatter(a, b.sin()) * 2, (torch.randn(4, 5), torch.randn(4, 5)),
     torch.ops.aten.slice_scatter.default),
    (lambda a: torch.ceil(a) * 2, (torch.arange(7),), torch.ops.aten.ceil.default),
    (lambda a: torch.round(a * 3) + 1, (torch.arange(7),), torch.ops.aten.round.default),
    (lambda a: torch.cat([a.cos()]) + 1, (torch.randn(6),), torch.ops.aten.cat.default),
    (lambda a, w: torch.mm(a.clone(), w), (torch.randn(3, 3), torch.randn(3, 3)),
     torch.ops.aten.clone.default),
])
def test_noop_removed(fn, args, op):
    gm = check_pass(fn, args, fx_passes.remove_noop_ops)
    assert count(gm, op) == 0


@pytest.mark.parametrize("fn, args", [
    (lambda a: torch.ceil(a) * 2, (torch.randn(7) * 5,)),  # floats: ceil computes something
    (lambda a, b: torch.slice_scatter(a, b, 0, 1, 3) + 1,  # a part only
     (torch.randn(4, 5), torch.randn(2, 5))),
    (lambda a, b: torch.slice_scatter(a, b.t().sin()) + 1,  # src has other strides
     (torch.randn(4, 4), torch.randn(4, 4))),
])
def test_noop_kept_when_it_computes(fn, args):
    check_pass(fn, args, fx_passes.remove_noop_ops, expect_change=False)


def test_clone_returned_stays_a_fresh_tensor():
    """``x.clone()`` returned to the caller must not become ``x``: writing into the result would
    write into the input (and two outputs must not share memory either)."""
    fn = lambda x: (x.clone(), x * 2, (x * 2).clone())  # noqa: E731
    x = torch.randn(5)
    out = mc.compile(fn, backend="inductor")(x)
    for o, e in zip(out, fn(x)):
        torch.testing.assert_close(o, e)
    out[0].add_(1)
    out[2].add_(1)
    torch.testing.assert_close(out[1], x * 2)  # untouched by the write into out[2]
    assert out[0].data_ptr() != x.data_ptr()


def test_equal_outputs_merged_by_cse_stay_two_tensors():
    fn = lambda x: (x * 2, x * 2)  # noqa: E731  (eager returns two tensors)
    x = torch.randn(5)
    a, b = mc.compile(fn, backend="inductor")(x)
    a.add_(1)
    torch.testing.assert_close(b, x * 2)


# --- a linear layer's bias and ReLU in the library call ----------------------------------------

def _mlp(sizes=(16, 32, 32, 8)):
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def test_relu_of_addmm_becomes_addmm_activation():
    x, w, b = torch.randn(6, 5), torch.randn(5, 4), torch.randn(4)
    gm = check_pass(lambda x, w, b: torch.relu(torch.addmm(b, x, w)), (x, w, b),
                    fx_passes.fuse_mm_bias_relu)
    assert targets(gm) == [aten._addmm_activation.default]


def test_relu_of_mm_plus_bias_becomes_addmm_activation():
    x, w, b = torch.randn(6, 5), torch.randn(5, 4), torch.randn(4)
    for fn in (lambda x, w, b: torch.relu(torch.mm(x, w) + b),
               lambda x, w, b: torch.relu(b + torch.mm(x, w))):
        gm = check_pass(fn, (x, w, b), fx_passes.fuse_mm_bias_relu)
        assert targets(gm) == [aten._addmm_activation.default]


@pytest.mark.parametrize("fn, args", [
    # the sum is read by something else: it would be computed twice
    (lambda x, w, b: (lambda y: (torch.relu(y), y))(x @ w + b),
     (torch.randn(6, 5), torch.randn(5, 4), torch.randn(4))),
    # a bias per row and column, not a vector over columns
    (lambda x, w, b: torch.relu(x @ w + b),
     (torch.randn(6, 5), torch.randn(5, 4), torch.randn(6, 4))),
    # a bias of another dtype: the sum promotes
    (lambda x, w, b: torch.relu(x @ w + b),
     (torch.randn(6, 5), torch.randn(5, 4), torch.randn(4, dtype=torch.float64))),
    # scaled: addmm with beta 2 is not the epilogue's bias
    (lambda x, w, b: torch.relu(torch.addmm(b, x, w, beta=2)),
     (torch.randn(6, 5), torch.randn(5, 4), torch.randn(4))),
    # a float64 product: left to addmm's own path and a pointwise ReLU
    (lambda x, w, b: torch.relu(x @ w + b),
     (torch.randn(6, 5, dtype=torch.float64), torch.randn(5, 4, dtype=torch.float64),
      torch.randn(4, dtype=torch.float64))),
])
def test_mm_bias_relu_left_alone(fn, args):
    check_pass(fn, args, fx_passes.fuse_mm_bias_relu, expect_change=False)


@pytest.mark.parametrize("fn", [
    lambda x, w, b: x @ w + b,  # returned
    lambda x, w, b: b + x @ w,
    # viewed into heads for a library call, as attention's projections are
    lambda x, w, b: torch.mm((x @ w + b).view(6, 4).t(), x),
])
def test_mm_plus_bias_read_by_no_pointwise_op_becomes_addmm(fn):
    x, w, b = torch.randn(6, 5), torch.randn(5, 4), torch.randn(4)
    gm = check_pass(fn, (x, w, b), fx_passes.fuse_mm_bias)
    assert count(gm, aten.addmm.default) == 1 and count(gm, aten.add.Tensor) == 0


@pytest.mark.parametrize("fn", [
    lambda x, w, b: (x @ w + b).sin(),  # the sine's kernel adds the bias as it reads
    lambda x, w, b: (x @ w + b).view(2, 12).exp(),  # through a view
])
def test_mm_plus_bias_read_by_pointwise_ops_stays_an_add(fn):
    x, w, b = torch.randn(6, 5), torch.randn(5, 4), torch.randn(4)
    check_pass(fn, (x, w, b), fx_passes.fuse_mm_bias, expect_change=False)


needs_onednn = pytest.mark.skipif(fx_passes.mm_activation.LINEAR_POINTWISE is None
                                  or not torch.backends.mkldnn.is_available(), reason="no oneDNN")
BIG = (torch.randn(256, 128, device="cpu") / 128 ** 0.5, torch.randn(128, 512, device="cpu"),
       torch.randn(512, device="cpu"))  # 2**25 flops, on the CPU (whatever the tests' device)


@pytest.mark.cpu_only  # a rewrite for CPU tensors
@needs_onednn
@pytest.mark.parametrize("fn", [
    lambda x, w, b: F.gelu(x @ w + b),
    lambda x, w, b: F.gelu(torch.addmm(b, x, w)),
    lambda x, w, b: F.gelu(F.linear(x, w.t(), b)),
])
def test_gelu_of_a_large_product_becomes_one_onednn_call(fn):
    gm = check_pass(fn, BIG, fx_passes.fuse_mm_bias_gelu)
    linear = [n for n in gm.graph.nodes if n.op == "call_function" and "linear_pointwise" in str(n.target)]
    assert len(linear) == 1 and linear[0].args[3] == "gelu", gm.graph
    assert count(gm, aten.erf.default) == 0 and count(gm, aten.mm.default) == 0


@pytest.mark.cpu_only  # a rewrite for CPU tensors
@needs_onednn
def test_gelu_after_a_product_through_the_compiler(compiled_graphs):
    """Through mc.compile the GELU arrives decomposed (erf, products, sums): matched too."""
    fn = lambda x, w, b: F.gelu(x @ w + b)  # noqa: E731
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(*BIG), fn(*BIG))
    [graph] = compiled_graphs
    assert "'gelu'" in graph.source and "erf" not in graph.source, graph.source
    both = lambda x, w, b: (lambda y: (F.gelu(y), y * 2))(x @ w + b)  # noqa: E731
    torch.testing.assert_close(mc.compile(both, backend="inductor")(*BIG), both(*BIG))
    assert "'gelu'" not in compiled_graphs[-1].source  # the sum is needed as well
    dynamic = mc.compile(fn, backend="inductor", dynamic=True)  # symbolic sizes: no rewrite,
    for m in (256, 300):                                       # no guard on them either
        args = (torch.randn(m, 128, device="cpu"), *BIG[1:])
        torch.testing.assert_close(dynamic(*args), fn(*args))


@pytest.mark.cpu_only  # a rewrite for CPU tensors
@needs_onednn
@pytest.mark.parametrize("name, fn, args", [
    ("too small: the call costs more than the pass", lambda x, w, b: F.gelu(x @ w + b),
     (torch.randn(6, 5), torch.randn(5, 4), torch.randn(4))),
    ("tanh GELU: another function", lambda x, w, b: F.gelu(x @ w + b, approximate="tanh"), BIG),
    ("the sum is read by something else", lambda x, w, b: (lambda y: (F.gelu(y), y * 2))(x @ w + b),
     BIG),
    ("half the GELU: 0.5 * y * erf(y / sqrt 2)", lambda x, w, b: (lambda y: 0.5 * y * torch.erf(
        y * 0.7071067811865476))(x @ w + b), BIG),
    ("float64", lambda x, w, b: F.gelu(x @ w + b), tuple(t.double() for t in BIG)),
    ("erf of y times a tensor, not a constant", lambda x, w, b: (lambda y: y * 0.5 * (torch.erf(
        y * y) + 1))(x @ w + b), BIG),
])
def test_gelu_of_a_product_left_alone(name, fn, args):
    check_pass(fn, args, fx_passes.fuse_mm_bias_gelu, expect_change=False)


def test_mlp_compiles_to_library_calls_only(compiled_graphs):
    """Each Linear + ReLU is one library call: no generated kernel is left in the program, and
    the values (NaN and infinities included) are eager's."""
    model = _mlp().eval()
    x = torch.randn(8, 16)
    x[0, 0], x[1, 3], x[2, 5] = float("nan"), float("inf"), -float("inf")
    with torch.no_grad():
        torch.testing.assert_close(mc.compile(model)(x), model(x), equal_nan=True)
    (g,) = compiled_graphs
    assert g.pass_report.mm_activations == 3
    assert g.source.count("torch._addmm_activation(") == 3
    assert not any(group.is_loop_kernel() for group in g.scheduler.kernel_groups)


def test_mlp_training_gradients_match_eager():
    """In training the ReLU's output is saved for its backward: the fused call provides it."""
    torch.manual_seed(0)
    model, ref = _mlp(), _mlp()
    ref.load_state_dict(model.state_dict())
    x = torch.randn(8, 16, requires_grad=True)
    xr = x.detach().clone().requires_grad_()
    mc.compile(model)(x).sum().backward()
    ref(xr).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
