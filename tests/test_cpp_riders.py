"""Column reductions riding along a row kernel in the C++ backend
(minicompile/inductor/codegen/cpp_riders.py): a layer norm's backward in one kernel, each
thread adding its rows into partial column sums, against eager."""

from __future__ import annotations

import re

import pytest
import torch

import minicompile as mc
from conftest import check_layer_norm_backward
from minicompile.inductor.codegen import cpp
from test_cpp_codegen import check, graphs  # noqa: F401 -- the C++ backend for every test

pytestmark = pytest.mark.cpu_only


def kernel_count(source: str) -> int:
    return len(re.findall(r'^extern "C"', source, re.MULTILINE))


@pytest.fixture(params=[1, 2], ids=lambda n: f"{n}threads")
def threads(request):
    """Each test on one thread and on two: a thread's partials, and their sum in thread order."""
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


@pytest.mark.parametrize("m, n", [(1024, 1024), (37, 300), (300, 37), (5, 7)], ids=str)
def test_layer_norm_backward_is_one_kernel(m, n, threads, graphs):
    """The input's gradient along the rows, and the weight's and bias's gradients (sums down
    the columns) riding along it: one kernel, its loads shared, the gradients eager's."""
    check_layer_norm_backward(m, n)
    assert mc.metrics.eager_fallbacks == 0
    backward = next(g for g in graphs if g.name.startswith("backward"))
    assert kernel_count(backward.source) == 1, backward.source
    assert "#pragma omp for" in backward.source and "_col[rindex]" in backward.source


@pytest.mark.parametrize("fn", [
    lambda x: (x.sum(1), x.sum(0)),  # both sums in one loop: the row sum's lanes and the riders
    lambda x: (x.softmax(1), x.amax(0), x.amin(0)),  # a max and a min ride the softmax's last loop
    lambda x: ((x * 2).sum(1), x.prod(0), (x > 1).any(0)),
], ids=["sums", "max_min", "prod_any"])
def test_other_reductions_ride(fn, threads, graphs):
    x = torch.randn(67, 129) * 0.1 + 1
    check(fn, x, graphs=graphs)
    assert kernel_count(graphs[0].source) == 1, graphs[0].source


def test_dynamic_sizes(threads, graphs):
    """The partials are sized at run time: one kernel serves every size."""
    fn = lambda x: (x.sum(1), x.sum(0))  # noqa: E731
    compiled = mc.compile(fn, backend="inductor", dynamic=True)
    for shape in ((8, 16), (33, 5), (129, 64)):
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x), fn(x))
    assert all(kernel_count(g.source) == 1 for g in graphs)


def test_a_column_kernel_reading_more_than_the_row_kernel_stays_apart(graphs):
    """A column sum of a buffer the row kernel does not read would add its reads to the row
    loop for nothing saved: the two kernels stay apart."""
    x, y = torch.randn(40, 50), torch.randn(40, 50)
    check(lambda x, y: (x.sum(1), y.sum(0)), x, y, graphs=graphs)
    assert kernel_count(graphs[0].source) == 2


def test_without_riding_the_kernels_are_two(graphs, monkeypatch):
    """``max_parts = 1`` (no run of two kernels) writes them apart, with the same values."""
    monkeypatch.setattr(cpp.CppScheduling, "max_parts", 1)
    x = torch.randn(40, 50)
    check(lambda x: (x.sum(1), x.sum(0)), x, graphs=graphs)
    assert kernel_count(graphs[0].source) == 2
