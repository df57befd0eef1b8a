"""Record a compiled graph's launches once per input shape and replay them (mirrors
torch/_inductor/cudagraph_trees.py, without the tree: one line of recordings per graph).

    runner = CUDAGraphRunner(compiled_call, facts, name="forward graph 0")
    outs = runner(args)     # 1st call of a shape: warm-up; 2nd: record, then replay; then replay

A replay launches every kernel of the graph with one call (``cudaGraphLaunch``), so the host's
per-kernel work (Python, argument packing, the launch itself) is paid once per graph instead of
once per kernel. The price is that a recording reads and writes fixed addresses:

- **Inputs.** A recording reads *static buffers*: each call's inputs are copied into them
  first. A module's parameters and buffers (``static_input_indices``) are read in place: they
  are the same tensors every call (a new parameter tensor makes a new recording). So are inputs
  that live in a recording's outputs (what a forward replay saved for the backward): read in
  place while they stay there.
- **Memory.** Everything a recording allocates comes from a private pool
  (``torch.cuda.graph_pool_handle``), kept for as long as its recordings live. A forward's
  recordings share one pool, and the backward that reads a forward recording's saved tensors
  records into that recording's pool: its temporaries reuse the memory of the forward's (the
  essence of Inductor's cudagraph trees, without the tree). That is safe because the two never
  run at once; a forward recorded after a backward has joined its pool starts a new one, since it
  could put outputs where that backward's replays write.
- **Outputs.** A replay writes its outputs where the recording's were: the next replay
  overwrites what the last one returned. Each replay hands out fresh tensors over that memory,
  and the next replay marks the previous ones so that reading them raises (torch's "accessing
  tensor output of CUDAGraphs that has been overwritten by a subsequent run"): a stale output
  is an error, never a silently changed value. Clone an output to keep it.
- **A pending backward.** A forward's outputs saved for its backward must survive until that
  backward runs: if they are still alive when the forward is called again (two forwards, then
  two backwards), that call runs as compiled code, without the recording.
- **Backward outputs** are gradients, and ``.grad`` may keep one across steps (accumulation,
  ``zero_grad(set_to_none=False)``): the next replay in the pool would overwrite it. Copying every
  gradient out after each replay would cost a copy kernel per parameter per step; instead a
  replay first moves out (``Pool.evacuate``) only the gradients that are still alive. A training
  loop that sets ``.grad`` to ``None`` pays nothing; one that accumulates pays one copy, once
  (after it, ``.grad`` lives outside the pool). Where torch cannot repoint a storage
  (``CAN_MOVE_STORAGE``, after torch 2.11), a replay that finds a gradient still alive runs as
  compiled code instead (its recording would overwrite that gradient), and from then on the
  backward's replays copy their gradients out: a loop that drops ``.grad`` still pays nothing.
"""

from __future__ import annotations

import logging
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from .._logging import trace_artifact
from .cudagraph_utils import (GraphFacts, decide, describe, input_key, reads_in_place,
                              skip_reason)

log = logging.getLogger(__name__)

STALE = ("Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent "
         "run of {name}. To keep an output, clone it before calling the compiled function again "
         "(mode='reduce-overhead' replays write where the last replay's outputs are).")

_warned: set[str] = set()  # skip reasons already warned about in this process


def warn_once(message: str, reason: str) -> None:
    """A knob that cannot be honoured is said, once per reason, never passed over silently."""
    kind = reason.split(":")[0]
    if kind not in _warned:
        _warned.add(kind)
        warnings.warn(message, stacklevel=2)


# data pointers of every live recording's outputs: an input found here (what a forward's replay
# saved, read by its backward) is read in place. Weak: a recording dropped with its graph leaves
_recorded_outputs: weakref.WeakValueDictionary[int, "Recording"] = weakref.WeakValueDictionary()


@dataclass(eq=False)
class Recording:
    """One CUDA graph: what it reads (``copy_in``, ``in_place``, ``values``) and its outputs.
    A tensor read in place is not held: a replay happens only when the caller passes a tensor
    at that address (``matches``), and holding a forward's saved tensor would keep its backward
    looking pending for ever."""

    graph: torch.cuda.CUDAGraph
    owner: Any  # the runner that made it
    num_inputs: int
    outputs: list[Any]  # the recorded outputs (tensors over pool memory, or plain values)
    pool: "Pool"  # the memory it records into
    # outputs that are (views of) inputs, not pool memory: (output, input, size, stride, offset
    # from the input's): a replay hands out that view of the caller's own input
    aliases: list[tuple[int, int, Any, Any, int]] = field(default_factory=list)
    whole: frozenset[int] = frozenset()  # aliases that are all of their input: the input itself
    # the replay's checks, precomputed: (position, static buffer) of the copied inputs, of the
    # tensors read in place, and the other arguments' recorded values
    copy_in: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    in_place: list[tuple[int, int]] = field(default_factory=list)  # (position, data pointer)
    values: list[tuple[int, Any]] = field(default_factory=list)
    # outputs grouped by storage: (data pointer, bytes, device, [(index, metadata)]): each
    # replay builds fresh tensors over these storages
    storages: list[tuple[int, int, torch.device, list[tuple]]] = field(default_factory=list)
    pool_outputs: list[int] = field(default_factory=list)  # the outputs over those storages

    def __post_init__(self) -> None:
        # ``in_place`` as the C check takes it: an address per input position (None: not read
        # in place) and the positions to compare
        self.in_place_ptrs: list[int | None] = [None] * self.num_inputs
        for i, data_ptr in self.in_place:
            self.in_place_ptrs[i] = data_ptr
        self.in_place_positions = [i for i, _ in self.in_place]

    def in_place_unmoved(self, args: list) -> bool:
        """Whether each tensor read in place is where it was recorded: one C call where torch
        has it (``torch._C._tensors_data_ptrs_at_indices_equal``, which real cudagraph trees
        use for their static inputs; ~0.2 us a tensor in Python, a model has hundreds)."""
        if len(args) != self.num_inputs:
            return False
        if DATA_PTRS_EQUAL is not None:
            return DATA_PTRS_EQUAL(args, self.in_place_ptrs, self.in_place_positions)
        return all(args[i].data_ptr() == data_ptr for i, data_ptr in self.in_place)

    @property
    def copied(self) -> list[bool]:
        """Which inputs each call copies into a static buffer."""
        positions = {i for i, _ in self.copy_in}
        return [i in positions for i in range(self.num_inputs)]


@dataclass(eq=False)
class Pool:
    """A private memory pool, and whether a backward's recording has joined it."""

    handle: Any
    joined: bool = False
    # the storages of the gradients a backward replay handed out, over pool memory. Weak
    # references to the storage, not to the tensor: ``.grad`` keeps its own tensor over it
    # (AccumulateGrad stores a detached alias of what the backward returned)
    gradients: list[StorageWeakRef] = field(default_factory=list)
    # set where storages cannot be moved, once a replay found a gradient alive: the backward's
    # replays copy their gradients out from then on (``CUDAGraphRunner.hand_out_gradients``)
    copies_gradients: bool = False

    def evacuate(self) -> bool:
        """Before a replay writes into the pool: gradients still alive move to memory of their
        own (``move_out``), so the replay cannot overwrite them. False where one is alive and
        this torch cannot move it: the replay must not run while it lives."""
        alive = [ref for ref in self.gradients if not ref.expired()]
        if alive and not CAN_MOVE_STORAGE:
            self.gradients, self.copies_gradients = alive, True
            return False
        for ref in alive:
            move_out(torch.UntypedStorage._new_with_weak_ptr(ref.cdata))
        self.gradients = []
        return True


class OutputsOfOtherGraphs:
    """The storages (data pointers) of every live recording's outputs but ``runner``'s own: an
    input found here (a forward's saved tensor, read by its backward) is read in place. A
    graph's own outputs are copied: its replay writes them while its kernels may still read
    the input."""

    def __init__(self, runner: "CUDAGraphRunner"):
        self.runner = runner

    def __contains__(self, data_ptr: int) -> bool:
        recording = _recorded_outputs.get(data_ptr)
        return recording is not None and recording.owner is not self.runner


class CUDAGraphRunner:
    """Runs ``fn(args) -> tuple`` (a compiled graph's program) through CUDA graphs."""

    def __init__(self, fn: Callable[[list], tuple], facts: GraphFacts, name: str,
                 kind: str = "inference", saved_outputs_start: int | None = None):
        self.fn, self.facts, self.name, self.kind = fn, facts, name, kind
        self.saved_outputs_start = saved_outputs_start  # forward: outputs saved for backward
        self.skip = skip_reason(facts)  # for the whole graph, or None
        self.warmed: set[Hashable] = set()
        self.recordings: dict[Hashable, Recording] = {}
        self.skipped: dict[Hashable, str] = {}  # input key -> why it runs without a graph
        self.pool: Pool | None = None  # this graph's current pool (``pool_for``)
        self.handed_out: list[weakref.ref] = []  # the last replays' output tensors
        self.saved: list[weakref.ref] = []  # what the last replays saved for a backward
        self.replays = 0
        self.last: Recording | None = None  # the recording the last call replayed
        if self.skip:
            trace_artifact("cudagraphs", f"{name}: no CUDA graph: {self.skip}")
            warn_once(f"CUDA graphs were asked for (mode='reduce-overhead' or "
                      f"backend='cudagraphs') but {name} runs without one: {self.skip} "
                      f"(MINICOMPILE_LOGS=cudagraphs lists every such graph)", self.skip)

    # --- a call ---------------------------------------------------------------------------
    def __call__(self, args: list) -> tuple:
        last = self.last  # the common case, checked first: the same inputs as last time
        if last is not None and matches(last, args) and not self.backward_pending():
            return self.replay(last, args)
        self.last = None
        if self.skip:
            return self.fn(args)
        key = (input_key(args), self.static_addresses(args))
        refused_before = key in self.skipped
        action = decide(key, self.warmed, self.recordings, self.skipped)
        if action == "warmup":
            self.warmed.add(key)
            return self.fn(args)
        if action == "skip":
            if not refused_before:  # said once per shape, when it is first refused
                trace_artifact("cudagraphs", f"{self.name} ({describe(args)}): no CUDA graph: "
                               f"{self.skipped.get(key, 'refused')}")
            return self.fn(args)
        if action == "record":
            recording = self.record(key, args)
            if recording is None:
                return self.fn(args)
        else:
            recording = self.recordings[key]
        reason = self.cannot_replay(recording, args)
        if reason:
            trace_artifact("cudagraphs", f"{self.name}: this call runs without its recording: "
                           f"{reason}")
            return self.fn(args)
        self.last = recording
        return self.replay(recording, args)

    def static_addresses(self, args: list) -> tuple[int, ...]:
        """The parameters' addresses: a recording reads them in place."""
        return tuple(args[i].data_ptr() for i in sorted(self.facts.static_inputs)
                     if i < len(args) and isinstance(args[i], torch.Tensor))

    def pool_for(self, args: list) -> "Pool":
        """A backward records into the pool of the forward recording whose saved tensors it
        reads; anything else into this graph's own, a new one once a backward has joined it."""
        if self.kind == "backward":
            for arg in args:
                if isinstance(arg, torch.Tensor):
                    forward = _recorded_outputs.get(arg.untyped_storage().data_ptr())
                    if forward is not None and forward.owner is not self:
                        return forward.pool
        if self.pool is None or self.pool.joined:
            self.pool = Pool(torch.cuda.graph_pool_handle())
        return self.pool

    def cannot_replay(self, recording: Recording, args: list) -> str | None:
        """Why replaying now would be wrong: a pending backward's saved tensors live where the
        replay writes, or an input read in place is somewhere else this time."""
        if self.backward_pending():
            return "a backward is pending on what the last replay saved for it"
        if not recording.in_place_unmoved(args):
            return "an input read in place (a recording's output) has moved"
        return None

    def backward_pending(self) -> bool:
        if self.saved:
            self.saved = [r for r in self.saved if r() is not None]
        return bool(self.saved)

    # --- recording ------------------------------------------------------------------------
    def record(self, key: Hashable, args: list) -> Recording | None:
        others, inputs = OutputsOfOtherGraphs(self), []
        copy_in, in_place, values = [], [], []  # the replay's checks (``Recording``)
        for i, arg in enumerate(args):
            if not reads_in_place(i, arg, self.facts.static_inputs, others):
                arg = torch.empty_strided(arg.shape, arg.stride(), dtype=arg.dtype,
                                          device=arg.device).copy_(arg)
                copy_in.append((i, arg))
            elif isinstance(arg, torch.Tensor):
                in_place.append((i, arg.data_ptr()))
            else:
                values.append((i, arg))
            inputs.append(arg)
        pool = self.pool_for(args)
        graph = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        try:
            with torch.cuda.graph(graph, pool=pool.handle):
                outputs = list(self.fn(list(inputs)))
        except Exception as error:  # noqa: BLE001 (an op that cannot be recorded: run as code)
            reason = f"recording failed: {type(error).__name__}: {str(error).splitlines()[0]}"
            self.skipped[key] = reason
            trace_artifact("cudagraphs", f"{self.name} ({describe(args)}): no CUDA graph: {reason}")
            torch.cuda.synchronize()
            return None
        recording = Recording(graph, self, len(args), outputs, pool, copy_in=copy_in,
                              in_place=in_place, values=values)
        pool.joined |= self.kind == "backward" and pool is not self.pool
        recording.aliases = input_aliases(outputs, inputs)
        # (a parameter saved for the backward, handed back whole, stays a Parameter, which the
        # backward's recording reads in place)
        recording.whole = frozenset(i for i, j, size, stride, delta in recording.aliases
                                    if delta == 0 and inputs[j].shape == size
                                    and inputs[j].stride() == stride)
        recording.storages = group_storages(outputs, {i for i, *_ in recording.aliases})
        recording.pool_outputs = sorted(i for *_, views in recording.storages for i, _ in views)
        for data_ptr, *_ in recording.storages:
            _recorded_outputs[data_ptr] = recording
        self.recordings[key] = recording
        trace_artifact("cudagraphs", f"{self.name}: recorded for inputs {describe(args)} "
                       f"({len(self.recordings)} recording(s); {len(copy_in)} input(s) copied "
                       f"in per call, {len(in_place)} read in place)")
        return recording

    # --- replay ---------------------------------------------------------------------------
    def replay(self, recording: Recording, args: list) -> tuple:
        if recording.pool.gradients and not recording.pool.evacuate():
            trace_artifact("cudagraphs", f"{self.name}: this call runs without its recording: a "
                           f"gradient of an earlier replay is still held (.grad kept across "
                           f"steps) where the recording writes, and this torch cannot move it "
                           f"out; the backward's replays copy their gradients out from now on")
            self.last = None
            return self.fn(args)
        for i, static in recording.copy_in:
            static.copy_(args[i])
        if self.handed_out:
            self.mark_stale()
        torch._C._CUDAGraph.replay(recording.graph)  # (the C method: no Python wrapper per call)
        self.replays += 1
        outs = fresh_outputs(recording)
        for i, j, size, stride, delta in recording.aliases:  # the caller's input, as recorded
            a = args[j]
            outs[i] = a if i in recording.whole else \
                torch.as_strided(a, size, stride, a.storage_offset() + delta)
        if self.kind == "backward":
            return self.hand_out_gradients(recording, outs)
        tensors = [(i, outs[i]) for i in recording.pool_outputs]  # (an input is never stale)
        start = self.saved_outputs_start
        self.handed_out = [weakref.ref(o) for i, o in tensors if start is None or i < start]
        if start is not None:
            self.saved = [weakref.ref(o) for i, o in tensors if i >= start]
        return tuple(outs)

    def hand_out_gradients(self, recording: Recording, outs: list) -> tuple:
        """A backward's outputs: moved out of the pool by the next replay if still alive
        (``Pool.evacuate``), never marked stale; copied now once the pool has found one alive
        that it could not move."""
        if recording.pool.copies_gradients:
            for i in recording.pool_outputs:
                outs[i] = outs[i].clone()
        else:  # one storage per group of views (``group_storages``)
            recording.pool.gradients = [StorageWeakRef(outs[views[0][0]].untyped_storage())
                                        for *_, views in recording.storages]
        return tuple(outs)

    def mark_stale(self) -> None:
        """The last replay's outputs, still held by the caller, are about to be overwritten:
        reading one from now on raises."""
        message = STALE.format(name=self.name)
        for ref in self.handed_out:
            tensor = ref()
            if tensor is not None:
                torch._C._set_storage_access_error_msg(tensor, message)
        self.handed_out = []


def matches(recording: Recording, args: list) -> bool:
    """Whether ``recording`` serves these arguments: the copied inputs have its buffers' sizes,
    strides and dtypes, the tensors it reads in place are where they were, the other arguments
    are equal."""
    if len(args) != recording.num_inputs:
        return False
    for i, static in recording.copy_in:
        a = args[i]
        if a.shape != static.shape or a.stride() != static.stride() or a.dtype != static.dtype:
            return False
    if not recording.in_place_unmoved(args):
        return False
    for i, value in recording.values:
        if args[i] != value:
            return False
    return True


def input_aliases(outputs: list, inputs: list) -> list[tuple[int, int, Any, Any, int]]:
    """Outputs that live in an input's storage (a forward returns ``x`` among the tensors it
    saves for the backward; a parameter passed through): ``(output, input, size, stride,
    offset from the input's)``. They are not pool memory: a replay returns the same view of the
    input the caller passed (a copied input's static buffer holds its values, at the same
    layout, since a recording replays only for inputs laid out as its buffers)."""
    where = {t.untyped_storage().data_ptr(): j for j, t in enumerate(inputs)
             if isinstance(t, torch.Tensor)}
    aliases = []
    for i, out in enumerate(outputs):
        if isinstance(out, torch.Tensor) and out.untyped_storage().data_ptr() in where:
            j = where[out.untyped_storage().data_ptr()]
            aliases.append((i, j, out.shape, out.stride(),
                            out.storage_offset() - inputs[j].storage_offset()))
    return aliases


def group_storages(outputs: list, skip: set[int] = frozenset()
                   ) -> list[tuple[int, int, torch.device, list[tuple]]]:
    """The recorded outputs by the storage they live in (outputs that are views of one buffer
    share it): each replay makes one fresh storage object per entry, and views of it.
    ``skip``: outputs that are views of inputs (``input_aliases``)."""
    groups: dict[int, tuple[int, int, torch.device, list[tuple]]] = {}
    for i, out in enumerate(outputs):
        if not isinstance(out, torch.Tensor) or i in skip:
            continue
        storage = out.untyped_storage()
        entry = groups.setdefault(storage.data_ptr(),
                                  (storage.data_ptr(), storage.nbytes(), out.device, []))
        entry[3].append((i, {"size": out.shape, "stride": out.stride(), "dtype": out.dtype,
                             "storage_offset": out.storage_offset(), "device": out.device,
                             "nbytes": storage.nbytes(), "data_ptr": storage.data_ptr()}))
    return list(groups.values())


# (a CUDA build's binding)
DATA_PTRS_EQUAL = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)

# Repointing a storage at other memory (``UntypedStorage._swap_data_ptr_``) came after torch
# 2.11; without it, a backward replay hands out copies of its gradients instead
CAN_MOVE_STORAGE = hasattr(torch.UntypedStorage, "_swap_data_ptr_")


def move_out(storage: torch.UntypedStorage) -> None:
    """Point ``storage`` at a copy of its bytes in memory of its own: every tensor over it (the
    gradient handed out, ``.grad``'s alias of it) keeps its values through the next replay.
    (The pool's memory goes to the copy's storage object, which doesn't own it and is
    dropped.)"""
    storage._swap_data_ptr_(storage.clone())


def fresh_outputs(recording: Recording) -> list:
    """Tensors over the recording's output memory, on storage objects of their own: marking
    them stale later leaves the next replay's outputs readable."""
    outs = list(recording.outputs)
    for data_ptr, nbytes, device, views in recording.storages:
        storage = torch._C._construct_storage_from_data_pointer(data_ptr, device, nbytes)
        for i, metadata in views:  # (a C call: a tensor over a storage, no allocation)
            outs[i] = torch._C._construct_CUDA_Tensor_From_Storage_And_Metadata(metadata, storage)
    return outs
