"""Put minicompile's AOT graphs next to eager autograd's and real AOTAutograd's (the role
torch/_functorch/compilers.py's debugging compilers play), and time forward/backward.

    eager_saved_tensors(fn, x)             # what eager autograd keeps alive for backward
    real_aot_graphs(model, [x], "min_cut") # real AOTAutograd's forward/backward graphs
    print(format_report(partition_report(model, [x])))  # ours next to real, per partitioner
    time_forward_backward(fn, [x])         # seconds per forward, per backward
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.fx as fx

from ..aot_autograd import trace_module
from ..aot_autograd.partitioners import (default_partition, is_sym,
                                         min_cut_rematerialization_partition, tensor_bytes)
from ..bench.helpers import benchmark, device_of, say_if_noisy
from ..decompositions import decomposition_table


@dataclass
class SavedTensor:
    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int


def eager_saved_tensors(fn: Callable, *args) -> list[SavedTensor]:
    """Run ``fn(*args)`` in eager mode and list every tensor autograd saves for backward
    (through ``torch.autograd.graph.saved_tensors_hooks``)."""
    saved = []

    def pack(t):
        saved.append(SavedTensor(tuple(t.shape), t.dtype, t.numel() * t.element_size()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return saved


def real_aot_graphs(model: Callable, inputs: list, partition: str = "default"
                    ) -> tuple[fx.GraphModule, fx.GraphModule]:
    """Real AOTAutograd's forward and backward graphs of ``model(*inputs)``: real Dynamo
    captures, ``torch._functorch.aot_autograd.aot_module_simplified`` traces and partitions."""
    from torch._functorch import partitioners
    from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

    graphs: dict[str, fx.GraphModule] = {}
    partition_fn = {"default": partitioners.default_partition,
                    "min_cut": partitioners.min_cut_rematerialization_partition}[partition]

    def keep(name):
        def compiler(gm, example_inputs):
            graphs[name] = gm
            return make_boxed_func(gm.forward)  # run as is (no codegen)
        return compiler

    def backend(gm, example_inputs):
        return aot_module_simplified(gm, example_inputs, fw_compiler=keep("fw"),
                                     bw_compiler=keep("bw"), partition_fn=partition_fn)

    torch._dynamo.reset()
    out = torch.compile(model, backend=backend, fullgraph=True)(*inputs)
    out.sum().backward()
    torch._dynamo.reset()
    return graphs["fw"], graphs["bw"]


def num_saved(fw: fx.GraphModule, bw: fx.GraphModule) -> int:
    """Values passed from a forward graph to its backward: backward inputs that are not
    tangents (real AOTAutograd names its tangents ``tangents_*`` too)."""
    return sum(n.op == "placeholder" and not n.name.startswith("tangents") for n in bw.graph.nodes)


def saved_bytes(bw: fx.GraphModule) -> int:
    """Bytes of the tensors a backward graph receives from its forward (not the tangents)."""
    return sum(tensor_bytes(n) for n in bw.graph.nodes if n.op == "placeholder"
               and not n.name.startswith("tangents") and not is_sym(n))


def partition_report(model: torch.nn.Module, inputs: list) -> list[dict]:
    """Saved values, saved bytes and op counts of the forward/backward graphs of ``model``:
    real AOTAutograd (its default and min-cut partitioners, no decomposition, like its
    ``aot_eager``), next to ours on the same ATen level and on core ATen (our table)."""

    def ops(gm):
        return sum(n.op == "call_function" for n in gm.graph.nodes)

    rows = []
    for partition in ("default", "min_cut"):
        fw, bw = real_aot_graphs(model, inputs, partition)
        rows.append(dict(who="real AOTAutograd", graph="ATen", partition=partition,
                         saved=num_saved(fw, bw), saved_bytes=saved_bytes(bw),
                         fw_ops=ops(fw), bw_ops=ops(bw)))
    for level, table in (("ATen", {}), ("core ATen", decomposition_table)):
        joint, sig = trace_module(model, inputs, table)
        for partition, fn in (("default", default_partition),
                              ("min_cut", min_cut_rematerialization_partition)):
            p = fn(joint, sig.num_fwd_outputs)
            rows.append(dict(who="minicompile", graph=level, partition=partition,
                             saved=len(p.saved), saved_bytes=p.saved_bytes,
                             fw_ops=ops(p.fw_module), bw_ops=ops(p.bw_module)))
    return rows


def format_report(rows: list[dict]) -> str:
    head = f"{'':17} {'graph':10} {'partition':9} {'saved':>5} {'KiB saved':>9} {'fw ops':>6} {'bw ops':>6}"
    lines = [head] + [f"{r['who']:17} {r['graph']:10} {r['partition']:9} {r['saved']:5} "
                      f"{r['saved_bytes'] / 1024:9.1f} {r['fw_ops']:6} {r['bw_ops']:6}"
                      for r in rows]
    return "\n".join(lines)


def _cuda_stamp() -> torch.cuda.Event:
    event = torch.cuda.Event(enable_timing=True)
    event.record()
    return event


# device -> (take a timestamp, seconds between two of them). On the GPU a timestamp is a CUDA
# event recorded on the stream, so the time is the GPU's, not the host's launch time.
CLOCKS = {
    "cuda": (_cuda_stamp, lambda a, b: a.elapsed_time(b) / 1e3),
    "cpu": (time.perf_counter, lambda a, b: b - a),
}


def time_forward_backward(fn: Callable, inputs: list, iters: int = 20) -> tuple[float, float]:
    """Median seconds of one forward and of one backward (``out.sum()``'s gradient), each phase
    timed on its own (CUDA events on the GPU, ``perf_counter`` on the CPU)."""
    stamp, seconds = CLOCKS[device_of(inputs)]
    stamps = []
    for _ in range(iters + 3):  # the first calls compile and warm up: dropped below
        t0 = stamp()
        out = fn(*inputs)
        t1 = stamp()
        out.sum().backward()
        stamps.append((t0, t1, stamp()))
    if device_of(inputs) == "cuda":
        torch.cuda.synchronize()
    fwd = sorted(seconds(t0, t1) for t0, t1, _ in stamps[3:])
    bwd = sorted(seconds(t1, t2) for _, t1, t2 in stamps[3:])
    for phase, times in (("forward", fwd), ("backward", bwd)):  # 10th to 90th percentile
        low, median, high = (times[len(times) * q // 10] for q in (1, 5, 9))
        say_if_noisy(f"{getattr(fn, '__name__', 'fn')} {phase}", (high - low) / median)
    return fwd[len(fwd) // 2], bwd[len(bwd) // 2]


def time_call(fn: Callable, *args) -> float:
    """Median seconds of ``fn(*args)`` without autograd (``benchmark``: do_bench on the GPU,
    ``torch.utils.benchmark`` on the CPU)."""
    with torch.no_grad():
        return benchmark(fn, *args)
