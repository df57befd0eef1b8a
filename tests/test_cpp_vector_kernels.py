"""C++ kernels written so that g++ vectorises them (minicompile/inductor/codegen/cpp_loops.py,
cpp_ops.py, cpp_prefix.h, and the C++ scheduling's fusion veto in cpp.py): argmax and argmin
in vector lanes; a load the same at every point of a loop read before it; no member running
along rows in a kernel of column reductions. Each strategy is checked in the generated source,
and where it is about vectorising, by asking g++ which loops it vectorised (a scalar loop that
passes would prove nothing), and against eager on the cases a wrong decision gets wrong: ties
across lanes, NaN in the lanes and in the tail, rows of -inf, rows shorter than the lanes."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc
from minicompile.inductor.codegen import cpp_build, cpp_ops
from conftest import record_defined_kernels
from test_cpp_codegen import check, graphs, pytestmark  # noqa: F401  (the C++ backend, eager's values)

INF, NAN = float("inf"), float("nan")


def source(graphs) -> str:
    return "\n".join(g.source for g in graphs)


def simd_loops(kernel: str, tmp_path) -> dict[str, bool]:
    """Each ``#pragma omp simd`` loop of a kernel's source (its ``for`` line, numbered) and
    whether g++ vectorised it (``-fopt-info-vec-optimized`` names the loop's first line or the
    first line of its body). Loops of one iteration (the last halving step) are left out."""
    path = tmp_path / "kernel.cpp"
    path.write_text(kernel)
    include = os.path.dirname(cpp_build.__file__)  # (cpp_prefix.h)
    report = subprocess.run([cpp_build.CXX, str(path), *cpp_build.flags(), "-I", include, "-c",
                             "-o", os.devnull, "-fopt-info-vec-optimized"],
                            capture_output=True, text=True, check=True).stderr
    done = {int(n) for n in re.findall(r"kernel\.cpp:(\d+):\d+: optimized: loop vectorized",
                                       report)}
    lines = kernel.splitlines()
    return {f"{n + 1}: {lines[n].strip()}": bool(done & {n + 1, n + 2, n + 3})
            for n in range(1, len(lines)) if lines[n - 1].strip().startswith("#pragma omp simd")
            and "w < 1;" not in lines[n]}


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


# --- a layernorm backward: every loop vectorised -------------------------------------------------

def test_layernorm_backward_loops_all_vectorise(monkeypatch, tmp_path, graphs):
    """A layernorm's backward: its row kernel's last loop reads the row's mean and rstd
    (``in_ptr3[xindex]``), the same at every point: read once before the loop (in it, g++ moved
    the loads around the loop's back edge and left the loop scalar: 4x slower); its weight and
    bias gradients, sums down columns, ride along that loop (``cpp_riders.py``: each thread adds
    a row into its own partials; fused into the row kernel's loop order instead, their loads
    were gathers). Every loop of every kernel is vectorised, and the gradients are eager's."""
    kernels = record_defined_kernels(monkeypatch)
    x = torch.randn(67, 300, requires_grad=True)
    w, b = torch.randn(300, requires_grad=True), torch.randn(300, requires_grad=True)
    fn = lambda x, w, b: F.layer_norm(x, (300,), w, b)  # noqa: E731
    compiled = mc.compile(fn, backend="inductor")
    grad = torch.randn(67, 300)
    got = torch.autograd.grad(compiled(x, w, b), (x, w, b), grad)
    want = torch.autograd.grad(fn(x, w, b), (x, w, b), grad)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert mc.metrics.eager_fallbacks == 0 and len(kernels) == 2  # forward, backward
    for kernel in kernels:
        loops = simd_loops(kernel, tmp_path)
        assert loops and all(loops.values()), (loops, kernel)
        # a loop over rindex reading across rows is a gather: only a column tile does that
        if re.search(r"\b\d+\*rindex \+ xindex\b", kernel):
            assert "for (int64_t xblock = 0; xblock < xnumel; xblock += 64)" in kernel, kernel
    row_kernel = next(k for k in kernels if "in_ptr4[xindex]" in k and "acc1" in k)
    before_loops = row_kernel.split("for (int64_t rblock")[0]
    assert re.search(r"auto tmp\d+ = in_ptr\d\[xindex\];", before_loops), row_kernel


def test_invariant_load_stays_in_a_loop_of_a_kernel_writing_an_input_in_place(monkeypatch,
                                                                              graphs):
    """Where a member writes an input in place, a load the same at every point of a loop stays
    in the loop (``inputs_stay``): the element could be one the loop writes. The values are
    eager's either way."""
    kernels = record_defined_kernels(monkeypatch)
    def fn(x, m):
        x.mul_(m)  # m[x1]: one value per row of x
        return x
    x, m = torch.randn(7, 50), torch.randn(7, 1)
    compiled = mc.compile(fn, backend="inductor")
    torch.testing.assert_close(compiled(x.clone(), m), fn(x.clone(), m))
    (kernel,) = kernels
    loop = kernel.split("#pragma omp simd")[1]
    assert re.search(r"auto tmp\d+ = in_ptr\d\[x1\];", loop), kernel



def test_a_member_reordered_down_columns_still_joins_a_column_reduction(monkeypatch, graphs):
    """The veto refuses a member running along rows; loops reordered to the reduction's order
    (``loop_order.py``), the member runs down columns too and shares the kernel: ``z`` stored
    and summed over its rows in one kernel, its store consecutive across the tile's rows."""
    kernels = record_defined_kernels(monkeypatch)
    def fn(x, y):
        z = x * y
        return z, z.sum(0)
    check(fn, torch.randn(300, 67), torch.randn(300, 67), graphs=graphs, rtol=1e-4, atol=1e-4)
    (kernel,) = kernels
    assert "xblock += 64" in kernel and "out_ptr0[67*rindex + xindex] = " in kernel, kernel


# --- narrow integers cast back to their type (cpp_math.narrowed) ---------------------------------

@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16], ids=str)
def test_narrow_integer_products_cast_back_still_vectorise(dtype, monkeypatch, tmp_path, graphs):
    """An int8 product is cast back to int8_t before it is widened or summed (C++ computes it in
    int): the cast is a pack or nothing in a vector loop, and the loops stay vectorised."""
    kernels = record_defined_kernels(monkeypatch)
    fn = lambda a, b: ((a * b + 3).to(torch.int32), (a * b).sum(1))  # noqa: E731
    a, b = (torch.randint(-128, 128, (64, 300)).to(dtype) for _ in range(2))
    check(fn, a, b, graphs=graphs, rtol=0, atol=0)
    for kernel in kernels:
        assert f"static_cast<{cpp_ops.storage_type(dtype)}>(tmp" in kernel, kernel
        loops = simd_loops(kernel, tmp_path)
        assert loops and all(loops.values()), (loops, kernel)


# --- scans along rows: rows side by side (cpp_loops.is_row_scan) ---------------------------------

@pytest.mark.parametrize("fn, x", [
    (lambda a: a.cumsum(1), torch.randn(13, 70)),  # 13 rows: three tiles of 4 and one of 1
    (lambda a: (a * 0.01 + 1).cumprod(-1), torch.randn(6, 1500)),
    (lambda a: a.logcumsumexp(1), torch.randn(7, 33)),
    (lambda a: (a * 2 + 1).cumsum(1).tanh(), torch.randn(5, 300)),  # work at the scan's points
    (lambda a: (a.cumsum(-1), a.cumprod(-1)), torch.randn(2, 3, 50)),  # two scans, 3-d
    (lambda a: a.double().cumsum(1), torch.randn(9, 40)),
    (lambda a: a.cumsum(1), torch.randint(-9, 9, (10, 21))),
], ids=["cumsum", "cumprod", "logcumsumexp", "fused", "two_scans_3d", "float64", "int64"])
def test_scans_along_rows_run_rows_side_by_side(fn, x, graphs):
    """A scan along rows runs ``SCAN_ROWS`` rows side by side (each row's running value in its
    own slot, the rows' dependent steps interleaved), not vectorised; the last tile of rows may
    be short. Eager's values on every row."""
    check(fn, x, graphs=graphs, rtol=1e-4, atol=1e-3)
    code = source(graphs)
    assert "// 4 rows side by side" in code, code
    assert "for (int64_t xblock = 0; xblock < xnumel; xblock += 4)" in code, code
    assert "acc0[xindex - xblock] = " in code and "#pragma omp simd" not in code, code


def test_scans_along_rows_with_a_dynamic_number_of_rows(graphs):
    fn = lambda a: a.cumsum(1)  # noqa: E731
    compiled = check(fn, torch.randn(9, 30), graphs=graphs, dynamic=True, rtol=1e-4, atol=1e-4)
    for rows in (1, 3, 4, 5, 17):
        x = torch.randn(rows, 30)
        torch.testing.assert_close(compiled(x), fn(x), rtol=1e-4, atol=1e-4)
    assert "// 4 rows side by side" in source(graphs)
