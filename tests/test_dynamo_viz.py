"""The bytecode listing lines up with the FX nodes each instruction created."""

import pytest
import torch

pytest.importorskip("graphviz")  # minicompile.viz's package init imports it

from minicompile.viz.bytecode import bytecode_and_graph  # noqa: E402


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
