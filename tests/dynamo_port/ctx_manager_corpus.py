"""Cases ported from pytorch/pytorch ``test/dynamo/test_ctx_manager.py`` (``CtxManagerTests``,
``ContextlibContextManagerTests``, ``CPythonContextManagerTestCase``): grad-mode context
managers, user context-manager classes and ``@contextmanager`` functions (their value, their
code after the ``yield``, the exception of the block thrown into them), graph breaks inside
them, re-typed and adapted (CPU only: the CUDA stream and event tests are left out; state a
test kept in ``nonlocal``s or globals is returned instead)."""

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


# -- ContextlibContextManagerTests --------------------------------------------------------------
@case(args=lambda: ())
def contextmanager_set_default_dtype():
    @contextlib.contextmanager
    def set_default_dtype(dtype):
        old_dtype = torch.get_default_dtype()
        try:
            torch.set_default_dtype(dtype)
            yield
        finally:
            torch.set_default_dtype(old_dtype)

    with set_default_dtype(torch.float64):
        x = torch.tensor([3.0, 3.0 + 5.0j])
    return x


@case
def contextmanager_return_inside_block(x):
    @contextlib.contextmanager
    def compute_sin(x):
        try:
            yield x.sin()
        finally:
            pass

    with compute_sin(x) as y:
        return y.cos()


@case
def contextmanager_change_parent_nonlocal(x):
    z = 0
    k = 0

    def create_ctx():
        @contextlib.contextmanager
        def ctx(x):
            nonlocal k
            try:
                k = 100
                yield x.sin()
            finally:
                pass

        return ctx

    def run_ctx(ctx, x):
        nonlocal z
        with ctx(x) as y:
            z = k
            return y.cos()

    ctx = create_ctx()
    return run_ctx(ctx, x), z, k


@case
def contextmanager_finally_reads_parent_nonlocal(x):
    z = 1
    k = 2

    def create_ctx():
        @contextlib.contextmanager
        def ctx(x):
            nonlocal k
            try:
                yield x.sin()
            finally:
                k = z

        return ctx

    def run_ctx(ctx, x):
        nonlocal z
        z = 100
        with ctx(x) as y:
            return y.cos()

    ctx = create_ctx()
    return run_ctx(ctx, x), z, k


@case
def contextmanager_made_by_other_function(x):
    def create_ctx(x):
        @contextlib.contextmanager
        def ctx():
            try:
                yield x.sin()
            finally:
                pass

        return ctx

    def run_ctx(ctx):
        with ctx() as y:
            return y.cos()

    return run_ctx(create_ctx(x))


@case
def contextmanager_graph_break_inside(x):
    @contextlib.contextmanager
    def whoo(x):
        y = x.tan()
        try:
            torch._dynamo.graph_break()
            yield y
        finally:
            pass

    y = x.sin()
    with whoo(x) as z:
        y += z.neg()
    y += x.cos()
    return y


@case
def contextmanager_graph_break_inside_with_side_effects(x):
    log = []

    @contextlib.contextmanager
    def whoo(x):
        y = x.tan()
        try:
            log.append(x.sin())
            torch._dynamo.graph_break()
            yield y
        finally:
            log.append(x.cos())

    y = x.sin()
    with whoo(x) as z:
        y += z.neg()
    y += x.cos()
    return y, log


@case
def contextmanager_graph_break_inside_callee(x):
    @contextlib.contextmanager
    def whoo(x):
        y = x.tan()
        try:
            torch._dynamo.graph_break()
            yield y
        finally:
            pass

    def bar(x):
        with whoo(x) as z:
            return z.neg()

    return x.sin() + bar(x) + x.cos()


@case
def contextmanager_graph_break_after_enter(x):
    @contextlib.contextmanager
    def whoo(x):
        try:
            yield x + 1
        finally:
            pass

    ctx = whoo(x)
    try:
        y = ctx.__enter__()
        torch._dynamo.graph_break()
    finally:
        ctx.__exit__(None, None, None)
    return y


@case
def contextmanager_graph_break_in_finally(x):
    log = []

    @contextlib.contextmanager
    def whoo(x):
        try:
            log.append(x)
            yield x.sin()
        finally:
            torch._dynamo.graph_break()
            log.append(x.cos())

    ctx = whoo(x)
    y = ctx.__enter__()
    ctx.__exit__(None, None, None)
    return y, log


@case
def contextmanager_enter_exit_called(x):
    @contextlib.contextmanager
    def whoo(x):
        try:
            yield x.cos() + 1
        finally:
            pass

    ctx = whoo(x)
    y = ctx.__enter__()
    ctx.__exit__(None, None, None)
    return x + y


@case
def contextlib_suppress_block(t):
    y = t.sin()
    with contextlib.suppress(ValueError):
        y += t.cos()
    return y.tan()


@case
def contextlib_nullcontext_return(t):
    with contextlib.nullcontext():
        return t.sin()


# -- CPythonContextManagerTestCase (CPython's test_contextlib.py) --------------------------------
@case
def contextmanager_plain(t):
    state = []

    @contextlib.contextmanager
    def woohoo():
        state.append(1)
        yield 42
        state.append(999)

    y = t.sum()
    with woohoo() as x:
        state.append(x)
        y += x
    return y, state


@case
def contextmanager_finally_on_exception(t):
    state = []

    @contextlib.contextmanager
    def woohoo():
        state.append(1)
        try:
            yield 42
        finally:
            state.append(999)

    y = t.sum()
    try:
        with woohoo() as x:
            state.append(x)
            raise ZeroDivisionError
    except ZeroDivisionError:
        state.append("caught")
    return y, state


@case
def contextmanager_no_reraise(t):
    @contextlib.contextmanager
    def whee():
        yield

    ctx = whee()
    ctx.__enter__()
    return t.sum(), ctx.__exit__(TypeError, TypeError("foo"), None)


@case
def contextmanager_trap_yield_after_throw(t):
    @contextlib.contextmanager
    def whoo():
        try:
            yield
        except Exception:
            yield

    ctx = whoo()
    ctx.__enter__()
    try:
        ctx.__exit__(TypeError, TypeError("foo"), None)
    except RuntimeError as e:
        return t.sum(), e.args
    return t.sum(), ()


@case
def contextmanager_trap_no_yield(t):
    @contextlib.contextmanager
    def whoo():
        if False:
            yield

    ctx = whoo()
    try:
        ctx.__enter__()
    except RuntimeError as e:
        return t.sum(), e.args
    return t.sum(), ()


@case
def contextmanager_trap_second_yield(t):
    @contextlib.contextmanager
    def whoo():
        yield
        yield

    ctx = whoo()
    ctx.__enter__()
    try:
        ctx.__exit__(None, None, None)
    except RuntimeError as e:
        return t.sum(), e.args
    return t.sum(), ()


@case
def contextmanager_except_swallows(t):
    state = []

    @contextlib.contextmanager
    def woohoo():
        state.append(1)
        try:
            yield
        except ZeroDivisionError as e:
            state.append(e.args[0])
            state.append(state)

    with woohoo():
        raise ZeroDivisionError(999)
    return t.sum(), len(state), state[:2]


class SwallowKeyError:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append((exc_type.__name__ if exc_type else None, tb is not None))
        return exc_type is not None and issubclass(exc_type, KeyError)


@case
def user_ctx_class_swallows_exception(t):
    log = []
    with SwallowKeyError(log):
        raise KeyError("k")
    try:
        with SwallowKeyError(log):
            raise ValueError("v")
    except ValueError:
        log.append("ValueError passed through")
    return t.cos(), log
