"""The Triton launcher's direct path (runtime/triton_heuristics.py: ``CompiledLaunch``): a binary
compiled for one specialization (16-byte aligned pointers, sizes that are multiples of 16, a size
of 1) must never be reused for arguments outside it."""

import pytest
import torch

import minicompile as mc
from minicompile.inductor.runtime.triton_heuristics import specialization

def test_specialization_separates_what_triton_compiles_apart():
    x = torch.zeros(64)
    assert specialization((x, 32)) != specialization((x[1:], 32))  # alignment of the pointer
    assert specialization((x, 32)) != specialization((x, 33))  # multiple of 16
    assert specialization((x, 1)) != specialization((x, 17))  # the size 1
    assert specialization((x, 32)) != specialization((x.double(), 32))  # dtype


@pytest.mark.gpu
def test_one_compiled_function_over_sizes_and_offsets():
    """Alternate specializations on one compiled graph: every call equals eager."""
    f = mc.compile(lambda x, y: torch.sin(x) * 2 + y, dynamic=True)
    base = torch.randn(5000, device="cuda")
    for n in (1024, 1000, 1, 4096, 37, 1024, 1000):
        for off in (0, 1, 4, 0):
            x, y = base[off:off + n], base[off + 7:off + 7 + n]
            torch.testing.assert_close(f(x, y), torch.sin(x) * 2 + y)


@pytest.mark.gpu
def test_reductions_over_sizes():
    f = mc.compile(lambda x: torch.softmax(x, -1) + x.sum(-1, keepdim=True), dynamic=True)
    for m, n in ((8, 64), (7, 33), (1, 1), (16, 1024), (3, 5000), (8, 64)):
        x = torch.randn(m, n, device="cuda")
        torch.testing.assert_close(f(x), torch.softmax(x, -1) + x.sum(-1, keepdim=True))
