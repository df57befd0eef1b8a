"""Inline a pointwise producer into a consumer that cannot share its loops (Inductor does this
at lowering time by leaving such a producer unrealized: ``StorageBox.realize`` in
torch/_inductor/ir.py is never called for it, and the consumer's loader evaluates its body).

The scheduler fuses nodes that run over the same loops. A consumer that reads only part of a
producer, or reads it broadcast, runs over other loops, so the two can never share a kernel and
the producer would be written to memory just to be read back:

    buf0[i0, i1] = load(x, 10*i0 + i1) * 2        # x * 2: 100 elements
    buf1[i0]     = load(buf0, 10*i0) + 1          # (x * 2)[:, 0] + 1: 10 elements

Substituting the producer's body into the consumer (``ir/inline.py``) removes the round trip:

    buf1[i0]     = load(x, 10*i0) * 2 + 1         # reads 10 elements of x, buf0 is gone

The producer is recomputed where the consumer needs it. That never costs memory traffic: the
consumer reads the producer's inputs at the elements it needs, instead of the producer's buffer.
A producer read by one consumer that
reads it permuted (``clone`` of a transpose) is substituted too: the scheduler fuses only nodes
that visit the same elements in the same order. A producer stays a buffer when the caller receives it or a library call (extern kernel) reads
it; consumers over the same loops keep reading it and the scheduler fuses them. A cheap producer
(one input) with several readers is substituted into all of them, as Inductor leaves a pointwise
node with several users unrealized: whichever kernels the readers end up in, none waits for a
stored copy of it. A producer whose one reader is a reduction is substituted when it reads at
most two buffers in full (``sole_reduction_reader``): the two may visit their elements in
different orders (a sum down columns of a row-major product) and then never share a kernel.

Substitution has a bound, as Inductor's ``realize_*_threshold`` s have (torch/_inductor/config.py,
``has_large_inner_fn`` and ``should_realize_on_reuse`` in ir.py): without one, a recurrence's
backward substitutes producers into producers through every step, each body holds every step's
before it and compiling is quadratic in the steps (and recursion-deep). :data:`LIMITS` keeps a
producer a buffer when its body is large (it would be recomputed at full size in each reader),
or when it is recomputed in several readers and reads many buffers or holds many ops.
"""

from __future__ import annotations

import logging
from typing import Iterable, Sequence

import sympy

from .dependencies import visits_every_point
from .ir import Buffer, ComputedBuffer, MemoryDep, Pointwise, inline_producers, substitutions
from .ir.inline import IndexTooLarge, index_size_limit
from .loop_order import pick_loop_order
from .sizevars import FloorDiv, ModularIndexing, same

log = logging.getLogger(__name__)


def shares_loops(producer: ComputedBuffer, consumer: ComputedBuffer) -> bool:
    """Could the scheduler put ``producer`` in ``consumer``'s kernel? (the loop sizes of
    ``fusion.tile``: the same elements, or, next to a reduction over ``n x r``, ``n`` or
    ``n * r`` of them)."""
    numel = producer.get_numel()
    sizes, rsizes = consumer.get_ranges()
    n, r = sympy.Mul(*sizes), sympy.Mul(*rsizes)
    return same(numel, n) or (bool(rsizes) and same(numel, n * r))


def reads_permuted(producer: ComputedBuffer, consumer: ComputedBuffer) -> bool:
    """Does pointwise ``consumer`` read ``producer`` (dense) other than at its own flat
    iteration number? (a ``clone`` of a permute: at each point it reads an element that another
    point computes, so the scheduler cannot put the two in one loop; the query/key/value
    gradients stacked, then permuted, in attention's backward). Both loop in their stores'
    order (``loop_order.pick_loop_order``), so the producer computes the element at offset
    ``k`` at its iteration ``k``: the consumer reads in step when it reads offset ``k`` at its
    own iteration ``k``. A reduction's loops are reordered to fit (``loop_order.py``), but not
    cut across the producer's dims (``reads_across_dims``)."""
    rw = consumer.get_read_writes()
    if consumer.get_ranges()[1]:
        return reads_across_dims(producer, consumer)
    order = pick_loop_order(rw)
    sizes = [rw.var_ranges[v] for v in order]
    flat = sum((v * sympy.Mul(*sizes[k + 1:]) for k, v in enumerate(order)), sympy.Integer(0))
    return any(isinstance(d, MemoryDep) and not same(d.index, flat)
               for d in rw.reads if d.name == producer.get_name())


def reads_across_dims(producer: ComputedBuffer, consumer: ComputedBuffer) -> bool:
    """Does reduction ``consumer`` walk ``producer`` with loops that are not its dims? A split
    reduction's chunk of a flat reduced index (``split_reduction``) steps by a chunk, not by a
    dim's stride, or unflattens it with ``//`` and ``%``: no order of its loops is the
    producer's, so the two never share a kernel (a channels-last batch norm's split sum of
    ``x * x`` wrote ``x * x`` to memory to read it back once)."""
    strides = {int(s) for s in producer.get_stride() if sympy.sympify(s).is_number}
    rw = consumer.get_read_writes()
    loops = {v for v, size in rw.var_ranges.items() if size != 1}
    for dep in rw.reads:
        if dep.name != producer.get_name() or not isinstance(dep, MemoryDep):
            continue
        if any(term.free_symbols & loops for term in dep.index.atoms(FloorDiv, ModularIndexing)):
            return True
        steps = {sympy.expand(dep.index).coeff(v) for v in loops & dep.index.free_symbols}
        if any(not (step.is_number and int(step) in strides) for step in steps):
            return True
    return False


def full_reads(producer: ComputedBuffer) -> set[str]:
    """The buffers ``producer`` reads at every point of its loops; not one it reads broadcast
    (an index without some loop variable of size > 1: a per-channel mean, a row's max), whose
    few elements stay in cache whichever kernel reads them."""
    return {d.name for d in producer.get_read_writes().reads
            if not isinstance(d, MemoryDep) or visits_every_point(d)}


def recompute_everywhere(producer: ComputedBuffer, readers: list[Buffer]) -> bool:
    """Substitute ``producer`` into all its readers, even those over the same loops? Yes when
    it reads at most one buffer in full and has several readers, all loop nests: each reader
    then reads that buffer at the elements it needs (never more than it would read of the
    producer), and the producer is never written. ``(x**2).mean(0), (x**2).mean(1)``: two
    kernels, each reads x; no kernel writes x**2 for the other to read back. ``x - mean`` with a
    broadcast mean too: a batch norm's centred values, read by its variance and its output,
    were written by the one kernel and read back by the other."""
    return (len(readers) > 1 and all(isinstance(r, ComputedBuffer) for r in readers)
            and len(full_reads(producer)) <= 1)


def sole_reduction_reader(producer: ComputedBuffer, readers: list[Buffer]) -> bool:
    """Substitute ``producer`` into its one reader, a reduction, even over the same loops? Yes
    when it reads at most two buffers in full: in the reduction it costs at most two reads,
    against a write and a read as a buffer. Over the same elements the two share a kernel
    only when they visit them in one order; a sum over rows (a column sum) and its row-major
    producer do not, and the producer then joins some other kernel that writes it. A layer
    norm's weight gradient ``(grad * xhat).sum(0)``: the input gradient's kernel wrote
    ``grad * xhat`` for the column sum to read back; substituted, the column sum reads grad and
    x, and shares its read of grad with the bias gradient's ``grad.sum(0)``."""
    return (len(readers) == 1 and isinstance(readers[0], ComputedBuffer)
            and bool(readers[0].get_ranges()[1]) and len(full_reads(producer)) <= 2)


# Inductor's names and defaults (CPU op count: ``realize_cpu_opcount_threshold`` is 50 and the
# GPU's 30; one value serves both backends here)
REALIZE_OPCOUNT_THRESHOLD = 100  # ops in a body past which it is never substituted (graph.py)
REALIZE_REUSE_OPCOUNT_THRESHOLD = 30  # ... recomputed in several readers (``has_large_inner_fn``)
REALIZE_READS_THRESHOLD = 4  # buffers read past which a body recomputed in several readers stays
# ops past which a reader takes no more substitutions (Inductor realizes such a consumer:
# ``realize_acc_reads_threshold``, counted in reads there; ops bound the body's size directly)
REALIZE_ACC_OPCOUNT_THRESHOLD = 2 * REALIZE_OPCOUNT_THRESHOLD
# producers substituted into one body: how deep its evaluation may nest (a chain of copies or
# views is a load per level and no op, so the op counts do not bound it; Python's stack does)
MAX_SUBSTITUTIONS = 32
# operations in an index at which a substituted load stops being substituted: with symbolic
# sizes an index can nest a level deeper per producer and grow exponentially (``ir/inline.py``);
# the largest index the test suites substitute at holds under 100
MAX_INDEX_OPS = 200


def room_for(reader: ComputedBuffer, producer: ComputedBuffer) -> bool:
    """May ``producer``'s body go into ``reader``'s without the sum passing the bounds?"""
    return (reader.get_read_writes().num_ops + producer.get_read_writes().num_ops
            <= REALIZE_ACC_OPCOUNT_THRESHOLD
            and substitutions(reader) + 1 + substitutions(producer) <= MAX_SUBSTITUTIONS)


def too_large(producer: ComputedBuffer, recomputed_in: int) -> str | None:
    """Why ``producer`` must stay a buffer rather than be substituted into ``recomputed_in``
    readers, or None (each row of the table: (applies, reason))."""
    rw = producer.get_read_writes()
    ops, reads = rw.num_ops, len(rw.read_names())
    limits = [
        (ops > REALIZE_OPCOUNT_THRESHOLD, f"{ops} ops > {REALIZE_OPCOUNT_THRESHOLD}"),
        (recomputed_in > 1 and ops > REALIZE_REUSE_OPCOUNT_THRESHOLD,
         f"recomputed in {recomputed_in} readers with {ops} ops > "
         f"{REALIZE_REUSE_OPCOUNT_THRESHOLD}"),
        (recomputed_in > 1 and reads > REALIZE_READS_THRESHOLD,
         f"recomputed in {recomputed_in} readers reading {reads} buffers > "
         f"{REALIZE_READS_THRESHOLD}"),
    ]
    return next((reason for applies, reason in limits if applies), None)


def inlinable(node: Buffer, output_names: set[str]) -> bool:
    return (isinstance(node, ComputedBuffer) and isinstance(node.data, Pointwise)
            and node.get_name() not in output_names and node.layout.offset == 0
            and node.layout.is_dense()
            and not node.get_mutation_names())  # a write in place (ir/mutation.py) stays one


def inline_unfusable_producers(nodes: Sequence[Buffer],
                               output_names: Iterable[str]) -> list[Buffer]:
    """``nodes`` (program order) with every pointwise producer substituted into the loop
    consumers it cannot share loops with; a producer nobody reads any more is dropped.

    Later producers go first, so a chain of views over views (``(x * 2)[::2][:, 0]``) collapses
    into its last consumer. Consumers are replaced by copies: the lowered graph is unchanged.
    """
    outputs = set(output_names)
    nodes = list(nodes)
    overwritten = {m for n in nodes for m in n.get_mutation_names()}
    reads = [n.get_read_writes().read_names() for n in nodes]  # refreshed when a node changes
    readers_of: dict[str, set[int]] = {}  # buffer name -> positions of the nodes reading it
    for k, names in enumerate(reads):
        for name in names:
            readers_of.setdefault(name, set()).add(k)
    dropped: set[int] = set()
    for pos in range(len(nodes) - 1, -1, -1):
        producer = nodes[pos]
        if not inlinable(producer, outputs) or reads[pos] & overwritten \
                or producer.get_name() in overwritten:
            # (a value that a write in place overwrites must be read before that write: its
            # readers may run after it, so it stays a buffer the write waits for; and the
            # storage a scatter writes into stays one: ``lowerings/scatter.py``)
            continue
        name = producer.get_name()
        readers = sorted(k for k in readers_of.get(name, ()) if k > pos and k not in dropped)
        reader_nodes = [nodes[k] for k in readers]
        everywhere = recompute_everywhere(producer, reader_nodes) \
            or sole_reduction_reader(producer, reader_nodes)
        inlined = [k for k in readers if isinstance(nodes[k], ComputedBuffer)
                   and (everywhere or not shares_loops(producer, nodes[k])
                        or (len(readers) == 1 and reads_permuted(producer, nodes[k])))
                   and room_for(nodes[k], producer)]
        if inlined:
            # recomputed: in each reader it goes into, and once more when it stays a buffer
            why = too_large(producer, len(inlined) + (len(inlined) < len(readers)))
            if why is not None:
                log.debug("kept %s a buffer: %s", name, why)
                continue
        for k in list(inlined):
            candidate = inline_producers(nodes[k], [producer])
            try:
                with index_size_limit(MAX_INDEX_OPS):  # the body's first evaluation
                    candidate.get_read_writes()
            except IndexTooLarge as e:
                log.debug("kept %s a buffer for %s: %s", name, nodes[k].get_name(), e)
                inlined.remove(k)
                continue
            nodes[k] = candidate
            for gone in reads[k]:
                readers_of[gone].discard(k)
            reads[k] = nodes[k].get_read_writes().read_names()
            for read in reads[k]:
                readers_of.setdefault(read, set()).add(k)
        if inlined:
            # read by nobody now? (asked of the readers' reads, not assumed from the count: a
            # Scatter's destination index, ``output_indexer``, loads outside its body and keeps
            # reading the buffer after its body took the producer in)
            gone = not any(name in reads[k] for k in readers)
            if gone:
                dropped.add(pos)
            log.debug("inlined %s into %s%s", name,
                      ", ".join(nodes[k].get_name() for k in inlined), "; dropped" if gone else "")
    return [n for k, n in enumerate(nodes) if k not in dropped]


__all__ = ["full_reads", "inline_unfusable_producers", "recompute_everywhere", "shares_loops",
           "sole_reduction_reader", "too_large"]
