"""Cases ported from pytorch/pytorch ``test/dynamo/test_dicts.py`` (``DictTests``): dict
subclasses built while tracing, mutation of dicts from outside, ``OrderedDict`` and
``defaultdict``, keys that are functions and classes, re-typed and adapted."""

from __future__ import annotations

import collections
import enum
from collections import OrderedDict, defaultdict

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
