"""Cases ported from pytorch/pytorch ``test/dynamo/test_global.py`` (``TestGlobals``,
``TestDeleteGlobal``): ``STORE_GLOBAL``, ``DELETE_GLOBAL``, and mutations of a global list, dict,
object or another module's attribute, re-typed and adapted.

A case mutates module state, and the harness runs it three times (eager, minicompile, real
Dynamo): each case's ``make_args`` first puts the globals back as the test's module set them, so
that every run starts from the same state. A case returns the globals it changed, read after the
change, and where it says so reads them again after a graph break, in the resume function, which
sees the real module only once the compiled prefix has replayed its stores."""

from __future__ import annotations

import types

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_global.py")


class Pair:
    def __init__(self, x, y):
        self.x = x
        self.y = y


def Foo():
    return Pair(1, 1)


g_counter = 1
g_list = [0, 1, 2]
g_dict = {"a": 0, "b": 1}
g_object = Foo()
g_tensor = torch.zeros(10)
_name = 0
_dg_a = 10
_dg_pad = 0

# Another module's globals, as ``test/dynamo/utils.py`` and ``mock_store_global_crossfile_inline``
# are in PyTorch's tests: a module object whose attributes the compiled frame reads and stores.
other_module = types.ModuleType("other_module")


def _set_flag_true():
    other_module.global_flag = True


def _set_flag_false():
    other_module.global_flag = False


def _delete_value():
    del other_module.delete_value


_ABSENT = object()


def fresh_name() -> str:
    """create a new unique name for a variable: v0, v1, v2"""
    global _name
    r = f"v{_name}"
    _name += 1
    return r


def reset_globals(*args_shape, **updates):
    """``make_args`` of a case: the test module's globals as it defines them, with ``updates``
    (``_ABSENT`` deletes a name), then one ``torch.randn(*args_shape)``."""

    def make_args():
        globals().update(g_counter=1, g_list=[0, 1, 2], g_dict={"a": 0, "b": 1}, g_object=Foo(),
                         _name=0, _dg_a=10, _dg_pad=0)
        globals().pop("g_counter_new", None)
        other_module.__dict__.update(g_tensor_export=torch.zeros(10), global_flag=None,
                                     delete_value=True)
        for name, value in updates.items():
            if value is _ABSENT:
                globals().pop(name, None)
            else:
                globals()[name] = value
        return (torch.randn(*args_shape),)

    return make_args


@case(args=reset_globals(10))
def store_global_1(x):
    global g_counter
    val = x + g_counter
    g_counter += 1
    return val, g_counter


@case(args=reset_globals(10))
def store_global_2(x):
    global g_counter
    val = x + g_counter
    g_counter += 1
    g_counter += 1
    return val, g_counter


@case(args=reset_globals(10))
def store_global_then_graph_break(x):
    global g_counter
    val = x + g_counter
    g_counter += 1
    torch._dynamo.graph_break()
    return val + g_counter, g_counter


@case(args=reset_globals(10))
def store_global_new(x):
    global g_counter_new
    g_counter_new = x + 1
    return x + g_counter_new


@case(args=reset_globals(10))
def store_global_list(x):
    val = x + g_list[1]
    g_list[1] += 1
    return val, list(g_list)


@case(args=reset_globals(10))
def store_global_list_2(x):
    global g_list
    val = x + g_list[1]
    g_list = [x + 1 for x in g_list]
    return val, g_list


@case(args=reset_globals(10))
def store_global_dict(x):
    val = x + g_dict["b"]
    g_dict["b"] += 1
    return val, dict(g_dict)


@case(args=reset_globals(10))
def store_global_dict_2(x):
    global g_dict
    g_dict = {key: value + 1 for key, value in g_dict.items()}
    val = x + g_dict["b"]
    return val, g_dict


@case(args=reset_globals(10))
def store_global_object(x):
    val = x + g_object.y
    g_object.y += 1
    return val, g_object.y


@case(args=reset_globals(10))
def store_global_object_then_graph_break(x):
    val = x + g_object.y
    g_object.y += 1
    torch._dynamo.graph_break()
    return val * g_object.y, g_object.y


@case(args=reset_globals(10))
def store_global_cross_file(x):
    val = x + other_module.g_tensor_export
    other_module.g_tensor_export = other_module.g_tensor_export + 1
    return val, other_module.g_tensor_export


@case(args=reset_globals(10))
def store_global_inline_1(a):
    class Variable:
        def __init__(self, value: torch.Tensor, name: str | None = None):
            self.value = value
            self.name = name or fresh_name()

    a, b = Variable(a), Variable(a * 2)
    return a.value + b.value, a.name + b.name, _name


@case(args=reset_globals(10))
def store_global_inline_2(a):
    class Variable:
        def __init__(self, value: torch.Tensor, name: str | None = None):
            self.value = value
            self.name = name or fresh_name()

        @staticmethod
        def constant(value: torch.Tensor, name: str | None = None):
            return Variable(value, name)

    a, b = Variable.constant(a), Variable.constant(a * 2)
    return a.value + b.value, a.name + b.name


@case(args=reset_globals(2, 2))
def store_global_crossfile_inline(x):
    _set_flag_true()
    first = other_module.global_flag
    _set_flag_false()
    return x + 1, first, other_module.global_flag


@case(args=reset_globals(2, 2))
def delete_global(x):
    global _dg_a
    del _dg_a
    return x + 1, "_dg_a" in globals()


@case(args=reset_globals(2, 2, _dg_a=_ABSENT))
def delete_missing_global_caught(x):
    global _dg_a
    try:
        del _dg_a
    except NameError as e:
        return x + 2, str(e)
    return x + 1, None


@case(args=reset_globals(2, 2, _dg_a=_ABSENT))
def delete_missing_global_caught_by_caller(x):
    def inner():
        global _dg_a
        del _dg_a

    try:
        inner()
    except NameError:
        pass
    return x + 1


@case(args=reset_globals(2, 2, _dg_a=_ABSENT))
def delete_global_created_then_deleted(x):
    global _dg_a
    _dg_a = 1
    del _dg_a
    return x + 1, "_dg_a" in globals()


@case(args=reset_globals(2, 2))
def delete_global_twice(x):
    global _dg_a
    del _dg_a
    try:
        del _dg_a  # noqa: F821
    except NameError:
        return x + 2, "_dg_a" in globals()
    return x + 1, None


@case(args=reset_globals(2, 2))
def delete_global_then_store(x):
    global _dg_a
    del _dg_a
    _dg_a = 7
    return x + _dg_a


@case(args=reset_globals(2, 2))
def delete_global_then_read(x):
    global _dg_a
    del _dg_a
    try:
        return x + _dg_a  # noqa: F821
    except NameError as e:
        return x - 1, str(e)


@case(args=reset_globals(2, 2))
def delete_global_then_graph_break(x):
    global _dg_a
    y = x + _dg_a
    del _dg_a
    torch._dynamo.graph_break()
    return y, "_dg_a" in globals()


@case(args=reset_globals(2, 2))
def delete_global_presence_flip(x):
    global _dg_a
    y = x + 1
    try:
        del _dg_a
    except NameError:
        y = y + 1
    return y


@case(args=reset_globals(2, 2))
def delete_global_crossfile_inline(x):
    _delete_value()
    return x + 1, hasattr(other_module, "delete_value")
