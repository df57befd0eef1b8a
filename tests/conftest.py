"""Shared test set-up: the ``gpu`` marker skips without CUDA; every test starts with a fresh cache."""

import os

import pytest
import torch

if not torch.cuda.is_available():  # Triton kernels run on CPU tensors through its interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped without one")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_compiler_state():
    import minicompile as mc

    torch.manual_seed(0)
    mc.metrics.reset()
    try:
        mc.reset()
    except ImportError:  # before dynamo exists
        pass
    yield


@pytest.fixture
def compiled_graphs(monkeypatch):
    """Every CompiledFxGraph the inductor backend makes while the test runs."""
    import minicompile as mc
    import minicompile.inductor.backend as backend_module
    from minicompile.inductor import compile_fx

    graphs = []

    def spy(gm, example_inputs, **kwargs):
        graphs.append(compile_fx.compile_fx_inner(gm, example_inputs, **kwargs))
        return graphs[-1]

    monkeypatch.setattr(backend_module, "compile_fx_inner", spy)
    mc.reset()
    return graphs
