"""Writes through views at symbolic positions (aot_autograd/functionalize.py): a KV cache's
``cache[:, pos:pos + 1] = x`` with ``pos`` a symbolic int is replayed with ``slice_scatter`` /
``select_scatter`` whose positions are read at run time, as real functionalization does; a
view with no scatter of its own still falls back with its reason. Eager is the oracle: the
results, the caller's cache after every call, and the gradients."""

from __future__ import annotations

import pytest
import torch

import minicompile as mc
from minicompile.aot_autograd.functionalize import VIEW_SCATTERS


def write_slice(cache, x, pos):
    cache[:, pos:pos + 1] = x  # (B, T, D): one token at `pos`
    return cache[:, : pos + 1].sum(1) * 2


def write_select(cache, x, pos):
    cache[:, pos] = x.squeeze(1)
    return cache.mean(1)


def write_nested(cache, x, pos):
    cache[1][pos:pos + 2, 1:3] = x[0, :2, :2]  # select, then two slices
    return cache.amax(1)


def write_detached(cache, x, pos):
    # a view of the whole tensor first (detach, alias: the write through it replaced all of
    # the cache with a copy; before, it fell back: detach had no scatter row)
    cache.detach()[:, pos:pos + 1] = x
    return cache.sum(1)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [write_slice, write_select, write_nested, write_detached])
def test_cache_write_at_a_symbolic_position(fn, backend):
    compiled = mc.compile(fn, backend=backend, dynamic=True)
    expected_cache, cache = torch.zeros(2, 9, 4), torch.zeros(2, 9, 4)
    for pos in (5, 3, 7, 2):  # one graph serves every position (0 and 1 would specialize)
        x = torch.randn(2, 1, 4) if fn is not write_nested else torch.randn(2, 3, 4)
        torch.testing.assert_close(compiled(cache, x, pos), fn(expected_cache, x, pos))
        torch.testing.assert_close(cache, expected_cache)  # the caller's cache, written
    assert mc.metrics.eager_fallbacks == 0
    if fn is not write_select:  # (Dynamo specializes an int index in a tuple: one graph each)
        assert mc.metrics.frames_compiled == 1


def test_symbolic_write_into_an_intermediate_has_eager_gradients():
    def f(x, z, pos):
        y = x * 2
        y[:, pos:pos + 2] = z.sin()
        return (y * y).sum()

    compiled = mc.compile(f, backend="aot_eager", dynamic=True)
    for pos in (1, 4):
        x, z = torch.randn(3, 7, requires_grad=True), torch.randn(3, 2, requires_grad=True)
        rx, rz = x.detach().clone().requires_grad_(), z.detach().clone().requires_grad_()
        out, ref = compiled(x, z, pos), f(rx, rz, pos)
        torch.testing.assert_close(out, ref)
        out.backward(), ref.backward()
        torch.testing.assert_close((x.grad, z.grad), (rx.grad, rz.grad))
    assert mc.metrics.eager_fallbacks == 0


def test_a_view_without_a_scatter_falls_back_with_its_reason(caplog):
    def f(x):
        x.t()[0].add_(1)  # a transpose has no scatter row: symbolic sizes can't be replayed
        return x * 2

    assert torch.ops.aten.permute.default not in VIEW_SCATTERS
    compiled = mc.compile(f, backend="aot_eager", dynamic=True)
    x, ref = torch.randn(3, 5), torch.randn(3, 5)
    ref.copy_(x)
    torch.testing.assert_close(compiled(x), f(ref))
    torch.testing.assert_close(x, ref)
    assert mc.metrics.eager_fallbacks == 1
    assert "a write through aten.permute.default with symbolic sizes" in caplog.text


# ---- an alias taken before a write and read after it: taken again from the new value -------

def mask_then_gather(x, idx):
    """ViT-MAE's random masking: the write goes through a slice of a detach the tracer sees
    (the gather then reads that detach, which must show the zeros)."""
    mask = torch.ones([2, 8])
    mask[:, :3] = 0
    return torch.gather(mask, 1, idx) + x


def transpose_then_write_the_owner(x, idx):
    y = x * 1
    a = y.t()
    y[0] = 1
    return a * 2


def two_writes_two_aliases(x, idx):
    y = x + 0
    a, b, v = y[1], y.t(), y.view(-1)
    a.add_(1)    # through a view: b and v are stale
    c = b * v[:4].sum()
    y.mul_(2)    # the owner itself: a (written before), b and v are stale again
    return c, b + 0, a + 0, v.unsqueeze(0).expand(2, -1) * 1


def alias_of_an_input(x, idx):
    a = x.t()
    x[0].add_(1)
    return a * 2


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [mask_then_gather, transpose_then_write_the_owner,
                                two_writes_two_aliases, alias_of_an_input])
def test_an_alias_read_after_a_write_sees_it(fn, backend):
    # The write's other aliases were refused ("mutates ... while its alias ... is read
    # afterwards") and the whole graph ran eagerly; now each is taken again from the written
    # storage's new value, as real functionalization regenerates the views of a mutated base.
    mc.reset()
    mc.metrics.reset()
    x = torch.randn(2, 8) if fn is mask_then_gather else torch.randn(8, 8)
    idx = torch.randint(0, 8, (2, 8))
    ref = x.clone()
    torch.testing.assert_close(mc.compile(fn, backend=backend)(x, idx), fn(ref, idx))
    torch.testing.assert_close(x, ref)  # an input written through a view
    assert mc.metrics.eager_fallbacks == 0, mc.metrics.fallback_reasons


def test_an_alias_read_after_a_write_has_eager_gradients():
    def f(x):
        y = x.sin()
        b = y.t()
        y[1:3].mul_(2)
        return (b * b.detach().cos()).sum()

    mc.reset()
    mc.metrics.reset()
    x = torch.randn(5, 5, requires_grad=True)
    rx = x.detach().clone().requires_grad_()
    out, ref = mc.compile(f, backend="aot_eager")(x), f(rx)
    out.backward(), ref.backward()
    torch.testing.assert_close((out, x.grad), (ref, rx.grad))
    assert mc.metrics.eager_fallbacks == 0, mc.metrics.fallback_reasons
