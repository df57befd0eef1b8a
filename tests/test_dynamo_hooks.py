"""Tensor hooks registered inside a compiled frame: on a tensor from outside it, a side effect
replayed after the graph (minicompile/dynamo/side_effects.py); on a tensor the graph makes, a
``register_hook_op`` node with the hook's traced body (minicompile/dynamo/variables/hooks.py).
Each test is a case where a wrong decision gives a wrong gradient, or more graphs than real
Dynamo's one; tests/dynamo_port/hooks_corpus.py holds PyTorch's own cases."""

from __future__ import annotations

import functools

import pytest
import torch

import minicompile as mc

BACKENDS = ["eager", "aot_eager"]


def _run(fn, make_args, backend=None):
    """(result, gradients of the arguments) of ``fn``, compiled with ``backend`` if given."""
    torch.manual_seed(0)
    args = make_args()
    if backend is not None:
        mc.reset()
        fn = mc.compile(fn, backend=backend)
    out = fn(*args)
    loss = out if isinstance(out, torch.Tensor) else out[0]
    loss.backward(torch.linspace(1.0, 2.0, loss.numel()).reshape(loss.shape))
    return out, [a.grad for a in args if isinstance(a, torch.Tensor)]


def _check(fn, make_args, graphs: int = 1):
    expected = _run(fn, make_args)
    for backend in BACKENDS:
        torch.testing.assert_close(_run(fn, make_args, backend), expected)
    mc.reset()
    explain = mc.explain(fn)(*make_args())
    assert (explain.graph_count, explain.graph_break_count) == (graphs, graphs - 1), \
        [str(r) for r in explain.break_reasons]


def _leaf():
    return (torch.randn(4, requires_grad=True),)


# -- on a tensor from outside the frame: replayed after the graph ------------------------------

def _input_hook_removed_then_another(x):
    handle = x.register_hook(lambda g: g * 2)
    y = x.sin()
    handle.remove()
    x.register_hook(lambda g: g + 3)
    return y * 5


def test_input_hook_removed_in_the_frame_is_never_registered():
    """``handle.remove()`` was a call to the handle's weakref: a graph break. The removal drops
    the pending registration; the other hook is registered after the graph."""
    _check(_input_hook_removed_then_another, _leaf)


class _Holder:
    handle = None


def test_the_handle_stored_away_is_the_real_one():
    """The handle the frame stores on an object is the one the replayed registration returns:
    removing it after the call removes the hook."""
    def f(x, holder):
        holder.handle = x.register_hook(lambda g: g * 7)
        return x.cos()

    mc.reset()
    x, holder = torch.randn(3, requires_grad=True), _Holder()
    out = mc.compile(f, backend="eager")(x, holder)
    assert isinstance(holder.handle, torch.utils.hooks.RemovableHandle)
    holder.handle.remove()
    out.sum().backward()
    torch.testing.assert_close(x.grad, -x.detach().sin())


def _input_hook_closing_over_intermediate(x):
    def run():
        y = x.sin()
        x.register_hook(lambda g: g + y)  # y: a graph output the rebuilt lambda holds
        return y.sin()

    return run()


def test_input_hook_closing_over_a_tensor_the_graph_makes():
    """The hook is rebuilt after the graph, its cell holding the graph's output (was: the
    frame ran eagerly, a break with a closure over the frame's variables)."""
    _check(_input_hook_closing_over_intermediate, _leaf)


# -- on a tensor the graph makes: a node of the graph ------------------------------------------

def _hooks_in_order(x):
    y = x * 2
    z = y + 1  # y used before the hooks: its whole gradient must still pass through them
    y.register_hook(lambda g: g * 2)
    y.register_hook(lambda g: g + 1)  # not commutative with the first: order matters
    return (z * y).sin()


def test_intermediate_hooks_run_in_order_on_the_whole_gradient():
    _check(_hooks_in_order, _leaf)


def _hook_reads_frame_tensors(x):
    y = x.sin()
    z = x.cos()
    z.register_hook(lambda g: g * y)  # y lifted: an input of the hook's body graph
    return z * 3


def test_intermediate_hook_reading_a_frame_tensor():
    _check(_hook_reads_frame_tensors, _leaf)


def _hook_reads_its_own_tensor(x):
    y = x.sin()
    y.register_hook(lambda g: g * g.shape[0] + y)
    return y * 2


def test_intermediate_hook_reading_its_own_tensor_at_several_sizes():
    """The hook's closure holds the tensor it is registered on, whose graph node the
    registration replaces: not a change of the hook's values (the frame ran eagerly)."""
    _check(_hook_reads_its_own_tensor, _leaf)
    for backend in BACKENDS:  # new sizes: compiled again, with a symbolic size (g.shape[0])
        mc.reset()
        compiled = mc.compile(_hook_reads_its_own_tensor, backend=backend)
        for n in (3, 4, 6):
            x = torch.randn(n, requires_grad=True)
            compiled(x).sum().backward()
            torch.testing.assert_close(x.grad, x.detach().cos() * (2 * n + x.detach().sin()))


def _hook_removed(x):
    y = x * 2
    handle = y.register_hook(lambda g: g * 100)
    w = y.sin()
    handle.remove()
    return w


def test_intermediate_hook_removed_in_the_frame_leaves_the_graph():
    _check(_hook_removed, _leaf)


def _record(calls, g):
    calls.append(1)
    return g * 2


def _hook_appends_to_a_frame_list(x):
    calls = []
    y = x * 2
    y.register_hook(functools.partial(_record, calls))  # at backward, not before the return
    return y.sin(), len(calls)


def test_intermediate_hook_changing_frame_state_breaks_the_graph():
    """Traced into the graph, the append happened once, while tracing: the frame returned
    ``len(calls) == 1`` where eager returns 0. The hook changes state: the call breaks."""
    _check(_hook_appends_to_a_frame_list, _leaf, graphs=2)
    mc.reset()
    reasons = [str(r) for r in mc.explain(_hook_appends_to_a_frame_list)(*_leaf()).break_reasons]
    assert "changes state" in reasons[0]


def _untraceable_hook_after_use(x):
    y = x * 2
    z = y * 3
    y.register_hook(lambda g: print(end="") or g * 2)  # print: the body can't be traced
    return z.sin()


def test_untraceable_hook_on_a_tensor_used_already_runs_the_frame_eagerly():
    """Registered natively after a graph that used ``y`` already, the hook would miss the
    gradient of ``z``: the frame runs eagerly, as before hooks were traced."""
    _check(_untraceable_hook_after_use, _leaf, graphs=0)


def _hook_on_a_tensor_used_before_and_after(x):
    y = x * 2
    z = y + 1
    y.register_hook(lambda g: g * 2)
    return (z + y * 3).sum()


def test_an_internal_error_at_the_hook_runs_the_frame_eagerly(monkeypatch):
    """A tracer that fails inside minicompile at the registration (here a MemoryError, as a
    walk that never ended once raised) must not leave a graph break behind it: the graph before
    it has used ``y``, and the hook, registered natively after it, saw only the gradient of
    ``y * 3`` (x's gradient 14 where eager gives 16)."""
    from minicompile.dynamo.variables import tensor

    def out_of_memory(*args, **kwargs):
        raise MemoryError
    monkeypatch.setattr(tensor.TensorVariable, "method_register_hook", out_of_memory)
    _check(_hook_on_a_tensor_used_before_and_after, _leaf, graphs=0)
    reasons = [str(r) for r in mc.explain(_hook_on_a_tensor_used_before_and_after)(
        *_leaf()).break_reasons]
    assert "internal error in CALL: MemoryError" in reasons[0]


def test_the_state_walk_enters_each_container_once():
    """Whether a hook changed what the frame can reach is a walk over trackers and the
    containers that hold them. A container reached by many paths was walked again each time
    (and one in a cycle forever): a process grew by gigabytes in a minute."""
    from minicompile.dynamo.variables.hooks import _tracker_state

    walks = []

    class Walked(list):
        def __iter__(self):
            walks.append(self)
            return super().__iter__()

    shared = Walked([1, 2, 3])
    cycle = Walked()
    cycle.append(cycle)
    _tracker_state([shared] * 100 + [[shared, cycle]] * 100)
    assert walks.count(shared) == 1 and walks.count(cycle) == 1


# -- a graph input the graph does not use ------------------------------------------------------

_SEEN: list = []


def _clears_then_reads_a_global_list(x):
    _SEEN.clear()
    y = x * 2
    _SEEN.append(y)
    y.register_hook(lambda g: g + 1)
    return (_SEEN[0] * 3).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_unused_graph_input_is_dropped(backend):
    """``_SEEN[0]`` of the previous call was read (as a graph input) before the frame cleared
    the list. Passed to the compiled autograd Function, the stale tensor took the next backward
    into its own graph, and called its hook with no gradient (TypeError)."""
    _run(_clears_then_reads_a_global_list, _leaf)  # leaves a hooked tensor in _SEEN
    expected = _run(_clears_then_reads_a_global_list, _leaf)
    torch.testing.assert_close(_run(_clears_then_reads_a_global_list, _leaf, backend), expected)
    mc.reset()
    graphs = mc.explain(_clears_then_reads_a_global_list)(*_leaf()).graphs
    assert [n.op for n in graphs[0].graph.nodes].count("placeholder") == 1


def _post_accumulate_hook(x, w):
    w.register_post_accumulate_grad_hook(lambda p: [p.grad.mul_(10)] and None)
    x.register_hook(hook=lambda g: g * 3)  # by keyword
    return x * w


def test_post_accumulate_grad_hook_on_an_input():
    """Registered on the caller's leaf after the graph, as ``register_hook`` is."""
    _check(_post_accumulate_hook, lambda: (torch.randn(3, requires_grad=True),
                                           torch.randn(3, requires_grad=True)))


def _closure_changed_after_registering(x):
    k = 2
    y = x * 1
    y.register_hook(lambda g: g * k)
    k = 3  # eager's hook multiplies by 3, at backward
    return y.sin()


_SCALE = 2


def _global_changed_after_registering(x):
    global _SCALE
    y = x * 1
    y.register_hook(lambda g: g * _SCALE)
    _SCALE = 3
    out = y.sin()
    _SCALE = 5  # eager's hook multiplies by 5
    return out


@pytest.mark.parametrize("fn", [_closure_changed_after_registering,
                                _global_changed_after_registering])
def test_hook_reading_what_the_frame_changes_later_runs_the_frame_eagerly(fn):
    """The traced body had the value at registration (a gradient 2x where eager's is 3x, as
    real Dynamo gives): the frame changes it afterwards, so it runs eagerly."""
    global _SCALE
    _SCALE = 2
    _check(fn, _leaf, graphs=0)
