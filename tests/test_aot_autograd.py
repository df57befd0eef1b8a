"""AOT autograd: outputs and gradients of the ATen graphs equal eager PyTorch."""

from __future__ import annotations

import copy
import math
import logging

import pytest
import torch
import torch.fx as fx
from eager_errors import raises_as_eager
from models import MODELS, MORE_MODELS

import minicompile as mc
import minicompile.aot_autograd.aot_autograd as aot_autograd_module
from minicompile.aot_autograd import (aot_function, aot_module_simplified, default_partition,
                                      min_cut_rematerialization_partition, trace_graph,
                                      trace_module)
from minicompile.backends.aot_eager import aot_eager
from minicompile.decompositions import decomposition_table

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _grads(model, inputs):
    return [p.grad for p in model.parameters()] + [
        x.grad for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]


def check_model(name, device, partition_fn="default", front_end="fx"):
    """Eager vs aot_eager on the same weights and inputs: outputs, gradients, buffers."""
    # cuDNN computes in TF32 by default (its LSTM and convolutions): the oracle stays float32
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        _check_model(name, device, partition_fn, front_end)


def _check_model(name, device, partition_fn, front_end):
    torch.manual_seed(0)
    model, inputs = {**MODELS, **MORE_MODELS}[name](device)
    ref_model = copy.deepcopy(model)
    ref_inputs = [x.detach().clone().requires_grad_(x.requires_grad) for x in inputs]
    if front_end == "fx":
        compiled = aot_eager(fx.symbolic_trace(model), list(inputs), partition_fn=partition_fn)
    elif front_end == "minicompile":  # minicompile's own Dynamo in front
        compiled = mc.compile(model, backend="aot_eager")
    else:  # real Dynamo in front
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=aot_eager)
    out, ref = compiled(*inputs), ref_model(*ref_inputs)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    grad_out = torch.randn_like(ref)
    out.backward(grad_out)
    ref.backward(grad_out)
    for got, want in zip(_grads(model, inputs), _grads(ref_model, ref_inputs)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    for got, want in zip(model.buffers(), ref_model.buffers()):  # e.g. BatchNorm running stats
        torch.testing.assert_close(got, want)
    assert mc.metrics.eager_fallbacks == 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS) + list(MORE_MODELS))
def test_model_zoo_default_partition(name, device):
    check_model(name, device)


@pytest.mark.parametrize("name", ["mlp_gelu", "nanogpt_block", "resnet_basic_block_eval",
                                  "rmsnorm", "cross_entropy_step"])
def test_model_zoo_min_cut(name):
    check_model(name, "cpu", partition_fn="min_cut")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["nanogpt_block", "cross_entropy_step"] + list(MORE_MODELS))
def test_real_dynamo_front_end(name, device):
    check_model(name, device, front_end="dynamo")


@pytest.mark.parametrize("name", list(MODELS) + list(MORE_MODELS))
def test_minicompile_front_end(name):
    """mc.compile(model, backend="aot_eager"): minicompile's Dynamo, then this stage."""
    check_model(name, "cpu", front_end="minicompile")


def _cos_cos_joint():
    x = torch.randn(8)
    gm = fx.symbolic_trace(lambda x: torch.cos(torch.cos(x)).sum())
    return trace_graph(gm, [x], [True], torch._subclasses.FakeTensorMode())


def test_cos_cos_default_partition_saves_x_and_cos_x():
    joint, sig = _cos_cos_joint()
    part = default_partition(joint, sig.num_fwd_outputs)
    assert part.saved == ["primals_1", "cos"], part.saved
    assert part.saved_bytes == 2 * 8 * 4


def test_cos_cos_min_cut_saves_only_x():
    joint, sig = _cos_cos_joint()
    part = min_cut_rematerialization_partition(joint, sig.num_fwd_outputs)
    assert part.saved == ["primals_1"] and part.saved_bytes == 8 * 4
    # the backward recomputes cos(x) from x
    assert any(n.target is torch.ops.aten.cos.default for n in part.bw_module.graph.nodes)


def test_min_cut_saves_what_a_gradient_without_tangents_reads():
    """angle's gradient of a real tensor is zeros_like(x): no tangent reaches it, no node drained
    to the sink, the cut saved nothing, and the backward's zeros_like(x) had no x (OpInfo's angle
    and linalg.det samples ran eagerly). The gradients are backward outputs: what they read is
    saved."""
    x = torch.randn(5, 7)
    gm = fx.symbolic_trace(lambda x: torch.angle(x) * 2)
    joint, sig = trace_graph(gm, [x], [True], torch._subclasses.FakeTensorMode())
    part = min_cut_rematerialization_partition(joint, sig.num_fwd_outputs)
    assert part.saved == ["primals_1"], part.saved
    mc.reset()
    mc.metrics.reset()
    mine, ref = x.clone().requires_grad_(), x.clone().requires_grad_()
    grad, = torch.autograd.grad(mc.compile(gm)(mine).sum(), mine)
    torch.testing.assert_close(grad, torch.autograd.grad(gm(ref).sum(), ref)[0])
    assert mc.metrics.eager_fallbacks == 0


def test_min_cut_never_recomputes_matmul():
    a, b = torch.randn(6, 5), torch.randn(5, 7)
    gm = fx.symbolic_trace(lambda a, b: torch.sin(a @ b).sum())
    joint, sig = trace_graph(gm, [a, b], [True, True], torch._subclasses.FakeTensorMode())
    part = min_cut_rematerialization_partition(joint, sig.num_fwd_outputs)
    mm = torch.ops.aten.mm.default
    # the backward has only the two gradient matmuls; a @ b is saved, not recomputed
    assert sum(n.target is mm for n in part.bw_module.graph.nodes) == 2
    # bases, not their views; the matmul's result, in memory anyway, rather than cos of it,
    # which the backward recomputes (is_materialized)
    assert set(part.saved) == {"primals_1", "primals_2", "mm"}
    assert any(n.target is torch.ops.aten.cos.default for n in part.bw_module.graph.nodes)


def test_min_cut_saves_an_input_rather_than_a_value_written_only_to_be_saved():
    """Batch norm in training: its backward needs x_hat = (x - mean) * rstd, which every forward
    user reads fused (the output's affine step). Saving x_hat would add a full-size write to the
    forward; x is in memory anyway, so x, mean and rstd are saved and the backward recomputes
    x_hat (``is_materialized``, the real partitioner's). Gradients equal eager's."""
    from minicompile.decompositions import decomposition_table
    x = torch.randn(4, 8, 5, 5, requires_grad=True)
    w, b = torch.randn(8, requires_grad=True), torch.randn(8, requires_grad=True)

    def fn(x, w, b):
        return torch.nn.functional.batch_norm(x, None, None, w, b, training=True)

    gm = fx.symbolic_trace(fn)
    joint, sig = trace_graph(gm, [x, w, b], [True] * 3, torch._subclasses.FakeTensorMode(),
                             decompositions=decomposition_table)
    part = min_cut_rematerialization_partition(joint, sig.num_fwd_outputs)
    assert "primals_1" in part.saved and part.saved_bytes < 2 * x.numel() * 4, part.saved
    compiled = aot_function(fn, partition_fn="min_cut", decompositions=decomposition_table)
    grad = torch.randn_like(x)
    got = torch.autograd.grad(compiled(x, w, b), (x, w, b), grad)
    want = torch.autograd.grad(fn(x, w, b), (x, w, b), grad)
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-4)


def test_min_cut_saves_a_value_viewed_for_a_library_call():
    """``is_materialized`` looks through views: a projection's output viewed into heads for an
    attention call is written to memory for that call, so the biased sum is saved rather than
    the product (which would make the backward recompute the bias add, and keep the forward
    from handing the bias to the matmul library call: ``fx_passes.fuse_mm_bias``)."""
    x, w, b = torch.randn(6, 8), torch.randn(8, 8, requires_grad=True), torch.randn(8)

    def fn(x, w, b):
        q = (x @ w + b).view(2, 3, 2, 4).transpose(1, 2)
        return torch.nn.functional.scaled_dot_product_attention(q, q, q).sum()

    gm = fx.symbolic_trace(fn)
    joint, sig = trace_graph(gm, [x, w, b], [False, True, False],
                             torch._subclasses.FakeTensorMode())
    part = min_cut_rematerialization_partition(joint, sig.num_fwd_outputs)
    assert "add" in part.saved and "mm" not in part.saved, part.saved
    compiled = aot_function(fn, partition_fn="min_cut")
    torch.testing.assert_close(torch.autograd.grad(compiled(x, w, b), w),
                               torch.autograd.grad(fn(x, w, b), w))


def test_min_cut_makes_constants_again_rather_than_saving_them():
    """A tensor made from no tensor (``where(m, 0.0, -3.0)`` makes two ``scalar_tensor``s)
    that the backward reads is made again there: saving it cost the forward a kernel and an
    output per constant, and the backward an input."""
    x, m = torch.randn(5, 3, requires_grad=True), torch.randn(5, 3) > 0

    def fn(x, m):
        mask = torch.where(m, 0.0, -3.0)
        return ((x.sin() + mask) * (x.cos() + mask)).exp().sum()

    gm = fx.symbolic_trace(fn)
    joint, sig = trace_graph(gm, [x, m], [True, False], torch._subclasses.FakeTensorMode())
    part = min_cut_rematerialization_partition(joint, sig.num_fwd_outputs)
    assert not any(name.startswith("scalar_tensor") for name in part.saved), part.saved
    compiled = aot_function(fn, partition_fn="min_cut")
    torch.testing.assert_close(torch.autograd.grad(compiled(x, m), x),
                               torch.autograd.grad(fn(x, m), x))


def test_min_cut_heuristics_on_a_transformer_block():
    """Long pointwise chains are not replayed in the backward (MAX_CHAIN), reductions and
    matmuls never are; the result still matches eager (test_model_zoo_min_cut)."""
    from minicompile.aot_autograd.partitioners import ban_recomputation_reason
    from minicompile.decompositions import decomposition_table
    model, (x,) = MODELS["nanogpt_block"]()
    joint, sig = trace_module(model, [x], decompositions=decomposition_table)
    default = default_partition(joint, sig.num_fwd_outputs)
    part = min_cut_rematerialization_partition(joint, sig.num_fwd_outputs)
    assert part.saved_bytes < default.saved_bytes
    ops = lambda gm: sum(n.op == "call_function" for n in gm.graph.nodes)  # noqa: E731
    assert ops(part.bw_module) < 1.25 * ops(default.bw_module)
    for banned in (torch.ops.aten.mm.default, torch.ops.aten.sum.dim_IntList):  # not recomputed
        count = lambda gm: sum(n.target is banned for n in gm.graph.nodes)  # noqa: E731
        assert count(part.bw_module) == count(default.bw_module)
    (mean,) = [n for n in joint.graph.nodes if n.target is torch.ops.aten.sum.dim_IntList][:1]
    assert ban_recomputation_reason(mean) is not None


def test_joint_graph_shape():
    joint, sig = _cos_cos_joint()
    names = [n.name for n in joint.graph.nodes if n.op == "placeholder"]
    assert names == ["primals_1", "tangents_1"]
    assert sig.num_fwd_outputs == 1


def _run_both(fn, *inputs):
    """eager vs aot_eager (fresh input copies each), returning both outputs and input grads."""
    ref_in = [x.detach().clone().requires_grad_(x.requires_grad) for x in inputs]
    cf = aot_eager(fx.symbolic_trace(fn), list(inputs))
    return cf(*inputs), fn(*ref_in), inputs, ref_in


def test_inplace_on_intermediate_is_functionalized():
    def f(x):
        y = x * 2
        y.add_(1)
        y.mul_(3)
        return y.sin()

    x = torch.randn(5, 3, requires_grad=True)
    out, ref, (x,), (rx,) = _run_both(f, x)
    torch.testing.assert_close(out, ref)
    out.sum().backward(), ref.sum().backward()
    torch.testing.assert_close(x.grad, rx.grad)


def test_inplace_op_whose_functional_overload_has_another_name():
    # pow_.Scalar(Tensor self, Scalar exponent) is pow.Tensor_Scalar, not pow.Scalar (a Scalar
    # base); the backward of vector_norm(x, 3) calls it, and so does this forward
    def f(x, e):
        y = x.abs() + 1
        y.pow_(1.5)
        y.pow_(e)
        return torch.linalg.vector_norm(y, 3, -1)

    x, e = torch.randn(4, 6, requires_grad=True), torch.rand(6)
    mc.metrics.reset()
    out, ref, (x, _), (rx, _) = _run_both(f, x, e)
    torch.testing.assert_close(out, ref)
    out.sum().backward(), ref.sum().backward()
    torch.testing.assert_close(x.grad, rx.grad)
    assert mc.metrics.eager_fallbacks == 0


def _compiled_like_eager(f, x):
    """Compiled without falling back, with eager's values and gradients."""
    out, ref, (x,), (rx,) = _run_both(f, x)
    torch.testing.assert_close(out, ref)
    out.sum().backward(), ref.sum().backward()
    torch.testing.assert_close(x.grad, rx.grad)
    assert mc.metrics.eager_fallbacks == 0


def test_mutation_seen_through_an_earlier_view_is_taken_again():
    def f(x):
        y = x * 2
        v = y.view(-1)  # a view taken before the write ...
        y.add_(1)
        return v * 3  # ... sees the write in eager: v is taken again from y's new value

    x = torch.randn(3, 4, requires_grad=True)
    _compiled_like_eager(f, x)


def test_mutation_seen_through_an_earlier_as_strided_view_falls_back():
    def f(x):
        y = x * 2
        v = y.as_strided((6,), (2,))  # an absolute offset: not taken again from a new value
        y.add_(1)
        return v * 3

    x = torch.randn(3, 4, requires_grad=True)
    out, ref, _, _ = _run_both(f, x)
    torch.testing.assert_close(out, ref)
    assert mc.metrics.eager_fallbacks == 1
    # the reason is kept for a learner (and the model benchmark's fallback rows) to read
    assert len(mc.metrics.fallback_reasons) == 1
    assert mc.metrics.fallback_reasons[0].startswith("aot_autograd: ")


def test_view_taken_after_a_write_is_functionalized():
    def f(x):
        y = x * 2
        y.add_(1)
        return y.t().sin()

    x = torch.randn(3, 4, requires_grad=True)
    _compiled_like_eager(f, x)


def test_logs_joint_forward_backward_and_decompositions(caplog):
    mc.set_logs("aot_graphs", "decompositions")
    root = logging.getLogger("minicompile")
    root.propagate = True  # let pytest's caplog see the records
    try:
        with caplog.at_level(logging.INFO, logger="minicompile"):
            model, (x,) = MODELS["mlp_gelu"]()
            aot_eager(fx.symbolic_trace(model), [x])
    finally:
        mc.set_logs()
        root.propagate = False
    text = caplog.text
    for title in ("joint graph", "forward graph", "backward graph", "ops decomposed",
                  "aten.gelu.default"):
        assert title in text, title


def test_aot_function_on_a_plain_function():
    f = aot_function(lambda x, y: (x.sin() * y).sum())
    x, y = torch.randn(5, requires_grad=True), torch.randn(5)
    f(x, y).backward()
    torch.testing.assert_close(x.grad, x.detach().cos() * y)


def test_input_mutation_is_copied_back():
    def f(x, buf):
        buf.add_(x.detach())
        return x * buf

    x, buf = torch.randn(4, requires_grad=True), torch.randn(4)
    ref_buf = buf.clone()
    cf = aot_eager(fx.symbolic_trace(f), [x, buf])
    out = cf(x, buf)
    ref = f(x.detach(), ref_buf)
    torch.testing.assert_close(buf, ref_buf)
    torch.testing.assert_close(out, ref)
    graph = cf.variants[(True, False)]
    assert mc.metrics.eager_fallbacks == 0 and graph is not None


def test_input_written_through_autograd_is_a_differentiable_output():
    """An input that requires grad, written in place: its new value is a forward output with a
    tangent of its own (the backward differentiates through the write), which the runtime
    wrapper copies into the input outside the autograd.Function; the compiler is not told it
    may write it into the input itself. A written input that does not require grad keeps the
    path of a running statistic."""
    def f(x, buf):
        buf.add_(1)
        x.mul_(2)
        return x.sin()

    gm, sig = trace_module(f, [torch.randn(4, requires_grad=True), torch.zeros(4)])
    assert sig.mutated_inputs == [0, 1] and sig.mutations_with_grad == [0]
    assert sig.output_requires_grad == [True, True, False]
    tangents = [n.name for n in gm.graph.nodes if n.name.startswith("tangents")]
    assert tangents == ["tangents_1", "tangents_2"]
    assert list(gm.meta["mutated_inputs"].values()) == ["primals_2"]


def test_batchnorm_training_updates_running_stats():
    torch.manual_seed(0)
    bn = torch.nn.Sequential(torch.nn.BatchNorm1d(5))  # a leaf module inside: traced as a call
    ref_bn = copy.deepcopy(bn)
    x = torch.randn(13, 5, requires_grad=True)
    cf = aot_eager(fx.symbolic_trace(bn), [x])
    out, ref = cf(x), ref_bn(x)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(bn[0].running_mean, ref_bn[0].running_mean)
    torch.testing.assert_close(bn[0].running_var, ref_bn[0].running_var)
    assert mc.metrics.eager_fallbacks == 0


def test_mutated_inputs_take_their_values_inside_the_autograd_function(monkeypatch):
    """The training wrapper's autograd.Function returns the user's outputs alone: a mutated
    input (a running statistic) takes its new value inside the Function's forward. Returned
    through the Function, each would come back as a view autograd makes of it (an input returned
    as an output), three a batch norm in every training step, each costing host time."""
    torch.manual_seed(0)
    bn = torch.nn.Sequential(torch.nn.BatchNorm1d(5))
    ref_bn = copy.deepcopy(bn)
    x = torch.randn(13, 5, requires_grad=True)
    made, returned = [], []
    make = aot_autograd_module.make_training_wrapper
    monkeypatch.setattr(aot_autograd_module, "make_training_wrapper",
                        lambda *args: made.append(make(*args)) or made[-1])
    cf = aot_eager(fx.symbolic_trace(bn), [x])
    (function,) = [wrapper.CompiledFunction for wrapper in made]
    apply = function.apply
    monkeypatch.setattr(function, "apply", lambda *args: returned.append(apply(*args)) or returned[-1])
    before = bn[0].running_mean._version
    out, ref = cf(x), ref_bn(x)
    assert len(returned) == 1 and len(returned[0]) == 1  # the normalized batch alone
    assert bn[0].running_mean._version > before
    torch.testing.assert_close(out, ref)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(bn[0], name), getattr(ref_bn[0], name))


def ops_run_by(fn) -> list[str]:
    """The ATen ops ``fn()`` runs, as the profiler names them."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return [e.name for e in prof.events()]


def test_backward_fills_no_zeros_for_outputs_without_gradients():
    """The forward's new running statistics are outputs of the compiled autograd.Function (the
    runtime copies them into the module's buffers); no gradient flows to them, and autograd
    would fill a tensor of zeros for each before the backward (a kernel launch per statistic
    per step) unless the Function says it takes ``None``."""
    torch.manual_seed(0)
    bn = torch.nn.Sequential(torch.nn.BatchNorm1d(5))
    x = torch.randn(13, 5, requires_grad=True)
    cf = aot_eager(fx.symbolic_trace(bn), [x])
    loss = cf(x).sum()
    ops = ops_run_by(loss.backward)
    assert "aten::zeros" not in ops and "aten::zero_" not in ops, ops
    ref_bn, ref_x = copy.deepcopy(bn), x.detach().clone().requires_grad_()
    torch.testing.assert_close(x.grad, torch.autograd.grad(ref_bn(ref_x).sum(), ref_x)[0])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_an_output_the_loss_does_not_use_gets_a_zero_gradient(backend):
    """A differentiable output no gradient reaches arrives in the backward as ``None``: the
    backward graph, traced with a tangent for it, gets zeros laid out as it was traced."""
    def fn(a):
        return a.sin() * 2, a.t().cos()  # the second: a transposed (non-contiguous) output

    a = torch.randn(4, 6, requires_grad=True)
    ref_a = a.detach().clone().requires_grad_()
    first, _ = mc.compile(fn, backend=backend)(a)
    first.sum().backward()
    fn(ref_a)[0].sum().backward()
    torch.testing.assert_close(a.grad, ref_a.grad)


def test_batchnorm_functional_node_declares_its_five_outputs():
    """_native_batch_norm_legit_functional returns (out, save_mean, save_rstd, new running_mean,
    new running_var): its meta["val"] must say so (Inductor's lowering reads it)."""
    bn = torch.nn.Sequential(torch.nn.BatchNorm2d(4))
    x = torch.randn(2, 4, 5, 3, requires_grad=True)
    joint, _ = trace_module(fx.symbolic_trace(bn), [x])
    (node,) = [n for n in joint.graph.nodes
               if n.target is torch.ops.aten._native_batch_norm_legit_functional.default]
    val = node.meta["val"]
    assert len(val) == 5 and [tuple(v.shape) for v in val[3:]] == [(4,), (4,)]
    assert max(u.args[1] for u in node.users) < len(val)


def test_backward_graph_has_no_detach_chains():
    w = torch.randn(5, 5, requires_grad=True)
    x = torch.randn(3, 5, requires_grad=True)
    gm = fx.symbolic_trace(lambda x, w: torch.softmax(x @ w * 0.5, -1))
    joint, sig = trace_graph(gm, [x, w], [True, True], torch._subclasses.FakeTensorMode())
    assert not any(n.target is torch.ops.aten.detach.default for n in joint.graph.nodes)
    out, ref, (x, w), (rx, rw) = _run_both(lambda x, w: torch.softmax(x @ w * 0.5, -1), x, w)
    torch.testing.assert_close(out, ref)
    out.sum().backward(), ref.sum().backward()
    torch.testing.assert_close(w.grad, rw.grad)


def test_dropout_mask_and_grad_are_consistent():
    x = torch.randn(40, 30, requires_grad=True)
    cf = aot_eager(fx.symbolic_trace(lambda x: torch.nn.functional.dropout(x, 0.25)), [x])
    out = cf(x)
    kept = out != 0
    torch.testing.assert_close(out[kept], x[kept] / 0.75)
    assert 0.6 < kept.float().mean() < 0.9
    out.sum().backward()
    torch.testing.assert_close(x.grad, kept.float() / 0.75)


def test_inference_path_when_no_grad():
    model, (x,) = MODELS["mlp_gelu"]()
    x = x.detach()
    for p in model.parameters():
        p.requires_grad_(False)
    cf = aot_eager(fx.symbolic_trace(model), [x])
    torch.testing.assert_close(cf(x), model(x))
    (key,) = cf.variants
    assert not any(key)  # the inference variant: no joint graph, no autograd.Function
    assert cf(x).grad_fn is None


def test_no_grad_mode_uses_inference_then_training_variant():
    model, (x,) = MODELS["layernorm_residual"]()
    cf = aot_eager(fx.symbolic_trace(model), [x])
    with torch.no_grad():
        torch.testing.assert_close(cf(x), model(x))
    out = cf(x)
    assert out.grad_fn is not None and len(cf.variants) == 2


def test_noncontiguous_input():
    x = torch.randn(24, 7).t().requires_grad_()  # (7, 24), strides (1, 7)
    model, _ = MODELS["mlp_gelu"]()
    cf = aot_eager(fx.symbolic_trace(model), [x])
    torch.testing.assert_close(cf(x), model(x))


def _check_alias_case(f, x_requires_grad, front_end):
    """f(x, w): eager vs aot_eager on outputs (values and strides), x after the call, and the
    gradients; outputs that alias x must share x's storage, as in eager."""
    torch.manual_seed(0)
    x = torch.randn(4, 6, requires_grad=x_requires_grad)
    w = torch.randn(4, 6, requires_grad=True)
    rx, rw = x.detach().clone().requires_grad_(x_requires_grad), w.detach().clone().requires_grad_()
    if front_end == "fx":
        cf = aot_eager(fx.symbolic_trace(f), [x.detach().clone().requires_grad_(x_requires_grad), w])
    elif front_end == "minicompile":
        cf = mc.compile(f, backend="aot_eager")
    else:
        torch._dynamo.reset()
        cf = torch.compile(f, backend=aot_eager)
    outs, refs = cf(x, w), f(rx, rw)
    for out, ref in zip(outs, refs):
        torch.testing.assert_close(out, ref)
        assert out.stride() == ref.stride() and out.requires_grad == ref.requires_grad
        shares = out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert shares == (ref.untyped_storage().data_ptr() == rx.untyped_storage().data_ptr())
    torch.testing.assert_close(x, rx)  # mutations copied back
    sum(o.sum() * (i + 1) for i, o in enumerate(outs)).backward()
    sum(r.sum() * (i + 1) for i, r in enumerate(refs)).backward()
    for got, want in [(x, rx), (w, rw)]:
        if got.requires_grad:
            torch.testing.assert_close(got.grad, want.grad)
    assert mc.metrics.eager_fallbacks == 0


def _return_input(x, w):
    return x, x * w


def _return_views(x, w):
    return x.t(), x[1:, ::2], x.view(24) * 2, (x * w).sum(0)


def _return_detached_views(x, w):  # alias x's storage, but no gradient reaches x through them
    with torch.no_grad():
        row = x[1]
    return x.detach(), x[:, 2].detach(), row, x * w


def _write_through_select(x, w):
    x[0].add_(1)
    return (x * w).sum(0), x.t()


def _write_through_transpose(x, w):
    x.t().mul_(2)
    x[:, 1:3].sub_(w[:, :2].detach())
    return (x.sin() * w,)


def _write_then_alias(x, w):
    x.add_(1)
    return x[0], x * w


@pytest.mark.parametrize("front_end", ["fx", "minicompile", "dynamo"])
@pytest.mark.parametrize("f, x_requires_grad", [
    (_return_input, True), (_return_views, True), (_return_detached_views, True),
    (_write_through_select, False), (_write_through_transpose, False), (_write_then_alias, False)],
    ids=["return_input", "return_views", "return_detached", "write_select", "write_transpose",
         "write_then_alias"])
def test_input_aliases_and_writes_through_views(f, x_requires_grad, front_end):
    """Outputs aliasing an input are rebuilt from it (as_strided) by the runtime wrapper; writes
    through views of an input become as_strided_scatter + a copy back."""
    if f is _return_detached_views and front_end == "fx":
        pytest.skip("fx.symbolic_trace runs the no_grad block while tracing: no node records it")
    _check_alias_case(f, x_requires_grad, front_end)


def test_write_through_a_view_of_an_intermediate_is_functionalized():
    def f(x):
        y = x * 2
        y[0].add_(1)
        y[:, 1].mul_(3)
        return y.cos()

    x = torch.randn(4, 5, requires_grad=True)
    _compiled_like_eager(f, x)


def test_dynamic_shapes_through_real_dynamo():
    torch._dynamo.reset()
    model, (x,) = MODELS["nanogpt_block"]()
    cf = torch.compile(model, backend=aot_eager, dynamic=True)
    for T in (5, 9, 4):
        x = torch.randn(3, T, 24, requires_grad=True)
        out = cf(x)
        torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)
        out.sum().backward()
    assert mc.metrics.eager_fallbacks == 0


def test_dynamic_graph_reads_sizes_from_inputs():
    torch._dynamo.reset()
    graphs = []

    def backend(gm, example_inputs):
        compiled = aot_module_simplified(gm, example_inputs, fw_compiler=lambda g, _: (
            graphs.append(g), g.forward)[1])
        return compiled

    f = torch.compile(lambda x: (x.sum(0) * x.shape[0]).cos(), backend=backend, dynamic=True)
    for n in (3, 6):
        x = torch.randn(n, 5, requires_grad=True)
        torch.testing.assert_close(f(x), (x.sum(0) * n).cos())
    assert len(graphs) >= 1 and mc.metrics.eager_fallbacks == 0


def test_aot_eager_through_backend_registry():
    assert mc.lookup_backend("aot_eager") is aot_eager


def test_double_backward_raises_instead_of_a_wrong_answer():
    x = torch.randn(5, requires_grad=True)
    cf = aot_eager(fx.symbolic_trace(lambda x: (x * x * x).sum()), [x])
    (g,) = torch.autograd.grad(cf(x), x, create_graph=True)
    torch.testing.assert_close(g, 3 * x.detach() ** 2)
    with pytest.raises(RuntimeError):
        g.sum().backward()


@pytest.mark.parametrize("name", ["layernorm_residual", "nanogpt_block", "rmsnorm", "mlp_gelu",
                                  "cross_entropy_step"])
def test_dynamic_shapes_through_minicompile(name):
    """mc.compile(dynamic=True): one graph with symbolic sizes serves every sequence length."""
    model, inputs = MODELS[name]()
    cf = mc.compile(model, backend="aot_eager", dynamic=True)
    for n in (5, 9, 4):
        x = inputs[0]
        shape = list(x.shape)
        shape[-2 if x.dim() == 3 else 0] = n
        x = torch.randn(*shape, requires_grad=True)
        args = (x, torch.randint(0, 13, (n,))) if name == "cross_entropy_step" else (x,)
        out, ref = cf(*args), model(*args)
        torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
        grad, ref_grad = (torch.autograd.grad(o.sum(), x)[0] for o in (out, ref))
        torch.testing.assert_close(grad, ref_grad, rtol=1e-4, atol=1e-5)
    assert mc.metrics.frames_compiled == 1 and mc.metrics.eager_fallbacks == 0


def test_a_size_that_is_a_power_of_a_symbol():
    """A square image: one symbol for height and width, so a strided convolution's output
    flattened has ``(floor(s/2 - 1/2) + 1)**2`` elements (CvT's patch embeddings); the graph
    computes the power as products."""
    conv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
    cf = mc.compile(lambda x: conv(x).flatten(2).transpose(1, 2).sum(-1), backend="aot_eager",
                    dynamic=True)
    for side in (8, 11, 16):
        x = torch.randn(2, 3, side, side, requires_grad=True)
        rx = x.detach().clone().requires_grad_()
        out, ref = cf(x), conv(rx).flatten(2).transpose(1, 2).sum(-1)
        torch.testing.assert_close(out, ref)
        out.sum().backward(), ref.sum().backward()
        torch.testing.assert_close(x.grad, rx.grad)
    assert mc.metrics.frames_compiled == 1 and mc.metrics.eager_fallbacks == 0


@pytest.mark.parametrize("front_end", ["minicompile", "torch"])
def test_view_of_input_with_symbolic_sizes_is_rebuilt_per_call(front_end):
    """x[:, :n // 2] under dynamic shapes: the view's size and stride are formulas in the input's
    sizes, evaluated on each call; the output shares the caller's storage, gradients flow."""
    fn = lambda x: x[:, : x.shape[1] // 2]  # noqa: E731
    if front_end == "minicompile":
        cf = mc.compile(fn, backend="aot_eager", dynamic=True)
    else:
        torch._dynamo.reset()
        cf = torch.compile(fn, backend=aot_eager, dynamic=True)
    for shape in [(3, 8), (5, 9), (4, 12)]:
        x = torch.randn(*shape, requires_grad=True)
        out = cf(x)
        torch.testing.assert_close(out, fn(x))
        assert out.data_ptr() == x.data_ptr() and out.stride() == fn(x).stride()
        out.sum().backward()
        torch.testing.assert_close(x.grad, torch.zeros(shape).index_fill_(1, torch.arange(shape[1] // 2), 1))
    assert mc.metrics.eager_fallbacks == 0


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_dynamic_int_feeding_a_factory_op_is_not_baked_in(backend):
    """An int that turned dynamic (automatic dynamic, after a second value) reaches the graph as
    a SymInt input; ``arange(n)`` must read it per call, not bake the value it had when traced.
    The graph without any tensor input (``zeros(a, b)`` after a graph break) is the same case."""
    fn = lambda x, n: torch.arange(n) + (x * x).sum()  # noqa: E731
    cf = mc.compile(fn, backend=backend)
    for n in (3, 4, 5, 6):
        x = torch.randn(3, requires_grad=True)
        out, ref = cf(x, n), fn(x, n)
        torch.testing.assert_close(out, ref)
        (grad,), (ref_grad,) = (torch.autograd.grad(o.sum(), x) for o in (out, ref))
        torch.testing.assert_close(grad, ref_grad)
    mc.reset()
    only_ints = lambda n: torch.arange(n) * 2  # noqa: E731
    cf = mc.compile(only_ints, backend=backend)
    for n in (3, 4, 5, 6):
        torch.testing.assert_close(cf(n), only_ints(n))
    mc.reset()
    def g(x, y):  # min/max graph-break: the resumed frame gets the two ints
        return torch.zeros(min(x.shape[0], y.shape[0]), max(x.shape[0], y.shape[0]))

    cg = mc.compile(g, backend=backend)
    for a, b in [(2, 3), (3, 4), (5, 4), (6, 2), (7, 7)]:
        x, y = torch.ones(a), torch.ones(b)
        torch.testing.assert_close(cg(x, y), g(x, y))
    assert mc.metrics.eager_fallbacks == 0


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_batch_norm_training_with_symbolic_sizes(backend):
    """Under symbolic sizes the Python dispatcher turns ``native_batch_norm`` into
    ``_native_batch_norm_legit`` (which writes the running statistics): it decomposes the
    same way, and compiles, for every batch and image size, with eager's running statistics."""
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(3)
    ref = copy.deepcopy(bn)
    compiled = mc.compile(bn, backend=backend, dynamic=True)
    for shape in [(4, 3, 5, 7), (2, 3, 6, 6)]:
        x = torch.randn(shape) * 2 + 5
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        out, want = compiled(a), ref(b)
        out.square().sum().backward()
        want.square().sum().backward()
        torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(bn.running_var, ref.running_var)
        torch.testing.assert_close(bn.running_mean, ref.running_mean)
    assert mc.metrics.eager_fallbacks == 0


NORMS_WITHOUT_RUNNING_STATS = {
    "instance_norm1d": lambda: (torch.nn.InstanceNorm1d(5), (3, 5, 7)),
    "instance_norm2d_affine": lambda: (torch.nn.InstanceNorm2d(6, affine=True), (2, 6, 5, 4)),
    "batch_norm1d_no_stats": lambda: (torch.nn.BatchNorm1d(5, track_running_stats=False), (4, 5)),
    "functional_batch_norm": lambda: (
        lambda x: torch.nn.functional.batch_norm(x, None, None, training=True), (3, 6, 3, 5)),
}


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("name", list(NORMS_WITHOUT_RUNNING_STATS))
def test_batch_norm_training_without_running_stats(name, backend):
    """Training-mode batch norm with no running statistics (InstanceNorm, BatchNorm with
    track_running_stats=False) writes nothing back: it normalizes with the batch's statistics.
    It must not become the eval op (which reads statistics it does not have)."""
    model, shape = NORMS_WITHOUT_RUNNING_STATS[name]()
    cf = mc.compile(model, backend=backend)
    x = torch.randn(*shape, requires_grad=True)
    wrt = [x, *(model.parameters() if isinstance(model, torch.nn.Module) else [])]
    out, ref = cf(x), model(x)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    grad_out = torch.randn_like(ref)
    for got, want in zip(torch.autograd.grad(out, wrt, grad_out),
                         torch.autograd.grad(ref, wrt, grad_out)):  # x, then weight and bias
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert mc.metrics.eager_fallbacks == 0


def _trains_as_eager(model: torch.nn.Module, x: torch.Tensor, backend) -> None:
    """One forward and backward of a copy of ``model`` compiled with ``backend``, against eager."""
    compiled, ref_model = copy.deepcopy(model), copy.deepcopy(model)
    out, ref = mc.compile(compiled, backend=backend)(x), ref_model(x)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    out.square().sum().backward()
    ref.square().sum().backward()
    for got, want in zip(compiled.parameters(), ref_model.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
def test_group_norm_is_decomposed_in_any_layout(layout):
    """Under the decomposition table GroupNorm's forward and backward become reductions of the
    graph (no ATen group-norm call, whose CUDA kernel refuses a channels-last input in a layout
    of its own), and match eager for a channels-last input as for a contiguous one; then
    through Inductor's kernels."""
    model = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.GroupNorm(2, 8))
    x = torch.randn(2, 4, 9, 7).contiguous(memory_format=layout)
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def backend(gm, example_inputs):
        return aot_module_simplified(gm, example_inputs, fw_compiler=keep,
                                     decompositions=decomposition_table)

    _trains_as_eager(model, x, backend)
    targets = {str(n.target) for gm in graphs for n in gm.graph.nodes}
    assert len(graphs) == 2 and not any("group_norm" in t for t in targets), targets
    _trains_as_eager(model, x, "inductor")
    assert mc.metrics.eager_fallbacks == 0


def test_min_cut_saves_a_view_the_backward_reads_under_dynamic_sizes(caplog):
    """``idx[0]`` (a view reading a (B, 6) base to make 6 values) feeds the backward's
    index_put. Once B is dynamic its base outweighs it 4x: the fan-in rule must not ban a view,
    or the view would be forward-only *and* unsaveable (an infinite path, no finite cut)."""
    class Gather(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(10, 6))

        def forward(self, x, idx):
            return self.w[idx[0], :].sum() + (x * self.w.index_select(0, idx[0])[:1]).cos()

    torch.manual_seed(0)
    model = Gather()
    cf = mc.compile(model, backend="inductor")  # min-cut partitioner
    for B in (4, 7, 9):  # the second size turns B dynamic
        x, idx = torch.randn(B, 6, requires_grad=True), torch.randint(0, 10, (B, 6))
        out, ref = cf(x, idx), model(x, idx)
        torch.testing.assert_close(out, ref)
        wrt = [x, model.w]
        for got, want in zip(torch.autograd.grad(out.sum(), wrt),
                             torch.autograd.grad(ref.sum(), wrt)):
            torch.testing.assert_close(got, want)
    assert mc.metrics.eager_fallbacks == 0 and "no finite cut" not in caplog.text


def test_min_cut_without_a_finite_cut_uses_the_default_partition(monkeypatch, caplog):
    """If every value were unsaveable there is no finite cut: the partitioner says so and
    saves what the default partition saves, instead of failing the compilation."""
    from minicompile.aot_autograd import partitioners
    monkeypatch.setattr(partitioners, "save_cost", lambda node, dist: math.inf)
    joint, sig = _cos_cos_joint()
    with caplog.at_level(logging.WARNING):
        part = min_cut_rematerialization_partition(joint, sig.num_fwd_outputs)
    assert part.saved == default_partition(joint, sig.num_fwd_outputs).saved
    assert "no finite cut" in caplog.text


def test_variant_traced_after_the_guards_were_made_may_not_add_guards():
    """The first variant is traced while Dynamo compiles, before it renders its guards; one
    traced later (another requires-grad pattern) that specialises a dynamic size would need a
    guard nobody checks any more: it falls back to eager instead."""
    from minicompile.shapes.symbolic_shapes import ShapeEnv

    def specialising_sum(x, dims, keepdim=False, **kwargs):
        int(x.shape[0])  # reads a size as a Python int: a guard n == 3
        return NotImplemented

    fn = lambda x, n: x.expand(n, 3) * 2  # noqa: E731
    gm = fx.symbolic_trace(fn)
    n = ShapeEnv().create_symint(3, "L['n']")
    placeholders = [p for p in gm.graph.nodes if p.op == "placeholder"]
    placeholders[1].meta["example_value"] = n  # x stays static
    x = torch.randn(1, 3, requires_grad=True)
    with torch.no_grad():  # the inference variant: no sum, no guard
        cf = aot_module_simplified(gm, [x, 3], decompositions={
            torch.ops.aten.sum.dim_IntList: specialising_sum})
        torch.testing.assert_close(cf(x, 3), fn(x, 3))
    assert mc.metrics.eager_fallbacks == 0
    out = cf(x, 3)  # the training variant: its backward sums over the n rows
    torch.testing.assert_close(out, fn(x, 3))
    torch.testing.assert_close(torch.autograd.grad(out.sum(), x)[0], torch.full((1, 3), 6.0))
    assert mc.metrics.eager_fallbacks == 1


def test_batch_norm_one_value_per_channel_in_training_raises_as_in_eager():
    """Batch norm reaches the tracer as native_batch_norm on every device; F.batch_norm's own
    check (more than one value per channel when training) still runs."""
    bn = torch.nn.BatchNorm1d(3)
    x = torch.randn(1, 3)
    with raises_as_eager(bn, x):
        mc.compile(bn, backend="aot_eager")(x)


def test_variant_key_with_an_int_among_the_inputs():
    """Which inputs require grad picks the variant; an int among the inputs requires nothing
    (the key is read with one attribute getter over all-tensor inputs, and falls back to a
    check per input when one is not a tensor)."""

    class Scale(torch.nn.Module):
        def forward(self, x, n):
            return x * n

    gm = fx.symbolic_trace(Scale())
    x = torch.randn(3, requires_grad=True)
    cf = aot_eager(gm, [x, 2])
    out = cf(x, 2)
    torch.testing.assert_close(out, x * 2)
    assert set(cf.variants) == {(True, False)}
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0))
    torch.testing.assert_close(cf(x.detach(), 2), x.detach() * 2)  # (the int is traced in)
    assert set(cf.variants) == {(True, False), (False, False)}


@pytest.mark.parametrize("retain_graph", [False, True])
def test_a_backward_frees_each_saved_tensor_after_its_last_reader(compiled_graphs, retain_graph):
    """The runtime hands the backward program the only references to what the forward saved
    (autograd's are cleared, the argument list emptied), and the program deletes each after
    the statement that reads it last, as eager autograd frees a node's saved tensors once it
    has run: a deep model's activations go back to the allocator during the backward, not at
    its end. Probed at each call of the backward's last generated kernel (one per layer):
    fewer and fewer activations are alive, and by the last call, fewer than half (those the
    library calls after it still read). With ``retain_graph`` autograd keeps them all (a
    second backward needs them), and so they stay."""
    import weakref

    from minicompile.inductor.codegen.wrapper_lines import KernelCallLine

    torch.manual_seed(0)
    layers = [m for _ in range(4) for m in (torch.nn.Linear(32, 32), torch.nn.Tanh())]
    model = torch.nn.Sequential(*layers)
    loss = mc.compile(lambda m, x: m(x).sin().sum())(model, torch.randn(8, 32))
    params = {p.data_ptr() for p in model.parameters()}
    saved = loss.grad_fn.saved_tensors
    activations = [weakref.ref(t) for t in saved if t.data_ptr() not in params]
    del saved
    assert len(activations) >= 4
    backward = next(g for g in compiled_graphs if g.kind == "backward")
    last = [line for line in backward.wrapper_lines if isinstance(line, KernelCallLine)][-1]
    namespace, alive = backward.call.__globals__, []
    kernel = namespace[last.kernel]

    def probe(*args):
        alive.append(sum(r() is not None for r in activations))
        return kernel(*args)

    namespace[last.kernel] = probe
    loss.backward(retain_graph=retain_graph)
    namespace[last.kernel] = kernel
    assert alive, "the probe never ran"
    if not retain_graph:
        assert alive == sorted(alive, reverse=True) and alive[-1] < len(activations) / 2, alive
    else:
        assert alive == [len(activations)] * len(alive), alive
    if retain_graph:  # and a second backward still finds them
        loss.backward()


@pytest.mark.gpu
def test_the_peak_memory_of_a_backward_is_eagers():
    """A 16-layer MLP's training step on CUDA, its gradients set to None before each step (as
    ``zero_grad`` does): the backward allocates a gradient per weight while the activations
    it has used can go. The compiled backward frees each saved activation after its last
    reader, so its peak is eager's; holding them all to its end, it was eager's plus every
    weight's gradient (16 x 16 MB here)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(16) for m in (
        torch.nn.Linear(2048, 2048), torch.nn.GELU())]).cuda()
    x = torch.randn(1024, 2048, device="cuda")

    def step(m, x):
        m(x).pow(2).mean().backward()

    def peak(fn) -> int:
        for _ in range(2):  # the second call measured (the first compiles)
            model.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            fn(model, x)
            torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base

    eager, compiled = peak(step), peak(mc.compile(step))
    activation = 1024 * 2048 * 4  # 8 MB; a weight's gradient is two of them
    assert compiled <= eager + 4 * activation, (compiled / activation, eager / activation)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_complex_input_that_requires_grad_gets_its_gradient(backend):
    """A complex leaf is differentiable as a float one is: traced as a leaf that requires no
    grad, the graph's output did not require grad and the leaf never trained."""
    def f(z):
        return (z * z.conj()).real.sum() + (z * 2j).imag.sum()

    z = torch.randn(4, dtype=torch.complex64, requires_grad=True)
    got = mc.compile(f, backend=backend)(z)
    expected = f(z)
    assert got.requires_grad
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(torch.autograd.grad(got, z)[0], torch.autograd.grad(expected, z)[0])


class _CountsCalls:
    calls = 0


_counter = _CountsCalls()


class _CountingBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        _counter.calls += 1  # a side effect of every backward
        return grad * _counter.calls


def _counted(x):
    return _CountingBackward.apply(x) * 2


def test_function_whose_backward_changes_python_state_runs_eagerly():
    """AOT autograd ran the backward once, while tracing: the counter moved once, and the
    compiled backward kept multiplying by the value it had then (1, 1, ... where eager gives
    1, 2, ...). The change is seen after tracing, undone, and the graph runs eagerly."""
    mc.reset()
    compiled = mc.compile(_counted, backend="aot_eager")
    grads = {}
    for name, fn in (("eager", _counted), ("compiled", compiled)):
        _counter.calls = 0
        grads[name] = []
        for _ in range(2):
            x = torch.ones(3, requires_grad=True)
            fn(x).sum().backward()
            grads[name].append(x.grad)
    torch.testing.assert_close(grads["compiled"], grads["eager"])


class _HalfGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x  # eager returns a view of x whose backward is this Function's

    @staticmethod
    def backward(ctx, grad):
        return grad * 0.5


class _FirstThree(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.n = x.shape[0]
        return x.clone()[:3]  # a view of an intermediate

    @staticmethod
    def backward(ctx, grad):
        return torch.cat([grad * 2, grad.new_zeros(ctx.n - 3)])


@pytest.mark.parametrize("function", [_HalfGradient, _FirstThree], ids=lambda f: f.__name__)
def test_view_output_of_a_custom_function_keeps_its_backward(function):
    """An output of a user's Function that is a view (of the input it returns, or of a clone
    made in forward) was made again from its base outside the compiled Function, with the
    view's gradient: _HalfGradient's input got the whole gradient, and _FirstThree's output
    did not require grad at all."""
    def fn(x):
        return function.apply(x)

    mc.reset()
    results = []
    for f in (fn, mc.compile(fn, backend="aot_eager")):
        x = torch.arange(5.0, requires_grad=True)
        out = f(x)
        assert out.requires_grad
        out.backward(torch.arange(1.0, out.numel() + 1))
        results.append((out.detach(), x.grad))
    torch.testing.assert_close(results[1], results[0])


def test_the_backward_can_read_every_size_symbol_its_inputs_use():
    """``cat([a, b], 1)`` with symbolic sizes: its backward slices the tangent at ``s1`` and
    ``s1 + s2``, saved from the forward, and the tangent has ``s1 + s2`` columns; no input of
    the backward is ``s2`` by itself, so inductor could not read it and the whole graph ran
    eagerly. The partitioner saves a forward node reading each such symbol (as torch's)."""
    mc.metrics.reset()

    def fn(a, b):
        return torch.cat([a, b], 1).sin()

    compiled = mc.compile(fn, dynamic=True)
    for cols in ((2, 3), (4, 5)):
        a, b = (torch.randn(5, c, requires_grad=True) for c in cols)
        ref_a, ref_b = (t.detach().clone().requires_grad_() for t in (a, b))
        compiled(a, b).sum().backward()
        fn(ref_a, ref_b).sum().backward()
        torch.testing.assert_close((a.grad, b.grad), (ref_a.grad, ref_b.grad))
    assert mc.metrics.eager_fallbacks == 0


def test_a_value_changed_in_place_then_resized_in_place_keeps_its_geometry():
    """``quantile`` of a 0-d tensor runs ``gather(...)`` (1 element), ``lerp_`` into it, then
    ``squeeze_(-1)``: the lerp_ node's value is the gather's tensor object, and only its node
    kept the geometry from before the squeeze, so the gather's node said 0-d and inductor
    failed to lower it (the graph ran eagerly). Every node of the tensor keeps it."""
    def fn(x, q):
        return torch.quantile(x, q) * 2

    x, q = torch.tensor(3.0), torch.tensor(0.5)
    joint, _ = trace_graph(fn, [x, q], [False, False], torch._subclasses.FakeTensorMode(),
                           decompositions=decomposition_table, joint=False)
    gathers = [n for n in joint.graph.nodes if n.target == torch.ops.aten.gather.default]
    assert gathers and all(n.meta["val"].shape == n.args[2].meta["val"].shape for n in gathers)
    mc.metrics.reset()
    torch.testing.assert_close(mc.compile(fn)(x, q), fn(x, q))
    assert mc.metrics.eager_fallbacks == 0
