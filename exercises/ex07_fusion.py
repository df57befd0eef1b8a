"""Exercises for notebook 07: fusion, bytes moved, and memory planning.

Grade with ``bash course.sh grade -k 07``. Exercises 7.1 to 7.3 are pieces of
minicompile's scheduler (``minicompile/inductor/fusion.py``, ``scheduler.py``,
``memory_planning.py``) in a plain-data form; the checks compare your answers with the
scheduler's own on random cases and on real graphs. Exercise 7.4 is a fusion rule on the real
scheduler nodes: the scheduler runs with it, and the checks compile real functions with your rule
deciding the fusions.
"""

from __future__ import annotations

from minicompile.inductor.dependencies import rows_line_up
from minicompile.inductor.fusion import runs_per_row, tile
from minicompile.inductor.scheduler import BaseSchedulerNode


def kernel_tile(loops: list[tuple[int, int]]) -> tuple[int, int] | None:
    """Exercise 7.1: can these loop nests share one kernel, and over which loops?

    Each entry is one node's ``(numel, rnumel)``: a pointwise node over ``numel`` elements has
    ``rnumel == 1``; a reduction producing ``numel`` values, each from ``rnumel`` inputs, has
    ``rnumel > 1``. Return the kernel's tile ``(n, r)``, or None when they cannot share a kernel:

    - all reductions must have the same ``(numel, rnumel)``, which is then the tile; every
      pointwise node must cover ``n`` elements (an epilogue on the reduced values) or ``n * r``
      (a prologue, or an epilogue broadcast over the rows);
    - with no reduction, every pointwise node must have the same ``numel`` n: the tile is (n, 1).

    Examples: ``[(100, 1), (10, 10)] -> (10, 10)``, ``[(10, 10), (10, 1)] -> (10, 10)``,
    ``[(100, 1), (50, 1)] -> None``, ``[(10, 10), (100, 1), (5, 20)] -> None``.
    """
    raise NotImplementedError('Exercise 7.1: the common (n, r) tile of the loop nests, or None (roughly 9 lines)')


def bytes_moved(kernels: list[list[tuple[str, list[str]]]], numel: dict[str, int],
                outputs: set[str], itemsize: int = 4) -> int:
    """Exercise 7.2: the bytes a schedule reads and writes (``mc.metrics.num_bytes_accessed``).

    ``kernels`` lists the kernels in order; each kernel is a list of ``(buffer it computes,
    [buffers that node reads])``. Every read touches the whole buffer (``numel[name]``
    elements of ``itemsize`` bytes). A kernel

    - reads each buffer it does not compute itself once, however many of its nodes read it;
    - writes a buffer it computes only if the caller gets it (``outputs``) or another kernel
      reads it; anything else stays in registers and costs nothing.
    """
    raise NotImplementedError('Exercise 7.2: sum over kernels of outside buffers read once and stored buffers (roughly 9 lines)')


def plan_reuse(lifetimes: list[tuple[str, int, int, int]],
               n_steps: int) -> tuple[dict[str, str], int]:
    """Exercise 7.3: buffer reuse and peak memory (``memory_planning.assign_storage``).

    ``lifetimes`` holds ``(name, nbytes, first, last)``: the buffer is allocated when step
    ``first`` starts and dies after step ``last`` (``last == n_steps`` for outputs: never freed).
    Walk the steps ``0 .. n_steps - 1``:

    1. for each buffer (in list order) with ``first == step``: if a dead buffer with the same
       ``nbytes`` left its storage behind, take the most recently freed one (a stack: ``pop()``)
       and record its storage name; else allocate a new storage named after the buffer itself;
    2. the live bytes during the step are the sum of ``nbytes`` of the buffers alive now;
    3. for each buffer (in list order) with ``last == step``: push its storage name on the
       stack of free storages of its size, and it is no longer alive.

    Return ``({buffer: storage name}, peak live bytes)``.
    """
    raise NotImplementedError('Exercise 7.3: walk the steps with a free-storage stack per size; track the peak (roughly 15 lines)')


def reads_line_up(a: BaseSchedulerNode, b: BaseSchedulerNode) -> tuple[bool, str]:
    """Exercise 7.4: a fusion rule of the real scheduler (a row of ``fusion.RULES``).

    ``a`` and ``b`` are scheduler nodes (one node, or a ``FusedSchedulerNode`` of several),
    ``a`` first in program order, whose loops already fit one kernel tile ``(n, r)`` (the rule
    before this one checked that). Inside a kernel, a value one member computes reaches another
    member as a value in a register, never through memory: the member that reads it gets the
    value computed at the reader's own point of the loops. Decide whether that is the value the
    read asks for, for every read of a value that another member of the kernel computes.

    Return ``(True, "")`` when the two may share a kernel, else ``(False, reason)``, the
    reason naming the member and the read it cannot make. The scheduler calls your rule for
    every pair it considers, and the kernels it then generates are the ones your rule allowed.

    What you have: ``members = a.get_nodes() + b.get_nodes()``; ``tile(members)`` gives
    ``(n, r)``; each member has ``get_name()``, ``is_reduction()`` and ``read_writes.reads`` /
    ``read_writes.writes`` (``MemoryDep`` objects: ``dep.name`` is the buffer, the dep says
    which elements); ``runs_per_row(member, n, r)`` says whether a member makes one value per
    row of the tile rather than one per element; ``rows_line_up(write, read, rows)`` says
    whether every element that ``read`` loads was stored by ``write`` in the same one of
    ``rows`` equal slices of the kernel's loops.
    """
    raise NotImplementedError('Exercise 7.4: every value passed between members is the one the reader asks for (roughly 17 lines)')
