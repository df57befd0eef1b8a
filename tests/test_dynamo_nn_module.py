"""nn.Module capture: forwards are inlined, parameters become get_attr nodes, module state
(training, attributes) is guarded, and every result equals eager."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import minicompile as mc


def compiled_equal(model, *args, graphs=1):
    expected = model(*args)
    mc.metrics.reset()
    got = mc.compile(model, backend="eager")(*args)
    torch.testing.assert_close(got, expected)
    assert mc.metrics.eager_fallbacks == 0, mc.explain(model.forward)(*args).break_reasons
    assert mc.metrics.graphs_compiled == graphs
    return got


class MLP(nn.Module):
    def __init__(self, d=8, h=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, h), nn.GELU(), nn.Dropout(0.1), nn.Linear(h, d))

    def forward(self, x):
        return self.net(x) + x


class Stack(nn.Module):
    def __init__(self, n=3, d=8):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = x + layer(x).relu() * (i + 1)
        return self.norm(x), len(self.layers), self.layers[-1](x)


class Attention(nn.Module):
    def __init__(self, d=16, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        hs = C // self.heads
        q = q.view(B, T, self.heads, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.heads, hs).transpose(1, 2)
        v = v.view(B, T, self.heads, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return self.pool(self.act(self.bn(self.conv(x)))).flatten(1)


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})
        self.scale = 0.5

    def forward(self, idx):
        h = self.emb(idx)
        return {name: head(h) * self.scale for name, head in self.heads.items()}


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


class Child(Base):
    def helper(self, x):
        return x * 2

    def forward(self, x):
        return self.helper(super().forward(x)) + self.lin.weight.sum()


def test_mlp_sequential():
    compiled_equal(MLP().eval(), torch.randn(5, 8))


def test_the_wrapped_module_can_be_replaced():
    """``compiled._orig_mod = other``: calls run ``other`` from then on (the compiled module
    reads its wrapped module from ``_modules`` at every call, and holds no copy of it)."""
    a, b = nn.Linear(4, 4), nn.Linear(4, 4)
    compiled = mc.compile(a, backend="eager")
    x = torch.randn(2, 4)
    torch.testing.assert_close(compiled(x), a(x))
    compiled._orig_mod = b
    torch.testing.assert_close(compiled(x), b(x))


def test_modulelist_loop():
    compiled_equal(Stack(), torch.randn(2, 8))


def test_attention_block():
    compiled_equal(Attention(), torch.randn(2, 8, 16))


def test_conv_bn_relu_eval_and_train():
    m = ConvBlock().eval()
    compiled_equal(m, torch.randn(2, 3, 9, 7))


def test_batchnorm_training_updates_running_stats():
    torch.manual_seed(0)
    a, b = ConvBlock().train(), ConvBlock().train()
    b.load_state_dict(a.state_dict())
    x = torch.randn(4, 3, 6, 6)
    torch.testing.assert_close(mc.compile(a, backend="eager")(x), b(x))
    torch.testing.assert_close(a.bn.running_mean, b.bn.running_mean)
    assert int(a.bn.num_batches_tracked) == int(b.bn.num_batches_tracked) == 1


def test_embedding_moduledict_dict_output():
    compiled_equal(Heads(), torch.randint(0, 10, (3, 5)))


def test_super_and_methods():
    compiled_equal(Child(), torch.randn(3, 4))


class ChannelsFirstLayerNorm(nn.LayerNorm):
    """SqueezeBERT's: the base class's forward called through the class, on (N, C, W)."""

    def forward(self, x):
        return nn.LayerNorm.forward(self, x.permute(0, 2, 1)).permute(0, 2, 1)


def test_a_base_class_forward_called_through_the_class_is_inlined():
    """``nn.LayerNorm.forward(self, x)`` is torch.nn's code reached through the class: traced
    into, as the module's own forward is (one graph), not one graph node taking the module."""
    model = nn.Sequential(nn.Conv1d(4, 8, 1), ChannelsFirstLayerNorm(8), nn.Conv1d(8, 4, 1))
    compiled_equal(model, torch.randn(2, 4, 5))


class OptionalParts(nn.Module):
    """``if self.normalization:`` as CvT writes it: a module is true, a container when not
    empty, None false."""

    def __init__(self):
        super().__init__()
        self.norm, self.missing = nn.LayerNorm(4), None
        self.empty, self.full = nn.ModuleList(), nn.Sequential(nn.ReLU())

    def forward(self, x):
        if self.norm:
            x = self.norm(x)
        if self.empty:
            x = x * 100
        if self.full:
            x = self.full(x) + 1
        if self.missing:
            x = x * 7
        return x


def test_the_truth_of_a_module_is_pythons():
    compiled_equal(OptionalParts(), torch.randn(2, 4))


def test_forward_hooks_are_traced_after_forward():
    """A module's forward hooks (transformers installs them to collect hidden states): each
    is called on the output in the graph, its result replacing it when not None, and what it
    appends to a list outside is appended; adding or removing a hook recompiles."""
    collected = {"outputs": None}

    def collect(module, args, output):
        if collected["outputs"] is not None:
            collected["outputs"].append(output)

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    model[0].register_forward_hook(collect)
    model[2].register_forward_hook(lambda module, args, output: output * 2)
    x = torch.randn(3, 4)
    compiled_equal(model, x)
    compiled_equal(lambda x: model[0](input=x).sum(), x)  # a keyword: not passed to the hook
    collected["outputs"] = []
    mc.compile(model, backend="eager")(x)
    [hidden] = collected["outputs"]
    torch.testing.assert_close(hidden, model[0](x))
    handle = model[1].register_forward_hook(lambda module, args, output: output + 1)
    torch.testing.assert_close(mc.compile(model, backend="eager")(x), model(x))
    handle.remove()
    torch.testing.assert_close(mc.compile(model, backend="eager")(x), model(x))


def test_forward_pre_hooks_are_traced_before_forward():
    """A module's forward pre-hooks (pruning's mask, the old weight norm): each gets the
    positional arguments, its result (a tuple, or one value) replacing them when not None, in
    one graph as in Dynamo (the frame ran eagerly); adding or removing one recompiles."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    model[2].register_forward_pre_hook(lambda module, args: (args[0] + 1,))
    model[0].register_forward_pre_hook(lambda module, args: args[0] * 2)  # one value
    seen = []
    model[1].register_forward_pre_hook(lambda module, args: seen.append(len(args)))
    x = torch.randn(3, 4)
    explained = mc.explain(model)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    compiled_equal(model, x)
    assert seen and set(seen) == {1}
    handle = model[1].register_forward_pre_hook(lambda module, args: (args[0] - 3,))
    torch.testing.assert_close(mc.compile(model, backend="eager")(x), model(x))
    handle.remove()
    torch.testing.assert_close(mc.compile(model, backend="eager")(x), model(x))


GLOBAL_HOOKS = {  # register(hook) -> handle; the hook's result, where it has one, scales by 10
    "forward": lambda calls: nn.modules.module.register_module_forward_hook(
        lambda m, args, out: (calls.append(type(m).__name__), out * 10)[1]),
    "forward pre": lambda calls: nn.modules.module.register_module_forward_pre_hook(
        lambda m, args: (calls.append(type(m).__name__), (args[0] * 10,))[1]),
    "full backward": lambda calls: nn.modules.module.register_module_full_backward_hook(
        lambda m, gin, gout: calls.append(type(m).__name__)),
}


@pytest.mark.parametrize("kind", GLOBAL_HOOKS)
def test_a_global_module_hook_runs_as_in_eager_whenever_it_is_registered(kind):
    """A hook for every module (``register_module_forward_hook``...) registered after a frame
    that calls a module was compiled: the graph had traced the call without it (the hook never
    ran: 7.06 where eager gives 175.8). The global state the guards check now includes whether
    one is registered: the frame compiles again, its module calls run natively, each hook once;
    removed, the compiled graph is right again. ``mc.compile(module)``'s wrapper is no module
    of the user's: the hook runs once, for the module inside (it ran twice)."""
    torch.manual_seed(0)
    lin = nn.Linear(3, 3)
    fn = mc.compile(lambda x: lin(x) + 1, backend="inductor")
    wrapped = mc.compile(lin, backend="inductor")
    x = torch.randn(2, 3, requires_grad=True)
    fn(x), wrapped(x)  # compiled before the hook exists
    for compiled, eager in ((fn, lambda x: lin(x) + 1), (wrapped, lin)):
        calls, got_calls = [], []
        handle = GLOBAL_HOOKS[kind](calls)
        try:
            expected = eager(x)
            expected.sum().backward()
            expected_grad, x.grad = x.grad, None
            n = len(calls)
            got = compiled(x)
            got.sum().backward()
            got_calls = calls[n:]
        finally:
            handle.remove()
        torch.testing.assert_close(got, expected)
        torch.testing.assert_close(x.grad, expected_grad)
        assert got_calls == calls[:n], (got_calls, calls[:n])
        x.grad = None
        torch.testing.assert_close(compiled(x), eager(x))  # the hook removed


@pytest.mark.parametrize("register", [
    lambda m: m.register_full_backward_pre_hook(lambda mod, gout: (gout[0] * 5,)),
    lambda m: m.register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 3,)),
])
def test_a_full_backward_hook_of_a_called_module_acts(register):
    """A full backward pre-hook (``_backward_pre_hooks``) was not among the hooks a module call
    checks: the call was traced without it, and the guard let it be added later (the gradient
    of x 5x too small). Such a call runs natively, hook and all, like one with a full backward
    hook; added after a compile, it compiles the frame again."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    fn = mc.compile(lambda x: net(x).sum(), backend="aot_eager")
    x = torch.randn(3, 4, requires_grad=True)
    fn(x)  # compiled before the hook exists
    register(net[2])
    grads = []
    for f in (lambda x: net(x).sum(), fn):
        x.grad = None
        f(x).backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[1], grads[0])


def test_a_hook_on_the_compiled_wrapper_runs():
    """Hooks put on ``mc.compile(module)``'s wrapper itself run, as on any module."""
    lin = nn.Linear(3, 3)
    wrapped = mc.compile(lin, backend="eager")
    wrapped.register_forward_hook(lambda m, args, out: out * 10)
    x = torch.randn(2, 3)
    torch.testing.assert_close(wrapped(x), lin(x) * 10)


def test_training_flag_is_guarded():
    m = MLP()
    cm = mc.compile(m, backend="eager")
    x = torch.randn(4, 8)
    m.eval()
    torch.testing.assert_close(cm(x), m(x))
    m.train()
    torch.manual_seed(1)
    y = cm(x)
    torch.manual_seed(1)
    torch.testing.assert_close(y, m(x))  # dropout active again: same RNG, same mask
    assert mc.metrics.frames_compiled == 2


def test_parameters_are_get_attr_nodes():
    e = mc.explain(MLP().forward)(torch.randn(2, 8))
    gm = e.graphs[0]
    attrs = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert "L__self___net_0_weight" in attrs
    placeholders = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    assert placeholders == ["L_x_"]


def test_gradients_flow_to_parameters():
    torch.manual_seed(0)
    a = MLP().eval()
    b = MLP().eval()
    b.load_state_dict(a.state_dict())
    x = torch.randn(3, 8)
    mc.compile(a, backend="eager")(x).sum().backward()
    b(x).sum().backward()
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa.grad, pb.grad)


def test_compiled_module_delegates_attributes():
    m = MLP()
    cm = mc.compile(m, backend="eager")
    assert cm.net is m.net and len(list(cm.parameters())) == len(list(m.parameters()))


@pytest.mark.parametrize("act", [nn.ReLU(), nn.SiLU(), nn.Tanh(), nn.Sigmoid(), nn.GELU("tanh"),
                                 nn.LeakyReLU(0.2), nn.Softmax(dim=-1), nn.Identity()])
def test_activations(act):
    compiled_equal(nn.Sequential(nn.Linear(6, 6), act), torch.randn(4, 6))


def test_multihead_attention_inlines_torch_code():
    m = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    q = torch.randn(2, 5, 8)
    expected = m(q, q, q)
    got = mc.compile(m, backend="eager")(q, q, q)
    torch.testing.assert_close(got, expected)
    assert mc.metrics.graphs_compiled == 1 and mc.metrics.eager_fallbacks == 0


def test_a_module_parameters_grad_is_read_from_the_parameter():
    """``lin.weight.grad`` through the module: the parameter is a ``get_attr`` of the graph,
    not a frame input, and its ``.grad`` read as None whatever it held (a TypeError for
    ``grad * 2``, None for every gradient a compiled training step returned). It is the
    parameter's gradient, an input of the graph; None when it has none, guarded."""
    lin = torch.nn.Linear(3, 2)
    read = mc.compile(lambda m: m.weight.grad)
    assert read(lin) is None
    lin.weight.grad = torch.ones(2, 3)
    torch.testing.assert_close(read(lin), lin.weight.grad)  # a new entry: the None was guarded
    torch.testing.assert_close(mc.compile(lambda m: m.weight.grad * 2)(lin), torch.full((2, 3), 2.0))

    def step(model, x):
        model(x).pow(2).sum().backward()
        return [p.grad.clone() for p in model.parameters()]

    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    x = torch.randn(5, 3)
    expected = step(model, x)
    model.zero_grad(set_to_none=True)
    for got, want in zip(mc.compile(step)(model, x), expected):
        torch.testing.assert_close(got, want)
