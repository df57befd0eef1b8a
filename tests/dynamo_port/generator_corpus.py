"""Cases ported from pytorch/pytorch ``test/dynamo/test_generator.py`` (``GeneratorTests``,
``TestGeneratorSend``, ``TestGeneratorClose``, ``TestGeneratorThrow``, ``TestGeneratorCoroutine``):
user generators consumed by ``next``, ``for``, ``zip``, ``list``, ``yield from`` and early
exits, driven by ``send``/``throw``/``close``, returned from the frame or carried across a
graph break, re-typed and adapted so that each returns what it consumed (a returned generator
is compared with eager's by the items it still yields; state a test kept in ``nonlocal``s is
kept in a list and returned)."""

# ruff: noqa: E731
from __future__ import annotations

import collections
import itertools

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_generator.py")


def one_two_three():
    yield 1
    yield 2
    yield 3


def counting_forever():
    i = 0
    while True:
        yield i
        i += 1


def shifted(t):
    yield t + 1
    yield t + 2
    yield t + 3


def sub_shifted(t):
    yield t + 1
    yield t + 2


def delegating(t):
    yield from sub_shifted(t)
    yield t + 3


@case
def generator_simple(t):
    gen = one_two_three()
    t = t + next(gen)
    t = t + next(gen)
    return t + next(gen)


@case
def infinite_generator(t):
    gen = counting_forever()
    t = t + next(gen)
    t = t + next(gen)
    return t + next(gen)


@case
def infinite_generator_zip(t):
    def whoo(t):
        i = 0
        while True:
            yield t + i
            i += 1

    return list(zip(range(3), whoo(t)))


@case
def list_zip_generator(t):
    return list(zip(range(3), shifted(t)))


@case
def zip_subgenerator(t):
    return list(zip(range(3), delegating(t))), t.sin()


@case
def dict_from_generator(t):
    def pairs(t):
        yield 1, t + 1
        yield 2, t + 2

    return dict(pairs(t))


@case
def tuple_from_generator(t):
    return tuple(shifted(t))


@case
def subgenerator_list(t):
    return list(delegating(t))


@case
def advanced_generator_rest(t):
    gen = shifted(t)
    next(gen)
    return list(gen)


@case
def iter_break_infinite(t):
    s = 0
    for i in counting_forever():
        if i > 5:
            break
        s += i
    return t + s


@case
def list_extend_generator(x):
    y = [1]
    y.extend(y[-1] + z for z in range(3))
    return x + 1, y


@case
def deque_extendleft_generator(x):
    y = collections.deque([1])
    y.extendleft(y[0] + z for z in range(3))
    return x + 1, list(y)


@case
def isdisjoint_with_generator(x):
    seen = []

    def gen():
        seen.append(1)
        yield 1
        seen.append(2)
        yield 2
        seen.append(3)
        yield 3

    {2, 4, 5}.isdisjoint(gen())
    return x.sin() if len(seen) == 2 else x.cos()


@case
def generator_contains_side_effects(x):
    n = [0]

    def whoo():
        n[0] = 1
        yield 1
        n[0] = 2
        yield 2

    g = whoo()
    found = 1 in g
    return x + n[0], found


@case
def graph_break_outside_generator(t):
    gen = shifted(t)
    x = next(gen)
    torch._dynamo.graph_break()
    return x + next(gen)


@case
def generator_in_product(t):
    def whoo():
        for perm in itertools.permutations((0, 1, 2)):
            yield sum(perm[:2])

    s = 0
    for b, _ in itertools.product(whoo(), itertools.permutations((4, 5))):
        s += b
    return t + s


@case
def generator_local_state(t):
    def whoo(t):
        x = 0
        yield t.sin() + x
        x += 1
        yield t.cos() + x

    gen = whoo(t)
    a = next(gen)
    return a, next(gen)


@case
def stop_iteration_default(t):
    gen = sub_shifted(t)
    items = [next(gen), next(gen), next(gen, None)]
    return items[0] + items[1], items[2] is None


@case
def generator_any_early_exit(t):
    calls = []

    def check(v):
        calls.append(v)
        return v > 1

    found = any(check(v) for v in [0, 1, 2, 3, 4])
    return t * len(calls), found


@case
def generator_expression_sum(t):
    return sum(t * i for i in range(4))


# -- TestGeneratorSend, TestGeneratorClose, TestGeneratorThrow, TestGeneratorCoroutine ---------
def doubling():
    x = yield
    yield x * 2


@case
def generator_send(t):
    gen = doubling()
    next(gen)
    return gen.send(t)


@case
def generator_send_stop_iteration(t):
    gen = doubling()
    next(gen)
    a = gen.send(t)
    try:
        gen.send(t)
    except StopIteration:
        return a, "stopped"
    return a, "not stopped"


@case
def yield_from_return_value(t):
    def subgen(t):
        yield t.sin()
        return t.cos()

    def outer(t):
        r = yield from subgen(t)
        yield r

    return list(outer(t))


@case
def yield_from_return_none(t):
    def subgen(t):
        yield t.sin()

    def outer(t):
        r = yield from subgen(t)
        yield r

    return list(outer(t))


@case
def send_through_yield_from(t):
    def subgen():
        x = yield 10
        y = yield x + 1
        return y * 100

    def outer():
        r = yield from subgen()
        yield r

    gen = outer()
    a = gen.send(None)
    b = gen.send(7)
    c = gen.send(3)
    return [a, b, c, t.sin()]


@case
def nested_yield_from_return_value(t):
    def leaf(t):
        yield t.sin()
        return t.cos()

    def mid(t):
        r = yield from leaf(t)
        return r + 1

    def top(t):
        r = yield from mid(t)
        yield r

    return list(top(t))


@case
def yield_from_iterable_return_none(t):
    def outer(t):
        r = yield from [t.sin(), t.cos()]
        yield r

    return list(outer(t))


@case
def generator_close(t):
    def whoo(t):
        yield t.sin()
        yield t.cos()

    gen = whoo(t)
    i = next(gen)
    gen.close()
    return i


@case
def generator_close_subgen(t):
    z = [0]

    def subgen(t):
        z[0] = 1
        yield t.sin()
        z[0] = 3
        yield t.cos()

    def whoo(t):
        yield from subgen(t)
        yield t.tan()

    gen = whoo(t)
    i = next(gen)
    gen.close()
    return i, z[0]


@case
def generator_close_with_side_effects(t):
    log = []
    z = [0]

    def whoo(t):
        try:
            log.append(1)
            yield t.sin()
            log.append(2)
            yield t.cos()
        finally:
            log.append(z[0])

    gen = whoo(t)
    i = next(gen)
    z[0] = -123
    gen.close()
    log.append(len(log))
    return i, log


@case
def generator_close_catches_exit_and_returns(t):
    z = [0]

    def whoo(t):
        try:
            z[0] += 1
            yield t.sin()
            yield t.cos()
        except GeneratorExit:
            z[0] += 10
            return t.tan()
        finally:
            z[0] += 100

    gen = whoo(t)
    i = next(gen)
    y = gen.close()  # the returned value from 3.13, None before
    return i, y, z[0]


@case
def generator_close_ignoring_exit_raises(t):
    z = [0]

    def whoo(t):
        try:
            yield t.sin()
            yield t.cos()
        except GeneratorExit:
            yield t.tan()
        finally:
            z[0] = 1

    gen = whoo(t)
    i = next(gen)
    try:
        gen.close()
    except RuntimeError as e:
        return i, str(e), z[0]
    return i, "no error", z[0]


@case
def generator_close_reraises_exit(t):
    log = []
    z = [0]

    def whoo(t):
        try:
            log.append(1)
            yield t.sin()
            yield t.cos()
        except GeneratorExit:
            log.append(z[0])
            z[0] = -1
            raise
        finally:
            log.append(z[0])

    gen = whoo(t)
    i = next(gen)
    z[0] = -123
    gen.close()
    log.append(456)
    return i, log


@case
def generator_close_after_close(t):
    z = [0]

    def whoo(t):
        try:
            z[0] += 1
            yield t.sin()
            yield t.cos()
        finally:
            z[0] += 1  # once only

    gen = whoo(t)
    i = next(gen)
    gen.close()
    return i, gen.close(), z[0]


@case
def generator_next_after_close(t):
    def whoo(t):
        yield t.sin()
        yield t.cos()

    gen = whoo(t)
    gen.close()
    try:
        next(gen)
    except StopIteration:
        return t.sin(), "stopped"
    return t.cos(), "not stopped"


@case
def generator_close_after_exception(t):
    def whoo(t):
        raise ValueError("foo")
        yield t.cos()

    gen = whoo(t)
    try:
        next(gen)
    except ValueError:
        pass
    return [t.sin(), gen.close()]


@case
def generator_close_open_at_return(t):
    z = [0]

    def whoo(t):
        try:
            yield t
            yield t
        finally:
            z[0] += 1

    gen = whoo(t)
    next(gen)  # its `finally` runs when the frame returns and `gen` dies
    return t + 1, z


@case
def generator_throw(t):
    def whoo(t):
        try:
            yield t.sin()
        except RuntimeError:
            yield t.cos()

    gen = whoo(t)
    a = next(gen)
    b = gen.throw(RuntimeError)
    return a + b


@case
def generator_throw_with_finally(x):
    z = [0]

    def whoo():
        try:
            try:
                yield 1
            except ValueError:
                yield 2
            finally:
                z[0] += 2
        except ValueError:
            z[0] += 33
            yield 4
        finally:
            z[0] += 1
        z[0] += 10

    gen = whoo()
    next(gen)
    gen.throw(ValueError)
    return x.sin(), z[0]


@case
def generator_throw_without_finally(t):
    z = [0]

    def whoo(t):
        try:
            z[0] += 1
            yield t.sin()
            z[0] += 10
        except RuntimeError:
            z[0] += 100
            yield t.cos()
            z[0] += 1_000
        z[0] += 10_000

    gen = whoo(t)
    a = next(gen)
    b = gen.throw(RuntimeError)
    return a + b, z[0]


@case
def generator_throw_no_yield_after_throw(t):
    z = [0]

    def whoo(t):
        try:
            z[0] += 1
            yield t.sin()
        except ValueError:
            z[0] += 10
        finally:
            z[0] += 100

    gen = whoo(t)
    a = next(gen)
    try:
        gen.throw(ValueError)
    except StopIteration as e:
        return a, len(e.args), z[0]
    return a, -1, z[0]


@case
def generator_throw_not_caught(t):
    z = [0]

    def whoo(t):
        try:
            z[0] += 1
            yield t.sin()
        except ValueError:
            z[0] += 10
            yield t.cos()
        finally:
            z[0] += 100

    gen = whoo(t)
    a = next(gen)
    try:
        gen.throw(RuntimeError)
    except RuntimeError:
        return a, z[0]
    return a + 1, z[0]


@case
def generator_throw_raises_other_exception(t):
    z = [0]

    def whoo(t):
        try:
            z[0] += 1
            yield t.sin()
        except ValueError as e:
            z[0] += 10
            raise RuntimeError from e
        finally:
            z[0] += 100

    gen = whoo(t)
    a = next(gen)
    try:
        gen.throw(ValueError)
    except RuntimeError:
        return a, z[0]
    return a + 1, z[0]


@case
def generator_throw_try_except_finally(t):
    z = [0]

    def whoo(t):
        try:
            z[0] += 1
            yield t.sin()
        except ValueError:
            z[0] += 10
            yield t.cos()
        except RuntimeError:
            z[0] += 100
            yield t.tan()
        finally:
            z[0] += 1000
        z[0] += 10_000

    gen = whoo(t)
    a = next(gen)
    b = gen.throw(RuntimeError)
    return a + b, z[0]


@case
def generator_exception_context_with_yield(t):
    def f():
        yield

    gen = f()
    gen.send(None)
    z = 0
    try:
        gen.throw(ValueError)
    except ValueError:
        z = 1
    return t.sin(), z


@case
def generator_return_in_except_and_finally(t):
    def whoo():
        try:
            yield 1
        except ValueError:
            return 2
        finally:
            return 3  # noqa: B012

    gen = whoo()
    next(gen)
    try:
        gen.throw(ValueError)
    except StopIteration as e:
        return t.sin(), e.args
    return t.cos(), ()


@case
def generator_send_into_started(t):
    sent = []

    def f():
        sent.append((yield 1))
        yield 2

    g = f()
    return t + next(g) + g.send(42), sent


@case
def generator_augmented_assignment_coroutine(t):
    def coroutine(seq):
        count = 0
        while count < 200:
            count += yield
            seq.append(count)

    seq = []
    c = coroutine(seq)
    next(c)
    for _ in range(3):
        c.send(10)
    return t + len(seq), seq


@case
def generator_throw_caught_in_loop(t):
    caught = []

    def f():
        while True:
            try:
                yield
            except ValueError as v:
                caught.append(v.args)

    g = f()
    next(g)
    g.throw(ValueError)
    g.throw(ValueError("xyz"))
    return t.sin(), caught


@case
def generator_throw_terminates(t):
    def f():
        while True:
            try:
                yield
            except ValueError:
                pass

    g = f()
    next(g)
    seen = []
    try:
        g.throw(TypeError)
    except TypeError:
        seen.append("TypeError")
    try:
        g.send(2)
    except StopIteration:
        seen.append("StopIteration")
    return t.cos(), seen


@case
def generator_throw_on_just_opened(t):
    def f():
        yield 1

    try:
        f().throw(ValueError(7))
    except ValueError as e:
        return t + e.args[0]
    return t


@case
def generator_exit_not_caught_by_except_exception(t):
    log = []

    def f():
        try:
            yield
        except Exception:
            log.append("except")
        finally:
            log.append("finally")

    g = f()
    next(g)
    g.close()
    return t.sin(), log


@case
def generator_error_during_close_propagates(t):
    def f():
        try:
            yield
        except GeneratorExit:
            raise TypeError("fie!") from None

    g = f()
    next(g)
    try:
        g.close()
    except TypeError as e:
        return t.sin(), e.args
    return t.cos(), ()


@case
def generator_send_to_subscript_targets(t):
    def f(d):
        d[(yield "a")] = d[(yield "b")] = 27

    data = [1, 2]
    g = f(data)
    first = g.send(None)
    second = g.send(0)
    try:
        g.send(1)
    except StopIteration:
        pass
    return t + data[0] + data[1], first, second, data


# -- generators that outlive the frame or a graph break (GeneratorTests) -------------------------
@case
def return_generator(t):
    return shifted(t)


@case
def return_advanced_generator(t):
    gen = shifted(t)
    next(gen)
    return gen


@case
def return_tuple_of_generators(t):
    def whoo(t):
        yield t.sin()
        yield t.cos()

    g1, g2 = whoo(t), whoo(t + 1)
    return (g1, g2), t.sin()


@case
def return_exhausted_generator(t):
    def whoo(t):
        yield t + 1

    gen = whoo(t)
    next(gen)
    return gen


@case
def reconstruct_generator_with_local_var_mutation(t):
    def whoo(t):
        x = 0
        yield t.sin() + x
        x += 1
        yield t.cos() + x
        x += 1
        yield t.tan() + x

    gen = whoo(t)
    next(gen)
    return t.sin(), gen


class Counter:
    def __init__(self):
        self.x = 0

    def incr(self):
        self.x += 1


@case(args=lambda: (torch.randn(2), Counter()))
def reconstruct_generator_with_object_mutation_before(t, c):
    def whoo(t, c):
        c.incr()
        yield t.sin()
        yield t.cos()
        yield t.tan()

    gen = whoo(t, c)
    next(gen)
    return t.sin(), gen, c.x


@case(args=lambda: (torch.randn(2), {1: 0}))
def reconstruct_generator_with_dict_mutation_before(t, d):
    def whoo(t, d):
        d[2] = t
        yield t.sin()
        yield t.cos()
        yield t.tan()

    gen = whoo(t, d)
    next(gen)
    return t.sin(), gen, d


@case
def graph_break_and_reconstruct_generator(t):
    def whoo(t):
        yield t.sin()
        yield t.cos()
        yield t.tan()

    def g(t):
        torch._dynamo.graph_break()

    gen = whoo(t)
    next(gen)
    g(t)
    return t.sin(), list(gen)


@case
def graph_break_in_generator(t):
    def whoo():
        yield 1
        torch._dynamo.graph_break()
        yield 2

    gen = whoo()
    s = next(gen)
    s += next(gen)
    return t + s


@case
def graph_break_in_generator_called_by_helper(t):
    def whoo(x):
        yield x.sin()
        torch._dynamo.graph_break()
        yield x.cos()

    def call_whoo(x):
        gen = whoo(x)
        sin = next(gen)
        cos = next(gen)
        return sin, cos

    sin, cos = call_whoo(t)
    return sin + cos


@case
def graph_break_in_generator_while_reconstructing(t):
    def whoo():
        yield 1
        torch._dynamo.graph_break()
        yield 2

    gen = whoo()
    s = next(gen)
    torch._dynamo.graph_break()
    s += next(gen)
    return t + s


@case
def ordered_dict_from_generator(t):
    def whoo(t):
        yield 1, t + 1
        yield 2, t + 2
        yield 3, t + 3

    return collections.OrderedDict(whoo(t))


@case
def return_zip_of_generator(t):
    return zip(range(3), shifted(t)), t.sin()


# -- TestSubgeneratorDelegation: send/throw/close through `yield from` ---------------------------
@case
def throw_into_subgen_caught(t):
    log = []

    def subgen():
        try:
            yield 1
        except ValueError:
            log.append("subgen caught")
            yield 2

    def outer():
        yield from subgen()

    g = outer()
    a = next(g)
    return t + a + g.throw(ValueError), log


@case
def throw_into_subgen_uncaught_runs_finally(t):
    log = []

    def subgen():
        try:
            yield 1
        finally:
            log.append("subgen finally")

    def outer():
        yield from subgen()

    g = outer()
    a = next(g)
    try:
        g.throw(ValueError)
    except ValueError:
        log.append("raised")
    return t + a, log


@case
def throw_generator_exit_into_subgen(t):
    log = []

    def subgen():
        try:
            yield 1
        finally:
            log.append("subgen finally")

    def outer():
        yield from subgen()

    g = outer()
    a = next(g)
    try:
        g.throw(GeneratorExit)
    except GeneratorExit:
        log.append("raised")
    return t + a, log


@case
def throw_through_nested_yield_from(t):
    log = []

    def leaf():
        try:
            yield 1
        except ValueError:
            log.append("leaf caught")
            yield 2

    def mid():
        yield from leaf()

    def outer():
        yield from mid()

    g = outer()
    a = next(g)
    return t + a + g.throw(ValueError), log


@case
def close_runs_subgen_finally(t):
    log = []

    def subgen():
        try:
            yield 1
            yield 2
        finally:
            log.append("subgen finally")

    def outer():
        yield from subgen()

    g = outer()
    a = next(g)
    g.close()
    return t + a, log


@case
def close_subgen_catches_generator_exit(t):
    log = []

    def subgen():
        try:
            yield 1
        except GeneratorExit:
            log.append("subgen exit")

    def outer():
        yield from subgen()

    g = outer()
    a = next(g)
    g.close()
    return t + a, log


@case
def close_subgen_ignores_generator_exit(t):
    def subgen():
        try:
            yield 1
        except GeneratorExit:
            yield 2

    def outer():
        yield from subgen()

    g = outer()
    a = next(g)
    try:
        g.close()
        raised = "no"
    except RuntimeError as e:
        raised = str(e)
    return t + a, raised


# -- TestGeneratorClose / TestGeneratorPEP ----------------------------------------------------------
class _Holder:
    pass


@case
def close_replays_new_object_attr_mutation(t):
    marker = []

    def gen():
        obj = _Holder()
        obj.data = marker  # a new object, reachable only through the generator's frame
        try:
            yield t.sin()
        finally:
            obj.data.append(1)  # runs when the generator dies with the frame

    g = gen()
    next(g)
    return t.sin(), marker


@case
def pep_try_except_finally(t):
    def f():
        try:
            yield 1
            try:
                yield 2
                1 // 0
                yield 3  # never get here
            except ZeroDivisionError:
                yield 4
                yield 5
                raise
            except:  # noqa: E722
                yield 6
            yield 7  # the "raise" above stops this
        except:  # noqa: E722
            yield 8
        yield 9
        try:
            x = 12  # noqa: F841
        finally:
            yield 10
        yield 11

    return t + sum(f()), list(f())
