"""The course's artifact helpers return what the pipeline really made, checked against eager."""

import torch

from minicompile.course.artifacts import aten_graph
from minicompile.inductor.executor import GraphExecutor
from minicompile.inductor.graph import GraphLowering
from minicompile.viz.codegen import kernel_names, output_code, real_kernels, real_output_code


def softmax_rows(x, y):
    return torch.softmax(x * 2 + y, dim=-1)


def test_aten_graph_is_the_decomposed_graph_of_our_own_front_half():
    x, y = torch.randn(4, 6), torch.randn(6)
    gm = aten_graph(softmax_rows, x, y)
    targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert "aten._softmax.default" not in targets  # decomposed by minicompile's table
    # (ATen's CPU kernel over the last dim, which the decomposition follows, multiplies by 1/sum)
    normalise = ({"aten.reciprocal.default", "aten.mul.Tensor"} if x.device.type == "cpu"
                 else {"aten.div.Tensor"})
    assert {"aten.amax.default", "aten.exp.default"} | normalise <= targets
    torch.testing.assert_close(gm(x, y)[0], softmax_rows(x, y))


def test_aten_graph_with_symbolic_sizes_runs_at_every_size():
    gm = aten_graph(softmax_rows, torch.randn(4, 6), torch.randn(6), dynamic=True)
    graph = GraphLowering(gm).run()
    assert graph.buffers[-1].get_size()[0].free_symbols  # the row count is a symbol
    run = GraphExecutor(graph)
    for n, m in [(4, 6), (3, 11), (17, 2)]:
        x, y = torch.randn(n, m), torch.randn(m)
        (out,) = run(x, y)  # the ATen graph returns a list of outputs
        torch.testing.assert_close(out, softmax_rows(x, y))


def test_kernel_names_lists_the_fused_kernel_once():
    def softmax_scaled(x):
        return torch.softmax(x * 0.5, dim=-1)

    names = kernel_names(output_code(softmax_scaled, torch.randn(8, 32)))
    assert len(names) == 1  # defined once, called once: one name
    assert names[0].startswith(("cpp_fused_", "triton_")) and "exp" in names[0]


# real Inductor's output code, as its code generators write a kernel's definition
# (torch/_inductor/codegen/triton.py define_kernel: ``async_compile.triton({name!r}, '''``;
# codegen/cpp.py: ``async_compile.cpp_pybinding({arg_types!r}, r'''``)
TRITON_DEFINITION = """triton_per_fused__softmax_0 = async_compile.triton('triton_per_fused__softmax_0', '''
@triton.jit
def triton_per_fused__softmax_0(in_ptr0, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 8
''', device_str='cuda')
"""
CPP_DEFINITION = """cpp_fused__softmax_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
extern "C" void kernel(const float* in_ptr0, float* out_ptr0)
{
}
''')
"""


def test_real_kernels_reads_both_of_inductors_kernel_definitions():
    triton_ = real_kernels(TRITON_DEFINITION)
    assert list(triton_) == ["triton_per_fused__softmax_0"]
    assert triton_["triton_per_fused__softmax_0"].startswith("@triton.jit")
    assert list(real_kernels(CPP_DEFINITION)) == ["cpp_fused__softmax_0"]


def test_real_kernels_finds_the_kernel_real_inductor_writes_here():
    def softmax_scaled(x):
        return torch.softmax(x * 0.5, dim=-1)

    kernels = real_kernels(real_output_code(softmax_scaled, torch.randn(8, 32)))
    assert len(kernels) == 1 and "exp" in next(iter(kernels.values()))
