"""Cases ported from pytorch/pytorch ``test/dynamo/test_ctx_manager.py`` (``CtxManagerTests``):
grad-mode context managers, user context-manager classes and ``@contextmanager`` functions,
graph breaks inside them, re-typed and adapted (CPU only: the CUDA stream and event tests are
left out)."""

from __future__ import annotations

import contextlib

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_ctx_manager.py")


def _grad_args():
    return (torch.randn(10, 10, requires_grad=True), torch.randn(10, 10))


class CustomizedCtxManager:
    def __init__(self, mode):
        self.prev = torch.is_grad_enabled()
        self.mode = mode

    def __enter__(self):
        torch._C._set_grad_enabled(self.mode)

    def __exit__(self, exc_type, exc_value, traceback):
        torch._C._set_grad_enabled(self.prev)


@contextlib.contextmanager
def customized_ctx_manager(mode):
    prev = torch.is_grad_enabled()
    try:
        yield torch._C._set_grad_enabled(mode)
    finally:
        torch._C._set_grad_enabled(prev)


@case(args=_grad_args)
def ctx_no_grad_block(a, b):
    x = a + 1
    with torch.no_grad():
        x = x + b
    return x + 2


@case(args=_grad_args)
def set_grad_enabled_block(a, b):
    x = a + 1
    with torch.set_grad_enabled(False):
        x = x + b
    return x + 2


@case(args=_grad_args)
def ctx_enable_grad_block(a, b):
    x = a + 1
    with torch.enable_grad():
        x = x + b
    return x + 2


@case(args=_grad_args)
def set_grad_enabled_checked(a, b):
    x = a + 1
    with torch.set_grad_enabled(True):
        if torch.is_grad_enabled():
            x = x + b
    return x + 2


@case(args=_grad_args)
def grad_mode_guard(a, b):
    prev_grad = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    a = a + 1
    a.tolist()  # graph break
    ret = a + b
    torch.set_grad_enabled(prev_grad)
    return ret


@case(args=lambda: (torch.randn(3, 4, requires_grad=True),))
def nested_grad_mode_graph_break(x):
    before = torch.is_grad_enabled()
    with torch.set_grad_enabled(False):
        torch._dynamo.graph_break()
        with torch.set_grad_enabled(True):
            x = torch.mul(x, 5)
            torch._dynamo.graph_break()
            x = torch.sqrt(x.abs())
            assert torch.is_grad_enabled()
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled() == before
    return x


@case(args=lambda: (torch.randn(2, 2, requires_grad=True),))
def no_grad_graph_break_inside(x):
    y = x * 2
    with torch.no_grad():
        z = y * 3
        print("graph break inside no_grad")
        z = z + 1
    return y + 1, z


@case(args=_grad_args)
def user_ctx_manager_class(a, b):
    x = a * 2
    with CustomizedCtxManager(False):
        y = x + b
    return x, y


@case(args=_grad_args)
def user_contextmanager_function(a, b):
    x = a * 2
    with customized_ctx_manager(False):
        y = x + b
    return x, y


@case(args=lambda: (torch.randn(2, 2, requires_grad=True),))
def no_grad_decorator_on_helper(x):
    @torch.no_grad()
    def helper(t):
        return t * 2

    return helper(x) + x


@case(args=lambda: (torch.randn(2, 2, requires_grad=True),))
def nullcontext_block(x):
    with contextlib.nullcontext():
        y = x.sin()
    return y


@case(args=lambda: (torch.randn(2, 2, requires_grad=True),))
def ctx_manager_returns_value(x):
    @contextlib.contextmanager
    def scaled(v):
        yield v * 2

    with scaled(x) as y:
        z = y + 1
    return z


@case(args=lambda: (torch.randn(4, 4),))
def autocast_cpu_block(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch.mm(x, x)
    return y.float() + 1


@case(args=_grad_args)
def grad_mode_exit_on_exception(a, b):
    try:
        with torch.no_grad():
            x = a + b
            raise ValueError
    except ValueError:
        pass
    return x, a * 2, torch.is_grad_enabled()
