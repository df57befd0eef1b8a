"""Modules called by a frame that runs eagerly get their forward compiled as their own frame
(dynamo/module_calls.py), as real Dynamo's frame hook compiles them: eager-equal results, a
graph per forward, hooks still run once, and ``nn.Module.__call__`` is torch's own again once
the frame is done (also when it raises)."""

from __future__ import annotations

import threading

import pytest
import torch
import torch._dynamo
from torch import nn

import minicompile as mc
from minicompile.dynamo.eval_frame import CACHE


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2


class LoopNet(nn.Module):
    """A break inside a loop: this forward runs eagerly, its blocks' forwards are compiled."""

    def __init__(self, fail_at: int | None = None):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(3)])
        self.fail_at = fail_at

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = block(x)
            print("step", i)  # the break inside the loop
            if i == self.fail_at:
                raise ValueError("stop")
        return x


def test_blocks_called_from_an_eager_frame_are_compiled(capsys):
    net, x = LoopNet(), torch.randn(2, 4)
    torch.testing.assert_close(mc.compile(net)(x), net(x))
    assert mc.metrics.graphs_compiled >= 1 and mc.metrics.eager_fallbacks == 0
    assert torch.nn.Module.__call__ is nn.Module._wrapped_call_impl
    ours = mc.explain(net)(x)
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(net)(x)
    capsys.readouterr()
    assert ours.graph_count >= theirs.graph_count >= 1  # Block.forward compiled on both sides
    assert all("relu" in str(g.code) for g in ours.graphs)


def test_hooks_run_once_and_call_is_restored_after_an_error(capsys):
    net, x = LoopNet(fail_at=1), torch.randn(2, 4)
    calls = []
    net.blocks[0].register_forward_hook(lambda mod, args, out: calls.append(out.shape))
    with pytest.raises(ValueError, match="stop"):
        net(x)
    eager_calls, calls[:] = list(calls), []
    with pytest.raises(ValueError, match="stop"):
        mc.compile(net)(x)
    assert calls == eager_calls == [torch.Size([2, 4])]
    assert torch.nn.Module.__call__ is nn.Module._wrapped_call_impl


def test_other_threads_call_modules_as_usual(capsys):
    """While one thread runs an eager frame, another thread's module calls are not compiled."""
    block, x = Block(), torch.randn(2, 4)
    entered, release, seen = threading.Event(), threading.Event(), []

    class Waiting(nn.Module):
        def forward(self, x):
            for _ in range(1):
                print("break in loop")
                entered.set()
                release.wait(timeout=30)
            return block(x)

    worker = threading.Thread(target=lambda: seen.append(mc.compile(Waiting())(x)))
    worker.start()
    entered.wait(timeout=30)
    mc.metrics.reset()
    torch.testing.assert_close(block(x), Block.forward(block, x))  # this thread: plain call
    assert mc.metrics.frames_compiled == 0
    release.set()
    worker.join()
    torch.testing.assert_close(seen[0], Block.forward(block, x))


def test_a_compiled_module_called_from_an_eager_frame_keeps_its_own_cache(capsys):
    inner = mc.compile(Block(), backend="eager")

    def outer(x):
        for _ in range(2):
            print("break in loop")
            x = inner(x)
        return x

    x = torch.randn(2, 4)
    expected = inner._orig_mod(inner._orig_mod(x))
    torch.testing.assert_close(mc.compile(outer, backend="eager")(x), expected)
    assert mc.metrics.eager_fallbacks == 0 and mc.metrics.graphs_compiled >= 1
    assert CACHE.compiled_forward(inner, backend=None) is None  # not minicompile's own forward
    assert CACHE.compiled_forward(inner._orig_mod, backend=None) is not None


class ScaledBlock(Block):
    def __init__(self, scale: float = 2.0, width: int = 4):
        super().__init__()
        self.lin, self.scale = nn.Linear(width, width), scale
        self.register_buffer("shift", torch.randn(width))

    def forward(self, x):
        return torch.relu(self.lin(x)) * self.scale + self.shift


class DropNet(nn.Module):
    """LayerDrop, as BART and OPT write it in training: a random draw decides per layer, so the
    loop's frame runs eagerly and calls each block in turn."""

    def __init__(self, blocks: list[nn.Module]):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        for block in self.blocks:
            if torch.rand([]) < 0.0:  # data-dependent: never taken, but a break
                continue
            x = block(x)
        return x


def test_blocks_of_one_class_share_one_entry_their_parameters_graph_inputs(capsys):
    """Each block is the same ``forward`` on another module: traced unspecialized (guarded by
    type, parameters and buffers as graph inputs), one entry serves all six, as one graph does
    in real Dynamo; forward and gradients equal eager's."""
    mc.reset()  # (other tests compile ScaledBlock.forward too)
    torch.manual_seed(0)
    net, x = DropNet([ScaledBlock() for _ in range(6)]), torch.randn(3, 4, requires_grad=True)
    expected = net(x)
    expected.sum().backward()
    grads = [p.grad.clone() for p in net.parameters()] + [x.grad.clone()]
    net.zero_grad(set_to_none=True)
    x.grad = None
    mc.metrics.reset()
    out = mc.compile(net)(x)
    out.sum().backward()
    torch.testing.assert_close(out, expected)
    for got, want in zip([p.grad for p in net.parameters()] + [x.grad], grads):
        torch.testing.assert_close(got, want)
    assert (mc.metrics.graphs_compiled, mc.metrics.recompiles) == (1, 0)
    entry, = CACHE.entries[ScaledBlock.forward.__code__]
    guards = entry.guard.source
    assert "type(L['self']) is" in guards and "id(L['self'])" not in guards, guards
    ours = mc.explain(net)(x)
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(net)(x)
    capsys.readouterr()
    assert ours.graph_count == theirs.graph_count == 1
    assert not [n for n in ours.graphs[0].graph.nodes if n.op == "get_attr"]  # inputs, all


def test_an_unspecialized_block_still_recompiles_on_what_it_guards():
    """Guarded by type and by what ``forward`` reads: a block with another scale (a float
    read from the module), other shapes, or another class compiles its own entry."""
    mc.reset()
    torch.manual_seed(0)
    blocks = [ScaledBlock(), ScaledBlock(), ScaledBlock(scale=3.0), ScaledBlock(width=4),
              Block()]
    net, x = DropNet(blocks), torch.randn(3, 4, requires_grad=True)  # (as each block's output)
    mc.metrics.reset()
    torch.testing.assert_close(mc.compile(net)(x), net(x))
    assert mc.metrics.graphs_compiled == 3  # scale 2.0, scale 3.0, Block
    wide = DropNet([ScaledBlock(width=6)])
    y = torch.randn(3, 6, requires_grad=True)
    torch.testing.assert_close(mc.compile(wide)(y), wide(y))
    assert mc.metrics.graphs_compiled == 4  # other shapes: a size mismatch, not a wrong read


class ChattyBlock(ScaledBlock):
    def forward(self, x):
        x = self.lin(x)
        print("between")  # a break inside the block: the rest is a resume function
        return torch.relu(x) * self.scale + self.shift


def test_a_break_inside_an_unspecialized_block_resumes_unspecialized(capsys):
    """The resume function after a break in such a block gets the module as an argument: it
    is traced unspecialized too, so the four blocks share two entries, not eight."""
    mc.reset()
    torch.manual_seed(0)
    net, x = DropNet([ChattyBlock() for _ in range(4)]), torch.randn(3, 4, requires_grad=True)
    mc.metrics.reset()
    torch.testing.assert_close(mc.compile(net)(x), net(x))
    capsys.readouterr()
    assert (mc.metrics.graphs_compiled, mc.metrics.recompiles) == (2, 0)


class LastBlockSkips(ScaledBlock):
    """Compares itself by identity: each module's trace holds for that module only."""

    def forward(self, x):
        if self is LAST[0]:
            return x
        return super().forward(x)


LAST: list = []


def test_an_unspecialized_block_compared_by_identity_is_guarded_by_identity():
    mc.reset()
    torch.manual_seed(0)
    blocks = [LastBlockSkips() for _ in range(3)]
    LAST[:] = [blocks[-1]]
    net, x = DropNet(blocks), torch.randn(3, 4, requires_grad=True)
    torch.testing.assert_close(mc.compile(net)(x), net(x))  # the last block returns its input
    guards = CACHE.entries[LastBlockSkips.forward.__code__][0].guard.source
    assert "id(L['self'])" in guards


class NormedBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.bn = nn.Linear(4, 4), nn.BatchNorm1d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.lin(x)))


def test_unspecialized_blocks_update_their_own_buffers():
    """Batch norm's running statistics are buffers the graph mutates: as graph inputs, each
    block's own are updated, step after step, as in eager."""
    import copy

    mc.reset()
    torch.manual_seed(0)
    net = DropNet([NormedBlock() for _ in range(3)])
    eager, x = copy.deepcopy(net), torch.randn(8, 4, requires_grad=True)
    compiled = mc.compile(net)
    for _ in range(2):
        torch.testing.assert_close(compiled(x), eager(x))
    for ours, theirs in zip(net.buffers(), eager.buffers()):
        torch.testing.assert_close(ours, theirs)
    assert mc.metrics.graphs_compiled == 1
