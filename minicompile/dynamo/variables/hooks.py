"""Tensor hooks registered while tracing: the handle ``register_hook`` returns (mirrors
RemovableHandleVariable in torch/_dynamo/variables/user_defined.py), and a hook on a tensor the
graph makes, traced into the graph (the intermediate-tensor case of torch/_dynamo/variables/
tensor.py's ``_method_register_hook``, with ``speculate_subgraph`` from
torch/_dynamo/variables/higher_order_ops.py and torch/_higher_order_ops/register_hook.py).
A hook on a tensor from outside the frame is a side effect instead (side_effects.py).

``y = x * 2; y.register_hook(lambda g: g + 1)``: ``y`` exists only inside the compiled graph,
so the hook can't be registered after it, as one on an input is (side_effects.py). Instead the
hook's body is traced on its own, into a small graph of its gradient, and the frame's graph gets
one node that registers that body on ``y`` when the graph runs::

    mul = x * 2
    hook_body_0 = self.hook_body_0                           # forward(grad, sin): grad + sin
    register_hook_op = register_hook_op(mul, hook_body_0, sin)
    sum_1 = register_hook_op.sum()

Tensors of the frame the hook reads (``lambda g: g + y.sin()``'s ``sin``) are lifted: inputs of
the body, arguments of the node. At run time the node registers the hook on the real tensor; AOT
autograd traces the node the same way, so the hook's ops land in the backward graph.

A hook the body graph can't hold breaks the graph, with its reason: one that changes state the
program can see (appends to a list, counts its calls) would change it once, while tracing,
instead of at every backward, and one that breaks itself (prints, reads data).

The body holds what the hook's variables held at registration; eager's hook reads them when the
backward runs. Where the frame changes them in between (``k = 3`` after the registration, a
global it read assigned, code after a graph break), the frame runs eagerly. A change made after
the frame returns, before the backward, is not seen (nor is it by real Dynamo's traced hooks).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable
from .functions import ClosureCell
from .hashable import HashableTracker

TRACKERS = (VariableTracker, ClosureCell, HashableTracker)  # what holds the trace's state


class RemovableHandleVariable(VariableTracker):
    """What ``tensor.register_hook(fn)`` returns while tracing (mirrors the class of the same
    name in torch/_dynamo/variables/user_defined.py). For a hook on a tensor from outside the
    frame, ``idx`` is its pending registration (side_effects.py): ``remove()`` drops it, and
    the transformed code names the real handle its replayed registration returns. For a hook
    traced into the graph, ``hooked`` is the tensor and its ``register_hook_op`` node, which
    ``remove()`` takes out of the graph again."""

    REMOVED = -1

    def __init__(self, idx: int | None = None,
                 hooked: tuple[VariableTracker, torch.fx.Node] | None = None):
        super().__init__()
        self.idx, self.hooked = idx, hooked

    def python_type(self) -> type:
        return torch.utils.hooks.RemovableHandle

    def identity(self) -> Any:
        return self

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name != "remove" or args or kwargs:
            unimplemented(f"RemovableHandle.{name} of a hook registered in the frame")
        if self.idx == self.REMOVED:  # a second remove() does nothing, as in eager
            return ConstantVariable(None)
        if self.hooked is not None:
            _remove_from_graph(*self.hooked)  # (the graph is still being traced: a break
            # would have ended it, rebuilding this handle, which unimplemented() refuses)
        else:
            tx.output.side_effects.remove_hook(self.idx)
        self.idx = self.REMOVED
        return ConstantVariable(None)

    def reconstruct(self, codegen) -> str:
        """A removed handle is a handle of nothing (a pending one is bound by codegen_hooks)."""
        if self.idx != self.REMOVED:
            unimplemented("the handle of a hook traced into the graph (on a tensor the graph "
                          "makes) outlives the frame: the graph registers the hook, and keeps "
                          "no handle")
        return f"{codegen.install_global('RemovableHandle', torch.utils.hooks.RemovableHandle)}({{}})"


def register_hook_op(tensor: torch.Tensor, hook_body: torch.fx.GraphModule,
                     *freevars: Any) -> torch.Tensor:
    """The node's target (torch/_higher_order_ops/register_hook.py's ``RegisterHookOp``):
    registers the traced body as a hook on the tensor, and returns the tensor."""
    tensor.register_hook(lambda grad: hook_body(grad, *freevars))
    return tensor


register_hook_op.side_effects = True  # no new value, an effect: dead-code elimination keeps it


def register_hook_in_graph(tx, tensor: VariableTracker, hook: VariableTracker) -> VariableTracker:
    """``tensor.register_hook(hook)`` on a tensor the graph makes: a ``register_hook_op`` node,
    which later uses of ``tensor`` follow (it returns its input: real Dynamo's ``hooked_proxy``)."""
    output = tx.output
    body, freevars, reads_outside = speculate_hook(tx, tensor, hook)
    proxy = output.create_proxy("call_function", register_hook_op,
                                (tensor.as_proxy(), output.install_subgraph("hook_body", body),
                                 *freevars), {})
    proxy.node.meta["example_value"] = tensor.as_fake()
    tensor.proxy = proxy
    output.side_effects.hook_checks.append(functools.partial(
        _unchanged_since_traced, output, hook, _tracker_state([hook]),
        len(output.side_effects.mutations), reads_outside=reads_outside))
    return RemovableHandleVariable(hooked=(tensor, proxy.node))


def _remove_from_graph(tensor: VariableTracker, node: torch.fx.Node) -> None:
    """``handle.remove()`` in the frame: as if the hook had never been registered."""
    original = node.args[0]
    node.replace_all_uses_with(original)
    node.graph.erase_node(node)
    if tensor.proxy.node is node:
        tensor.proxy = torch.fx.Proxy(original, tensor.proxy.tracer)


def speculate_hook(tx, tensor: VariableTracker, hook: VariableTracker
                   ) -> tuple[torch.fx.GraphModule, list[torch.fx.Proxy], bool]:
    """Trace ``hook(grad)`` into a graph of its own: (the body, the frame's values it lifted,
    whether it read state from outside the frame: a global, an input's attribute).
    The state reachable from the frame is compared before and after: a hook that changed it
    has an effect the body graph would not repeat at every backward."""
    from .builder import wrap_fx_proxy

    output = tx.output
    mutations, before = len(output.side_effects.mutations), _tracker_state(_frame_roots(tx, hook))
    guards = len(output.guards)
    with output.fake_mode:
        fake_grad = torch.empty_like(tensor.as_fake())  # (requires no grad, as a hook's grad)
    with output.subgraph() as tracer:
        grad = wrap_fx_proxy(tx, tracer.placeholder("grad", fake_grad), fake_grad)
        result = hook.call_function(tx, [grad], {})
    changed = len(output.side_effects.mutations) > mutations or \
        _changed(before, _tracker_state(_frame_roots(tx, hook)))
    if changed:
        unimplemented(f"the hook {hook} changes state the program can see, once while tracing; "
                      f"eager changes it at every backward: register_hook runs natively")
    if result.is_python_constant() and result.as_python_constant() is None:
        out = None
    elif issubclass(result.python_type(), torch.Tensor):
        out = tracer.create_arg(result.as_proxy())
    else:
        unimplemented(f"the hook {hook} returns {result}, not a tensor or None")
    if tracer.writes():  # into a tensor of the frame, or its gradient: not replayed as a body
        unimplemented(f"the hook {hook} writes into a tensor in place")
    tracer.graph.output(out)
    body = torch.fx.GraphModule(torch.nn.Module(), tracer.graph, class_name="hook_body")
    return body, [torch.fx.Proxy(n, output.tracer) for n in tracer.lifted], \
        len(output.guards) > guards


def _unchanged_since_traced(output, hook: VariableTracker, state: dict, mutations: int,
                            at_break: bool, reads_outside: bool) -> None:
    """Eager's hook reads its variables when the backward runs; the traced body has what they
    held when it was registered. Refused when the frame changed them in between (``k = 3``
    after ``y.register_hook(lambda g: g * k)``): a variable of the hook's closure, or, for a
    hook that read outside state (a global, an object's attribute), any mutation recorded
    since, or the code after a graph break, which the trace does not see. The frame then
    runs eagerly."""
    changed = _changed(state, _tracker_state([hook])) or reads_outside and (
        at_break or len(output.side_effects.mutations) > mutations)
    if changed:
        unimplemented(f"the hook {hook} was traced into the graph with values the code after "
                      f"it may change before the backward reads them: the frame runs eagerly")


def _frame_roots(tx, hook: VariableTracker) -> list:
    """What the frame can reach: every running translator's locals, stack and cells, the
    trackers of outside objects, and the hook itself."""
    roots: list = [hook, *tx.output.side_effects.values()]
    for t in tx.output.running:
        roots += [*t.symbolic_locals.values(), *t.stack, *t.cells.values()]
    return roots


def _tracker_state(roots: list) -> dict[int, tuple[Any, dict]]:
    """id -> (tracker, what it holds one level down, by identity), for every tracker and
    closure cell reachable from ``roots``: a list tracker's items, a cell's value. (A cell of a
    function made outside is left out: it reads its value lazily, and a store into it is a
    recorded mutation.) Each container is entered once: containers may share items, or hold
    one another in a cycle, and a walk that entered them again would never end."""
    state: dict[int, tuple[Any, dict]] = {}
    entered: set[int] = set()  # containers already walked (held in ``roots``: ids stay unique)
    todo = list(roots)
    while todo:
        value = todo.pop()
        if isinstance(value, (dict, list, tuple, set)):
            if id(value) not in entered:
                entered.add(id(value))
                todo += _items(value)
            continue
        if id(value) in state or not isinstance(value, TRACKERS) or \
                getattr(value, "real", None) is not None:
            continue
        fields = vars(value)
        state[id(value)] = (value, {k: _shallow(v) for k, v in fields.items()})
        todo += fields.values()
    return state


def _items(value: Any) -> list:
    return [*value.keys(), *value.values()] if isinstance(value, dict) else list(value)


def _shallow(value: Any) -> Any:
    return tuple(map(id, _items(value))) if isinstance(value, (dict, list, set)) else id(value)


def _changed(before: dict, after: dict) -> bool:
    return any(key in after and after[key][1] != held for key, (_, held) in before.items())
