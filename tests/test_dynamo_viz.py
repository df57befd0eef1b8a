"""The notebooks' pictures show what the compiler did: the bytecode listing lines up with the FX
nodes each instruction created, the guard flow with the cache, the buffer picture with the
loop IR's reads."""

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

pytest.importorskip("graphviz")  # minicompile.viz's package init imports it

import minicompile as mc  # noqa: E402
from minicompile.decompositions import decomposition_table  # noqa: E402
from minicompile.inductor.graph import GraphLowering  # noqa: E402
from minicompile.viz.bytecode import bytecode_and_graph  # noqa: E402
from minicompile.viz.guard_flow import draw_guard_flow  # noqa: E402
from minicompile.viz.loop_ir import draw_buffers  # noqa: E402


def helper(y):
    return y.cos()


def fn(x, y):
    z = x.sin() + 1
    return helper(z) * y


def test_nodes_are_attributed_to_their_instruction():
    table = bytecode_and_graph(fn, torch.randn(3), torch.randn(3))
    by_op = {}
    for row in table.rows:
        for node in row.nodes:
            by_op.setdefault(row.opname, []).append(node)
    assert any("sin" in n for n in by_op["CALL"])  # x.sin() was created by a CALL
    assert any("cos" in n and "helper" in n for n in by_op["CALL"])  # inlined call
    assert len(by_op["BINARY_OP"]) == 2  # + and *
    assert "<table" in table._repr_html_() and "L['x']" in str(table)


def test_guard_flow_draws_each_entry_and_why_it_was_compiled():
    """Notebook 02's picture of the cache: one guard per entry, in the order they are checked,
    chained by their failures, each later entry labelled with its recompile reason."""
    def fn(x):
        return x.relu()

    cfn = mc.compile(fn, backend="eager", dynamic=False)
    x = torch.randn(6, 3)
    cfn(x)
    cfn(x.double())
    source = draw_guard_flow(cfn).source
    assert "guard0 -> guard1 [label=fail]" in source and "guard1 -> miss [label=fail]" in source
    assert "guard2" not in source
    device = x.device.type  # cpu, or cuda under MINICOMPILE_TEST_DEVICE=cuda
    assert f"L['x']: float32[6, 3] {device}" in source and f"L['x']: float64[6, 3] {device}" in source
    run1 = next(line for line in source.splitlines() if line.strip().startswith("run1 "))
    assert "compiled because" in run1 and "dtype mismatch" in run1


def test_buffer_picture_labels_each_read_with_its_index():
    """Notebook 06's picture: an edge per read, the broadcast of y drawn as the index ``i1``."""
    def f(x, y):
        return (x * 2 + y).cos().sum(1) @ y[:4]

    graph = GraphLowering(make_fx(f, decomposition_table=decomposition_table)(
        torch.randn(4, 6), torch.randn(6))).run()
    edges = {line.strip() for line in draw_buffers(graph).source.splitlines() if "->" in line}
    assert "x_1 -> buf0 [label=\" 6*i0 + i1\"]" in edges
    assert "y_1 -> buf1 [label=\" i1\"]" in edges
    assert any(e.startswith("buf2 -> buf3") and "r0" in e for e in edges)  # the sum's reads
    reads = sum(len(b.get_read_writes().reads) for b in graph.buffers)
    assert len([e for e in draw_buffers(graph).source.splitlines() if "->" in e]) == reads
