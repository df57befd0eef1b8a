"""Cases ported from pytorch/pytorch ``test/dynamo/test_exceptions.py`` (``ExceptionTests``):
``try``/``except``/``else``/``finally`` around tensor code, exceptions raised by the traced
code or by a callee, custom exception classes, re-typed and adapted."""

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
