"""OptimizerVariable: a ``torch.optim.Optimizer`` whose ``step`` is traced into a graph (mini
version of torch/_dynamo/variables/optimizer.py).

A training step written as real code is ``loss.backward(); opt.step(); opt.zero_grad()``.
torch.optim's Python code is inlined like the user's own (torch.py's ``INLINED_TORCH_MODULES``),
and its ``step`` is loops of tensor updates, so the update traces into one graph. Three things
about an optimizer need more than inlining, and this tracker does them as real Dynamo does:

- **State is created eagerly.** ``_init_group(group, params, grads, exp_avgs, ...)`` is where an
  optimizer creates its state the first time a parameter has a gradient (``torch.zeros_like``
  moments, a ``step`` counter) and gathers the tensors of one param group into lists. It is
  slow to trace and its result is a fact about Python objects, not a computation: the trace
  runs the real ``_init_group`` on the real group with empty real lists, then fills the traced
  lists with the trackers of what it gathered. Every tensor there is a graph input read from
  its place: a parameter from ``opt.param_groups[i]['params'][j]``, a gradient from its
  ``.grad``, a state tensor from ``opt.state[p]['exp_avg']``. On the first call the state
  did not exist before the trace; it does when the graph runs (the trace made it).
- **``opt.state`` is a defaultdict keyed by parameters.** It becomes a dict tracker whose keys
  are the parameters' trackers (a tensor key hashes by identity, hashable.py), guarded by its
  key list; its per-parameter dicts are ordinary dicts from outside, so a store such as SGD's
  ``state["momentum_buffer"] = buf`` is replayed after the graph (side_effects.py).
- **Grad mode.** ``step`` is wrapped by ``_use_grad_for_differentiable``, which turns grad off
  and calls ``torch._dynamo.graph_break()`` before and after the real step, so that AOT
  autograd sees an inference graph whose parameter updates are in place. Those breaks are
  kept, as in real Dynamo: the step is a graph of its own, compiled under ``no_grad``.

What is not traced breaks the graph with a reason and runs natively (:data:`UNSUPPORTED`):
an optimizer with no ``_init_group`` (LBFGS re-evaluates a closure), a fused kernel.

On CUDA, a param group whose parameters are all on the GPU and have no state yet is switched
to ``capturable=True`` before its state is made (real Dynamo's ``_set_capturable``): the
``step`` counters then live on the GPU and the update needs no host sync, where
``capturable=False`` would send the update to a function that asks never to be traced.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch

from ..exc import unimplemented
from ..guards import Guard, GuardKind
from ..source import AttrSource, DictKeySource, GetItemSource
from .base import VariableTracker
from .constant import ConstantVariable
from .dicts import ConstDictVariable
from .hashable import HashableTracker
from .lists import ListVariable
from .user_defined import UserDefinedObjectVariable
from .tensor import TensorVariable

# group hyperparameters a learning-rate scheduler sets before each step
SCHEDULED = ("lr",)
# group flag -> why a step with it set is not traced (the step runs natively)
UNSUPPORTED = {
    "fused": "a fused optimizer (fused=True) is one opaque kernel per step (torch._fused_adam_ "
             "and co.), which the compiler does not lower: the step runs natively",
    "differentiable": "a differentiable optimizer (differentiable=True) records the update for "
                      "autograd: the step runs natively",
}


class OptimizerVariable(UserDefinedObjectVariable):
    """An optimizer from outside the frame: its attributes are read (and guarded) as any
    object's; ``_init_group`` runs eagerly and ``state`` is a dict keyed by parameters."""

    def __init__(self, value: torch.optim.Optimizer, source=None):
        super().__init__(value, source)
        self.state_vt: ConstDictVariable | None = None
        self.state_keys_guard: Guard | None = None

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if self.source is None:
            unimplemented(f"an optimizer made inside the compiled function ({type(self.value)})")
        if name == "_init_group" and hasattr(self.value, "_init_group"):
            return InitGroupVariable(self)
        if name == "state":
            return self.state_tracker(tx)
        if name == "param_groups":
            self._set_capturable()
            groups = super().var_getattr(tx, name)
            self._scheduled_as_inputs(tx, groups)
            return groups
        if name == "step" and not hasattr(self.value, "_init_group"):
            unimplemented(f"{type(self.value).__name__}.step: an optimizer without _init_group "
                          "(LBFGS re-evaluates a closure several times per step) runs natively")
        return super().var_getattr(tx, name)

    def _set_capturable(self) -> None:
        """GPU parameters with no state yet: their state is made for the graph (see above)."""
        for group in self.value.param_groups:
            params = group.get("params", [])
            if "capturable" in group and params and all(p.is_cuda for p in params) \
                    and not any(p in self.value.state for p in params):
                group["capturable"] = True

    def _scheduled_as_inputs(self, tx, groups: VariableTracker) -> None:
        """A float hyperparameter a scheduler changes every step (:data:`SCHEDULED`), once it
        has changed between compiles, is read as a graph input: a 0-d float64 tensor, which
        torch.optim's code takes as it takes ``lr=torch.tensor(...)``. Real Dynamo makes such
        a float an input too (automatic dynamic, ``specialize_float=False``), as a symbolic
        float that code still sees as a float; here the code sees a tensor, which every
        optimizer this traces accepts in the same place, except the foreach path without
        ``capturable`` (Adam's refuses a tensor lr there): that group's lr stays a constant.
        The scheduler's own write of the new lr into the group runs natively: the value it
        computes from the tensor is a tensor, which the group would keep where eager keeps a
        float (and the next steps would read the tensor, not the scheduled floats); so does a
        scheduler's ``step`` (``symbolic_convert.NATIVE_TORCH_MODULES``)."""
        for group, group_vt in zip(self.value.param_groups, groups.unpack_var_sequence(tx)):
            if group.get("foreach") and not group.get("capturable"):
                continue
            for name in SCHEDULED:
                vt, value = group_vt.items.get(name), group.get(name)
                if type(value) is not float or not isinstance(vt, ConstantVariable) \
                        or vt.source is None \
                        or not tx.output.dynamic.float_changed(vt.source.name(), value):
                    continue
                tx.output.replace_guards(Guard(vt.source, GuardKind.TYPE_MATCH, float,
                                               tx.user_line()))
                proxy = tx.output.float_placeholder(vt.source, value)
                group_vt.items[name] = TensorVariable(proxy, proxy.node.meta["example_value"])
                group_vt.floats_as_tensors.add(name)  # a scheduler's write: natively (dicts.py)

    # -- opt.state --------------------------------------------------------------------------------
    def state_tracker(self, tx) -> ConstDictVariable:
        """``opt.state``: one tracker per trace, its keys guarded (by identity and order)."""
        if self.state_vt is None:
            source = AttrSource(self.source, "state")
            self.state_vt = ConstDictVariable({}, source, user_cls=type(self.value.state))
            self.state_keys_guard = Guard(source, GuardKind.USER_DICT_KEYS,
                                          (type(self.value.state), []), tx.user_line())
            tx.output.add_guard(self.state_keys_guard)
        self._add_new_state(tx)
        return self.state_vt

    def _add_new_state(self, tx) -> None:
        """Entries the real dict gained since the tracker was made (``_init_group`` made them)
        join the tracker, and the keys guard, at their place."""
        from .builder import VariableBuilder

        real = self.value.state
        keys = self.state_keys_guard.expected[1]
        if len(real) < len(keys) or any(k is not r for k, r in zip(keys, real)):  # (no ==)
            unimplemented("optimizer state changed under the trace (entries removed/reordered)")
        for position, param in enumerate(list(real)[len(keys):], start=len(keys)):
            key_vt = self.param_tracker(tx, param)
            source = GetItemSource(self.state_vt.source,  # (a tensor key has no literal)
                                   DictKeySource(self.state_vt.source, position), position)
            self.state_vt.items[HashableTracker(key_vt)] = \
                VariableBuilder(tx, source).wrap(real[param])
            keys.append(param)
        if isinstance(real, defaultdict) and self.state_vt.default_factory is None:
            self.state_vt.default_factory = VariableBuilder(tx, None).wrap(real.default_factory)

    def param_tracker(self, tx, param: torch.Tensor) -> VariableTracker:
        """The tracker of ``param`` read from its place in ``param_groups``."""
        from .builder import VariableBuilder

        for i, group in enumerate(self.value.param_groups):
            for j, p in enumerate(group["params"]):
                if p is param:
                    source = GetItemSource(GetItemSource(GetItemSource(
                        AttrSource(self.source, "param_groups"), i), "params", 0), j)
                    return VariableBuilder(tx, source).wrap(p)
        unimplemented("optimizer state for a tensor that is in no param group")

    # -- _init_group ------------------------------------------------------------------------------
    def real_group(self, group_vt: VariableTracker) -> dict:
        """The real param group a group tracker was read from (``opt.param_groups[i]``)."""
        source = group_vt.source
        if not (isinstance(source, GetItemSource)
                and source.base == AttrSource(self.source, "param_groups")):
            unimplemented("_init_group of a param group not read from opt.param_groups")
        return self.value.param_groups[source.index]

    def tensor_trackers(self, tx, group: dict) -> dict[int, VariableTracker]:
        """id(tensor) -> its tracker, for every tensor ``_init_group`` of ``group`` can gather:
        the parameters, their gradients (a missing one is guarded to stay missing) and their
        state. Reading them is what installs their guards."""
        found: dict[int, VariableTracker] = {}
        state = self.state_tracker(tx)
        for p in group["params"]:
            p_vt = self.param_tracker(tx, p)
            found[id(p)] = p_vt
            grad = p_vt.var_getattr(tx, "grad")
            if p.grad is not None:
                found[id(p.grad)] = grad
            if p in self.value.state:
                entry = state.getitem(p_vt, tx)
                for name, value in self.value.state[p].items():
                    if isinstance(value, torch.Tensor):
                        found[id(value)] = entry.getitem(ConstantVariable(name), tx)
        return found


class InitGroupVariable(VariableTracker):
    """``opt._init_group`` bound to its optimizer: called, it runs for real (see above)."""

    def __init__(self, optimizer: OptimizerVariable):
        super().__init__()
        self.optimizer = optimizer

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        opt = self.optimizer
        if not args:
            unimplemented("_init_group without its param group")
        group = opt.real_group(args[0])
        for flag, reason in UNSUPPORTED.items():
            if group.get(flag):
                unimplemented(f"{type(opt.value).__name__}: {reason}")
        lists = {i: a for i, a in enumerate(args[1:], 1)}
        lists.update(kwargs)
        if not all(isinstance(a, ListVariable) and a.source is None and not a.items
                   for a in lists.values()):
            unimplemented("_init_group's lists must be empty lists made in the step")
        real_lists = {k: [] for k in lists}
        real_args = [group] + [real_lists[i] for i in range(1, len(args))]
        real_kwargs = {k: real_lists[k] for k in kwargs}
        result = type(opt.value)._init_group(opt.value, *real_args, **real_kwargs)
        trackers = opt.tensor_trackers(tx, group)
        for key, list_vt in lists.items():
            list_vt.items.extend(_tracker(trackers, item) for item in real_lists[key])
        return ConstantVariable(result)

    def _repr_body(self) -> str:
        return f"{type(self.optimizer.value).__name__}._init_group"


def _tracker(trackers: dict[int, VariableTracker], item: Any) -> VariableTracker:
    if item is None:
        return ConstantVariable(None)  # SGD's momentum buffer before the first step
    if isinstance(item, torch.Tensor) and id(item) in trackers:
        return trackers[id(item)]
    unimplemented(f"_init_group gathered a {type(item).__name__} that is neither a parameter, "
                  "its gradient nor its state")
