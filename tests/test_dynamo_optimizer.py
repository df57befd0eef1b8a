"""A training step with ``torch.optim`` inside the compiled function (what the model suites'
training mode compiles), as real code writes it: ``loss.backward(); opt.step();
opt.zero_grad()``. The step is traced into a graph of its own (variables/optimizer.py), with the
state made on the first call; after several steps the parameters and the optimizer state equal
eager's, for SGD (momentum, Nesterov, weight decay), Adam, AdamW (AMSGrad off and on) and
RMSprop, on the single-tensor and the default (foreach on CUDA) paths. Guards recompile when a
hyperparameter changes, a float lr set by a scheduler once (then it is a graph input), an lr held
in a tensor never; what is not traced
(a fused kernel, LBFGS's closure) breaks with a reason and stays eager-equal. Then the pieces a
step is traced with, each against eager and real Dynamo's graph count."""

from __future__ import annotations

import copy
import re

import pytest
import torch
import torch._dynamo
from torch import nn
from torch.optim.swa_utils import get_ema_avg_fn

import minicompile as mc


def train_step(model, opt, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


OPTIMIZERS = {
    "sgd": lambda params, foreach: torch.optim.SGD(params, lr=0.1, momentum=0.9,
                                                   foreach=foreach),
    "sgd_nesterov_wd": lambda params, foreach: torch.optim.SGD(
        params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=foreach),
    "adam": lambda params, foreach: torch.optim.Adam(params, lr=0.01, foreach=foreach),
    "adamw": lambda params, foreach: torch.optim.AdamW(params, lr=0.01, foreach=foreach),
    "adamw_amsgrad": lambda params, foreach: torch.optim.AdamW(params, lr=0.01, amsgrad=True,
                                                               foreach=foreach),
    "rmsprop": lambda params, foreach: torch.optim.RMSprop(
        params, lr=0.01, momentum=0.9, centered=True, weight_decay=0.01, foreach=foreach),
}


def tiny_model() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def assert_same_training(model, opt, twin, twin_opt):
    """Parameters and every optimizer state tensor (moments, step counters) equal eager's."""
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(q, p)
        assert q.grad is None and p.grad is None  # zero_grad(set_to_none=True) ran
        assert opt.state[p].keys() == twin_opt.state[q].keys()
        for key, value in opt.state[p].items():  # (on CUDA the compiled step is capturable:
            # its step counters live on the GPU, eager's on the CPU)
            torch.testing.assert_close(twin_opt.state[q][key], value, check_device=False)


def run_steps(name, foreach, steps=3, **compile_kwargs):
    torch.manual_seed(0)
    model = tiny_model()
    twin = copy.deepcopy(model)
    opt, twin_opt = (OPTIMIZERS[name](m.parameters(), foreach) for m in (model, twin))
    compiled = mc.compile(train_step, backend="inductor", **compile_kwargs)
    for _ in range(steps):  # momentum / Adam moments carry state from step to step
        x, y = torch.randn(5, 4), torch.randn(5, 2)
        torch.testing.assert_close(compiled(twin, twin_opt, x, y), train_step(model, opt, x, y))
    assert_same_training(model, opt, twin, twin_opt)


@pytest.mark.parametrize("foreach", [False, None], ids=["single_tensor", "default"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_training_step_matches_eager_over_steps(name, foreach):
    run_steps(name, foreach)
    assert mc.metrics.eager_fallbacks == 0
    # the forward's graph and the step's (an optimizer run natively compiles only the forward)
    assert mc.metrics.graphs_compiled >= 2


@pytest.mark.parametrize("name", ["sgd", "adamw_amsgrad", "rmsprop"])
def test_foreach_step_matches_eager(name):
    run_steps(name, foreach=True, steps=2)
    assert mc.metrics.eager_fallbacks == 0 and mc.metrics.graphs_compiled >= 2


@pytest.mark.parametrize("name", ["sgd", "adamw"])
def test_foreach_step_is_one_pass_per_parameter(name, compiled_graphs):
    """``foreach=True`` calls ``torch._foreach_*`` ops; each is lowered item by item, so the step
    graph calls no ATen foreach op (which would allocate a new list of tensors that the
    mutation then copies back): each parameter's update is one kernel writing the parameter."""
    run_steps(name, foreach=True, steps=2)
    step = compiled_graphs[-1].source  # the step's graph comes last
    assert "aten._foreach" not in step
    params = len(list(tiny_model().parameters()))
    # what the step writes per parameter: SGD the parameter and its momentum; AdamW the
    # parameter, both moments and its step count
    writes = {"sgd": 2, "adamw": 4}[name]
    assert step.count("written in place") == params * writes


def test_the_step_reads_its_inputs_through_shared_temporaries(monkeypatch):
    """The transformed function of the step's frame calls its graph with every parameter, its
    gradient and its optimizer state: the paths they share (the optimizer, its parameter list,
    its state dict) are read once into temporaries, and the state's keys are listed once, not
    once per parameter (reading the i-th key of a dict lists all of them), in the transformed
    function and in the guard; the steps stay eager's."""
    from minicompile.dynamo import eval_frame
    entries = []
    monkeypatch.setattr(eval_frame.CACHE, "listeners", [
        lambda event, entry: event == "compiled" and entries.append(entry)])
    run_steps("sgd", foreach=False)
    entry = [e for e in entries if "momentum_buffer" in e.result.transformed_source][-1]
    step = entry.result.transformed_source  # the step's frame once its state exists
    params = len(list(tiny_model().parameters()))
    call = next(line for line in step.splitlines() if "graph_out_0 = " in line)
    assert step.count("list(dict.keys(") == 1, step
    assert "param_groups" not in call and call.count("momentum_buffer") == params, step
    # the guard reads each state the same way: through one list of the state's keys
    reads = [line for line in entry.guard.runnable.splitlines()
             if line.startswith("    args_0_state_") and " = args_0_state[" in line]
    assert len(reads) == params and not any("dict.keys" in line for line in reads), reads


@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_explain_shows_the_step_graph_as_real_dynamo(name):
    """Two graphs, as real Dynamo: the forward (the backward breaks) and the step (its
    ``_use_grad`` wrapper breaks around it so it runs under no_grad); the step graph updates
    the parameters in place."""
    torch.manual_seed(0)
    model = tiny_model()
    opt = OPTIMIZERS[name](model.parameters(), False)
    x, y = torch.randn(5, 4), torch.randn(5, 2)
    assert same_graph_count_as_dynamo(train_step, model, opt, x, y) == 2
    ours = mc.explain(train_step)(model, opt, x, y)
    step_ops = {getattr(t, "__name__", str(t)) for t in ours.ops_per_graph[1]}
    assert {"add_", "addcdiv_", "copy_"} & step_ops, step_ops
    reasons = "\n".join(str(r) for r in ours.break_reasons)
    assert "backward" in reasons and "zero_grad" in reasons


def test_changed_hyperparameters_recompile():
    torch.manual_seed(0)
    model = tiny_model()
    twin = copy.deepcopy(model)
    opt, twin_opt = (torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=False)
                     for m in (model, twin))
    compiled = mc.compile(train_step, backend="aot_eager")
    changes = [{}, {}, {"momentum": 0.5}, {"lr": 0.05}, {"weight_decay": 0.1}, {}]
    for change in changes:  # a step traced for the old values would update with them
        for o in (opt, twin_opt):
            o.param_groups[0].update(change)
        x, y = torch.randn(5, 4), torch.randn(5, 2)
        torch.testing.assert_close(compiled(twin, twin_opt, x, y), train_step(model, opt, x, y))
    assert_same_training(model, opt, twin, twin_opt)
    assert mc.metrics.recompiles >= 3


def run_scheduled_steps(make, steps=5):
    """Steps with an ExponentialLR setting a new lr before each, compiled and eager."""
    torch.manual_seed(0)
    model = tiny_model()
    twin = copy.deepcopy(model)
    opt, twin_opt = make(model), make(twin)
    schedulers = [torch.optim.lr_scheduler.ExponentialLR(o, 0.5) for o in (opt, twin_opt)]
    compiled = mc.compile(train_step, backend="aot_eager")
    for _ in range(steps):
        x, y = torch.randn(5, 4), torch.randn(5, 2)
        torch.testing.assert_close(compiled(twin, twin_opt, x, y), train_step(model, opt, x, y))
        for s in schedulers:
            s.step()
    assert_same_training(model, opt, twin, twin_opt)


@pytest.mark.parametrize("name", ["sgd", "adamw_amsgrad", "rmsprop"])
def test_float_lr_from_a_scheduler_recompiles_once(name):
    """A scheduler sets a new float lr before every step: the first change recompiles and
    makes the lr a graph input (real Dynamo's automatic dynamic for floats); the steps after
    reuse that graph. A graph that kept the first lr baked in would drift from eager."""
    run_scheduled_steps(lambda m: OPTIMIZERS[name](m.parameters(), False))
    assert mc.metrics.recompiles == 1 and mc.metrics.eager_fallbacks == 0


def test_lr_in_a_tensor_changes_without_recompiling():
    """An lr held in a tensor (what PyTorch's compiled-optimizer tutorial recommends) is a
    graph input from the first compile."""
    run_scheduled_steps(lambda m: torch.optim.Adam(m.parameters(), lr=torch.tensor(0.01),
                                                   foreach=False), steps=4)
    assert mc.metrics.recompiles == 0 and mc.metrics.eager_fallbacks == 0


def lbfgs_step(model, opt, x, y):
    def closure():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    return opt.step(closure)


@pytest.mark.parametrize("case", ["fused", "lbfgs"])
def test_unsupported_optimizer_breaks_with_a_reason(case):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    twin = copy.deepcopy(model)
    if case == "fused":
        step, make = train_step, lambda m: torch.optim.Adam(m.parameters(), fused=True)
        reason = "fused=True"
    else:
        step, make = lbfgs_step, lambda m: torch.optim.LBFGS(m.parameters())
        reason = "closure"
    opt, twin_opt = make(model), make(twin)
    x, y = torch.randn(3, 4), torch.randn(3, 2)
    explained = mc.explain(step)(twin, twin_opt, x, y)
    step(model, opt, x, y)
    torch.testing.assert_close(twin.weight, model.weight)
    assert any(reason in str(r) for r in explained.break_reasons), explained.break_reasons


def same_graph_count_as_dynamo(fn, *args) -> int:
    ours = mc.explain(fn)(*args)
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(fn)(*args)
    assert ours.graph_count == theirs.graph_count, (str(ours), str(theirs))
    return ours.graph_count


def profiled(x):
    with torch.profiler.record_function("scale"):  # a label for the profiler, no computation
        y = x * 2
    with torch.autograd.profiler.record_function("shift"):
        return y + 1


def test_record_function_is_ignored_in_the_graph():
    x = torch.randn(6)
    torch.testing.assert_close(mc.compile(profiled, backend="eager")(x), profiled(x))
    assert same_graph_count_as_dynamo(profiled, x) == 1


def grad_step(p, lr):
    return p - lr * p.grad  # the gradient is read where the parameter is


def test_grad_of_an_input_is_a_graph_input():
    p = torch.randn(5, requires_grad=True)
    (p * p).sum().backward()
    compiled = mc.compile(grad_step, backend="aot_eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(p, 0.1), grad_step(p, 0.1))
        p.grad = torch.randn(5)  # a new gradient tensor: read again, not baked in
        torch.testing.assert_close(compiled(p, 0.1), grad_step(p, 0.1))
    assert same_graph_count_as_dynamo(grad_step, p, 0.1) == 1


def ema(average, value):
    # torch.optim's Python code (a closure made by a torch.optim function) is traced through,
    # as real Dynamo's trace rules inline it, not called as one opaque op
    return get_ema_avg_fn(0.9)(average, value, 1) * 3


def test_torch_optim_python_code_is_inlined():
    a, b = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(mc.compile(ema, backend="eager")(a, b), ema(a, b))
    assert same_graph_count_as_dynamo(ema, a, b) == 1


def module_local_across_break(x):
    import torch.nn.functional as F  # a local bound to a module, live after the break

    y = x * 2
    print("break")
    return F.relu(y)


def test_module_bound_to_a_local_survives_a_graph_break(capsys):
    x = torch.randn(4)
    got = mc.compile(module_local_across_break, backend="eager")(x)
    torch.testing.assert_close(got, module_local_across_break(x))
    assert mc.metrics.eager_fallbacks == 0
    assert same_graph_count_as_dynamo(module_local_across_break, x) == 2


def bump_each(xs):
    for i in range(2):
        s = xs[i]
        s += 1  # in place on xs[i]; the name s is never read again (RMSprop's step += 1)


def test_inplace_operator_whose_result_is_unused_is_kept():
    xs, twins = [torch.zeros(3), torch.zeros(3)], [torch.zeros(3), torch.zeros(3)]
    mc.compile(bump_each, backend="aot_eager")(twins)
    bump_each(xs)
    torch.testing.assert_close(twins, xs)


def zipped(xs, ys):
    total = 0
    for x, y in zip(xs, ys, strict=True):
        total = total + x * y
    return total


def test_zip_strict_matches_python():
    a, b = [torch.randn(3) for _ in range(2)], [torch.randn(3) for _ in range(2)]
    torch.testing.assert_close(mc.compile(zipped, backend="eager")(a, b), zipped(a, b))
    with pytest.raises(ValueError, match="shorter"):
        zipped(a, b[:1])
    with pytest.raises(ValueError, match="shorter"):
        mc.compile(zipped, backend="eager")(a, b[:1])


def annotated(xs):
    from typing import cast

    ys = cast(list[torch.Tensor], xs)  # torch.optim's foreach code casts its lists
    return ys[0] + ys[1]


def test_builtin_type_subscript_is_a_constant():
    xs = [torch.randn(4), torch.randn(4)]
    torch.testing.assert_close(mc.compile(annotated, backend="eager")(xs), annotated(xs))
    assert same_graph_count_as_dynamo(annotated, xs) == 1


def running_max(m, x):
    torch.maximum(m, x, out=m)  # AMSGrad's max of second moments, written into its state
    return m * 2


def foreach_scale(xs, ys):
    torch._foreach_mul_(xs, 0.5)
    torch._foreach_add_(xs, ys, alpha=2.0)


@pytest.mark.parametrize("fn", [running_max, foreach_scale])
def test_out_and_foreach_mutations_are_functionalized(fn):
    args = ((torch.randn(5), torch.randn(5)) if fn is running_max
            else ([torch.randn(3), torch.randn(4)], [torch.randn(3), torch.randn(4)]))
    twins = copy.deepcopy(args)
    torch.testing.assert_close(mc.compile(fn, backend="aot_eager")(*twins), fn(*args))
    torch.testing.assert_close(twins, args)  # the inputs written in place, as eager
    assert mc.metrics.eager_fallbacks == 0


def scaled_updates(p, a, b, lr):
    p.addcdiv_(a, b, value=-lr * 2)  # Adam passes its step size as a 0-d tensor
    p.addcmul_(a, b, value=lr)
    p.add_(a, alpha=-lr)  # SGD given lr=torch.tensor(...)
    return p


def test_number_arguments_given_as_tensors():
    args = [torch.randn(6), torch.randn(6), torch.rand(6) + 1, torch.tensor(0.1)]
    twins = copy.deepcopy(args)
    compiled = mc.compile(scaled_updates, backend="aot_eager")
    torch.testing.assert_close(compiled(*twins), scaled_updates(*args))
    twins[3].fill_(0.3), args[3].fill_(0.3)  # a new value in the same tensor: not baked in
    torch.testing.assert_close(compiled(*twins), scaled_updates(*args))
    assert mc.metrics.eager_fallbacks == 0


FOREACH_OPS = {
    "add_scalar": lambda xs, ys: torch._foreach_add(xs, 2.5),
    "sub_list_alpha": lambda xs, ys: torch._foreach_sub(xs, ys, alpha=0.5),
    "mul_scalar_list": lambda xs, ys: torch._foreach_mul(xs, [2.0, -1.0, 0.5]),
    "div_list": lambda xs, ys: torch._foreach_div(xs, [y.abs() + 1 for y in ys]),
    "sqrt_abs": lambda xs, ys: torch._foreach_sqrt(torch._foreach_abs(xs)),
    "lerp_scalar": lambda xs, ys: torch._foreach_lerp(xs, ys, 0.25),
    "maximum_list": lambda xs, ys: torch._foreach_maximum(xs, ys),
    "addcmul_scalar": lambda xs, ys: torch._foreach_addcmul(xs, ys, ys, value=0.1),
    "addcdiv_scalar_list": lambda xs, ys: torch._foreach_addcdiv(
        xs, ys, [y.abs() + 1 for y in ys], [0.1, 0.2, 0.3]),
    "pow_scalar_and_tensor": lambda xs, ys: torch._foreach_pow(2.0, xs),  # (a scalar first)
    # not lowered item by item (a reduction): an ATen call, still right
    "norm": lambda xs, ys: torch._foreach_norm(xs),
    # in place, then read
    "mul_then_add_in_place": lambda xs, ys: (torch._foreach_mul_(xs, 0.9),
                                             torch._foreach_add_(xs, ys), [x * 1 for x in xs]),
}


@pytest.mark.parametrize("name", sorted(FOREACH_OPS))
def test_foreach_ops_match_eager(name, compiled_graphs):
    """Each foreach overload as its items' pointwise ops (``lowerings/foreach.py``), or as the
    ATen call where its items are not pointwise, against eager: values and the lists it
    writes."""
    fn = FOREACH_OPS[name]
    shapes = [(4, 3), (7,), ()]
    xs, ys = [torch.randn(s) for s in shapes], [torch.randn(s) for s in shapes]
    twins = copy.deepcopy((xs, ys))
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(*twins), fn(xs, ys))
    torch.testing.assert_close(twins, (xs, ys))
    library_call = re.search(r"\b(aten|torch)\._foreach", compiled_graphs[-1].source)
    assert bool(library_call) == (name == "norm")


def test_a_learning_rate_scheduler_stepped_in_the_compiled_step_keeps_float_rates():
    """``sch.step()`` inside the compiled step: the scheduled lr, read as a tensor input,
    reached the scheduler, which took it for a tensor lr (``fill_``) and kept tensors in
    ``get_last_lr()``; the group's lr stopped changing. An optimizer a scheduler drives keeps
    its lr a float constant, and a write of a lifted lr into a group runs natively."""
    def run(step):
        w = torch.nn.Parameter(torch.ones(3))
        opt = torch.optim.SGD([w], lr=1.0)
        sch = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        seen = []
        for _ in range(4):
            step(w, opt, sch)
            seen.append((opt.param_groups[0]["lr"], sch.get_last_lr(), w.detach().clone()))
        return seen

    def step(w, opt, sch):
        opt.zero_grad()
        (w * 2).sum().backward()
        opt.step()
        sch.step()

    for (lr, last, w), (lr_e, last_e, w_e) in zip(run(mc.compile(step)), run(step)):
        assert type(lr) is float and lr == lr_e and last == last_e
        torch.testing.assert_close(w, w_e)

    def halve(opt):  # a hand-written schedule: the group's lr read, then written
        for g in opt.param_groups:
            g["lr"] = g["lr"] * 0.5
        return torch.zeros(1)

    opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(3))], lr=1.0)
    compiled = mc.compile(halve)
    rates = [(compiled(opt), opt.param_groups[0]["lr"])[1] for _ in range(5)]
    assert rates == [0.5, 0.25, 0.125, 0.0625, 0.03125] and all(type(r) is float for r in rates)
