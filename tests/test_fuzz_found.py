"""Bugs the differential fuzzer (``python -m minicompile.fuzz``) found, each shrunk to a test.

Eager PyTorch is the oracle: outputs and gradients must match it on every backend.
"""

import pytest
import sympy
import torch

import minicompile as mc
from conftest import use_cpu_backend
from minicompile import config
from minicompile.inductor.codegen.triton_ops import texpr
from minicompile.inductor.runtime.triton_heuristics import TritonLauncher
from minicompile.inductor.sizevars import FloorDiv, ModularIndexing


def grads(fn, x, weight):
    out = fn(x)
    return out, torch.autograd.grad(out, [x], weight)[0]


def test_view_of_expanded_input_that_requires_grad_gets_eager_gradient():
    """The output aliases an input whose elements share memory (stride 0). Rebuilding it with
    ``as_strided`` made autograd sum the gradient of elements sharing a location; eager's
    ``movedim`` gives each element its own."""
    def f(x):
        return x.movedim(0, 2)

    x = torch.randn(1, 1, 13, 3).expand(2, 13, 13, 3).detach().requires_grad_()
    weight = torch.randn(13, 13, 2, 3)
    expected_out, expected_grad = grads(f, x, weight)
    out, grad = grads(mc.compile(f, backend="aot_eager"), x, weight)
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(grad, expected_grad)


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_cumprod_backward(cpu_backend, monkeypatch):
    """cumprod's backward finds the first zero with ``argmax`` over a bool mask; the reference
    executor called ``argmax`` on the bool tensor, which has no bool kernel."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def f(x):
        return torch.cumprod(x.tanh() + 1, dim=0)

    x = torch.randn(7, 17, requires_grad=True)
    weight = torch.randn(7, 17)
    expected_out, expected_grad = grads(f, x, weight)
    out, grad = grads(mc.compile(f), x, weight)
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(grad, expected_grad)


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_prod_backward_of_a_transposed_input(cpu_backend, monkeypatch):
    """prod's backward reads a flipped, shifted view of the input, whose index simplifies to
    ``r + FloorDiv(-r0, 3) + 2*ModularIndexing(-r0, 1, 3)``: a negative dividend, where
    Triton's truncating ``//`` and ``%`` differ from Python's floor. The Triton printer wrote
    them as ``//`` and ``%`` (FloorDiv's own ``_sympystr`` won over the printer's method)."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def f(x):
        return (-x).prod(-1)

    x = torch.randn(3, 2).t().detach().requires_grad_()
    weight = torch.randn(2)
    expected_out, expected_grad = grads(f, x, weight)
    out, grad = grads(mc.compile(f), x, weight)
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(grad, expected_grad)


def test_triton_index_printer_keeps_floor_semantics_for_negative_dividends():
    r = sympy.Symbol("r0", integer=True, nonnegative=True)
    assert texpr(FloorDiv(r, 3)) == "(r0 // 3)"  # non-negative: Triton's // is floor
    assert texpr(FloorDiv(-r, 3)) == "triton_helpers.index_floordiv(-r0, 3)"
    assert texpr(ModularIndexing(-r, 1, 3)) == "triton_helpers.index_remainder(-r0, 3)"


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_amax_backward_of_a_cat_with_one_row(cpu_backend, monkeypatch):
    """The backward reads element ``17*xindex + 1`` over an xindex range of one: the simplified
    index is the constant 1. The Triton kernel decided "block index" before simplifying, so it
    loaded from one address with a block mask, which Triton refuses."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def f(x0, x1):
        return torch.cat([x0, x1], dim=-2).amax(dim=-1, keepdim=True)

    x0, x1 = torch.randn(1, 17), torch.randn(1, 17, requires_grad=True)
    out = mc.compile(f)(x0, x1)
    expected = f(x0, x1)
    torch.testing.assert_close(out, expected)
    weight = torch.randn(2, 1)
    torch.testing.assert_close(torch.autograd.grad(out, [x1], weight)[0],
                               torch.autograd.grad(expected, [x1], weight)[0])


def clone_then_mutate_bool(x):
    v1 = x.clone()
    x.logical_not_()
    return v1.reshape(-1)


def clone_then_mutate_float(x):
    v1 = x.clone()
    x.mul_(2)
    return v1.t()


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
@pytest.mark.parametrize("fn, shape, dtype", [
    (clone_then_mutate_bool, (), torch.bool),  # the fuzzer's case: reshape(-1) of a 0-d tensor
    (clone_then_mutate_float, (3, 5), torch.float32),
])
def test_clone_read_through_a_view_keeps_the_value_before_an_inplace_update(
        fn, shape, dtype, cpu_backend, monkeypatch):
    """No-op elimination forwarded ``clone(x)`` to ``x`` when its only user was a view: it
    checked whether the clone itself is returned, not a view of it. The caller then got a view
    of the input, which the copy back of the in-place update overwrote."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)
    x = torch.randn(shape).to(dtype)
    expected_x = x.clone()
    expected = fn(expected_x)
    out = mc.compile(fn)(x)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(x, expected_x)
    assert out.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_amax_backward_of_a_half_precision_product(cpu_backend, monkeypatch):
    """amax's backward finds the maximum's position with ``amax == x``, where ``x`` (the
    product) is recomputed in the backward kernel. The kernels compute float16 in float32 and
    rounded only at a store, so the recomputed product was never equal to the stored (rounded)
    maximum: a count of 0, and a gradient of inf/nan."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def f(x0, x1, x2):
        return (torch.maximum(x0, x1).narrow(-1, 6, 7) * x2).amax(dim=(0, 1))

    torch.manual_seed(0)
    x0 = torch.randn(1, 1, dtype=torch.float16)
    x1 = torch.randn(1, 13, dtype=torch.float16) * 4
    x2 = torch.randn(2, 1, dtype=torch.float16) * 4
    x1.requires_grad_()
    expected_out, expected_grad = grads(lambda x: f(x0, x, x2), x1, None)
    out, grad = grads(lambda x: mc.compile(f)(x0, x, x2), x1, None)
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(grad, expected_grad)
    assert grad.abs().sum() > 0  # the inputs reach the maximum (else the test shows nothing)


def matmul_then_empty_slice(x0, x1, x2, x3):
    v0 = x0 @ x1  # (4, 2, 1)
    v1 = torch.cat([x0, x2], dim=-1)  # (4, 2, 9)
    v3 = v0.contiguous()[..., 1:]  # (4, 2, 0)
    v5 = torch.cumsum(v3, dim=-1) / (x3.abs() + 1)  # (4, 2, 0)
    return v1, v3, v5


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
@pytest.mark.parametrize("k", [0, 3])
def test_zero_size_results_launch_no_kernel(k, cpu_backend, monkeypatch):
    """A CUDA run of this program (fuzzer seed 620006) ended in an illegal memory access: a
    store into a zero-size buffer fused into an 8 x 0 reduction kernel, its index simplified to
    the constant 0 and masked by ``xmask`` alone, wrote out of bounds. A node over zero elements
    now joins no kernel (``fusion._has_elements``), the fusion check takes empty address lists,
    and the reference executor reads nothing from an empty buffer under a mask. Forward and
    backward compile (no fallback), match eager, and no Triton kernel runs over zero elements."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)
    launched = []
    launch = TritonLauncher.launch
    monkeypatch.setattr(TritonLauncher, "launch", lambda self, cfg, args, grid_0, *key: (
        launched.append(grid_0), launch(self, cfg, args, grid_0, *key))[1])
    x0 = torch.randn(4, 2, k, requires_grad=True)
    x1 = torch.randn(k, 1, requires_grad=True)
    x2, x3 = torch.randn(4, 2, 9 - k), torch.randn(4, 2, 1, requires_grad=True)
    args = (x0, x1, x2, x3)
    expected, out = matmul_then_empty_slice(*args), mc.compile(matmul_then_empty_slice)(*args)
    for o, e in zip(out, expected):
        torch.testing.assert_close(o, e)
    weights = [torch.randn_like(e) for e in expected]
    wrt = (x0, x1, x3)
    grad = lambda outs: torch.autograd.grad(outs, wrt, weights, allow_unused=True)  # noqa: E731
    for g, e in zip(grad(out), grad(expected)):
        torch.testing.assert_close(g, e)
    assert all(n > 0 for n in launched)
    assert mc.metrics.eager_fallbacks == 0


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_not_of_a_bool_cat_with_an_empty_part(cpu_backend, monkeypatch):
    """Fuzzer seed 903033 (CUDA): ``~`` of a bool cat whose first part is empty gave True for
    False. The cat's masked load filled with the integer 0, which made the bool an int32, and
    ``~1`` of an int32 is -2: true. A masked bool now stays a bool (int1) in Triton."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def fn(x0, x1):
        v1 = torch.cat([x0, x1], dim=2)
        return torch.stack([v1, ~v1], dim=-3), ~torch.cat([x1, x0, x1], dim=2)

    x0, x1 = torch.rand(1, 16, 0) > 0.5, torch.rand(1, 16, 1) > 0.5
    for got, want in zip(mc.compile(fn)(x0, x1), fn(x0, x1)):
        assert torch.equal(got, want)


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_in_place_update_through_a_no_op_expand_of_a_transposed_input(cpu_backend, monkeypatch):
    """Fuzzer seed 902167: ``x.expand(x.shape).mul_(2)`` on a transposed int64 input: the
    result and the caller's tensor must both hold the doubled values, at the input's strides."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def fn(x0):
        v0 = x0.expand(1, 31, 17)
        v0.mul_(2)
        return v0

    def transposed():
        return torch.arange(527).reshape(1, 17, 31).transpose(1, 2)

    x, expected_x = transposed(), transposed()
    expected, got = fn(expected_x), mc.compile(fn)(x)
    assert torch.equal(got, expected) and torch.equal(x, expected_x)
    assert got.stride() == expected.stride()


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_not_of_a_bool_reduction(cpu_backend, monkeypatch):
    """Fuzzer seed 4001860: ``~x.amax()`` of a bool gave True for False in Triton: the masked
    lanes were filled with the integer 0, and Triton reduces an int1 as an int32, so ``~`` saw
    an int32 1 (-2: true). The neutral values of bool reductions are bools, and max/min of a
    bool are bools again."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)
    cases = {"0-d": lambda x, y: ~x.amax(), "amax over dim 0": lambda x, y: ~y.amax(0),
             "amin over dim 1": lambda x, y: ~y.amin(1), "any": lambda x, y: ~y.any(1),
             "full amax": lambda x, y: ~y.amax()}
    y = torch.rand(5, 7) > 0.5
    for name, fn in cases.items():
        for x in (torch.tensor(True), torch.tensor(False)):
            mc.reset()
            assert torch.equal(mc.compile(fn)(x, y), fn(x, y)), name


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_in_place_op_through_a_view_of_a_transposed_intermediate(cpu_backend, monkeypatch):
    """Fuzzer seed 5003556: ``v1 = v0.masked_fill(...)`` of a transposed ``v0`` is transposed in
    eager; ``v1.permute(0, 1).clamp_(0, 1)`` is functionalized into an ``as_strided_scatter``
    with eager's (transposed) strides, which addressed the wrong elements of minicompile's
    contiguous ``v1``. ``as_strided_scatter`` now gets its input laid out as eager's."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def fn(x0, x1):
        v0 = torch.where(x0 > x1, x0, x1)
        v1 = v0.masked_fill(v0 > 0.5, 0.0)
        v1.permute(0, 1).clamp_(0, 1)
        return v1

    torch.manual_seed(0)
    x0, x1 = torch.randn(3, 3).t(), torch.randn(1, 1) - 1
    torch.testing.assert_close(mc.compile(fn)(x0, x1), fn(x0, x1))


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_amax_backward_of_a_recomputed_transcendental(cpu_backend, monkeypatch):
    """Fuzzer seed 6000987: the gradient of ``(atan2(x, y) * -2).amax(dims)`` flows to the
    elements equal to the max. The C++ kernel computed the max in one loop and ``x == max`` in a
    second, recomputing atan2; g++ vectorised the two loops differently, and glibc's scalar and
    vector atan2 round differently, so the maximum itself was not equal to the max and lost its
    gradient. Every vector math function now has one implementation at every width."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def fn(x0, x1):
        return (torch.atan2(x0, x1).squeeze() * -2.0).amax(dim=(0, 2), keepdim=True)

    torch.manual_seed(0)
    for _ in range(20):
        x0 = torch.randn(1, 1, 1, 1, requires_grad=True)
        x1 = torch.randn(2, 1, 2, 4)
        weight = torch.randn(1, 2, 1)
        expected = torch.autograd.grad(fn(x0, x1), x0, weight)[0]
        mc.reset()
        got = torch.autograd.grad(mc.compile(fn)(x0, x1), x0, weight)[0]
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_symbolic_size_that_broadcasts_as_one(cpu_backend, monkeypatch):
    """Found while reproducing fuzzer seed 911546: with symbolic sizes, ``x0[..., 1:]`` of a
    (1, s0) input has s0 - 1 elements, and added to an ``x1`` of s0 elements it broadcasts (the
    trace ran at s0 = 2, and a guard pins s0 - 1 == 1). The kernel read it elementwise, past its
    one element. A symbolic size is decided by the traced sizes, as the trace decided it, and
    the guard now says ``s0 == 2`` (the equation solved for s0)."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def fn(x0, x1):  # (vector_norm in the fuzzer's program; sum here, lowered to a kernel)
        return x0[..., 1:].abs().sum(0) + x1

    torch.manual_seed(0)
    x0, x1 = torch.randn(1, 2), torch.randn(2)
    compiled = mc.compile(fn, dynamic=True)
    torch.testing.assert_close(compiled(x0, x1), fn(x0, x1))
    x0, x1 = torch.randn(1, 2), torch.randn(2)  # from the cache, behind the guard
    torch.testing.assert_close(compiled(x0, x1), fn(x0, x1))


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_pad_of_an_empty_slice(cpu_backend, monkeypatch):
    """Fuzzer seed 8000369: ``F.pad`` of ``x[..., 1:]`` where the slice is empty. The pad reads
    nothing (every lane is masked off), but the reference executor evaluated the load's index
    first, which divides by the slice's zero size: ZeroDivisionError."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def fn(x0):
        v1 = torch.tanh(x0)[..., 1:]
        return torch.nn.functional.pad(v1 / (x0.abs() + 1), (2, 0), value=0.5)

    for shape in ((1, 2, 0), (17, 2, 1)):  # the slice is empty either way
        x = torch.randn(shape)
        mc.reset()
        torch.testing.assert_close(mc.compile(fn)(x), fn(x))


@pytest.mark.cpu_only
def test_cpp_float_sum_of_a_tensor_accumulates_in_double(monkeypatch):
    """Fuzzer seed 8000563: ``sin(2 * x.sum((0, 1)))`` of an expanded (16, 13, 1) input. The C++
    kernel added the 208 values one after another in float (the gather does not vectorise), 4.6
    times further from float64 than eager's cascade sum, and sin of a sum in the hundreds
    magnifies that. The float sum of a whole tensor now accumulates in double in C++ kernels
    (rows of a tensor keep float lanes, twice as wide)."""
    monkeypatch.setattr(config.inductor, "cpu_backend", "cpp")

    def fn(x0):
        v2 = x0.sum(dim=(0, 1))
        return torch.sin(torch.stack([v2, v2 + v2]))

    torch.manual_seed(8000564)
    for _ in range(10):
        x = (torch.rand(16, 1, 1) * 8).expand(16, 13, 1)
        exact = fn(x.double())
        eager_error = (fn(x) - exact).abs().max()
        compiled_error = (mc.compile(fn)(x) - exact).abs().max()
        assert compiled_error <= 2 * eager_error + 1e-6
    x = torch.rand(300_000)  # thousands of values per vector lane
    # summed in double, the result is float64's sum correctly rounded to float
    assert torch.equal(mc.compile(lambda x: x.sum())(x), x.double().sum().float())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int64])
@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_sign_of_half_precision(dtype, cpu_backend, monkeypatch):
    """CUDA fuzzer seed 911490: ``torch.sign`` of a bfloat16 tensor flipped about half of the
    signs on an H100: Triton 3.6 computes ``where(x > 0, 1, where(x < 0, -1, 0))`` with integer
    constants wrongly when ``x`` is a float converted from a 16-bit load (every block size but
    one). Float constants for float values. (The GPU run of the suite checks it on CUDA.)"""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)
    torch.manual_seed(0)
    x = (torch.randn(1, 31, 16) * 4).to(dtype)
    x[0, 0, :3] = 0
    for arg in (x, x.transpose(1, 2)):
        mc.reset()
        assert torch.equal(mc.compile(lambda t: torch.sign(t))(arg), torch.sign(arg))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float16])
@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_fmod_of_integers(dtype, cpu_backend, monkeypatch):
    """CUDA fuzzer seeds 34201190 and 20 more: ``torch.fmod`` of int64 tensors failed to compile
    on an H200 (libdevice's ``fmod`` has float overloads only; Triton's interpreter, running
    NumPy's, accepted it). Integers take C's ``%``, which keeps the dividend's sign as fmod."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)
    a = torch.arange(-9, 10).to(dtype)
    b = torch.tensor([3, -4, 5, -2, 7, 1, -1, 2, 6, -3, 4, -5, 2, 3, -7, 8, 9, -6, 5]).to(dtype)
    assert torch.equal(mc.compile(lambda x, y: torch.fmod(x, y))(a, b), torch.fmod(a, b))


@pytest.mark.parametrize("backend, cpu_backend", [("aot_eager", "cpp"), ("inductor", "reference"),
                                                  ("inductor", "cpp"), ("inductor", "triton")])
def test_std_of_equal_values_is_zero(backend, cpu_backend, monkeypatch):
    """Fuzzer seed 11000769: ``(x @ x.mT).std(1)`` of an expanded ``x``, every value equal. Eager
    (Welford) gives exactly 0; the decomposition's mean, sum(x) / N, was an ulp off the values,
    and the std 1.6e-5. It now subtracts the first value of each row before summing."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)
    x = torch.full((15, 1), 3.7).expand(15, 31)

    def fn(x):
        v = x @ x.mT
        return v.std(dim=1, keepdim=True), torch.var_mean(v, (0, 1))

    mc.reset()
    std, (var, mean) = mc.compile(fn, backend=backend)(x)
    assert torch.equal(std, torch.zeros(15, 1)) and float(var) == 0.0
    torch.testing.assert_close(mean, fn(x)[1][1])


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_in_place_write_and_a_later_loop_over_the_row(cpu_backend, monkeypatch):
    """Fuzzer seed 11004437: ``v0 = x[::2]; v0.mul_(2); log_softmax(v0)``. The in-place write
    into ``x`` shared a kernel with the log-softmax, whose three loops over the row each
    recompute ``x[2r] * 2`` from ``x``: the first loop wrote ``x`` in place, the next two read the
    doubled values and doubled them again. A member writing an input in place no longer shares
    a reduction kernel with members that read that storage."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)

    def fn(x):
        v0 = x[..., ::2]
        v0.mul_(2)
        return torch.log_softmax(v0, dim=-1)

    for n in (3, 9, 2001):  # the row in registers, and in a loop (Triton)
        torch.manual_seed(n)
        x = torch.randn(n)
        expected_x = x.clone()
        expected = fn(expected_x)
        mc.reset()
        torch.testing.assert_close(mc.compile(fn)(x), expected)
        torch.testing.assert_close(x, expected_x)


@pytest.mark.parametrize("fn", [
    lambda x: (x.exp() * 0.1 - (x.exp() * 0.1).amax(-1, keepdim=True)).exp(),
    lambda x: torch.log_softmax(x.exp() * 0.1, -1),
], ids=["exp_minus_amax", "log_softmax"])
def test_recomputed_product_rounds_as_in_the_first_loop(fn):
    """A row kernel recomputes ``x.exp() * 0.1`` in its second loop; g++ fused the product into
    the subtraction there (a multiply-add) and not in the first loop, so the row's max minus
    itself was about 5e8 (exp: inf) instead of 0. C++ kernels are built with -ffp-contract=off,
    Triton kernels compiled with enable_fp_fusion=False (the GPU did the same)."""
    x = torch.tensor([[59.0, 1.0, -3.0]], dtype=torch.float64)
    torch.testing.assert_close(mc.compile(fn)(x), fn(x))


# --- complex values (the fuzzer draws them since it compares complex outputs) -------------------
COMPLEX_BACKENDS = ["eager", "aot_eager", "reference", "cpp", "triton"]


def _compiled(fn, backend, monkeypatch):
    """``fn`` compiled with a backend name, or the inductor's CPU code generator of that name."""
    if backend in ("eager", "aot_eager"):
        return mc.compile(fn, backend=backend)
    monkeypatch.setattr(config.inductor, "cpu_backend", backend)
    return mc.compile(fn, backend="inductor")


@pytest.mark.parametrize("backend", COMPLEX_BACKENDS)
def test_variance_and_logsumexp_of_complex_values_are_eagers(backend, monkeypatch):
    """Fuzzer seeds 129 and 245: ``std`` of complex values is real, |x - mean|^2 summed (the
    decomposition squared the complex differences and returned complex64); ``logsumexp`` of
    complex values shifts by the largest real part (the decomposition took amax of complex
    values, which ATen does not order: NotImplementedError)."""
    def f(x):
        return x.std(dim=2, keepdim=True), torch.var_mean(x, dim=0), x.logsumexp(dim=0)

    x = torch.randn(4, 3, 5, dtype=torch.complex64)
    expected, actual = f(x), _compiled(f, backend, monkeypatch)(x)
    for e, a in zip(torch.utils._pytree.tree_leaves(expected),
                    torch.utils._pytree.tree_leaves(actual)):
        assert a.dtype == e.dtype
        torch.testing.assert_close(a, e)


@pytest.mark.parametrize("backend", COMPLEX_BACKENDS)
def test_complex_buffers_in_a_kernel_fall_back_to_the_reference_backend(backend, monkeypatch):
    """Fuzzer seed 205: a complex buffer reached a Triton kernel, whose arguments have
    no complex type (``KeyError: 'complex64'`` under the interpreter); the graph now falls back
    to the reference backend, as a C++ kernel's does."""
    def f(c):
        return (c.reshape(-1).zero_()[..., 1:],)  # (writes into the input c)

    c = torch.randn(3, 7, dtype=torch.complex64)
    c_compiled = c.clone()
    expected, actual = f(c), _compiled(f, backend, monkeypatch)(c_compiled)
    for e, a in zip(expected + (c,), actual + (c_compiled,)):
        torch.testing.assert_close(a, e)


@pytest.mark.parametrize("view", ["real", "imag", "view_as_real", "mT.imag", "conj"])
def test_a_real_or_conjugated_view_of_a_complex_input_is_eagers(view):
    """Fuzzer seed 37: ``return x0.real`` for a complex input was rebuilt by ``as_strided`` on
    the complex input with the real view's strides: an error (or elements of the wrong place).
    The rebuild now views the input as real first; a conjugated view (a flag ``as_strided``
    drops) makes the graph fall back."""
    fn = {"real": lambda x: x.real, "imag": lambda x: x.imag, "conj": lambda x: x.conj(),
          "view_as_real": torch.view_as_real, "mT.imag": lambda x: x.mT.imag}[view]
    x = torch.randn(8, 13, dtype=torch.complex64)[:, 1:]
    for backend in ("aot_eager", "inductor"):
        mc.reset()
        out = mc.compile(lambda x: (fn(x), x.sum()), backend=backend)(x)[0]
        assert out.data_ptr() == fn(x).data_ptr() and out.is_conj() == fn(x).is_conj()
        assert torch.equal(out.resolve_conj(), fn(x).resolve_conj())


@pytest.mark.cpu_only
def test_atomic_add_along_one_side_of_a_tile_has_an_address_per_lane(sources, monkeypatch):
    """CUDA fuzzer seed 34307087: an ``index_add`` into a dim of size 1 wrote through a 2-D tile
    whose address held x0 alone (the index into the size-1 dim is 0): Triton broadcasts an atomic
    add's value to its address's shape, so [YBLOCK, XBLOCK] values into [1, XBLOCK] addresses
    failed to compile on the GPU (the interpreter broadcast them anyway)."""
    use_cpu_backend(monkeypatch, "triton")
    fn = lambda x, i, s: x.sum(dim=(1, 2), keepdim=True).index_add(2, i, s)  # noqa: E731
    args = (torch.randint(0, 8, (13, 3, 4)), torch.zeros(5, dtype=torch.int64),
            torch.randint(0, 8, (13, 1, 5)))
    assert torch.equal(mc.compile(fn)(*args), fn(*args))
    atomics = [line for s in sources for line in s.splitlines() if "tl.atomic_add(" in line]
    tiled = [line for s in sources if "YBLOCK" in s for line in s.splitlines()
             if "tl.atomic_add(" in line]
    assert atomics and all("tl.zeros([YBLOCK, XBLOCK]" in line for line in tiled), atomics


@pytest.mark.cpu_only
def test_scan_of_a_constant_widens_it_by_arithmetic(sources, monkeypatch):
    """CUDA fuzzer seed 34300121: the cumprod of a value folded to a constant (``x.fill_(3)``)
    scanned ``tl.broadcast_to(tl.full([1], ..), [XBLOCK, RBLOCK])``, a rank change that Triton
    refuses on the GPU; adding a zero block widens it as arithmetic broadcasting does."""
    use_cpu_backend(monkeypatch, "triton")
    fn = lambda x: torch.cumprod(x.fill_(3).reshape(-1).tanh() + 1, dim=-1)  # noqa: E731
    x = torch.zeros((), dtype=torch.float16)
    torch.testing.assert_close(mc.compile(fn)(x.clone()), fn(x.clone()))
    scans = [s for s in sources if "tl.associative_scan(" in s]
    assert scans and not any("tl.broadcast_to(" in s for s in scans), sources


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp"])
def test_accumulating_at_an_index_known_to_be_constant(cpu_backend, monkeypatch):
    """``index_put(accumulate=True)`` of a scalar at indices whose value range is one value
    (two zeros): the store's index and value are the same at every point, and each point
    still adds once (the reference backend stored it once). Seed 34500122."""
    monkeypatch.setattr(mc.config.inductor, "cpu_backend", cpu_backend)

    def fn(a, b, i, v):
        return torch.maximum(a, b).index_put((i,), v, accumulate=True)

    args = torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([0, 0]), torch.tensor(0.5)
    mc.reset()
    torch.testing.assert_close(mc.compile(fn)(*args), fn(*args))
