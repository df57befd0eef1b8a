"""Which sizes are symbolic in the next compile (mirrors the frame-state part of
torch/_dynamo/variables/builder.py and torch/_dynamo/pgo.py's "automatic dynamic").

``dynamic=None`` (the default, *automatic dynamic*): the first compile of a frame specialises
every size. Each compile remembers, per input (by its source name), the sizes it saw; when a
later call misses the cache, every dim whose size differs from what was seen becomes symbolic,
and stays symbolic. An int argument that changed becomes a SymInt the same way.

``dynamic=True``: every size (and int argument) is symbolic from the first compile.
``dynamic=False``: nothing is, except the dims a user marked with ``mc.mark_dynamic``.
Sizes 0 and 1 are never symbolic (the ShapeEnv's 0/1 specialization).
"""

from __future__ import annotations

import contextlib
import copy
import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from .. import config
from ..shapes.symbolic_shapes import SYMBOL_MIN, has_symbolic_sizes, is_symbolic

CHANGED = None  # a remembered size that has differed between compiles


@dataclass
class FrameState:
    """What the compiles of one code object saw so far (survives recompiles, cleared by reset)."""

    sizes: dict[str, list[int | None]] = field(default_factory=dict)  # "L['x']" -> [8, None]
    strides: dict[str, list[int | None]] = field(default_factory=dict)  # "L['x']" -> [None, 1]
    ints: dict[str, int | None] = field(default_factory=dict)  # "L['n']" -> 3 or CHANGED
    floats: dict[str, float | None] = field(default_factory=dict)  # an optimizer's lr


@dataclass
class DynamicPolicy:
    dynamic: bool | None
    state: FrameState = field(default_factory=FrameState)
    went_symbolic: bool = False  # this compile gave some size or int a symbol

    def _note(self, symbolic):
        self.went_symbolic = self.went_symbolic or bool(symbolic)
        return symbolic

    @property
    def duck_sizes(self) -> bool:
        """Do equal sizes share a symbol? Only under ``dynamic=True`` (real Dynamo's
        ``DimDynamic.DUCK``); a dim made symbolic because it changed, or marked, gets its own
        (``DimDynamic.DYNAMIC``): a cache length and a batch size that both happened to be 2
        in the compile that made them symbolic must not be guarded equal from then on."""
        return self.dynamic is True

    def tensor_dims(self, source_name: str, t: torch.Tensor) -> set[int]:
        """The dims of input ``t`` that get a symbol in this compile."""
        marked = set(getattr(t, "_minicompile_dynamic_dims", set()))
        shape = list(t.shape)
        if self.dynamic is True:
            return set(range(len(shape)))
        seen = self.state.sizes.get(source_name)
        if seen is None or len(seen) != len(shape):  # first time (or rank changed): remember
            self.state.sizes[source_name] = shape
            return marked
        merged = [CHANGED if old is CHANGED or old != new else old for old, new in zip(seen, shape)]
        self.state.sizes[source_name] = merged
        if self.dynamic is False or not config.automatic_dynamic_shapes:
            return marked
        return self._note(marked | {d for d, old in enumerate(merged) if old is CHANGED})

    def stride_dims(self, source_name: str, t: torch.Tensor) -> set[int]:
        """The dims of input ``t`` whose stride gets a symbol of its own in this compile: those
        that have changed between compiles (real Dynamo's automatic dynamic strides). A view
        of a growing tensor (a sliding window's ``keys[:, :, -3:]``) keeps its sizes while its
        outer strides follow the tensor below; a stride the sizes determine (a dense tensor's)
        is written with the size symbols instead (the ShapeEnv's business)."""
        stride = list(t.stride())
        seen = self.state.strides.get(source_name)
        if seen is None or len(seen) != len(stride):
            self.state.strides[source_name] = stride
            return set()
        merged = [CHANGED if old is CHANGED or old != new else old for old, new in zip(seen, stride)]
        self.state.strides[source_name] = merged
        if self.dynamic is False or not config.automatic_dynamic_shapes:
            return set()
        return self._note({d for d, old in enumerate(merged) if old is CHANGED})

    def int_is_dynamic(self, source_name: str, value: int) -> bool:
        """Does int argument ``value`` become a SymInt in this compile? Never for 0 or 1 (the
        ShapeEnv's symbols are >= 2), but the change is remembered all the same: a decoding
        position 0, 1, 2, 3... is symbolic from 2 on, not from 3."""
        if config.specialize_int or self.dynamic is False:
            return False
        seen = self.state.ints.get(source_name, value)
        self.state.ints[source_name] = CHANGED if seen is CHANGED or seen != value else value
        if value < SYMBOL_MIN:
            return False
        return self._note(self.dynamic is True or (config.automatic_dynamic_shapes
                                                   and self.state.ints[source_name] is CHANGED))

    def float_changed(self, source_name: str, value: float) -> bool:
        """Is a float read from an object (an optimizer's lr) a graph input in this compile?
        Like an int: static at first, an input once it has differed between compiles (real
        Dynamo's automatic dynamic for floats), so a scheduler's new lr each step recompiles
        once, not every step."""
        if config.specialize_float or self.dynamic is False:
            return False
        seen = self.state.floats.get(source_name, value)
        self.state.floats[source_name] = CHANGED if seen is CHANGED or seen != value else value
        return self._note(self.dynamic is True or (config.automatic_dynamic_shapes
                                                   and self.state.floats[source_name] is CHANGED))

    def float_is_dynamic(self) -> bool:
        """Does a float argument become a graph input (not a constant) in this compile?"""
        return not config.specialize_float and self.dynamic is not False


_current: contextvars.ContextVar[DynamicPolicy | None] = contextvars.ContextVar(
    "minicompile_dynamic_policy", default=None)


@contextlib.contextmanager
def dynamic_policy(policy: DynamicPolicy) -> Iterator[None]:
    """The policy of the frame being compiled (eval_frame sets it around convert_frame)."""
    token = _current.set(policy)
    try:
        yield
    finally:
        _current.reset(token)


def current_policy() -> DynamicPolicy:
    return _current.get() or DynamicPolicy(False)


# ---- backends that specialise on their example inputs --------------------------------------------
def handles_dynamic_shapes(backend: Callable) -> bool:
    """A backend handles symbolic sizes unless it says otherwise: minicompile's backends set
    ``supports_dynamic_shapes`` (``torch-inductor`` sets it False: it bakes the example sizes
    in); a user's own callable gets the graph with Sym(s0) inputs."""
    return getattr(backend, "supports_dynamic_shapes", True)


def specialize_per_shape(backend: Callable) -> Callable:
    """Wrap a backend that bakes example sizes into its output: compile once per distinct set of
    input shapes, so a graph traced with symbolic sizes is never run at a size it wasn't built for."""

    def compile_fn(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        symbolic = any(_has_symbols(n.meta.get("example_value")) for n in gm.graph.nodes
                       if n.op == "placeholder")
        if not symbolic:
            return backend(gm, example_inputs)
        compiled: dict[tuple, Callable] = {}

        def run(*args: Any) -> Any:
            key = tuple((tuple(a.shape), tuple(a.stride())) if isinstance(a, torch.Tensor) else a
                        for a in args)
            if key not in compiled:  # a copy without the symbolic example values
                static_gm = copy.deepcopy(gm)
                for node in static_gm.graph.nodes:
                    node.meta.pop("example_value", None)
                compiled[key] = backend(static_gm, list(args))
            return compiled[key](*args)

        return run

    return compile_fn


def _has_symbols(value: Any) -> bool:
    return is_symbolic(value) or has_symbolic_sizes(value)
