"""Small library calls on one thread: no counterpart in real Inductor, which leaves the thread
count to the library (compare ATen's own ``at::parallel_for``, aten/src/ATen/Parallel.h, which
runs work below ``at::internal::GRAIN_SIZE`` on the calling thread without waking the others).

A matrix product from MKL wakes the whole thread team however small it is. For a tiny one the
fork and join cost more than the second thread saves: on this 2-core machine
``addmm(b, x, w.t())`` for 8x64 @ 64x64 takes 4.5 us with two threads and 3.5 with one; the two
break even near 2^17 multiply-adds, and from 2^20 two threads are 1.3-1.7x faster. The wrapper
puts consecutive products below ``ONE_THREAD_MULTIPLY_ADDS`` in a region on one thread::

    threads = one_thread()  # the products below are small: one thread (no fork/join)
    try:
        buf0 = torch._addmm_activation(primals_2, primals_9, primals_1.t())
        buf1 = torch._addmm_activation(primals_4, buf0, primals_3.t())
    finally:
        restore_threads(threads)

Generated kernels leave the region first: they choose their own threads
(``cpp_loops.parallel_threshold``).

Only while this is the process's one Python thread. torch's thread count is process-wide: a
thread whose first torch call came during another's region would take one thread for good
(ATen sets a new thread's count from the last one set), and its guards, which check the count
as real Dynamo's do, would fail from then on. With other Python threads running (a server's
workers, a notebook kernel's own threads) the products keep every thread.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from ..lowerings.extern import multiply_adds

ONE_THREAD_MULTIPLY_ADDS = 1 << 16  # products smaller than this run on one thread


def one_thread() -> int:
    """Run on one thread from now on, if this is the only Python thread; returns the thread
    count to restore (0: nothing was changed)."""
    if threading.active_count() > 1:
        return 0
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    return threads


def restore_threads(threads: int) -> None:
    if threads:
        torch.set_num_threads(threads)


def is_small_product(node: Any) -> bool:
    """A CPU matrix product whose sizes are known and below ``ONE_THREAD_MULTIPLY_ADDS``."""
    layout = getattr(node, "layout", None)
    if layout is None or layout.device.type != "cpu":
        return False
    work = multiply_adds(node)
    return work is not None and work < ONE_THREAD_MULTIPLY_ADDS


class OneThreadRegions:
    """Writes the region's opening before the first small product of a run, and its end
    before anything else that computes (a generated kernel, a large product, the return)."""

    def __init__(self, body: Any):  # a WrapperBody (wrapper_lines.py)
        self.body, self.open = body, False

    def extern(self, node: Any) -> None:
        if not is_small_product(node):
            self.close()
        elif not self.open:
            self.body.writeline("threads = one_thread()  # the products below are small: "
                                "one thread (no fork/join)")
            self.body.writeline("try:")
            self.body.level += 1
            self.open = True

    def close(self) -> None:
        if self.open:
            self.body.level -= 1
            self.body.writeline("finally:")
            self.body.writeline("    restore_threads(threads)")
            self.open = False
