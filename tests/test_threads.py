"""Threads: two threads calling one compiled function get correct results and share entries.

Compiling sets process-wide state (the fake mode, the dynamic-shapes policy, grad mode), so
compiles take one lock (``eval_frame.compile_lock``); a thread that waited for it finds the
entry the other thread made instead of compiling a second one. Calls that hit the cache run
concurrently.
"""

import threading
import time

import pytest
import torch

import minicompile as mc
from minicompile import config
from minicompile.aot_autograd import aot_autograd
from minicompile.dynamo import eval_frame
from minicompile.dynamo.eval_frame import cache_entries

THREADS = 4


def run_in_threads(fn, inputs_per_thread):
    """Start every thread at once (a barrier), so their first calls race; return results."""
    barrier = threading.Barrier(len(inputs_per_thread))
    results, errors = [None] * len(inputs_per_thread), []

    def work(i, inputs):
        barrier.wait()
        try:
            results[i] = [fn(*args) for args in inputs]
        except Exception as e:  # reported by the test, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i, inputs))
               for i, inputs in enumerate(inputs_per_thread)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def fn(x, y):
    return torch.softmax(x * y + 1, dim=-1).sum(0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_first_compile_at_once_makes_one_entry(backend, monkeypatch):
    compiles = []
    convert = eval_frame.convert_frame

    def slow_convert(*args, **kwargs):  # widen the window in which both threads miss
        compiles.append(threading.current_thread().name)
        time.sleep(0.05)
        return convert(*args, **kwargs)

    monkeypatch.setattr(eval_frame, "convert_frame", slow_convert)
    compiled = mc.compile(fn, backend=backend, dynamic=False)
    inputs = [[(torch.randn(8, 5), torch.randn(5)) for _ in range(3)] for _ in range(THREADS)]
    results = run_in_threads(compiled, inputs)
    for thread_inputs, thread_results in zip(inputs, results):
        for args, out in zip(thread_inputs, thread_results):
            torch.testing.assert_close(out, fn(*args))
    assert len(compiles) == 1 and len(cache_entries(fn)) == 1


@pytest.mark.parametrize("cpu_backend", ["reference", "cpp", "triton"])
def test_one_entry_per_guard_set(cpu_backend, monkeypatch):
    """Threads calling with two shapes each: two guard sets, two entries, whoever compiles.
    Kernels run concurrently too (Triton's interpreter, which is not thread-safe, one at a
    time)."""
    monkeypatch.setattr(config.inductor, "cpu_backend", cpu_backend)
    compiled = mc.compile(fn, backend="inductor", dynamic=False)
    shapes = [(8, 5), (3, 7)]
    inputs = [[(torch.randn(*s), torch.randn(s[1])) for s in shapes * 2]
              for _ in range(THREADS)]
    results = run_in_threads(compiled, inputs)
    for thread_inputs, thread_results in zip(inputs, results):
        for args, out in zip(thread_inputs, thread_results):
            torch.testing.assert_close(out, fn(*args))
    assert len(cache_entries(fn)) == 2


def test_recompile_limit_holds_across_threads(monkeypatch):
    monkeypatch.setattr(config, "recompile_limit", 2)
    compiled = mc.compile(fn, backend="eager", dynamic=False)
    inputs = [[(torch.randn(n, 5), torch.randn(5)) for n in range(2, 8)] for _ in range(THREADS)]
    with pytest.warns(UserWarning, match="recompile_limit"):
        results = run_in_threads(compiled, inputs)
    for thread_inputs, thread_results in zip(inputs, results):
        for args, out in zip(thread_inputs, thread_results):
            torch.testing.assert_close(out, fn(*args))
    assert len(cache_entries(fn)) == 2


def test_a_new_grad_variant_is_traced_once(monkeypatch):
    """AOT autograd traces a variant per requires-grad pattern when a call first needs it, at
    run time (outside Dynamo's compile lock): threads needing it at once trace it once."""
    traces = []
    trace = aot_autograd.trace_graph

    def slow_trace(*args, **kwargs):
        traces.append(kwargs.get("joint"))
        time.sleep(0.05)
        return trace(*args, **kwargs)

    monkeypatch.setattr(aot_autograd, "trace_graph", slow_trace)
    compiled = mc.compile(fn, backend="aot_eager", dynamic=False)
    compiled(torch.randn(8, 5), torch.randn(5))  # the inference variant
    leaves = [torch.randn(8, 5, requires_grad=True) for _ in range(THREADS)]
    y = torch.randn(5)
    results = run_in_threads(lambda x: torch.autograd.grad(compiled(x, y).sum(), x)[0],
                             [[(x,)] for x in leaves])
    for x, (grad,) in zip(leaves, results):
        torch.testing.assert_close(grad, torch.autograd.grad(fn(x, y).sum(), x)[0])
    assert traces == [False, True]


def test_small_products_on_one_thread_in_several_threads(monkeypatch):
    """A tiny MLP's products run in a region on one thread (``library_threads``) only while
    there is one Python thread: threads calling it at once get eager's results and no
    recompile (the guards read the thread count), and a thread started afterwards gets the
    process's count, not one (ATen sets a new thread's count from the last one set)."""
    monkeypatch.setattr(config.inductor, "cpu_backend", "cpp")
    mlp = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(),
                              torch.nn.Linear(32, 32)).requires_grad_(False)
    compiled = mc.compile(mlp, dynamic=False)
    threads = torch.get_num_threads()
    inputs = [[(torch.randn(4, 32),) for _ in range(20)] for _ in range(THREADS)]
    results = run_in_threads(compiled, inputs)
    for thread_inputs, thread_results in zip(inputs, results):
        for (x,), out in zip(thread_inputs, thread_results):
            torch.testing.assert_close(out, mlp(x))
    assert len(cache_entries(compiled)) == 1 and mc.metrics.recompiles == 0
    assert torch.get_num_threads() == threads
    assert run_in_threads(lambda: torch.get_num_threads(), [[()]]) == [[threads]]
