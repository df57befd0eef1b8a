"""Recompilation and dynamic shapes (minicompile/dynamo/eval_frame.py, automatic_dynamic.py,
guards.py): reasons, the recompile limit, automatic dynamic, mark_dynamic, dynamic=True/False.
Counts come from ``mc.metrics``; every result is also compared with eager."""

import warnings

import pytest
import torch

import minicompile as mc
import minicompile.config as config
from minicompile.dynamo.eval_frame import cache_entries, recompile_reasons


def pointwise(x):
    return (x * 2).sin() + x.sum(-1, keepdim=True)


def run(cfn, fn, *args):
    torch.testing.assert_close(cfn(*args), fn(*args))


def test_static_then_automatic_dynamic_stops_recompiling():
    cfn = mc.compile(pointwise, backend="eager")
    run(cfn, pointwise, torch.randn(4, 3))
    assert mc.metrics.frames_compiled == 1
    run(cfn, pointwise, torch.randn(8, 3))  # dim 0 changed: recompile, now symbolic
    assert (mc.metrics.frames_compiled, mc.metrics.recompiles) == (2, 1)
    for n in [5, 9, 17, 33, 2]:  # no more compiles for new sizes of dim 0
        run(cfn, pointwise, torch.randn(n, 3))
    assert mc.metrics.frames_compiled == 2
    run(cfn, pointwise, torch.randn(5, 7))  # dim 1 changes: one more compile
    for n in [3, 6, 11]:
        run(cfn, pointwise, torch.randn(n + 2, n))
    assert mc.metrics.frames_compiled == 3


def test_len_of_a_tensor_is_its_symbolic_first_size():
    """``len(x)`` is ``x.size(0)``: once dim 0 is dynamic, new lengths reuse the graph (it was
    read as a constant, a guard on each length: a compile per size, where Dynamo makes two)."""
    def f(x):
        return x * torch.arange(len(x)) / len(x)

    cfn = mc.compile(f, backend="eager")
    for n in range(3, 10):
        run(cfn, f, torch.randn(n))
    assert mc.metrics.frames_compiled == 2
    with pytest.raises(TypeError, match="0-d"):
        mc.compile(lambda x: len(x))(torch.tensor(1.0))


def test_recompile_reason_names_the_failed_guard():
    cfn = mc.compile(pointwise, backend="eager", dynamic=False)
    cfn(torch.randn(4))
    cfn(torch.randn(8))
    cfn(torch.randn(8, dtype=torch.float64))
    reasons = recompile_reasons(cfn)
    assert reasons[0] == "tensor 'L['x']' size mismatch at index 0. expected 4, actual 8"
    assert "tensor 'L['x']' dtype mismatch. expected torch.float32, actual torch.float64" in reasons[1]


def test_recompiles_log_artifact(caplog):
    mc.set_logs("recompiles")
    try:
        cfn = mc.compile(pointwise, backend="eager", dynamic=False)
        with caplog.at_level("INFO", logger="minicompile"):
            import logging
            logging.getLogger("minicompile").propagate = True
            cfn(torch.randn(4))
            cfn(torch.randn(4).requires_grad_())
    finally:
        mc.set_logs()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "Recompiling function pointwise" in text
    assert "requires_grad mismatch. expected False, actual True" in text


def test_recompile_limit_then_eager_with_warning():
    config_limit = config.recompile_limit
    config.recompile_limit = 3
    try:
        cfn = mc.compile(pointwise, backend="eager", dynamic=False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for n in range(2, 9):
                run(cfn, pointwise, torch.randn(n))
        assert mc.metrics.frames_compiled == 3
        assert any("recompile_limit" in str(w.message) for w in caught)
        assert mc.metrics.eager_fallbacks == 1  # the frame runs eagerly now: counted once
    finally:
        config.recompile_limit = config_limit


def test_entries_are_checked_in_order():
    cfn = mc.compile(pointwise, backend="eager", dynamic=False)
    a, b = torch.randn(3), torch.randn(5)
    for x in [a, b, a, b, a]:
        run(cfn, pointwise, x)
    assert mc.metrics.frames_compiled == 2 and len(cache_entries(cfn)) == 2


def test_mark_dynamic_makes_the_first_compile_symbolic():
    x = torch.randn(6, 4)
    mc.mark_dynamic(x, 0)
    cfn = mc.compile(pointwise, backend="eager", dynamic=False)
    run(cfn, pointwise, x)
    src = cache_entries(cfn)[0].guard.source
    assert "L['x'].size()[0] >= 2" in src and "L['x'].shape == " not in src
    for n in [2, 7, 30]:
        run(cfn, pointwise, torch.randn(n, 4))
    assert mc.metrics.frames_compiled == 1


def test_dynamic_true_and_zero_one_specialization():
    cfn = mc.compile(pointwise, backend="eager", dynamic=True)
    for n in [3, 4, 10]:
        run(cfn, pointwise, torch.randn(n, 5))
    assert mc.metrics.frames_compiled == 1
    run(cfn, pointwise, torch.randn(1, 5))  # size 1 is never symbolic: a new entry
    assert mc.metrics.frames_compiled == 2


def test_dynamic_false_never_becomes_symbolic():
    cfn = mc.compile(pointwise, backend="eager", dynamic=False)
    for n in [3, 4, 5, 6]:
        run(cfn, pointwise, torch.randn(n))
    assert mc.metrics.frames_compiled == 4


def test_duck_sizing_guard_recompiles_when_sizes_diverge():
    def f(x, y):
        return x + y

    cfn = mc.compile(f, backend="eager", dynamic=True)
    run(cfn, f, torch.randn(4), torch.randn(4))
    src = cache_entries(cfn)[0].guard.source
    assert "L['y'].size()[0] == L['x'].size()[0]" in src
    run(cfn, f, torch.randn(6), torch.randn(6))
    assert mc.metrics.frames_compiled == 1
    run(cfn, f, torch.randn(6), torch.randn(1))  # broadcasting: a new entry, right result
    assert mc.metrics.frames_compiled == 2


def test_int_argument_becomes_symint_after_it_changes():
    def f(x, n):
        return x * n, torch.ones(n) * 2

    cfn = mc.compile(f, backend="eager")
    x = torch.randn(10)
    run(cfn, f, x, 3)
    run(cfn, f, x, 4)  # changed: recompiled with n as a SymInt graph input
    assert mc.metrics.frames_compiled == 2
    for n in [5, 6, 9]:
        run(cfn, f, x, n)
    assert mc.metrics.frames_compiled == 2
    gm = cache_entries(cfn)[0].result.graphs[0].gm  # (the entry used last comes first)
    assert "Sym(s" in gm.print_readable(print_output=False)


def test_branch_on_symbolic_size_guards_each_side():
    def f(x):
        if x.shape[0] > 5:
            return x * 2
        return x - 1

    cfn = mc.compile(f, backend="eager", dynamic=True)
    for n in [8, 9, 3, 4, 12, 2]:
        run(cfn, f, torch.randn(n))
    assert mc.metrics.frames_compiled == 2


@pytest.mark.parametrize("op", [
    lambda x: x.view(-1, 2).sum(1),
    lambda x: torch.cat([x, x * 2], 0).mean(0),
    lambda x: x[1:, ::2] @ x[1:, ::2].T,
    lambda x: x.reshape(x.shape[0], -1).softmax(-1),
    lambda x: x.t().contiguous() + x.shape[0],
    lambda x: torch.ones(x.shape[0], 3) + x[:, :1],
    lambda x: x.reshape(x.shape[0] // 2, -1),
    lambda x: x.view(x.size(0), -1).mean(1) * x.numel(),
])
def test_symbolic_shape_propagation_through_ops(op):
    cfn = mc.compile(op, backend="eager", dynamic=True)
    for n in [4, 6, 10]:
        run(cfn, op, torch.randn(n, 6))
    assert mc.metrics.frames_compiled == 1
    assert mc.metrics.eager_fallbacks == 0


def test_module_attribute_guards_recompile():
    lin = torch.nn.Linear(3, 3)
    mod = torch.nn.Sequential(lin, torch.nn.Dropout(0.5))
    cmod = mc.compile(mod, backend="eager")
    x = torch.randn(2, 3)
    mod.eval()
    run(cmod, mod, x)
    mod.train()
    torch.manual_seed(0)
    out = cmod(x)
    assert (out == 0).any() or out.shape == (2, 3)  # dropout active again: not the eval entry
    assert mc.metrics.frames_compiled == 2


def test_backend_that_bakes_sizes_is_specialised_per_shape():
    def f(x, y):
        return (x * 2 + y).relu().sum(0)

    cfn = mc.compile(f, backend="aot_eager", dynamic=True)
    for n in [4, 7, 9, 4]:
        run(cfn, f, torch.randn(n, 3), torch.randn(3))
    assert mc.metrics.frames_compiled == 1


def test_size_that_cannot_be_symbolic_is_compiled_static_not_eager():
    """A size used as a list index can't trace as a symbol: after the size changes, the frame is
    compiled again for the new size (static), instead of falling back to eager for good."""
    table = list(range(0, 100, 10))

    def f(x, table):
        return x * table[x.shape[0]]

    cfn = mc.compile(f, backend="eager")
    for n in [2, 3, 4, 2]:
        x = torch.ones(n)
        torch.testing.assert_close(cfn(x, table), f(x, table))
    assert mc.metrics.eager_fallbacks == 0
    assert mc.metrics.frames_compiled == 3  # one per size; size 2 hits its entry again


def test_the_entry_used_last_is_checked_first():
    """A frame whose calls all match its second entry checks that one first (as real Dynamo's
    lookup moves a hit to the front): no guard fails on the calls after the first hit."""
    def f(x):
        return x * 2

    cfn = mc.compile(f, backend="eager")
    run(cfn, f, torch.randn(4))
    run(cfn, f, torch.randn(4, dtype=torch.float64))  # a second entry
    run(cfn, f, torch.randn(4, dtype=torch.float64))  # first entry fails, second hits
    failures = mc.metrics.guard_failures
    for _ in range(3):
        run(cfn, f, torch.randn(4, dtype=torch.float64))
    assert mc.metrics.guard_failures == failures and mc.metrics.frames_compiled == 2
    run(cfn, f, torch.randn(4))  # the float32 entry is still there
    assert mc.metrics.frames_compiled == 2


# ---- decoding loops: a KV cache, its position, a sliding window ------------------------------
class SlidingCache:
    """A KV cache as transformers' ``DynamicSlidingWindowLayer`` keeps one: the tensors, and the
    number of tokens seen so far as a plain int attribute, updated at every step."""

    def __init__(self):
        self.keys, self.cumulative_length = None, 0

    def update(self, k):
        self.keys = k if self.keys is None else torch.cat([self.keys, k], dim=-2)
        self.cumulative_length += k.shape[-2]
        return self.keys


def cached_attention(q, k, cache):
    keys = cache.update(k)
    offset = max(cache.cumulative_length - 4 + 1, 0)  # the window's first position
    return (q @ keys.transpose(-1, -2)).softmax(-1) + offset


def decode(fn, steps=8):
    torch.manual_seed(0)
    cache, outs = SlidingCache(), []
    outs.append(fn(torch.randn(2, 5, 8), torch.randn(2, 5, 8), cache))  # the prompt
    for _ in range(steps):
        outs.append(fn(torch.randn(2, 1, 8), torch.randn(2, 1, 8), cache))
    return outs, cache.cumulative_length


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_an_int_attribute_of_a_cache_becomes_symbolic_once_it_changes(backend):
    """The cache's ``cumulative_length`` changes at every decoding step. Read from an argument's
    attribute it was specialized forever (a compile per step up to the recompile limit, then
    eager); as real Dynamo it is now a SymInt once it has changed, ``max(n - 3, 0)`` stays
    ``sym_max`` (no guard on which is larger, no break), and the new length stored back on the
    cache is a graph output (returning it as a constant pinned the symbol again). Three
    compiles as real torch.compile: the prompt, the first step, every later step."""
    want, want_length = decode(cached_attention)
    got, length = decode(mc.compile(cached_attention, backend=backend))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    assert length == want_length
    assert (mc.metrics.frames_compiled, mc.metrics.graph_breaks) == (3, 0)
    assert mc.metrics.eager_fallbacks == 0, mc.metrics.fallback_reasons


def test_an_int_argument_counting_from_zero_is_symbolic_from_two():
    """A decoding position 0, 1, 2, ...: 0 and 1 stay specialized (symbols are >= 2), but the
    change at 1 is remembered, so 2 already compiles a symbolic entry. Before: the change was
    only recorded from 2 on, one compile more (real Dynamo, which does not specialize 0 and 1
    of an int argument, compiles twice)."""
    def step(x, cache, pos):
        cache[:, pos:pos + 1] = x
        return cache[:, :pos + 1].sum(1)

    cache, want_cache = torch.zeros(2, 10), torch.zeros(2, 10)
    cfn = mc.compile(step, backend="eager")
    for pos in range(8):
        x = torch.randn(2, 1)
        torch.testing.assert_close(cfn(x, cache, pos), step(x, want_cache, pos))
    torch.testing.assert_close(cache, want_cache)
    assert mc.metrics.frames_compiled == 3


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_a_changing_stride_becomes_symbolic_once(backend):
    """A sliding window's keys ``full[:, -3:]`` keep their sizes while their outer stride
    follows the full cache (48, 56, 64, ...): it was guarded as an int, a compile per step up to
    the recompile limit (Mistral's sliding-window cache). As real Dynamo's automatic dynamic
    strides, a stride that changed gets a symbol of its own (read with ``sym_stride`` where
    a kernel needs it): two compiles."""
    def attend(q, keys):
        return (q @ keys.transpose(-1, -2)).softmax(-1) * keys.shape[-2]

    cfn = mc.compile(attend, backend=backend)
    full = torch.randn(2, 5, 8)
    for _ in range(6):
        full = torch.cat([full, torch.randn(2, 1, 8)], 1)
        run(cfn, attend, torch.randn(2, 1, 8), full[:, -3:])
    assert mc.metrics.frames_compiled == 2
    assert mc.metrics.eager_fallbacks == 0, mc.metrics.fallback_reasons


def test_sizes_made_symbolic_by_a_change_are_not_duck_sized():
    """Two sizes that both changed and happened to be equal in the compile that made them
    symbolic (t5's cache length and batch size, both 2) got one shared symbol and a guard that
    they stay equal: the next step broke it and compiled again. As real Dynamo's automatic
    dynamic (``DimDynamic.DYNAMIC``), each gets its own symbol; ``dynamic=True`` still duck-sizes
    (test_duck_sizing_guard_recompiles_when_sizes_diverge)."""
    def f(keys, ids):
        return keys.sum(0) * 2, ids.sum(0) + 1

    cfn = mc.compile(f, backend="eager")
    for length, batch in [(3, 5), (4, 4), (5, 6), (7, 3)]:
        run(cfn, f, torch.randn(length, 2), torch.randn(batch, 2))
    assert mc.metrics.frames_compiled == 2
