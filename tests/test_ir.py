"""The IR core: index simplification, layouts, views as formulas, printing, read/writes, and
fusion as substitution (inlined bodies compute the same values as the unfused nodes)."""

import sympy
import torch

from minicompile.inductor.executor import run_nodes
from minicompile.inductor.ir import (ComputedBuffer, InputBuffer, Layout, Pointwise, Reduction,
                                     View, as_strided_layout, inline_producers)
from minicompile.inductor import sizevars
from minicompile.inductor.sizevars import (FloorDiv, ModularIndexing, index_var, simplify_index,
                                           simplify_loops, size_var, upper_bound)
from minicompile.inductor.virtualized import ops
from minicompile.shapes.functions import exact_quotient

i0, i1, i2 = (index_var("i", k) for k in range(3))
s0 = size_var("s0")
DEVICE = torch.empty(0).device  # where torch.randn puts the inputs these IR nodes describe


def test_floordiv_and_modular_rules():
    assert FloorDiv(6 * i0 + i1, 6) == i0 + FloorDiv(i1, 6)  # whole multiples leave the //
    assert ModularIndexing(12 * i0 + i1, 1, 12) == ModularIndexing(i1, 1, 12)
    assert FloorDiv(FloorDiv(i0, 2), 3) == FloorDiv(i0, 6)
    assert FloorDiv(sympy.Integer(17), 5) == 3
    assert FloorDiv(4 * s0 * i0 + 2 * i1, 2 * s0) == 2 * i0 + FloorDiv(2 * i1, 2 * s0)
    assert FloorDiv(3 * i0, 2) == FloorDiv(3 * i0, 2)  # 3*i0/2 is not whole: nothing leaves
    assert ModularIndexing(s0 * s0 * i0 + i1, s0, s0) == ModularIndexing(i1, s0, s0)


def test_exact_quotient():
    """Whole-multiple checks on monomials (the fast path) agree with sympy.cancel's."""
    x = sympy.Symbol("x")  # not known to be an integer
    assert exact_quotient(6 * i0 * s0, 2 * s0) == 3 * i0
    assert exact_quotient(s0**2 * i0, s0) == s0 * i0
    assert exact_quotient(4 * FloorDiv(i0, 3), 2) == 2 * FloorDiv(i0, 3)
    assert exact_quotient(sympy.Integer(1024), 4) == 256
    for term, divisor in [(3 * i0, 2), (i0, s0), (i0, 2 * i0), (8 * i0, 0), (4 * x, 2),
                          (i0 * i1, i0 * i2)]:
        assert exact_quotient(term, divisor) is None, (term, divisor)
    # sums go to sympy.cancel
    assert exact_quotient(2 * (s0 + 1) * i0, s0 + 1) == 2 * i0
    assert exact_quotient(2 * i0 + 2, 2) == i0 + 1


def test_ranges_remove_div_and_mod():
    ranges = {i0: s0, i1: 6}
    assert simplify_index(FloorDiv(6 * i0 + i1, 6), ranges) == i0
    assert simplify_index(ModularIndexing(6 * i0 + i1, 1, 6), ranges) == i1
    # the row-major reshape round trip: 6*(x // 6) + x % 6 -> x
    assert simplify_index(6 * FloorDiv(i0, 6) + ModularIndexing(i0, 1, 6)) == i0


def test_digits_join_over_a_size_that_is_itself_a_division():
    """A convolution's output length, ``L = (s0 - 3) // 2 + 1``, arrives expanded in the
    coefficients (``32*L*q`` is ``32*F*q + 32*q``): the flattened index of a (B, L, 32) view
    joins back into ``i0`` only once each digit's coefficients are summed. Left unjoined,
    every view of a chain substituted it whole (four uses of ``i0`` a level): a wav2vec2
    training step's kernel grew to 1.7 MB of index code and g++ ran out of time."""
    length = FloorDiv(s0 - 3, 2) + 1
    flat = (32 * length * FloorDiv(i0, 32 * length) + 32 * ModularIndexing(i0, 32, length)
            + ModularIndexing(i0, 1, 32))
    assert sympy.expand(flat) != i0  # (expanded: 32*((s0 - 3)//2)*(i0 // ...) + 32*(i0 // ...))
    assert simplify_index(flat) == i0
    assert simplify_index(flat, {i0: 64 * length}) == i0
    # the coefficient must be the size's: 31*L is not a digit above the one of 32
    assert simplify_index(flat - FloorDiv(i0, 32 * length) * length) != i0


def test_terms_too_small_to_carry_drop_out_of_a_quotient():
    ranges = {i0: 128, i1: 128}
    # a (2, 64, 128) tensor over rows of 128: (i1 + 128*i0) // 8192 is the batch, i0 // 64
    assert simplify_index(FloorDiv(i1 + 128 * i0, 8192), ranges) == FloorDiv(i0, 64)
    assert simplify_index(8192 * FloorDiv(i1 + 128 * i0, 8192) + 128 * ModularIndexing(i0, 1, 64)
                          + i1, ranges) == 128 * i0 + i1
    assert simplify_index(ModularIndexing(i1 + 128 * i0, 128, 8), ranges) == ModularIndexing(i0, 1, 8)
    # ... and out of a digit: a channels-last pooling's row (x0: 16 channels) is x1 // 5 % 3
    assert simplify_index(ModularIndexing(i0 + 16 * i1, 80, 3), {i0: 16, i1: 30}) == \
        ModularIndexing(i1, 5, 3)
    assert simplify_index(ModularIndexing(i0 + 16 * i1, 80, 3), {i0: 17, i1: 30}).has(i0)
    # a remainder that can reach the divisor's factor stays: (i1 + 200) may carry
    kept = FloorDiv(i1 + 128 * i0 + 200, 8192)
    assert simplify_index(kept, ranges) == kept
    assert simplify_index(FloorDiv(i1 + 128 * i0, 8192), {i0: 128, i1: 129}).has(i1)


def test_upper_bound_is_remembered_per_expression_and_ranges():
    # the same expression over other ranges, or another expression over the same ranges, is a
    # new question: a memo keyed on less would answer it with a stale bound
    expr = 6 * i0 + i1
    assert upper_bound(expr, {i0: 4, i1: 6}) == 23
    hits = sizevars._upper_bound.cache_info().hits
    assert upper_bound(expr, {i0: 4, i1: 6}) == 23
    assert sizevars._upper_bound.cache_info().hits == hits + 1  # asked again: remembered
    assert upper_bound(expr, {i0: 5, i1: 6}) == 29
    assert upper_bound(expr, {i0: s0, i1: 6}) == 6 * s0 - 1
    assert upper_bound(expr - 2 * i1, {i0: 4, i1: 6}) is None  # not monotone in i1
    assert upper_bound(ModularIndexing(i0, 1, 4), {i0: 8}) is None  # % wraps around
    # a bound that decides a division: over i1 < 6, (6*i0 + i1) // 6 is i0; over i1 < 7 not
    assert simplify_index(FloorDiv(expr, 6), {i0: 4, i1: 6}) == i0
    assert simplify_index(FloorDiv(expr, 6), {i0: 4, i1: 7}) != i0


def test_terms_too_small_to_carry_leave_a_remainder():
    # (r + g*q) % (g*k) is r + g*(q % k) for 0 <= r < g: rows of 64, (x0 + 64*x1) % 128
    cases = [(ModularIndexing(i0 + 64 * i1, 1, 128), {i0: 64, i1: 6}, i0 + 64 * ModularIndexing(i1, 1, 2)),
             (ModularIndexing(i0 + 64 * i1 + 4, 1, 128), {i0: 60, i1: 6}, None),
             (ModularIndexing(i0 + 64 * i1 - 4, 1, 128), {i0: 64, i1: 6}, None),  # r < 0 at i0 < 4
             (ModularIndexing(i0 + 64 * i1, 1, 128), {i0: 65, i1: 6}, None)]  # r = 64 carries
    for expr, ranges, expected in cases:
        simple = simplify_index(expr, ranges)
        if expected is not None:
            assert simple == expected
        for a in range(int(ranges[i0])):
            for b in range(int(ranges[i1])):
                assert simple.subs({i0: a, i1: b}) == expr.subs({i0: a, i1: b}), (expr, simple)
    assert simplify_index(ModularIndexing(i0 + 64 * i1, 1, 128), {i0: 65, i1: 6}).has(
        ModularIndexing(i0 + 64 * i1, 1, 128))


def test_a_quotient_that_can_be_negative_stays():
    # (i0 - 4) // 32 over i0 < 28 is -1 for i0 < 4 (a read before its mask, rotate_half's
    # second half): below 32 is not enough, the base must not go below 0 either
    for expr in (FloorDiv(i0 - 4, 32), ModularIndexing(i0 - 4, 1, 32)):
        simple = simplify_index(expr, {i0: 28})
        for k in range(28):
            assert simple.subs(i0, k) == expr.subs(i0, k), (expr, simple, k)
    assert simplify_index(FloorDiv(i0 + 4, 32), {i0: 28}) == 0  # 4 <= i0 + 4 < 32


def test_simplify_loops_merges_contiguous_dims():
    sizes, reindex = simplify_loops([i0, i1, i2], [2, s0, 4], [4 * s0 * i0 + 4 * i1 + i2])
    assert sizes == [8 * s0]
    sizes, _ = simplify_loops([i0, i1, i2], [2, 1, 4], [4 * i0 + i2, i2])  # i2 alone blocks it
    assert sizes == [2, 4]


def test_layout_indexer_and_strided_views():
    x = InputBuffer("x", Layout(DEVICE, torch.float32, [s0, 6]))
    assert x.layout.make_indexer()([i0, i1]) == 6 * i0 + i1
    t = View(x, [6, s0], lambda idx: [idx[1], idx[0]])  # transpose
    rv = as_strided_layout(t)
    assert rv.layout.stride == [1, 6]
    # transpose then flatten is not a strided view of x: it needs a copy
    assert as_strided_layout(View(t, [6 * s0], lambda idx: [FloorDiv(idx[0], s0),
                                                          ModularIndexing(idx[0], 1, s0)])) is None


def _chain():
    x = InputBuffer("x", Layout(DEVICE, torch.float32, [4, 5]))
    y = InputBuffer("y", Layout(DEVICE, torch.float32, [5]))
    lx, ly = x.make_loader(), y.make_loader()
    b0 = ComputedBuffer("buf0", Layout(DEVICE, torch.float32, [4, 5]), Pointwise(
        DEVICE, torch.float32, lambda i: ops.mul(lx(i), ops.constant(2.0, torch.float32)), [4, 5]))
    l0 = b0.make_loader()
    b1 = ComputedBuffer("buf1", Layout(DEVICE, torch.float32, [4, 5]), Pointwise(
        DEVICE, torch.float32, lambda i: ops.add(l0(i), ly([i[1]])), [4, 5]))
    l1 = b1.make_loader()
    b2 = ComputedBuffer("buf2", Layout(DEVICE, torch.float32, [4]), Reduction(
        DEVICE, torch.float32, lambda i, r: l1([i[0], r[0]]), [4], [5], "sum"))
    return b0, b1, b2


def test_printing_and_read_writes():
    b0, b1, b2 = _chain()
    text = str(b2)
    assert "for i0 in range(4):" in text and "for r0 in range(5):  # reduction" in text
    assert "load(buf1, 5*i0 + r0)" in text
    rw = b1.get_read_writes()
    assert {(d.name, str(d.index)) for d in rw.reads} == {("buf0", "5*i0 + i1"), ("y", "i1")}
    assert [d.num_elements() for d in rw.reads] == [20, 5]
    assert rw.writes[0].name == "buf1"


def test_inlining_matches_unfused_execution():
    b0, b1, b2 = _chain()
    x, y = torch.randn(20), torch.randn(5)
    ref = run_nodes([b0, b1, b2], {"x": x, "y": y}, {})["buf2"]
    fused = inline_producers(inline_producers(b2, [b1]), [b0])
    assert "buf0" not in fused.get_read_writes().read_names()
    assert "buf1" not in str(fused)
    out = run_nodes([fused], {"x": x, "y": y}, {})["buf2"]
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(out, (x.view(4, 5) * 2 + y).sum(1))
