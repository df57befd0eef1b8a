"""Side effects (minicompile/dynamo/side_effects.py): mutations of lists, dicts, objects, globals
and closure cells made while tracing are replayed after the graph, so these programs stay one
graph like in real Dynamo, and end with the same state as eager."""

from __future__ import annotations

import copy

import pytest
import torch
import torch._dynamo

import minicompile as mc

LOG: list = []
COUNTER = 0


class Box:
    pass


BOX = Box()


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        self.last = x.sum()
        return self.lin(x)


def global_list_append(x):
    LOG.append(x.sum())
    return x + 1


def list_arg(x, xs):
    xs.append(x + 1)
    xs[0] = x * 2
    xs.insert(1, 5)
    del xs[-1]
    return x.sin() + len(xs)


def dict_arg(x, d):
    d["a"] = x + 1
    d.update(b=x * 3)
    return x.cos() * d.pop("z")


def attribute_store(x):
    BOX.val = x + 1
    BOX.count = 3
    return BOX.val * 2  # reads the value stored above


def global_store(x):
    global COUNTER
    COUNTER = COUNTER + 1
    return x + COUNTER


def read_before_store(x, xs):
    old = xs[0]
    xs[0] = x * 2
    xs.append(old)  # the *old* first item: read before the store is replayed
    return old - xs[0]


def outer_counter():
    count = [0, 0]
    total = 0

    def step(x):
        nonlocal total
        total = total + 1
        count[0] += 1
        return x * total

    return step


def mutate_then_print(x, xs):
    xs.append(x + 1)
    print("sees", len(xs))  # the native print runs after the replay
    y = xs.pop()
    return y * 2


STEP = outer_counter()

PROGRAMS = [
    (global_list_append, lambda: (torch.randn(4),)),
    (list_arg, lambda: (torch.randn(3), [torch.randn(3), 7])),
    (dict_arg, lambda: (torch.randn(2, 5)[:, 1], {"z": 2})),  # non-contiguous
    (attribute_store, lambda: (torch.randn(5),)),
    (global_store, lambda: (torch.randn(3),)),
    (read_before_store, lambda: (torch.randn(3), [torch.randn(3)])),
    (STEP, lambda: (torch.randn(3),)),
    (mutate_then_print, lambda: (torch.randn(3), [])),
]
IDS = [getattr(fn, "__name__", "step") for fn, _ in PROGRAMS]


def _state():
    return (list(LOG), dict(vars(BOX)), COUNTER, STEP.__closure__[0].cell_contents,
            STEP.__closure__[1].cell_contents)


def _reset_state():
    global COUNTER
    LOG.clear()
    BOX.__dict__.clear()
    COUNTER = 0
    STEP.__closure__[0].cell_contents = [0, 0]
    STEP.__closure__[1].cell_contents = 0


@pytest.mark.parametrize("fn,make_args", PROGRAMS, ids=IDS)
def test_eager_equal_and_same_state(fn, make_args, capsys):
    args = make_args()
    compiled_args = copy.deepcopy(args)
    _reset_state()
    expected, expected_state = fn(*args), _state()
    eager_out = capsys.readouterr().out
    _reset_state()
    got = mc.compile(fn, backend="eager")(*compiled_args)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(compiled_args, args)
    torch.testing.assert_close(_state(), expected_state)
    assert capsys.readouterr().out == eager_out
    assert mc.metrics.eager_fallbacks == 0


@pytest.mark.parametrize("fn,make_args", PROGRAMS[:5], ids=IDS[:5])
def test_one_graph_like_real_dynamo(fn, make_args):
    _reset_state()
    ours = mc.explain(fn)(*make_args())
    _reset_state()
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(fn)(*make_args())
    assert ours.graph_count == theirs.graph_count == 1
    assert ours.graph_break_count == 0


def test_module_attribute_stores():
    m = Counting()
    ref = copy.deepcopy(m)
    x = torch.randn(2, 3)
    cm = mc.compile(m, backend="eager")
    torch.testing.assert_close(cm(x), ref(x))
    assert m.calls == ref.calls == 1
    torch.testing.assert_close(m.last, ref.last)
    assert mc.metrics.graphs_compiled == 1 and mc.metrics.graph_breaks == 0


def test_replay_is_readable_python():
    out = mc.explain(list_arg)(torch.randn(3), [torch.randn(3)])
    program = out.transformed_program()
    assert "xs.append(graph_out_0[" in program
    assert "xs[0] = graph_out_0[" in program and "xs.insert(1, 5)" in program
    assert "del xs[-1]" in program


def update_in_place_and_store_back(d, x):
    buf = d["m"]
    buf.mul_(2).add_(x)
    d["m"] = buf  # the object already there: a store that changes nothing (torch.optim's)
    return x + 1


def store_other_then_put_back(d, x):
    old = d["m"]
    d["m"] = x * 5
    d["m"] = old  # undoes the store before it: must be replayed
    return x + 1


@pytest.mark.parametrize("fn", [update_in_place_and_store_back, store_other_then_put_back])
def test_a_store_of_what_is_there_is_not_replayed(fn):
    """``d[k] = v`` with ``v`` read from ``d[k]`` and ``d`` not mutated before it changes nothing,
    and the transformed function does not write it (an optimizer step stores each state tensor
    back where it read it from); after another store to ``d`` it is replayed."""
    d, x = {"m": torch.ones(3)}, torch.randn(3)
    twin = {"m": d["m"].clone()}
    first = d["m"]
    out = mc.explain(fn)(d, x)
    torch.testing.assert_close(fn(twin, x), x + 1)
    torch.testing.assert_close(d["m"], twin["m"])
    assert d["m"] is first
    replayed = "d['m'] = " in out.transformed_program()
    assert replayed == (fn is store_other_then_put_back)


def test_one_list_under_two_names_is_guarded_to_stay_one():
    """The same list under two names is one tracker (``b`` sees ``a``'s append), with a guard
    that they are one object: two different lists on the next call compile again."""
    def two_names(x, a, b):
        a.append(x + 1)
        return x * len(b)

    mc.reset()
    compiled = mc.compile(two_names, backend="eager")
    shared = []
    got = compiled(torch.ones(2), shared, shared)
    torch.testing.assert_close(got, torch.ones(2))  # eager: len(b) is 1 after the append
    assert len(shared) == 1
    a, b = [], []
    torch.testing.assert_close(compiled(torch.ones(2), a, b), torch.zeros(2))  # len(b) is 0
    assert (len(a), len(b)) == (1, 0)
    assert mc.explain(two_names)(torch.ones(2), shared, shared).graph_count == 1


def test_a_closure_cell_shared_by_two_functions_is_one_object():
    """A nested function and the compiled one share a closure variable (one cell): appending
    through one is seen through the other, in one graph (it fell back as an alias before)."""
    log = []

    def helper(v):
        log.append(v)
        return len(log)

    def fn(x):
        n = helper(1)
        log.append(2)
        return x * (n + len(log))

    expected = fn(torch.ones(2)), list(log)
    log.clear()
    mc.reset()
    got = mc.compile(fn, backend="eager")(torch.ones(2)), list(log)
    torch.testing.assert_close(got[0], expected[0])
    assert got[1] == expected[1]
    log.clear()
    assert mc.explain(fn)(torch.ones(2)).graph_count == 1


class _Settings:
    pass


def test_attribute_stored_then_deleted_is_replayed_in_order():
    """``obj.flag = v ... del obj.flag`` (transformers sets and restores config attributes
    around a forward): a read between sees the store, hasattr after sees the deletion, and
    both are replayed on the real object."""
    def f(x, s):
        s.flag = 3
        y = x * s.flag + hasattr(s, "flag")
        del s.flag
        try:
            s.flag
        except AttributeError:
            y = y + 10
        del s.keep
        return y + hasattr(s, "keep") * 100

    def settings():
        s = _Settings()
        s.keep = 1
        return s

    x = torch.ones(2)
    got_obj, ref_obj = settings(), settings()
    torch.testing.assert_close(mc.compile(f, backend="eager")(x, got_obj), f(x, ref_obj))
    assert vars(got_obj) == vars(ref_obj) == {}
    explained = mc.explain(f)(x, settings())
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    with pytest.raises(AttributeError):  # nothing to delete: raises as eager
        mc.compile(f, backend="eager")(x, _Settings())


def test_attributes_stored_on_input_tensors_are_replayed():
    """``t.y = y`` on an input tensor (a Python attribute, kept in its ``__dict__``) is a side
    effect like a store on any object: read back in the trace, replayed after the graph, one
    graph as in real Dynamo (before: a break at the store, and in a loop the frame ran
    eagerly)."""

    def fn(xs, y):
        for t in xs:
            t.scaled = y * 2
            t.tag = "seen"
        total = y
        for t in xs:
            total = total + t.scaled
        return total

    xs, y = [torch.randn(3) for _ in range(2)], torch.randn(3)
    out = mc.explain(fn)(xs, y)
    assert (out.graph_count, out.graph_break_count) == (1, 0), out.break_reasons
    xs = [torch.randn(3) for _ in range(2)]
    torch.testing.assert_close(mc.compile(fn, backend="eager")(xs, y), y + 2 * (y * 2))
    assert [t.tag for t in xs] == ["seen", "seen"]
    torch.testing.assert_close(xs[1].scaled, y * 2)


class Settable:
    def __init__(self):
        self.a = 3


class StoresThroughDict(torch.nn.Module):
    def forward(self, x):
        self.__dict__["a"] = 10  # a store on the module, past nn.Module.__setattr__
        self.k = 3
        return x * self.a + self.__dict__["k"]


def test_stores_through_dunder_dict_are_stores_on_the_object():
    """``obj.__dict__`` is the object's attribute storage: ``obj.__dict__["a"] = 10`` is read
    back by ``obj.a`` and replayed as the same write (past a property of that name, which
    ``object.__setattr__`` would call), and ``obj.k = 3`` shows in ``obj.__dict__["k"]``, for
    an object and a module from outside the frame; a view taken before a later store would be
    out of date, so using it falls back (eager's answer)."""

    def fn(x, obj):
        obj.__dict__["a"] = 10
        obj.k = 2
        return x * obj.a + obj.__dict__["k"]

    def stale(x, obj):
        d = obj.__dict__
        obj.k = 5
        return x + d["k"]

    x = torch.randn(3)
    obj, expected = Settable(), fn(x, Settable())
    torch.testing.assert_close(mc.compile(fn, backend="eager")(x, obj), expected)
    assert vars(obj) == {"a": 10, "k": 2}
    assert mc.explain(fn)(x, Settable()).graph_count == 1
    mod = StoresThroughDict()
    torch.testing.assert_close(mc.compile(mod, backend="eager")(x), x * 10 + 3)
    assert (mod.a, mod.k) == (10, 3)
    obj = Settable()
    obj.k = 1
    torch.testing.assert_close(mc.compile(stale, backend="eager")(x, obj), x + 5)
    obj = ReadOnlyProperty()
    torch.testing.assert_close(mc.compile(write_under_property, backend="eager")(x, obj), x + 4)
    assert vars(obj) == {"v": 4}


class ReadOnlyProperty:
    def __init__(self):
        self.__dict__["v"] = 3

    @property
    def v(self):  # no setter: object.__setattr__(obj, "v", ...) raises
        return self.__dict__["v"]


def write_under_property(x, obj):
    obj.__dict__["v"] = obj.v + 1
    return x + obj.v


def rename_then_update(x, **kwargs):
    """transformers' deprecated-keyword wrapper, then a KV cache update: the cache is renamed in
    ``kwargs`` (``kwargs['cache'] = kwargs.pop('past_key_values')``), then mutated. Replayed
    after the graph, the cache's stores were written as ``kwargs['past_key_values'].length = ..``
    after the pop: a KeyError on the first call of every compiled model given a cache."""
    kwargs["cache"] = kwargs.pop("past_key_values")
    box = kwargs["cache"]
    box.length = x.shape[0]
    box.keys = x * 2
    return x + 1


def test_an_object_reached_through_a_mutated_container_is_read_before_the_replay():
    ref_box, box = Box(), Box()
    x = torch.randn(4)
    ref_kwargs, kwargs = {"past_key_values": ref_box}, {"past_key_values": box}
    expected = rename_then_update(x, **ref_kwargs)
    got = mc.compile(rename_then_update, backend="eager")(x, **kwargs)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(dict(vars(box)), dict(vars(ref_box)))
    assert mc.metrics.eager_fallbacks == 0
