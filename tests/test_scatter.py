"""Scatter kernels (minicompile/inductor/lowerings/scatter.py, ``ir.Scatter``): ``index_put``,
``index_add``, ``scatter``, ``scatter_add`` and ``scatter_reduce`` as a copy of the destination
and a kernel writing at the indices it reads, adding atomically where duplicates accumulate.
Eager is the oracle on every CPU backend (on the GPU, on Triton); each test also checks that the
kernel ran, not ATen (a fallback would pass any comparison)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc

def fallbacks(graphs) -> list:
    return [f for g in graphs for f in g.graph.fallbacks]


def check(fn, args, kernel_backend, fallback: str | None = None, kind: str = "Scatter", **tol):
    """``fn`` compiled matches eager; its scatters ran as kernels of ``kind`` (or, with
    ``fallback``, fell back to ATen with a reason containing it)."""
    _, graphs = kernel_backend
    expected = fn(*[a.clone() for a in args])
    got = mc.compile(fn, backend="inductor")(*[a.clone() for a in args])
    torch.testing.assert_close(got, expected, **tol)
    assert graphs and mc.metrics.eager_fallbacks == 0
    if fallback is None:
        assert not fallbacks(graphs), fallbacks(graphs)
        assert kind in "\n".join(b.describe() for g in graphs for b in g.graph.buffers
                                  if hasattr(b, "describe"))
    else:
        assert any(fallback in reason for _, reason in fallbacks(graphs)), fallbacks(graphs)
    return graphs


def rows(n, m):  # indices into n rows, with duplicates and negative ones (they count from the end)
    return torch.randint(-n, n, (m,))


def _put_acc(x, i, v):
    return torch.index_put(x, (i,), v, accumulate=True) * 2


def _put(x, i, v):
    return torch.index_put(x, (i,), v) + 1


def _put_columns(x, i, v):  # x[:, i] = v, the index tensor in the second dim
    y = x * 1
    y[:, i] = v
    return y


def _put_two(x, i, j, v):  # x[i, j] += v, the index tensors broadcast to (5, 4)
    return torch.index_put(x, (i, j), v, accumulate=True)


CASES = {  # name -> (fn, args)
    "index_put_accumulate_duplicates": (_put_acc, lambda: (torch.randn(37, 13), rows(37, 50),
                                                           torch.randn(50, 13))),
    "index_put_broadcast_values": (_put_acc, lambda: (torch.randn(37, 13), rows(37, 9),
                                                      torch.randn(13))),
    "index_put_distinct": (_put, lambda: (torch.randn(37, 13), torch.randperm(37)[:20] - 20,
                                          torch.randn(20, 13))),
    "index_put_columns": (_put_columns, lambda: (torch.randn(7, 31), torch.randperm(31)[:5],
                                                 torch.randn(7, 5))),
    "index_put_two_tensors": (_put_two, lambda: (torch.randn(11, 9), torch.randint(0, 11, (5, 1)),
                                                 torch.randint(-9, 9, (1, 4)), torch.randn(5, 4))),
    "index_add_dim0": (lambda x, i, s: x.index_add(0, i, s, alpha=0.5) + 1,
                       lambda: (torch.randn(37, 13), torch.randint(0, 37, (60,)),
                                torch.randn(60, 13))),
    "index_add_dim1": (lambda x, i, s: x.index_add(1, i, s),
                       lambda: (torch.randn(13, 37).t().contiguous().t(),  # column-major x
                                torch.randint(0, 37, (60,)), torch.randn(13, 60))),
    "scatter_add_cols": (lambda x, i, s: x.scatter_add(1, i, s),
                         lambda: (torch.randn(17, 40), torch.randint(0, 40, (17, 20)),
                                  torch.randn(17, 20))),
    "scatter_many_slots": (lambda x, i, s: x.scatter(0, i, s) * 3,  # 12 slots: not a gather
                           lambda: (torch.randn(30, 5), torch.randperm(30)[:12].view(12, 1)
                                    .expand(12, 4), torch.randn(14, 6))),
    "scatter_value_small_index": (lambda x, i: x.scatter(1, i, 2.5),
                                  lambda: (torch.randn(6, 9), torch.randint(0, 9, (4, 3)))),
    "scatter_reduce_sum": (lambda x, i, s: x.scatter_reduce(0, i, s, "sum"),
                           lambda: (torch.randn(10, 4), torch.randint(0, 10, (25, 4)),
                                    torch.randn(25, 4))),
    # the first scatter's storage lives on until the sum reads its result, not only until the
    # scatter wrote into it: the second's zeros may not be made in it
    "two_scatters_added": (lambda i, s: torch.zeros(10, 6).index_add(0, i, s)
                           + torch.zeros(10, 6).index_put((i,), s * 2, accumulate=True),
                           lambda: (torch.randint(0, 10, (6,)), torch.randn(6, 6))),
    # every dim of size 1: the store's address loses its loaded index, and still the scatter
    # must not share a kernel with the copy it writes into
    "index_put_one_element": (lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True)
                              .reshape(1, -1) * 2,
                              lambda: (torch.randint(0, 5, (1, 1)), torch.tensor([0]),
                                       torch.randint(0, 5, (1,)))),
    "index_put_int64": (lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True),
                        lambda: (torch.randint(-9, 9, (20,)), torch.randint(0, 20, (40,)),
                                 torch.randint(-9, 9, (40,)))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_scatter_matches_eager(name, kernel_backend):
    fn, make = CASES[name]
    check(fn, make(), kernel_backend, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("accumulate", [False, True])
def test_a_boolean_mask_with_one_value_is_a_select(accumulate, kernel_backend):
    """``x[mask] = v``: ``where(mask, v, x)``, a pointwise kernel (no ``nonzero``)."""
    fn = lambda x, m: torch.index_put(x, (m,), torch.tensor(-1.5), accumulate) * 2  # noqa: E731
    check(fn, (torch.randn(9, 4, 3), torch.randn(9, 4) > 0), kernel_backend, kind="Pointwise")


def test_bfloat16_accumulates_where_the_backend_has_an_atomic_add(kernel_backend):
    """bf16 adds atomically in C++ (a compare-and-swap) and in Triton on sm90; under Triton's
    interpreter it has none: there it falls back, and says so."""
    name, _ = kernel_backend
    x = torch.randn(64, 32, dtype=torch.bfloat16)
    i, s = torch.randint(0, 64, (16,)), torch.randn(16, 32, dtype=torch.bfloat16)
    no_atomic = name == "triton" and not (x.is_cuda and torch.cuda.get_device_capability()[0] >= 9)
    check(lambda x, i, s: x.index_add(0, i, s), (x, i, s), kernel_backend,
          fallback="no atomic add" if no_atomic else None, atol=2e-2, rtol=2e-2)


def test_bool_accumulation_falls_back_with_its_reason(kernel_backend):
    x, i, v = torch.zeros(6, dtype=torch.bool), torch.tensor([0, 2, 2]), torch.tensor(True)
    check(lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True), (x, i, v),
          kernel_backend, fallback="no atomic add")


def test_deterministic_mode_falls_back_with_its_reason(kernel_backend):
    x, i, s = torch.randn(10, 3), torch.tensor([1, 1, 4]), torch.randn(3, 3)
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        check(lambda x, i, s: x.index_add(0, i, s), (x, i, s), kernel_backend,
              fallback="deterministic")
    finally:
        torch.use_deterministic_algorithms(before)


# --- where the scatter writes: in place when nothing else reads the destination -----------------

def test_an_intermediate_read_later_is_copied_first(kernel_backend):
    """``y`` (a buffer: row sums) is read after the scatter: writing into ``y`` itself would
    change that read."""
    def fn(x, i, v):
        y = x.sum(2)
        return torch.index_put(y, (i,), v, accumulate=True) + y
    check(fn, (torch.randn(9, 4, 3), torch.tensor([1, 1, 7]), torch.randn(3, 4)), kernel_backend)


def test_an_intermediate_only_the_scatter_reads_is_written_in_place(kernel_backend):
    """A buffer nothing but the scatter reads (a row sum here) takes the scatter itself: no copy
    of it is made first."""
    _, graphs = kernel_backend
    fn = lambda x, i, s: x.sum(2).index_add(0, i, s) * 2  # noqa: E731
    check(fn, (torch.randn(50, 8, 3), torch.randint(0, 50, (30,)), torch.randn(30, 8)),
          kernel_backend)
    buffers = graphs[0].graph.buffers
    scatter = next(b for b in buffers if "Scatter" in b.describe())
    assert "Reduction(sum)" in graphs[0].graph.get_buffer(scatter.mutated).describe()
    pointwise = [b for b in buffers if b.describe().endswith("= Pointwise")]
    assert len(pointwise) == 1  # the ``* 2``; a copy of the sums would be another


def test_an_input_updated_in_place_takes_the_scatter(kernel_backend):
    """``x.index_add_(...)``: the kernel adds into ``x`` itself (no copy back); duplicates add."""
    def fn(x, i, s):
        x.index_add_(0, i, s)
    x, i, s = torch.randn(20, 6), torch.tensor([3, 3, 3, 19, 0]), torch.randn(5, 6)
    mine, ref = x.clone(), x.clone()
    mc.compile(fn, backend="inductor")(mine, i, s)
    fn(ref, i, s)
    torch.testing.assert_close(mine, ref)
    _, graphs = kernel_backend
    graph = graphs[0].graph
    assert not fallbacks(graphs)
    assert any(getattr(b, "mutated", None) in graph.graph_inputs and "Scatter" in b.describe()
               for b in graph.buffers)


# --- training through scatters and gathers ------------------------------------------------------

def _grads(fn, *args):
    leaves = [a.detach().clone().requires_grad_(a.is_floating_point()) for a in args]
    fn(*leaves).pow(2).sum().backward()
    return [a.grad for a in leaves if a.requires_grad]


@pytest.mark.parametrize("fn", [
    lambda x, i, v: torch.index_put(x * 1.5, (i,), v.sin(), accumulate=True),
    lambda x, i, v: x.index_add(0, i, v * 2).tanh(),
    lambda x, i, v: F.embedding(i, x).mul(v).sum(0),  # backward: zeros().index_put(acc=True)
], ids=["index_put", "index_add", "embedding"])
def test_training_through_a_scatter(fn, kernel_backend):
    x, i, v = torch.randn(12, 5), torch.tensor([0, 3, 3, 11, 3, -12 + 12]), torch.randn(6, 5)
    compiled = mc.compile(fn, backend="inductor")
    for got, want in zip(_grads(compiled, x, i, v), _grads(fn, x, i, v)):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    _, graphs = kernel_backend
    assert mc.metrics.eager_fallbacks == 0 and not fallbacks(graphs)


@pytest.mark.cpu_only  # on a GPU eager's check is a device-side assert: it ends the CUDA context
def test_index_add_into_an_empty_dim_raises_eagers_error(kernel_backend):
    """Eager raises IndexError there (its RuntimeError is for an index out of a non-empty dim)."""
    fn = lambda x, i, s: x.index_add(0, i, s)  # noqa: E731
    args = (torch.zeros(0), torch.tensor([3]), torch.ones(1))
    with pytest.raises(IndexError):
        fn(*args)
    with pytest.raises(IndexError):
        mc.compile(fn, backend="inductor")(*args)


@pytest.mark.cpu_only  # (on a GPU an index check is a device-side assert, as eager's)
def test_a_scatter_of_no_elements_checks_no_index(kernel_backend):
    """Nothing is written into a (1, 0) tensor, and eager checks no index then (not even -2)."""
    fn = lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True) + 1  # noqa: E731
    args = (torch.zeros(1, 0, dtype=torch.int64), torch.tensor([-2]), torch.tensor(3))
    torch.testing.assert_close(mc.compile(fn, backend="inductor")(*args), fn(*args))
