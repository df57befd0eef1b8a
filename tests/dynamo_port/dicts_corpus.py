"""Cases ported from pytorch/pytorch ``test/dynamo/test_dicts.py`` (``DictTests``): dict
subclasses built while tracing or passed in (with their own ``__iter__``, ``keys``,
``__getitem__``), mutation of dicts from outside, key order, ``OrderedDict`` and
``defaultdict``, keys that are functions and classes, ``obj.__dict__`` of objects and modules,
``MappingProxyType`` and dict views, ``|`` and ``|=``, re-typed and adapted."""

from __future__ import annotations

import collections
import dataclasses
import enum
import itertools
import operator
import types
import typing
import weakref
from collections import OrderedDict, defaultdict

import numpy as np
import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_dicts.py")


class SimpleDict(dict):
    pass


class MethodDict(dict):
    def add_1(self, x):
        return x + 1


class SetItemDict(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value + 1)


class TensorDim(str, enum.Enum):
    DDP = "ddp"
    FSDP = "fsdp"


global_dict = {2: 5, 4: 10}
key_classes = {list: 2, dict: 3, OrderedDict: 5, collections.namedtuple: 7}


@case
def dict_subclass_instantiation(x):
    sd = SimpleDict(x=5)
    return sd["x"] * x


@case
def dict_subclass_local_mutation(x):
    sd = SimpleDict(x=5)
    z = sd["x"] * x
    sd["x"] = 10
    return z * sd["x"]


@case
def dict_subclass_non_dict_method(x):
    sd = MethodDict(x=5)
    z = sd["x"] * x
    sd["x"] = 10
    return sd.add_1(z * sd["x"])


@case
def dict_contains_str_enum(x):
    val = x.sin()
    if TensorDim.DDP == "ddp":
        val = val + x.cos()
    if "ddp" == TensorDim.DDP:
        val = val + x.cos()
    return val


@case
def dict_contains_global(x):
    if 1 in global_dict:
        return x * 2
    return x * 3


@case
def dict_subclass_setitem(x):
    sd = SetItemDict(x=5 * x)
    sd["y"] = 10
    return sd["x"], sd["y"]


@case
def dict_class_keys(x):
    return x * key_classes[list], collections.namedtuple in key_classes


@case(args=lambda: ({"a": torch.randn(10), "b": torch.randn(10)},))
def dict_pop_into_new_key(d):
    d["c"] = d["a"] + d.pop("b")
    return d


@case(args=lambda: (torch.zeros(1), {}))
def dict_copy_alias(x, d0):
    d1 = d0.copy()
    d1[0] = 1
    return x + 1, d1, d0


@case(args=lambda: ({"a": torch.rand(10), "b": torch.rand(10)},))
def dict_values_in_key_order(d):
    c = 0
    for v in d.values():
        c = c + v
    return c


@case
def ordered_dict_move_to_end(x):
    d = OrderedDict()
    d[2] = 4
    d[3] = 5
    d.move_to_end(2)
    y = 0
    for idx, value in enumerate(d.values()):
        y = y + (torch.sin(x * value) if idx == 0 else torch.cos(x * value))
    return y


@case
def defaultdict_of_lists(x):
    d = defaultdict(list)
    d["a"].append(x)
    d["a"].append(x * 2)
    d["b"].append(x + 1)
    return sum(d["a"]) + d["b"][0], sorted(d)


@case
def dict_fromkeys_value(x):
    d = dict.fromkeys(["a", "b"], 3)
    return x * d["a"] * d["b"], list(d)


@case
def dict_update_mapping_and_kwargs(x):
    d = {"a": 1}
    d.update({"b": 2}, c=3)
    return x + d["a"] + d["b"] + d["c"], list(d)


@case
def dict_update_two_positional_raises(x):
    try:
        {}.update({}, {})
        return x + 1
    except TypeError:
        return x - 1


@case
def dict_items_view_ops(x):
    d = {"a": 1, "b": 2}
    keys = d.keys() & {"a", "c"}
    return x + len(keys), "a" in d.keys(), list(d.items())


@case
def dict_function_key(x):
    def f():
        return 1

    d = {f: 2, len: 3}
    return x * d[f], f in d, len in d, print in d


@case
def dict_setdefault_pop(x):
    d = {}
    d.setdefault("a", []).append(x)
    v = d.pop("a")[0]
    return v + d.pop("missing", 1), d


@case
def dict_comprehension_of_tensors(x):
    d = {i: x * i for i in range(3)}
    return d[2] - d[1], len(d)


# -- keys that are not strings: classes, functions, tensors, modules ----------------------------
def _namedtuple_key_dict():
    return ({collections.namedtuple: None, 3: torch.randn(3)},)


@case(args=_namedtuple_key_dict)
def dict_namedtuple_key_in_argument(d):
    if collections.namedtuple in d:
        return d[3] * 2
    return d[3] * 3


def _tensor_key_dict():
    x, y, z = torch.randn(10), torch.randn(10), torch.randn(10)
    return {x: y, 3: z}, x


@case(args=_tensor_key_dict)
def dict_tensor_keys(d, x):
    return d[x] + 3


def _module_key_dict():
    x, y, z = (torch.nn.Linear(2, 2) for _ in range(3))
    return {x: y, 3: z}, x


@case(args=_module_key_dict)
def dict_module_keys(d, x):
    return d[x](torch.ones(2, 2))


@case
def dict_builtin_and_lambda_keys(x):
    double = lambda v: v * 2  # noqa: E731
    table = {len: "len", double: "double", max: "max"}
    names = [table[f] for f in (double, len)]
    return double(x), names, [k is double for k in table], table.get(min, "missing")


@case
def set_of_functions_made_in_frame(x):
    fs = [lambda v: v + 1, lambda v: v * 2]
    seen = set()
    for f in fs + fs:
        if f not in seen:
            seen.add(f)
            x = f(x)
    return x, len(seen)


class DunderDictUser:
    def __init__(self) -> None:
        self.a = 3
        self.b = 5

    def run(self, x):
        if "a" in self.__dict__:
            x = x * self.a
        if "b" in self.__dict__:
            x = x * self.b
        self.c = 7
        if "c" in self.__dict__:
            x = x * self.c
        return x * self.__dict__.get("a") * self.__dict__.get("z", 2)


@case
def dict_contains_dunder_dict(x):
    return DunderDictUser().run(x)


@case
def dict_update_no_args(x):
    d = {"a": x}
    result = d.update()
    return d["a"], result is None, len(d)


class MappingLike:
    def __init__(self, x):
        self.d = {"a": x, "b": x + 1}

    def keys(self):
        return self.d.keys()

    def __getitem__(self, key):
        return self.d[key]


@case
def dict_update_from_mapping_like(x):
    d = {"a": x - 1}
    result = d.update(MappingLike(x))
    return d["a"], d["b"], result is None


@case
def dict_update_rejects_bad_sequence_element_length(x):
    try:
        {}.update([(1, 2, 3)])
    except ValueError as exc:
        return x + 1, "length 3; 2 is required" in str(exc)
    return x - 1, False


@case
def dict_iter_keys_sum(x):
    z = {"my": 1, "const": 2, "dict": 3, "variable": 4}
    tot = 0
    for key in z:
        tot += z[key]
    return x + tot


class ClassInstantier(OrderedDict):
    pass


@case(args=lambda: (torch.ones(8), ClassInstantier({"key1": torch.ones(8)})))
def dict_subclass_contains(x, d):
    if "key1" in d:
        x = x + 2
    if "key2" in d:
        x = x + 4
    return x + 8


class ScalarHolder:
    def __init__(self) -> None:
        self.scalar = 10


@case(args=lambda: ({"a": 2, "b": 3, "c": ScalarHolder()}, torch.randn(3, 3)))
def dict_with_object_value(d, x):
    return d["a"] * d["b"] * d["c"].scalar * x


@case(args=lambda: ({}, torch.randn(4)))
def dict_empty_truth(d, x):
    if d:
        return torch.cos(x)
    return torch.sin(x)


# -- dict subclasses read and mutated, key order, ``__dict__`` of objects and modules ----------

readonly_subclass_dict = SimpleDict({2: 5, 4: 10})
readonly_subclass_dict.attr = 4


@case
def dict_subclass_methods_fallback_readonly(x):
    sd = readonly_subclass_dict
    for value in sd.values():
        x = x * value
    for key in sd:
        x = x * key
    for k, v in sd.items():
        x = x * k
        x = x * v
    if 1 in sd:
        x = x * 2
    else:
        x = x * 3
    x = x * sd.get(2, 0)
    x = x * sd.get(3, 4)
    x = len(sd) * x
    return x * sd.attr


@case
def dict_subclass_instantiation_return(x):
    sd = SimpleDict(x=5 * x)
    sd["y"] = 10
    return sd


@case(args=lambda: (SimpleDict({2: 5, 4: 10}), torch.randn(4)))
def dict_subclass_methods_fallback_mutation(sd, x):
    for value in sd.values():
        x = x * value
    sd[6] = 14
    for key in sd:
        x = x * key
    for k, v in sd.items():
        x = x * k
        x = x * v
    if 1 in sd:
        x = x * 2
    else:
        x = x * 3
    x = x * sd.get(2, 0)
    x = x * sd.get(3, 4)
    x = len(sd) * x
    return x, sd


class ReversedIterDict(dict):
    def __iter__(self):
        return reversed(list(self.keys()))


@case(args=lambda: (torch.randn(4), ReversedIterDict({"foo": 1, "bar": 2})))
def custom_iter_dict(x, d):
    d.sample = 1  # an attribute of the dict object, replayed with the item below
    d["baz"] = 4
    return x * d["foo"] * d["bar"], list(d), d.sample


class ReversedKeysDict(dict):
    def keys(self):
        return ["bar", "foo"]


@case(args=lambda: (torch.randn(4), ReversedKeysDict({"foo": 1, "bar": 2})))
def custom_keys_iter_dict(x, d):
    return x * d["foo"] * d["bar"], list(d.keys()), list(d)


def _reordered_dict():
    d = {2: 4, 3: 5}
    d[2] = d.pop(2)  # 2 moves to the end
    return torch.randn(4), d


@case(args=_reordered_dict)
def dict_guard_on_keys_order(x, d):
    for key, value in d.items():
        x = x * key + value
    return x


@case(args=_reordered_dict)
def dict_guard_on_keys_order2(x, d):
    for key in d:
        value = d[key]
        x = x * key + value
    return x


class ODSubclass(OrderedDict):
    def keys(self):
        return super().keys()


def _reordered_od_subclass():
    d = ODSubclass()
    d[2] = 4
    d[3] = 5
    d.move_to_end(2)
    return torch.randn(4), d


@case(args=_reordered_od_subclass)
def ordered_dict_subclass_reordered_keys(x, d):
    y = 0
    for idx, value in enumerate(d.values()):
        if idx == 0:
            y += torch.sin(x * value)
        else:
            y += torch.cos(x * value)
    return y, list(d.keys())


lazy_keys = {"a": 2, "b": 3, "c": 5}


@case
def lazy_key_guarding(x):
    return x * lazy_keys["a"]


class dotdict(dict):  # noqa: N801
    """dot.notation access to dictionary attributes"""

    __getattr__ = dict.get
    __setattr__ = dict.__setitem__
    __delattr__ = dict.__delitem__


dot_config = dotdict({"a": 1, "b": 2})


@case(args=lambda: (torch.randn(2),))
def dict_subclass_get_method(x):
    x2 = x * 2  # noqa: F841
    return x * dot_config.get("a", 3)


class TwoAttrs:
    def __init__(self) -> None:
        self.a = 3
        self.b = 5

    def delete_then_count(self, x):
        del self.a
        return x * len(self.__dict__)

    def store_through_dict(self, x):
        self.__dict__["a"] = 10
        return x * self.a + self.__dict__["a"]


@case(args=lambda: (torch.ones(2), TwoAttrs()))
def len_dunder_dict_after_delete(x, obj):
    return obj.delete_then_count(x), sorted(vars(obj))


@case(args=lambda: (torch.randn(4), TwoAttrs()))
def update_dunder_dict(x, obj):
    return obj.store_through_dict(x), dict(obj.__dict__)


class DunderDictModule(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.foo = 1
        self.bar = 2
        self.baz = 3

    def forward(self, x):
        if "foo" in self.__dict__:
            return x * self.bar
        return x * self.baz


class DunderDictStoreModule(torch.nn.Module):
    def forward(self, x):
        self.__dict__["a"] = 10
        return x * self.a + self.__dict__["a"]


dunder_dict_module = DunderDictModule()


@case
def contains_module_dunder_dict(x):
    return dunder_dict_module(x)


@case(args=lambda: (torch.randn(10), DunderDictStoreModule()))
def update_module_dunder_dict(x, mod):
    return mod(x), mod.a


@case
def dict_reconstruct_keeps_original_order(x):
    modules = OrderedDict([("act", torch.nn.ReLU())])
    module_dict = torch.nn.ModuleDict(modules)

    next_modules = {"fc4": torch.nn.Linear(5, 6), "act3": torch.nn.Sigmoid()}
    modules.update(next_modules.items())
    module_dict.update(next_modules)
    return x + 1, list(modules), [type(m).__name__ for m in module_dict.children()], \
        [modules[k] is m for k, m in zip(modules, module_dict.children())]


@case
def dict_update_from_mapping_proxy(x):
    source = {"a": x, "b": x + 1}
    d = {"a": x - 1}
    d.update(types.MappingProxyType(source))
    return d["a"], d["b"]


class CustomDictWithNew(dict):
    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class CustomOrderedDictWithNew(OrderedDict):
    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


@case
def dict_subclass_initialization_in_graph(x):
    c = CustomDictWithNew()
    c["key"] = x
    assert "key" in c  # noqa: S101
    return c["key"] + 1


@case
def ordered_dict_subclass_initialization_in_graph(x):
    c = CustomOrderedDictWithNew()
    c["key"] = x
    assert "key" in c  # noqa: S101
    return c["key"] + 1


def _shapes_of_second(args):
    return [x[1].shape for x in args]


@case(args=lambda: ({"args": [torch.ones(5, 5), torch.ones(5, 6), torch.ones(5, 7)]},))
def dict_list_values(tensors):
    return _shapes_of_second(zip(itertools.count(), tensors["args"]))


class MyDict(dict):
    pass


@case(args=lambda: (torch.randn(4), MyDict))
def udf_dict_reconstruction(x, klass):
    x = x * 2
    sc_dict = dict.__new__(klass)
    sc_dict["x"] = x
    if isinstance(sc_dict, MyDict):
        sc_dict.attr = 3
    return sc_dict, getattr(sc_dict, "attr", None)


@case(args=lambda: (torch.randn(4), dict))
def udf_dict_reconstruction_plain(x, klass):
    x = x * 2
    sc_dict = dict.__new__(klass)
    sc_dict["x"] = x
    return sc_dict


weak_module_1, weak_module_2 = torch.nn.Module(), torch.nn.Module()
weak_states = weakref.WeakKeyDictionary({weak_module_1: 2, weak_module_2: 3})


@case
def weakref_dict(x):
    if weak_module_1 in weak_states:
        x = torch.sin(x)
    if weak_module_2 in weak_states:
        x = torch.cos(x)
    return x


class DynamicShapeModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_configs = {
            torch.Size([32, 64]): torch.nn.Linear(32, 64),
            torch.Size([64, 128]): torch.nn.Linear(64, 128),
        }
        self.activation_functions = {
            torch.Size([32]): torch.nn.ReLU(),
            torch.Size([64]): torch.nn.Tanh(),
        }

    def forward(self, x):
        current_shape = torch.tensor(x.shape[1:])
        shape_key = torch.Size([current_shape[0], 64])
        if shape_key in self.layer_configs:
            x = self.layer_configs[shape_key](x)
        activation_shape = torch.Size([x.shape[1]])
        if activation_shape in self.activation_functions:
            x = self.activation_functions[activation_shape](x)
        return x


size_keyed_model = DynamicShapeModel()


@case(args=lambda: (torch.randn(4, 32),))
def dict_torch_size_dynamic_key(x):
    with torch.no_grad():
        return size_keyed_model(x)


# -- UserDict, mappingproxy, dict views, ``|`` and ``|=``, defaultdict built in the frame -------

class DummyUserDict(collections.UserDict):
    pass


@case
def construct_user_dict_and_return(x):
    return DummyUserDict({"a": x + 1})["a"]


@case
def mapping_proxy_for_local(x):
    d = {"a": 2, "b": 3, "c": 5 * x}
    mp = types.MappingProxyType(d)
    y = torch.sin(x * mp["a"])
    for v in mp.values():
        y += torch.cos(x * v)
    return y, type(mp).__name__, dict(mp)


proxied = {"a": 2, "b": 3, "c": 5}
proxy_of_global = types.MappingProxyType(proxied)


@case(args=lambda: (torch.randn(4), types.MappingProxyType({"a": 2, "b": 3, "c": 5})))
def mapping_proxy_existing(x, mp):
    y = torch.sin(x * mp["a"])
    for v in mp.values():
        y += torch.cos(x * v)
    if isinstance(mp, types.MappingProxyType):
        y *= 2
    return y


@case(args=lambda: (torch.randn(4), types.MappingProxyType({"a": 2, "b": 3, "c": 5})))
def dict_construction_from_mapping_proxy(x, mp):
    d = dict(mp)
    return torch.sin(x * d["a"])


@case
def mapping_proxy_existing_mutation(x):
    proxied["d"] = 4  # the same value on every call: the proxy shows the dict's new key
    return torch.sin(x * proxy_of_global["d"]), list(proxy_of_global.keys())


@case
def mapping_proxy_existing_local_mutation(x):
    other_dict = {}
    other_dict["d"] = 4
    return torch.sin(x * proxy_of_global["c"]), other_dict


@case
def dict_view_mapping(x):
    mappingproxy = type(type.__dict__)
    d = {"a": 1, "b": 2}
    m_keys = d.keys().mapping
    m_values = d.values().mapping
    m_items = d.items().mapping
    y = torch.sin(x)
    for m in (m_keys, m_values, m_items):
        if isinstance(m, mappingproxy) and m == d:
            y = y + 1
    return y, [dict(m) for m in (m_keys, m_values, m_items)]


@case
def dict_view_mapping_reflects_mutation(x):
    mappingproxy = type(type.__dict__)
    d = {}
    m = d.keys().mapping
    d["foo"] = "bar"
    return torch.sin(x), isinstance(m, mappingproxy), dict(m)


@case
def move_to_end_returned(x):
    d = OrderedDict({"a": torch.cos(x), "b": 3, "c": 5})
    d.move_to_end("a")
    return d


class CountingGetitemDict(dict):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def __getitem__(self, key):
        self.calls += 1
        return super().__getitem__(key) + 1


@case(args=lambda: (torch.randn(4), CountingGetitemDict({"a": 2, "b": 3, "c": 5})))
def overridden_get_item(x, d):
    d["d"] = 4
    return x * d["a"] + d["b"] + d["c"] + d["d"], d.calls


@case
def items_type(x):
    d = dict({"a": 1, "b": "2", "c": x + 3})  # noqa: C418
    items = d.items()
    return type(items).__name__, list(items)


@case
def builtin_or_with_diff_keys(x):
    a = {"one": x + 1}
    b = {"two": x * 2}
    return a, b, a | b, b | a, a.__or__(b), b.__or__(a)


@case
def builtin_or_with_same_keys(x):
    a = {"one": x + 1, "two": x + 2}
    b = {"one": x * 3, "three": x * 4}
    return a, b, a | b, b | a, a.__or__(b), b.__or__(a)


@case
def builtin_ior_(x):
    a = {"one": x + 1}
    b = {"two": x * 2}
    a |= b
    return a, b


@case
def defaultdict_inplace_union_preserves_factory(x):
    d = defaultdict(int, {1: 1, 2: 2})
    d |= [(0, "zero"), (1, "one")]
    result = d.__ior__({3: "three"})
    return x + 1, (result is d, d.default_factory is int, type(d) is defaultdict, dict(d),
                   list(d), d[4])


@case
def defaultdict_shallow_copy_preserves_factory(x):
    import copy

    d = defaultdict(list, {1: 1, 2: 2})
    c1 = d.copy()
    c2 = d.__copy__()
    c3 = copy.copy(d)
    return x + 1, (c1.default_factory is list, c2.default_factory is list,
                   c3.default_factory is list, dict(c1), dict(c2), dict(c3), c1 == d, c3 == d,
                   c1[5])


@case
def newly_constructed_default_dict(x):
    d = defaultdict(list)
    d[0] = [42]
    return x + 1, d


@case
def newly_constructed_default_dict_no_default_factory(x):
    d = defaultdict()
    try:
        d[1] += 42
    except KeyError:
        d[1] = 1
    return x + 1, d


@case
def newly_constructed_default_dict_none_factory(x):
    d = defaultdict(None, {1: 10})
    d[1] += 42
    try:
        d[2] += 24
    except KeyError:
        d[2] = 1
    return x + 1, d


@case
def newly_constructed_default_dict_with_dict(x):
    d = dict([("a", 1), ("b", 2)], c=3)
    dd = defaultdict(list, d, d=4, e=5)
    dd["x"].append(42)
    return x + 1, d, dd


@case
def iter_default_dict(x):
    d = defaultdict(list)
    d[0] = 42
    for k in d:
        d[k] += 1
    return x + 1, d


@case
def dict_new_ignores_extra_args(x):
    od = OrderedDict(a=1, b=2)
    return x + od["a"]


@case
def ordered_dict_repr(x):
    od = OrderedDict(a=1, b=2)
    r = repr(od)
    return x + (1 if isinstance(r, str) else 0), r


def _pairs_of(t):
    yield 1, t + 1
    yield 2, t + 2


@case
def c_new_init_args_ignored_for_dict(t):
    return OrderedDict(_pairs_of(t))


@case
def ordered_dict_as_python_constant_preserves_type(x):
    od = OrderedDict(a=1, b=2)
    E = enum.Enum("E", od)
    return x + E.a.value


@case
def default_dict_as_python_constant_preserves_type(x):
    dd = defaultdict(int, a=1, b=2)
    assert isinstance(dd, defaultdict)  # noqa: S101
    return x + dd["a"]


@case
def dict_keys_binops(x):
    a = {"one": x + 1, "two": x + 2}
    b = {"one": x * 1, "three": x * 3}
    return x, [sorted(op(a.keys(), b.keys())) + sorted(op(b.keys(), a.keys()))
               for op in (operator.or_, operator.and_, operator.xor, operator.sub)]


# -- dict views as sets, keys of many kinds, properties over ``__dict__`` ----------------------

SET_OPS = (operator.or_, operator.and_, operator.xor, operator.sub)
INPLACE_SET_OPS = (operator.ior, operator.iand, operator.ixor, operator.isub)
COMPARISONS = (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne)


class MySet(set):
    pass


@case
def dict_keys_inplace_binop(x):
    out = []
    for op in INPLACE_SET_OPS:
        a = {"one": x + 1, "two": x + 2}.keys()
        b = {"one": x * 1, "three": x * 3}.keys()
        c = {"one": x, "two": x}.keys()
        a = op(a, b)
        b = op(b, c)
        out.append((sorted(a), sorted(b)))
    return x, out


@case
def dict_items_binop(x):
    a = {"one": 1, "two": 2}
    b = {"one": 1, "three": 3}
    return x, [(sorted(op(a.items(), b.items())), sorted(op(b.items(), a.items())))
               for op in SET_OPS]


@case
def dict_items_inplace_binop(x):
    out = []
    for op in INPLACE_SET_OPS:
        a = {"one": 1, "two": 2}.items()
        b = {"one": 1, "three": 3}.items()
        c = {"one": 1, "two": 2}.items()
        a = op(a, b)
        b = op(b, c)
        out.append((sorted(a), sorted(b)))
    return x, out


@case
def cross_type_set_binop_dict_views_vs_sets(x):
    out = []
    for op in SET_OPS + INPLACE_SET_OPS:
        keys = {"one": 1, "two": 2, "three": 3}.keys()
        items = {"one": 1, "two": 2}.items()
        s, t = {"one", "four"}, {("one", 1), ("three", 3)}
        u = MySet({"one", "four"})
        out.append([sorted(map(repr, r)) for r in (op(keys, s), op(s, keys), op(items, t), op(t, items),
                                        op(keys, items), op(items, keys), op(keys, u),
                                        op(u, keys), op({"one", "two"}, u), op(u, {"one"}))])
    return x, out


@case
def cross_type_cmp_dict_views_vs_sets(x):
    keys = {"one": 1, "two": 2}.keys()
    items = {"one": 1, "two": 2}.items()
    s = {"one", "two", "three"}
    t = {("one", 1), ("two", 2), ("three", 3)}
    u = MySet({"one", "two", "three"})
    return x, [(op(keys, s), op(s, keys), op(items, t), op(t, items), op(keys, items),
                op(items, keys), op({"one", "two"}, u), op(u, {"one"}), op(keys, u))
               for op in COMPARISONS]


@case
def dict_view_iand_rebinds_variable(x):
    d = {"one": 1, "two": 2, "three": 3}
    tmp = d.keys()
    tmp &= {"one", "four"}
    e = {"one": 1, "two": 2}
    tmp2 = e.items()
    tmp2 &= {("one", 1), ("three", 3)}
    return x + 1, tmp, d, tmp2, e


@case
def dict_union_result_type(x):
    def_dict = defaultdict(int, {1: 1, 2: 2})
    ord_dict = OrderedDict({3: 3, 4: 4})
    base_dict = {5: 5, 6: 6}
    results = [def_dict | ord_dict, def_dict | base_dict, base_dict | def_dict,
               ord_dict | def_dict, base_dict | ord_dict, base_dict | base_dict]
    return x + 1, [(type(r).__name__, dict(r)) for r in results]


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 3


@dataclasses.dataclass(frozen=True)
class FrozenPoint:
    x: int
    y: int


@case
def keys_of_many_kinds(x):
    d = {range(5): x * 2, (1, 2): x * 3, Color.RED: x * 4, Priority.LOW: x * 5,
         frozenset([1, 2]): x * 6, typing.Union[int, str]: x * 7, list.__add__: x * 8,
         torch.add: x * 9, FrozenPoint(1, 2): x * 10}
    return (d[range(0, 5, 1)] + d[(1, 2)] + d[Color.RED] + d[Priority.LOW]
            + d[frozenset([2, 1])] + d[typing.Union[int, str]] + d[list.__add__] + d[torch.add]
            + d[FrozenPoint(1, 2)])


@case
def numpy_dtype_as_dict_key(x):
    d = {np.float32: x * 2, np.int64: x * 3, np.bool_: x * 4}
    return d[np.float32] + d[np.int64] + d[np.bool_]


@case
def list_as_dict_key_raises_typeerror(x):
    try:
        d = {[1, 2, 3]: x * 2}
    except TypeError as e:
        return x - 1, str(e)
    return d, None


class DictBackedProperty:
    def __init__(self, x):
        self.__dict__["x"] = x

    @property
    def x(self):
        return self.__dict__["x"]


class DictBackedSettableProperty(DictBackedProperty):
    @DictBackedProperty.x.setter
    def x(self, value):
        self.__dict__["x"] = value


@case(args=lambda: (torch.randn(2), DictBackedProperty(3)))
def property_backed_by_dunder_dict(t, obj):
    return t + obj.x, obj.__dict__.get("x")


@case(args=lambda: (torch.randn(2), DictBackedSettableProperty(3)))
def property_backed_by_dunder_dict_mutated(t, obj):
    a = obj.x
    obj.x = a + 1
    return t + obj.x, vars(obj)


@case(args=lambda: (torch.randn(2), DictBackedProperty(3)))
def property_backed_by_dunder_dict_pending_side_effects(t, obj):
    a = obj.__dict__["x"]
    obj.__dict__["x"] = a + 1
    return t + obj.__dict__["x"], obj.x, vars(obj)
