"""Exercises for notebook 10: CUDA graphs.

Grade with ``bash course.sh grade -k 10``. Each function is a decision of minicompile's
CUDA-graph stage (``minicompile/cudagraphs/cudagraph_utils.py``): whether a graph may be recorded
at all, what a call does with the recordings it has, and which inputs a recording reads where
they are instead of copying them into its static buffers. The checks compare your decisions with
the stage's rules on many cases (they run on a CPU), put your function into the stage, and, on a
machine with a GPU, record and replay real graphs with it against eager PyTorch.
"""

from __future__ import annotations

from typing import Any, Container, Hashable

import torch

from minicompile.cudagraphs.cudagraph_utils import MAX_RECORDINGS, GraphFacts


def skip_reason(facts: GraphFacts) -> str | None:
    """Exercise 10.1: why a compiled graph runs without CUDA graphs, or None if it may be
    recorded.

    ``facts`` was read off the graph's ATen ops: ``facts.devices`` (the device of every tensor,
    as strings: ``"cuda:0"``, ``"cpu"``), ``facts.mutated_inputs`` (names of the inputs it writes
    in place) and ``facts.syncing_ops`` (names of ops whose result the host must wait for, such
    as ``.item()``). A graph may be recorded when all its tensors are on one GPU, it writes no
    input, and it makes the host wait for nothing. Otherwise return a sentence a learner can act
    on that names what is in the way: the device(s) that are not allowed, the input written,
    or the op. With several problems, the first of devices, mutation, syncing op is named.
    """
    raise NotImplementedError("Exercise 10.1: None for a graph of one GPU's tensors, else a reason naming the cause (roughly 15 lines)")


def decide(key: Hashable, warmed: set, recorded: dict, skipped: dict) -> str:
    """Exercise 10.2: what one call of a graph does with the recordings it has.

    ``key`` says what a recording would be specialised to (the inputs' sizes, strides, dtypes).
    ``warmed`` holds the keys already run once, ``recorded`` maps a key to its recording,
    ``skipped`` maps a key that must run without a recording to the reason. Return:

    - ``"replay"`` when a recording of ``key`` exists;
    - ``"skip"`` when ``key`` is in ``skipped`` (its recording failed), or when
      ``MAX_RECORDINGS`` keys are recorded already: then also put a reason in ``skipped[key]``;
    - ``"warmup"`` the first time a key is seen (the first call runs as compiled code: Triton
      autotunes and compiles, none of which a recording may contain);
    - ``"record"`` the call after.

    The caller updates ``warmed`` and ``recorded``; this function only writes ``skipped``.
    """
    raise NotImplementedError('Exercise 10.2: replay, skip, warmup or record, in that order of checks (roughly 11 lines)')


def reads_in_place(i: int, arg: Any, static_inputs: Container[int],
                   recorded_storages: Container[int]) -> bool:
    """Exercise 10.3: does the recording read argument ``i`` where it is (True), or copy it into
    a static buffer of its own before every replay (False)?

    A recording reads fixed addresses, so a tensor that is a different tensor every call (a
    batch of inputs) is copied. Read in place:

    - an argument that is not a tensor (a size: its value is baked into the recorded launches);
    - a parameter or buffer of the module: its position is in ``static_inputs``, or it is a
      ``torch.nn.Parameter`` (a backward receives the weights its forward saved);
    - a tensor that lives in the memory of a recording's outputs (what a forward replay saved
      for its backward): ``recorded_storages`` holds the data pointers of those outputs'
      *storages*, and such a tensor may be a view at an offset of one.
    """
    raise NotImplementedError('Exercise 10.3: True for values, parameters/buffers and tensors in recorded outputs (roughly 5 lines)')
