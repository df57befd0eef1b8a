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
