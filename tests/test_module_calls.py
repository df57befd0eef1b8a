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
