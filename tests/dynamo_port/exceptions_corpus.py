"""Cases ported from pytorch/pytorch ``test/dynamo/test_exceptions.py`` (``ExceptionTests``,
``CPythonExceptionTests``): ``try``/``except``/``else``/``finally`` around tensor code,
exceptions raised by the traced code or by a callee, custom exception classes, ``__getattr__``
that raises, and exceptions chained through ``__context__`` and ``__cause__`` (the facts the
tests assert are returned), re-typed and adapted."""

from __future__ import annotations

import contextlib

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_exceptions.py")


class CustomException(Exception):
    pass


class CustomExceptionWithArgs(Exception):
    def __init__(self, a, b=None):
        self.a = a
        self.b = b


@case
def exception_caught(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError
    except Exception:
        x = torch.sigmoid(x)
    return x


@case
def exception_tuple_of_classes(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError
    except (NotImplementedError, AttributeError):
        x = torch.sigmoid(x)
    return x


@case
def exception_finally(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError("Not implemented")
    except AssertionError:
        x = torch.sigmoid(x)
    except NotImplementedError:
        x = torch.cos(x)
    finally:
        x = torch.cos(x)
    return x


@case
def exception_in_loop(x):
    for i in range(10):
        if i == 5:
            return x
        try:
            x = torch.sin(x)
            raise NotImplementedError
        except Exception:
            x = torch.sigmoid(x)
    return x


@case
def exception_nested_handlers(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError("Not implemented")
    except NotImplementedError:
        x = torch.sigmoid(x)
        try:
            x = torch.cos(x)
            raise AssertionError
        except AssertionError:
            x = torch.cos(x)
    return x


def cos_of(x):
    return torch.cos(x)


@case
def exception_else(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        x = cos_of(x)
    except Exception:
        x = torch.sigmoid(x)
    else:
        x = torch.cos(x)
    return x


@case
def exception_with_no_grad(x):
    x = torch.cos(x)
    try:
        with torch.no_grad():
            x = torch.sin(x)
            raise NotImplementedError("Not implemented")
    except NotImplementedError:
        x = torch.sigmoid(x)
    return x


def raise_not_implemented():
    raise NotImplementedError("foo")


@case
def exception_raised_from_child(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise_not_implemented()
        x = torch.sin(x)
    except Exception:
        x = torch.sigmoid(x)
    return x


@case
def custom_exception(t):
    try:
        raise CustomException
    except CustomException:
        return t.sin()
    except Exception:
        return t.cos()


@case
def custom_exception_with_args(t):
    try:
        raise CustomExceptionWithArgs(1, 2.0)
    except CustomExceptionWithArgs as e:
        return t.sin() + e.a + e.b


@case
def raise_exception_args(t):
    try:
        raise ValueError(1, 2.0)
    except ValueError as e:
        return t.sin() + e.args[0] + e.args[1]


@case(args=lambda: (torch.randn(4), {"a": 1}))
def key_error(x, d):
    try:
        a = d["b"]
    except KeyError:
        a = 2
    return x * a


class Mock:
    def __init__(self):
        self.a = 1


mock = Mock()


@case
def attribute_error(x):
    try:
        c = 2
        mock.b  # noqa: B018
    except AttributeError:
        c = 3
    return torch.sin(x) * c


class MyMapping:
    def __init__(self, d):
        self._d = d

    def __getitem__(self, key):
        try:
            value = self._d[key]
        except KeyError:
            raise KeyError(key) from None
        return value


@case(args=lambda: (torch.rand(2, 3), MyMapping({"a": 10, "b": 20}), "m"))
def raise_from_none(x, d, key):
    def mapping_get(obj, key, value=None):
        try:
            return obj.__getitem__(key)
        except KeyError:
            return value

    return torch.sin(x + 1), mapping_get(d, key)


@case
def stop_iteration_in_helper(x):
    def zip_longest(*iterables, fillvalue=None):
        iterators = [iter(it) for it in iterables]
        result = []
        while True:
            for it in iterators:
                try:
                    value = next(it)
                except StopIteration:
                    result.append(fillvalue)
                    return result
                result.append(value)

    return x + 1, tuple(zip_longest([1, 2, 3, 4], [10, 11, 12]))


@case
def undo_kw_names(x):
    def g(x, k=None):
        if k:
            raise TypeError("error")
        return x.sin()

    d = {"a": x}
    try:
        g(x, k=True)
    except Exception:
        y = 0
        for _, b in d.items():
            y += b.sum()
    return y


@case
def exception_type_checked(x):
    try:
        raise IndexError("bad")
    except (KeyError, IndexError) as e:
        return x + isinstance(e, LookupError) + len(str(e))


# -- exceptions and context managers, generators (ExceptionTests, CPythonExceptionTests) -------
@case
def exception_turned_into_another_by_contextmanager(x):
    @contextlib.contextmanager
    def cm():
        try:
            yield
        except BaseException:
            raise ValueError  # noqa: B904

    @contextlib.contextmanager
    def nothing():
        try:
            yield
        finally:
            pass

    z = 0
    with nothing():
        try:
            with cm():
                raise IndexError
        except ValueError:
            z = 1
        except IndexError:
            z = 2
    return x + z


@case
def exception_reraised_from_callee(x):
    def gn(x):
        try:
            x = torch.cos(x)
            raise NotImplementedError("Not implemented")
        except NotImplementedError:
            x = torch.sigmoid(x)
            raise

    try:
        x = torch.cos(x)
        gn(x)
    except Exception:
        pass
    return x


@case
def exception_raise_generator_exit(t):
    try:
        raise GeneratorExit
    except Exception:
        return t.sin()
    except BaseException:
        return t.cos()


@case(args=lambda: ({"a": 1}, torch.randn(4)))
def exception_dict_pop_missing(dt, x):
    try:
        dt.pop("b")
    except KeyError:
        return torch.sin(x)
    else:
        return torch.cos(x)


PARAMS = {"a": 3, "b": 4, "c": 5}
DT = {"c": 5}


@case
def exception_in_loop_over_dict(x):
    for name in PARAMS:
        try:
            x = x * DT[name]
        except KeyError:
            x = x * torch.sin(x)
    return x


@case
def exception_thrown_into_generator_raises_another(t):
    def cm():
        try:
            yield 1
        except ValueError:
            try:
                raise TypeError
            finally:
                pass

    try:
        gen = cm()
        next(gen)
        gen.throw(ValueError)
    except TypeError:
        return t.sin()
    return t.cos()


@case
def exception_stop_iteration_out_of_generator(t):
    def whoo():
        yield t + 1
        raise StopIteration("boom")

    g = whoo()
    next(g)
    try:
        next(g)
    except RuntimeError:
        return t + 1.0
    except StopIteration:
        return t + 2.0
    return t


@case
def exception_stop_iteration_from_inner_next(t):
    def inner():
        yield t + 1

    def whoo():
        it = inner()
        while True:
            yield next(it)

    g = whoo()
    next(g)
    try:
        next(g)
    except RuntimeError:
        return t + 1.0
    except StopIteration:
        return t + 2.0
    return t


# -- exceptions raised inside a handler, re-raised, chained through __context__ ---------------

def _sigmoid_then_reraise(x):
    try:
        x = torch.cos(x)
        raise NotImplementedError("Not implemented")
    except NotImplementedError:
        x = torch.sigmoid(x)
        raise


@case
def exception_with_another_exception2(x):
    try:
        x = torch.cos(x)
        _sigmoid_then_reraise(x)
    except Exception:
        pass
    return x


class Exc(Exception):
    ...


@case
def raise_custom_exception_class_with_args(t):
    try:
        raise Exc(1, 2.0)
    except Exc as e:
        return t.sin() + e.args[0] + e.args[1]
    except Exception:
        return t.cos()


class GetattrA:
    def __init__(self) -> None:
        self._b = 20

    def __getattr__(self, name):
        fixed_name = "_" + name
        if fixed_name in self.__dict__:
            return self.__dict__[fixed_name]
        raise AttributeError(f"{name} absent")


class GetattrB(GetattrA):
    def __init__(self) -> None:
        self.a = 10

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return 30


getattr_b = GetattrB()


@case
def nn_module_getattr(x):
    return x * getattr_b.a * getattr_b.b * getattr_b.c


class FooWithGetattr(torch.nn.Module):
    def __init__(self, a=3):
        super().__init__()
        self.register_parameter("a", torch.nn.Parameter(torch.ones(4) * 2))

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)  # defer to nn.Module's logic
        except AttributeError:
            if name == "a_copy":
                return self.a
            raise

    def forward(self, x):
        return x * self.a * self.a_copy


foo_with_getattr = FooWithGetattr()


@case(args=lambda: (torch.ones(4),))
def custom_getattr_on_module_exception(x):
    return foo_with_getattr(x)


class MockGetattrMissing:
    def __init__(self):
        self.a = 5

    def __getattr__(self, name):
        if name != "a":
            raise AttributeError("missing")
        return self.__dict__["a"]


mock_getattr_missing = MockGetattrMissing()


@case
def attribute_error_from_getattr(x):
    if hasattr(mock_getattr_missing, "b"):
        return torch.cos(x)
    return torch.sin(x)


def _zip_longest(*iterables, fillvalue=None):
    iterators = [iter(it) for it in iterables]
    result = []
    while True:
        for it in iterators:
            try:
                value = next(it)
            except StopIteration:
                result.append(fillvalue)
                return result
            result.append(value)


@case(args=lambda: (torch.randn(4), [1, 2, 3, 4], [10, 11, 12]))
def stop_iteration_zip_longest(t, x, y):
    return torch.cos(t), tuple(_zip_longest(x, y))


@case
def ensure_exception_is_active_after_try_except_block(x):
    try:
        try:
            1 / 0
        except ZeroDivisionError:
            for exc in (KeyError, IndexError):
                try:
                    raise exc
                except exc:
                    pass
            raise
    except ZeroDivisionError as e:
        return x + 1, type(e).__name__


@case
def ensure_exception_is_active_inside_try_except_block(x):
    contexts = []
    try:
        try:
            1 / 0
        except ZeroDivisionError:
            for exc in (KeyError, IndexError):
                try:
                    raise exc
                except exc as e:
                    contexts.append(type(e.__context__).__name__)
            raise
    except ZeroDivisionError:
        pass
    return x + 1, contexts


@case
def reraise_first_exc(x):
    def fn():
        try:
            1 / 0
        except ZeroDivisionError:
            try:
                raise ValueError
            except ValueError:
                pass
            raise

    try:
        fn()
    except ZeroDivisionError as e:
        return x + 1, type(e).__name__, type(e.__context__).__name__
    return x, None, None


@case
def raise_finally_simple(x):
    def fn():
        try:
            raise ValueError
        except ValueError:
            try:
                raise TypeError
            finally:
                pass

    try:
        fn()
    except TypeError as e:
        return x + 1, type(e.__context__).__name__
    return x, None


@case
def exception_handled_all_in_generator(x):
    def cm():
        try:
            yield 1
        except ValueError:
            try:
                raise TypeError
            finally:
                pass

    try:
        gen = cm()
        next(gen)
        gen.throw(ValueError)
    except TypeError as e:
        return x + 1, type(e.__context__).__name__
    return x, None


@case
def block_stack_cleanup(x):
    params = {"a": 3, "b": 4, "c": 5}
    dt = {"c": 5}
    for name in params:
        try:
            x = x * dt[name]
        except KeyError:
            x = x * torch.sin(x)
    return x


@case
def raise_set___context__(x):
    try:
        raise TypeError
    except TypeError as e:
        exc = e
    try:
        raise ValueError
    except ValueError as e:
        exc2 = e
    return x + 1, exc.__context__ is None, exc2.__context__ is None


@case
def chaining_descriptors(x):
    try:
        raise Exception  # noqa: TRY002
    except Exception as exc:
        e = exc
    before = (e.__context__ is None, e.__cause__ is None, e.__suppress_context__)
    e.__context__ = NameError()
    e.__cause__ = None
    after = (type(e.__context__).__name__, e.__cause__ is None, e.__suppress_context__)
    e.__suppress_context__ = False
    return x + 1, before, after, e.__suppress_context__


@case
def context_of_exception_in_try_and_finally(x):
    try:
        try:
            te = TypeError(1)
            raise te
        finally:
            ve = ValueError(2)
            raise ve
    except Exception as e:
        exc = e
    return x + 1, exc is ve, exc.__context__ is te


@case
def context_of_exception_in_except_and_finally(x):
    try:
        try:
            te = TypeError(1)
            raise te
        except Exception:  # noqa: E722
            ve = ValueError(2)
            raise ve  # noqa: B904
        finally:
            oe = OSError(3)
            raise oe
    except Exception as e:
        exc = e
    return x + 1, exc is oe, exc.__context__ is ve, exc.__context__.__context__ is te


@case
def context_of_exception_in_else_and_finally(x):
    try:
        try:
            pass
        except Exception:  # noqa: E722
            pass
        else:
            ve = ValueError(1)
            raise ve
        finally:
            oe = OSError(2)
            raise oe
    except Exception as e:
        exc = e
    return x + 1, exc is oe, exc.__context__ is ve


@case
def raise_does_not_create_context_chain_cycle(x):
    A, B, C = AssertionError, BytesWarning, ConnectionError
    try:
        try:
            raise A
        except A as a_:
            a = a_
            try:
                raise B
            except B as b_:
                b = b_
                try:
                    raise C
                except C as c_:
                    c = c_
                    raise a  # noqa: B904
    except A as e:
        exc = e
    # A -> C -> B, without a cycle
    return x + 1, [exc is a, a.__context__ is c, c.__context__ is b, b.__context__ is None]


@case
def no_hang_on_context_chain_cycle1(x):
    def cycle():
        try:
            raise ValueError(1)
        except ValueError as ex:
            ex.__context__ = ex
            raise TypeError(2)  # noqa: B904

    try:
        cycle()
    except Exception as e:
        exc = e
    return x + 1, [isinstance(exc, TypeError), isinstance(exc.__context__, ValueError),
                   exc.__context__.__context__ is exc.__context__]


@case
def no_hang_on_context_chain_cycle3(x):
    A, B, C, D, E = AssertionError, BytesWarning, ConnectionError, DeprecationWarning, Exception
    try:
        try:
            raise A
        except A as _a:
            a = _a
            try:
                raise B
            except B as _b:
                b = _b
                try:
                    raise C
                except C as _c:
                    c = _c
                    a.__context__ = c
                    try:
                        raise D
                    except D as _d:
                        d = _d
                        e = E()
                        raise e  # noqa: B904
    except E as caught:
        exc = caught
    return x + 1, [exc is e, e.__context__ is d, d.__context__ is c, c.__context__ is b,
                   b.__context__ is a, a.__context__ is c]


@case
def reconstruct___context__(t):
    v = ValueError(1, 2, 3)
    v.__context__ = TypeError()
    return t.sin(), type(v).__name__, v.args, type(v.__context__).__name__
