"""compile_fx_inner (minicompile/inductor/compile_fx.py): which graphs get kernels, and which
run as they are, saying why."""

import torch

import minicompile as mc


def test_meta_tensors_run_the_graph_through_torchs_meta_kernels_with_a_reason():
    """Meta tensors hold no data: there is no kernel to write (the first compile under ``with
    torch.device("meta")`` raised "0 active drivers" from Triton). The graph runs eagerly,
    through torch's meta kernels, as torch.compile's does: eager's shapes and dtypes, forward
    and backward, and the reason is counted."""
    def f(x, w):
        return (x @ w).relu().sum(-1) * 2

    mc.reset()
    mc.metrics.reset()
    with torch.device("meta"):
        x, w = torch.randn(3, 4), torch.randn(4, 5, requires_grad=True)
        out = mc.compile(f, backend="inductor")(x, w)
        expected = f(x, w)
        assert (out.device.type, out.shape, out.dtype) == ("meta", expected.shape, expected.dtype)
        out.sum().backward()
        assert w.grad is not None and w.grad.device.type == "meta" and w.grad.shape == w.shape
    assert any("meta tensors hold no data" in r for r in mc.metrics.fallback_reasons), \
        mc.metrics.fallback_reasons
    mc.reset()
