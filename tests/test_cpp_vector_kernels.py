"""C++ kernels written so that g++ vectorises them (minicompile/inductor/codegen/cpp_loops.py,
cpp_ops.py, cpp_prefix.h): argmax and argmin in vector lanes. Each strategy is checked in
the generated source (a scalar loop that passes would prove nothing) and against eager on the
cases a wrong lane merge, a wrong start or a wrong order gets wrong: ties across lanes, NaN in
the lanes and in the tail, rows of -inf, rows shorter than the lanes."""

from __future__ import annotations

import pytest
import torch

from test_cpp_codegen import check, graphs, pytestmark  # noqa: F401  (the C++ backend, eager's values)

INF, NAN = float("inf"), float("nan")


def source(graphs) -> str:
    return "\n".join(g.source for g in graphs)


# --- argmax and argmin in lanes (cpp_loops.arg_lanes) ---------------------------------------------

def arg_rows(n: int, dtype=torch.float32) -> torch.Tensor:
    """Rows where the lanes' merge decides the answer (lane w sees positions w, w + W, ...)."""
    x = torch.randn(9, n).to(dtype)
    x[0, :] = 2.0  # all tied: position 0, in lane 0
    x[1, 3] = x[1, n - 1] = 50.0  # a tie between lane 3 and the last lane (or the tail)
    x[2, n // 2] = NAN  # a NaN beats every number
    x[2, n - 1] = NAN  # ... and the first NaN wins
    x[3, n - 1] = NAN  # a NaN in the tail, after the lanes
    x[4, :] = -INF  # argmax of -inf: the first; argmin of it too
    x[5, :] = INF
    x[6, 1::2] = 7.0  # ties in every odd lane: position 1
    x[7, 33:] = -7.0  # argmin's tie: the first of them, in the second block of lanes
    x[8, 0] = NAN  # a NaN at the first position: the lane's start must not hide it
    return x


@pytest.mark.parametrize("n", [5, 16, 31, 32, 33, 64, 100, 513])
def test_argmax_and_argmin_keep_values_and_positions_in_lanes(n, graphs):
    """A row's argmax keeps a value and a position per lane (``acc0_v``, ``acc0_i``), merged in
    argmax's order at the end of the row (a NaN first, then the larger value, then the earlier
    position); rows of every length: in lanes and a tail, the tail alone, shorter than the
    lanes (no lanes, a plain loop)."""
    x = arg_rows(n)
    check(lambda x: (x.argmax(1), x.argmin(1), torch.max(x, 1), torch.min(x, 1)), x,
          graphs=graphs)
    code = source(graphs)
    width = 32 if n * 8 >= 2048 else 8  # lanes of 8-byte positions: 256 bytes, or 64 bytes
    if n < width:
        assert "_i[" not in code, code
    else:
        assert f"int64_t acc0_i[{width}];" in code and f"float acc0_v[{width}];" in code, code
        assert "mc::arg_lane<true>(acc0_v[w], acc0_i[w], tmp0, rindex);" in code, code
        assert "mc::arg_lane<false>(" in code and "mc::arg_merge<true>(" in code, code


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.int32, torch.int64],
                         ids=str)
def test_argmax_lanes_of_other_dtypes(dtype, graphs):
    """Doubles and integers in lanes too (the lowest integer is argmax's start: a row of it
    reports its first position); bfloat16 compares in float."""
    x = arg_rows(300) * 1000 if dtype.is_floating_point else torch.randint(-5, 5, (4, 300))
    if not dtype.is_floating_point:
        x[1, :] = torch.iinfo(dtype).min
        x[2, 7] = x[2, 290] = 99
    x = x.to(dtype)
    check(lambda x: (x.argmax(1), x.argmin(1)), x, graphs=graphs)
    assert "_i[w]" in source(graphs)


def test_argmax_lanes_over_runs_of_a_split_row(graphs):
    """A row split into runs (``rindex = r0 + 40*r1``) reports flat positions from its lanes."""
    x = torch.randn(3, 17, 40)
    x[1, 4, 30] = x[2, 4, 3] = 9.0  # a tie between runs: the earlier run wins
    x[0, 5, 39] = NAN
    fn = lambda x: x.permute(1, 0, 2).reshape(17, -1).argmax(1)  # noqa: E731
    check(fn, x, graphs=graphs)
    code = source(graphs)
    assert "for (int64_t r1 = 0; r1 < rnumel / 40; r1++)" in code, code
    assert "mc::arg_lane<true>(acc0_v[w], acc0_i[w], tmp0, r0 + 40*r1);" in code, code


def test_argmax_lanes_with_a_dynamic_row_shorter_than_the_lanes(graphs):
    """With a symbolic row length the lanes exist whatever the row's length; a row shorter than
    them leaves every lane at its start (the lowest value, position w): a row of -inf must
    still report position 0, a NaN or any larger value its own."""
    fn = lambda x: (x.argmax(1), x.argmin(1))  # noqa: E731
    compiled = check(fn, arg_rows(100), graphs=graphs, dynamic=True)
    assert "int64_t acc0_i[32];" in source(graphs)
    for n in (1, 2, 3, 40):
        x = arg_rows(max(n, 5))[:, :n].contiguous()
        torch.testing.assert_close(compiled(x), fn(x))
