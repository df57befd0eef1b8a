"""The kernels of a graph as a graph of their own: which kernel writes each buffer, which
kernels read what another writes, whether a path joins two kernels through a third, and an order
that runs every kernel after those it reads from (in real Inductor: the scheduler's
``BaseSchedulerNode.ancestors`` and ``will_fusion_create_cycle`` in torch/_inductor/scheduler.py).

Each is one pass over the kernels' read and write sets, or one search: fusion asks for a path
between the two kernels of every candidate pair, and a backward graph can have thousands of
kernels (a ``cumprod``'s backward, traced by torch 2.11, is 2,700 nodes). Every kernel's
reachable set, recomputed for each pair, took minutes there.
"""

from __future__ import annotations

from typing import Any

Kernel = Any  # a BaseSchedulerNode


def writers(kernels: list[Kernel]) -> dict[str, Kernel]:
    """Buffer -> the first of ``kernels`` that writes it."""
    return {name: k for k in reversed(kernels) for name in k.get_names()}


def kernel_deps(kernel: Kernel, writer_of: dict[str, Kernel]) -> set[Kernel]:
    """The other kernels that write a buffer ``kernel`` reads."""
    deps = {writer_of.get(name) for name in kernel.read_names()}
    return {d for d in deps if d is not None and d is not kernel}


def readers(kernels: list[Kernel]) -> dict[Kernel, set[Kernel]]:
    """``readers[k]``: the kernels that read what ``k`` writes."""
    writer_of = writers(kernels)
    out: dict[Kernel, set[Kernel]] = {k: set() for k in kernels}
    for k in kernels:
        for d in kernel_deps(k, writer_of):
            out[d].add(k)
    return out


def merge(readers_of: dict[Kernel, set[Kernel]], a: Kernel, b: Kernel, fused: Kernel) -> None:
    """Update ``readers_of`` in place for ``a`` and ``b`` fused into ``fused`` (one pass over
    the kernels' reader sets, instead of rebuilding them from every kernel's reads)."""
    out = (readers_of.pop(a) | readers_of.pop(b)) - {a, b}
    for readers in readers_of.values():
        if a in readers or b in readers:
            readers -= {a, b}
            readers.add(fused)
    readers_of[fused] = out


def path_between(readers_of: dict[Kernel, set[Kernel]], src: Kernel, dst: Kernel) -> bool:
    """Is there a path ``src -> k -> ... -> dst`` through a kernel ``k`` other than ``dst``?"""
    stack = [k for k in readers_of[src] if k is not dst]
    seen = set(stack)
    while stack:
        for k in readers_of[stack.pop()]:
            if k is dst:
                return True
            if k not in seen:
                seen.add(k)
                stack.append(k)
    return False


def topological_order(kernels: list[Kernel]) -> list[Kernel]:
    """Kernels after the kernels they read from; program order breaks ties."""
    writer_of = writers(kernels)
    deps = {k: kernel_deps(k, writer_of) for k in kernels}
    done: list[Kernel] = []
    finished: set[Kernel] = set()
    pending = sorted(kernels, key=lambda k: k.order())
    while pending:
        ready = next(k for k in pending if deps[k] <= finished)
        done.append(ready)
        finished.add(ready)
        pending.remove(ready)
    return done
