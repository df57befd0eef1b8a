"""The reference backend: runs each kernel object with torch ops over blocks of rows, no code
generated (no counterpart in torch/_inductor: Inductor only runs generated code; this is the
oracle the generated kernels are tested against, and the backend for a device nothing else
supports).

It runs a kernel the way a generated kernel does, so that the scheduler's decisions are checked by
running them: the kernel walks its rows ``BLOCK_ROWS`` at a time (as a Triton program owns
``XBLOCK`` rows); within a block ``xindex`` is a column ``(B, 1)`` of row numbers and ``rindex`` a
row ``(1, R)`` of element numbers, so an element-level value is a ``(B, R)`` tensor and a row-level
one a ``(B, 1)`` tensor. Members run in program order; a value stored into a kernel-local buffer
exists only as that tensor, handed to its readers (``common.KernelBodyHandler``), and is gone when
the block ends. A fusion that lets a member read another row's local value therefore computes a
wrong answer instead of quietly reading memory.
"""

from __future__ import annotations

from typing import Any

import torch

from ..executor import TorchHandler, write_flat
from ..index_eval import eval_index
from ..kernel_group import RINDEX, XINDEX, KernelGroup
from .common import BaseScheduling, KernelSignature, emit_members
from .wrapper import flat_storage

BLOCK_ELEMENTS = 1 << 16  # elements of (rows x row length) per block


class BlockHandler(TorchHandler):
    """``TorchHandler`` over one block: shapes broadcast between (B, 1) rows and (B, R) elements."""

    level = "element"  # the level of the member running (``ReferenceKernel`` sets it)

    def store(self, name: str, index, value, mode: str | None = None) -> None:
        idx = self._index(index)
        value = torch.as_tensor(value)
        if mode == "atomic_add":  # every point of the member's loop adds once, even where the
            # index and the value are the same for all of them (a constant: x[[0, 0]] += v)
            points = torch.empty(self.full_shape if self.level == "element" else self.store_shape,
                                 device=self.device)
            idx, value, _ = torch.broadcast_tensors(idx, value, points)
        idx, value = torch.broadcast_tensors(idx, value)
        out = self.buffers[name]
        write_flat(out, idx.reshape(-1), value.reshape(-1).to(out.dtype), mode)


class ReferenceKernel:
    """A callable kernel: ``kernel(*buffers, *sizes)`` as the wrapper calls it."""

    def __init__(self, group: KernelGroup, name: str):
        self.group, self.name = group, name
        self.signature = KernelSignature.of(group)

    def __call__(self, *args: Any) -> None:
        n_buf = len(self.signature.buffers())
        # a buffer argument starts its storage; the executor indexes that storage flat
        buffers = dict(zip(self.signature.buffers(), map(flat_storage, args[:n_buf])))
        sizes = dict(zip(self.signature.sizes, args[n_buf:]))
        numel = int(eval_index(self.group.numel, sizes))
        rnumel = int(eval_index(self.group.rnumel, sizes))
        block = max(1, BLOCK_ELEMENTS // max(rnumel, 1))
        device = args[0].device if n_buf else torch.device("cpu")
        rindex = torch.arange(rnumel, device=device).view(1, -1)
        for start in range(0, numel, block):
            xindex = torch.arange(start, min(numel, start + block), device=device).view(-1, 1)
            env: dict = dict(sizes)
            env.update({XINDEX: xindex, RINDEX: rindex})
            handler = BlockHandler(buffers, env, [xindex.numel()], [rnumel])
            scope: dict = {}
            for member in self.group.members:  # (the level of the member whose stores run)
                handler.level = member.level
                emit_members([member], handler, self.group, scope)

    def source(self) -> str:
        """What the output code shows for a kernel that is not generated source."""
        sig = ", ".join(self.signature.call_args())
        lines = [f"{self.name}({sig}): run by the reference backend", *self.group.describe().split("\n")]
        return "".join(f"# {line}\n" for line in lines)


class ReferenceScheduling(BaseScheduling):
    """Runs kernel objects directly (``MINICOMPILE_CPU_BACKEND=reference``)."""

    name = "reference"

    def codegen_kernel(self, group: KernelGroup, wrapper: Any) -> None:
        name = wrapper.kernel_name("ref", group)
        kernel = ReferenceKernel(group, name)
        wrapper.define_kernel(name, kernel, kernel.source())
        wrapper.write_kernel_call(name, kernel.signature.call_args(), group)
