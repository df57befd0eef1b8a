"""PyTorch's own Inductor test functions (``tests/inductor_port/``, from
``test/inductor/test_torchinductor.py``), compiled with ``backend="inductor"`` and compared
with eager, as the original's ``check_model`` does: every output, every argument the function
mutates, and for cases with ``grads`` the gradients of the floating-point arguments.

Every case runs with the default backends (C++ kernels for CPU tensors); the cases marked
``triton`` also run with the Triton backend on CPU tensors, through its interpreter
(``TRITON_INTERPRET=1``, which conftest sets without CUDA).

An op or a graph that runs eagerly (a fallback, with its reason) is allowed, and is recorded:
``INDUCTOR_PORT_TABLE=1 pytest tests/test_inductor_port.py -k fallback_table -s`` prints them
(it runs every case again, so only when asked). A wrong result or an exception is a bug.
"""

from __future__ import annotations

import os

import pytest
import torch
import torch.utils._pytree as pytree

import minicompile as mc
from minicompile import config
from minicompile.inductor.graph import GraphLowering
from inductor_port import CASES, Case
from inductor_port import cpu_repro_corpus, torchinductor_corpus  # noqa: F401  (they register the cases)

TEST_DEVICE = os.environ.get("MINICOMPILE_TEST_DEVICE", "cpu")


def fresh_args(case: Case) -> tuple:
    """The same arguments on every call (the function may mutate them): seeded, and for a case
    with ``grads`` its floating-point tensors require grad."""
    torch.manual_seed(0)
    args = case.make_args()
    if case.grads:
        for a in args:
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                a.requires_grad_(True)
    return args


def observe(case: Case, fn, args: tuple) -> list:
    """The flat outputs, the arguments after the call, and for ``grads`` the gradients that a
    seeded random cotangent per output gives (ones would hide a swapped gradient)."""
    got = pytree.tree_leaves(fn(*args))
    seen = got + [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
    if case.grads:
        outputs = [t for t in got if isinstance(t, torch.Tensor) and t.requires_grad]
        generator = torch.Generator().manual_seed(1)
        cotangents = [torch.randn(t.shape, generator=generator, dtype=t.dtype, device="cpu")
                      .to(t.device)
                      for t in outputs]
        torch.autograd.backward(outputs, cotangents)
        seen += [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    return seen


def assert_same(case: Case, got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if isinstance(e, torch.Tensor):
            torch.testing.assert_close(g.detach(), e.detach(), atol=case.atol, rtol=case.rtol,
                                       equal_nan=True)
        else:
            assert g == e, (g, e)


@pytest.fixture
def fallbacks(monkeypatch) -> list[str]:
    """What ran eagerly while the test ran: ops the lowering left to ATen, graphs (or frames)
    run eagerly, graphs the chosen backend could not generate."""
    ops: list[str] = []
    run = GraphLowering.run

    def recording_run(self):
        result = run(self)
        ops.extend(f"{op}: {reason}" for op, reason in self.fallbacks)
        return result

    monkeypatch.setattr(GraphLowering, "run", recording_run)
    yield ops
    ops.extend(mc.metrics.fallback_reasons)
    ops.extend(f"backend: {e}" for e in mc.metrics.backend_fallbacks)


def check(case: Case) -> None:
    if case.cpu_only and TEST_DEVICE != "cpu":
        pytest.skip(case.cpu_only)
    expected = observe(case, case.fn, fresh_args(case))
    mc.reset()
    compiled = mc.compile(case.fn, backend="inductor", dynamic=case.dynamic)
    assert_same(case, observe(case, compiled, fresh_args(case)), expected)
    assert not mc.metrics.backend_fallbacks, mc.metrics.backend_fallbacks  # a backend's bug


def test_corpus_is_large_and_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert len(CASES) >= 150


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_is_eager_equal(case: Case):
    check(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.triton], ids=lambda c: c.name)
def test_case_with_triton_is_eager_equal(case: Case, monkeypatch):
    if TEST_DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        pytest.skip("Triton kernels on CPU tensors need TRITON_INTERPRET=1")
    pytest.importorskip("triton")
    monkeypatch.setattr(config.inductor, "cpu_backend", "triton")
    check(case)


@pytest.mark.skipif(not os.environ.get("INDUCTOR_PORT_TABLE"), reason="INDUCTOR_PORT_TABLE=1")
def test_fallback_table(fallbacks: list[str]):
    """Prints, per case, what ran eagerly (``-s`` shows it); asserts nothing beyond the cases'
    own tests, which it repeats."""
    rows = []
    for case in CASES:
        del fallbacks[:]
        mc.metrics.reset()
        try:
            check(case)
            fallbacks.extend(mc.metrics.fallback_reasons)
            verdict = "fallback" if fallbacks else "pass"
        except Exception as e:  # noqa: BLE001 - a row of the table, the case's test fails
            verdict = f"FAIL {type(e).__name__}"
        rows.append((case.name, verdict, sorted(set(fallbacks))))
    for name, verdict, why in rows:
        print(f"{name:50} {verdict:10} {'; '.join(w[:120] for w in why)}")
    counts = {v: sum(r[1].startswith(v) for r in rows) for v in ("pass", "fallback", "FAIL")}
    print(f"\n{len(rows)} cases: {counts}")
