"""The ``ir_post_fusion`` artifact: the kernels a scheduler made, each with its loop nests and the
bytes it moves (mirrors the ``ir_post_fusion.txt`` that ``TORCH_COMPILE_DEBUG=1`` writes from
torch/_inductor/debug.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .scheduler import BaseSchedulerNode, Scheduler


def describe(scheduler: "Scheduler") -> str:
    """Kernels in order, each with its kind, members, bytes, and what is never stored."""
    out = []
    for i, k in enumerate(scheduler.kernels):
        r, w = scheduler.kernel_bytes(k)
        kind = "extern" if k.is_extern() else ("reduction" if k.is_reduction() else "pointwise")
        stored = set(scheduler.stored_buffers(k))
        kept = [n.get_name() for n in k.get_nodes() if n.get_name() not in stored]
        head = f"kernel {i} ({kind}): {', '.join(n.get_name() for n in k.get_nodes())}"
        head += f"  # read {r} B, write {w} B"
        if kept:
            head += f"; never stored: {', '.join(kept)}"
        out.append(head + "\n" + "\n".join("  " + member_text(n).replace("\n", "\n  ")
                                          for n in k.get_nodes()))
    return "\n\n".join(out)


def member_text(n: "BaseSchedulerNode") -> str:
    """A member's loop nest, with its loop order when fusion changed it (``loop_order.py``)."""
    text = str(n.node)
    if getattr(n, "is_reordered", lambda: False)():
        text = f"# loops reordered: {', '.join(map(str, n.loop_order()))} (outermost first)\n" + text
    return text
