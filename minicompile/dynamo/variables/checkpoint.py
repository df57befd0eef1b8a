"""``torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=...)`` traced into the graph
(mini version of ``CheckpointHigherOrderVariable`` in torch/_dynamo/variables/higher_order_ops.py
and of torch/_higher_order_ops/wrap.py's ``tag_activation_checkpoint``).

Eager checkpointing runs ``fn`` twice: in the forward, keeping only its inputs, and again in the
backward, to get the activations back (the RNG state replayed, so a dropout draws the same mask).
Real Dynamo traces ``fn`` into a subgraph called by the ``tag_activation_checkpoint`` higher-order
op, and AOT autograd inlines it with every node tagged ``recompute``; the partitioner then
recomputes the tagged nodes in the backward instead of saving them.

minicompile does the same without a subgraph: ``fn`` is inlined into the frame's graph like any
user function, and every node it adds is tagged ``node.meta["recompute"]`` (and its region's
``ac_graph_id``, the names real Dynamo uses). AOT autograd carries the tags onto the ATen nodes
each Dynamo node becomes (fx.traceback's current meta, as real AOTAutograd does), and the
partitioner (``recompute_checkpointed`` in aot_autograd/partitioners.py) saves the region's inputs
instead of its activations, so the backward recomputes them.

Why this design, and why it is never wrong:
- Values: inlined, ``fn`` computes exactly what eager's first run computes. Eager's second run
  replays the RNG state, so it computes the same values again: the gradients are those of the
  inlined graph. A random op is never recomputed (the partitioner saves its output: the
  memory of one mask, where eager keeps the RNG state), so recomputation cannot draw anew.
- What eager's two runs do differently is refused (a graph break; ``checkpoint`` then runs
  natively, and being wrapped in ``torch._disable_dynamo`` nothing under it is compiled):
  ``preserve_rng_state=False`` (eager's recomputation draws fresh random numbers), a
  ``context_fn`` (selective checkpointing policies), Python side effects in ``fn`` (eager makes
  them twice), keyword arguments to a reentrant checkpoint (eager raises), options that are not
  constants, and any break inside ``fn``.
- Reentrant checkpoint runs ``fn`` under ``no_grad`` and connects its outputs to autograd through
  its positional tensor arguments only: with none of them requiring grad, its outputs do not
  require grad, even where ``fn`` uses parameters. The inlined call then runs under ``no_grad``
  too, so the parameters get no gradient from it, as in eager.
- Memory is best effort: tagged nodes that feed the backward are recomputed, but the
  partitioner may save a region's input that eager would also keep (its argument).
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
import torch.utils.checkpoint as torch_checkpoint

from ..exc import unimplemented
from .base import KnownCallableVariable, VariableTracker
from .misc import GradModeVariable
from .tensor import TensorVariable

CHECKPOINT = torch_checkpoint.checkpoint  # the torch._disable_dynamo wrapper users call

# checkpoint's options -> the values the inlined call computes like eager (None: any value)
OPTIONS: dict[str, tuple | None] = {
    "use_reentrant": None,
    "preserve_rng_state": (True,),  # False: eager's recomputation draws other random numbers
    "context_fn": (torch_checkpoint.noop_context_fn,),  # selective checkpointing policies
    "determinism_check": None,  # only checks metadata of the recomputation
    "debug": None,
    "early_stop": None,
    "respect_saved_tensors_hooks": None,
}
REASONS = {
    "preserve_rng_state": "eager's recomputation draws fresh random numbers, the traced "
                          "region would reuse the forward's",
    "context_fn": "a context_fn (selective checkpointing) is not traced",
}

_region_ids = itertools.count()


def is_checkpoint(value: Any) -> bool:
    return value is CHECKPOINT


# what ``@checkpoint(use_reentrant=False)`` makes of a function (torch 2.14 on)
CHECKPOINTED_FUNCTION = getattr(torch_checkpoint, "_CheckpointedFunction", None)


def is_checkpointed_function(value: Any) -> bool:
    return CHECKPOINTED_FUNCTION is not None and type(value) is CHECKPOINTED_FUNCTION


class CheckpointVariable(KnownCallableVariable):
    """``torch.utils.checkpoint.checkpoint``: a call inlines the function, its nodes tagged."""

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        options = {name: kwargs.pop(name) for name in list(kwargs) if name in OPTIONS}
        values = {}
        for name, vt in options.items():
            if not vt.is_python_constant():
                unimplemented(f"checkpoint with a {name} that is not a constant")
            values[name] = vt.as_python_constant()
            allowed = OPTIONS[name]
            if allowed is not None and not any(values[name] is a or values[name] == a
                                               for a in allowed):
                unimplemented(f"checkpoint({name}={values[name]!r}): {REASONS[name]}")
        if not args:
            unimplemented("checkpoint(use_reentrant=...) as a decorator is not traced")
        function, fn_args = args[0], list(args[1:])
        reentrant = values.get("use_reentrant") is not False  # None: eager's default, True
        if reentrant and kwargs:
            unimplemented("keyword arguments to a reentrant checkpoint (eager raises)")
        no_grad = reentrant and torch.is_grad_enabled() and not any(
            isinstance(a, TensorVariable) and a.as_fake().requires_grad for a in fn_args)
        return self._inline(tx, function, fn_args, kwargs, no_grad)

    @staticmethod
    def _inline(tx, function, args, kwargs, no_grad: bool) -> VariableTracker:
        graph, side_effects = tx.output.graph, tx.output.side_effects
        before = set(graph.nodes)
        effects = (len(side_effects.mutations), len(side_effects.tensor_hooks))
        if no_grad:
            GradModeVariable.set_mode(tx, False)
        try:
            result = function.call_function(tx, args, kwargs)
        finally:
            if no_grad:
                GradModeVariable.set_mode(tx, True)
        if (len(side_effects.mutations), len(side_effects.tensor_hooks)) != effects:
            unimplemented("the checkpointed function has side effects (eager makes them "
                          "twice: in the forward and again in the backward's recomputation)")
        region = next(_region_ids)
        for node in graph.nodes:
            if node not in before and node.op in ("call_function", "call_method", "call_module"):
                node.meta["recompute"] = torch_checkpoint.CheckpointPolicy.PREFER_RECOMPUTE
                node.meta["ac_graph_id"] = region
        return result

