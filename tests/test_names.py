"""Names from user code and data in generated code (minicompile/names.py and the places that use
it: sources, guards, the transformed function, the output graph's attributes).

A name is written into generated Python only as an identifier that means itself or as a
``repr`` literal, and two names never share an identifier. Each case is one that went wrong
before: a quote, a newline or a keyword in an attribute name was a SyntaxError; an attribute
name holding an expression ran that expression on every guard check; ``a.b`` and ``a_b``, or
``α`` and ``β``, were one attribute of the output graph, so one parameter's value replaced the
other's. Eager PyTorch is the oracle, on every backend.
"""

from __future__ import annotations

import enum
import math

import pytest
import torch

import minicompile as mc
from minicompile.names import Namespace, attr, comment, is_identifier, literal, readable

BACKENDS = ["eager", "aot_eager", "inductor"]

# names a program can give an attribute, a dict key or a class, and no identifier can spell
ODD_NAMES = ["a'b", 'a"b', "x y", "x\ny", "a.b", "class", "None", "α", "ﬁ", "fi", "1st", "",
             "a\\b", "a\x00b", "x'); import os; ('"]


# ---- the functions themselves ------------------------------------------------------------------
@pytest.mark.parametrize("name, expected", [
    ("x", True), ("_x1", True), ("α", True), ("match", True),  # a soft keyword is a name
    ("class", False), ("None", False), ("x y", False), ("a.b", False), ("1st", False),
    ("", False), ("ﬁ", False),  # Python reads the identifier ﬁ as fi (NFKC)
])
def test_is_identifier(name, expected):
    assert is_identifier(name) is expected


@pytest.mark.parametrize("name", ODD_NAMES + ["fc", "weight"])
def test_attr_reads_the_attribute_of_that_very_name(name):
    class Obj:
        pass

    obj = Obj()
    obj.fi = 2  # what ``obj.ﬁ`` would read
    setattr(obj, name, 1)
    assert eval(attr("obj", name), {"obj": obj}) == 1


def test_namespace_gives_each_name_its_own_identifier():
    ns = Namespace()
    paths = {"L['self'].a.b": "L__self___a_b", "L['self'].a_b": "L__self___a_b",
             "L['self'].α": "L__self___α", "L['self'].β": "L__self___β"}
    ids = {name: ns(name, hint) for name, hint in paths.items()}
    assert ids["L['self'].a.b"] == "L__self___a_b"  # ordinary names print as before
    assert len(set(ids.values())) == len(ids)
    assert all(i.isascii() and is_identifier(i) for i in ids.values())
    assert ns("L['self'].a_b", "anything") == ids["L['self'].a_b"]  # stable


def test_namespace_never_collapses_odd_names():
    ns = Namespace(reserved=["x_y"])
    names = ODD_NAMES + ["x_y", "x_y_1", "a_b", "a_b_1", "a_b_2", "_", "__", "α", "β", "γ"]
    ids = [ns(n) for n in names]
    assert len(set(ids)) == len(set(names)) and "x_y" not in ids
    assert all(i.isascii() and is_identifier(i) for i in ids)
    assert ns("α") != readable("α") and ns("β") != readable("β")  # rewritten: an index


class Color(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    LOW = 1


@pytest.mark.parametrize("value", [3, -2, True, None, "x'\n\"", b"\x00", 1.5, -0.0, 1 + 2j,
                                   (1, "a"), (2,), (), Ellipsis])
def test_literal_evaluates_to_an_equal_value_of_the_same_type(value):
    text = literal(value)
    assert text is not None
    again = eval(text, {})
    assert type(again) is type(value) and (again == value or again is value)


@pytest.mark.parametrize("value", [Color.RED, Level.LOW, float("nan"), math.inf, torch.float32,
                                   torch.device("cpu"), (1, Color.RED), object()])
def test_literal_refuses_values_whose_repr_is_not_python(value):
    assert literal(value) is None


def test_comment_stays_on_one_printable_line():
    text = comment("a\nb\rc\x00d\u2028eα")
    assert "\n" not in text and "\r" not in text and text.isprintable()
    assert text.endswith("eα")


# ---- attribute names in guards and in the transformed function ---------------------------------
class Holder:
    pass


def _holder(make):
    obj = Holder()
    for i, name in enumerate(ODD_NAMES):
        setattr(obj, name, make(i))
    return obj


FLOATS = _holder(lambda i: float(i + 2))
TENSORS = _holder(lambda i: torch.full((3,), float(i + 1)))
KEYS = {f"k{i}": name for i, name in enumerate(ODD_NAMES)}  # names that come from data


def read_odd_attributes(x):
    for key in KEYS:
        name = KEYS[key]
        x = x * getattr(FLOATS, name) + getattr(TENSORS, name)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_attributes_with_odd_names_are_read_and_guarded(backend):
    f = mc.compile(read_odd_attributes, backend=backend)
    x = torch.randn(3)
    torch.testing.assert_close(f(x), read_odd_attributes(x))
    recompiles = mc.metrics.recompiles
    setattr(FLOATS, "x\ny", -1.0)  # the guard on that attribute fails: traced again
    try:
        torch.testing.assert_close(f(x), read_odd_attributes(x))
        assert mc.metrics.recompiles == recompiles + 1
    finally:
        setattr(FLOATS, "x\ny", float(ODD_NAMES.index("x\ny") + 2))
    source = mc.explain(read_odd_attributes)(x).transformed_program()
    assert "getattr(G['FLOATS'], 'x\\ny')" in source


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_attribute_name_holding_code_never_runs_it(backend, tmp_path):
    witness = tmp_path / "ran"
    payload = f"__class__ and __import__('pathlib').Path({str(witness)!r}).touch() or 2.0"
    obj = Holder()
    setattr(obj, payload, 3.0)
    config = {"scale": payload}

    def fn(x):
        return x * getattr(obj, config["scale"])

    f = mc.compile(fn, backend=backend)
    x = torch.randn(4)
    for _ in range(3):  # the guard runs on every call after the first
        torch.testing.assert_close(f(x), fn(x))
    assert not witness.exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_attribute_stores_with_odd_names_are_replayed(backend):
    obj = Holder()

    def fn(x):
        setattr(obj, "x y", x + 1)
        setattr(obj, "class", 3)
        return x * 2

    x = torch.randn(3)
    torch.testing.assert_close(mc.compile(fn, backend=backend)(x), x * 2)
    torch.testing.assert_close(getattr(obj, "x y"), x + 1)
    assert getattr(obj, "class") == 3


# ---- class names ---------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_classes_with_odd_names_are_guarded_by_type(backend):
    objs = [type(name, (), {"v": float(i + 2)})() for i, name in enumerate(
        ["Bad'Name", "x\ny", "a.b", "class", "α", "x'); import os; ('"])]

    def fn(x):
        for o in objs:
            x = x * o.v
        return x

    f = mc.compile(fn, backend=backend)
    x = torch.randn(3)
    torch.testing.assert_close(f(x), fn(x))
    recompiles = mc.metrics.recompiles
    objs[1] = type("x\ny", (), {"v": -1.0})()  # another class of the same name: traced again
    torch.testing.assert_close(f(x), fn(x))
    assert mc.metrics.recompiles == recompiles + 1


# ---- parameter paths that look alike -----------------------------------------------------------
class LookAlike(torch.nn.Module):
    """Parameters whose paths a lossy rewrite gives one name: a.b / a_b, α / β, 'x y' / x_y."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Module()
        self.a.b = torch.nn.Parameter(torch.full((3,), 2.0))
        self.a_b = torch.nn.Parameter(torch.full((3,), 5.0))
        setattr(self, "α", torch.nn.Parameter(torch.full((3,), 7.0)))
        setattr(self, "β", torch.nn.Parameter(torch.full((3,), 11.0)))
        self._modules["x y"] = torch.nn.Linear(3, 3)
        self.x_y = torch.nn.Linear(3, 3)

    def forward(self, x):
        h = x * self.a.b + self.a_b * getattr(self, "α") - getattr(self, "β")
        return self._modules["x y"](h) * 3 + self.x_y(h)


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameters_whose_paths_look_alike_keep_their_own_values(backend):
    torch.manual_seed(0)
    model = LookAlike()
    x = torch.randn(4, 3)
    expected = model(x)
    expected.sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    got = mc.compile(model, backend=backend)(x)
    torch.testing.assert_close(got, expected)
    got.sum().backward()
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.grad, grads[n], msg=n)


class SamePaths(torch.nn.Module):
    """Two children with one dotted path: ``"a.b"`` itself, and ``b`` inside ``a``."""

    def __init__(self):
        super().__init__()
        self._modules["a.b"] = torch.nn.Linear(3, 3)
        self._modules["a"] = torch.nn.Module()
        self.a.b = torch.nn.Linear(3, 3)
        self._modules["x'y"] = torch.nn.Linear(3, 3)
        self._parameters["w w"] = torch.nn.Parameter(torch.full((3,), 0.5))

    def forward(self, x):
        for _, p in self.named_parameters():
            x = x + p.sum()
        for m in self.modules():
            if isinstance(m, torch.nn.Linear):
                x = m(x)
        return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_module_introspection_finds_each_child_by_its_own_path(backend):
    torch.manual_seed(0)
    model, x = SamePaths(), torch.randn(2, 3)
    torch.testing.assert_close(mc.compile(model, backend=backend)(x), model(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_arguments_named_with_non_ascii_letters(backend):
    def fn(α, β, αβ):
        return α * 2 + β * 3 + αβ

    a, b, c = torch.randn(3), torch.randn(3), torch.randn(3)
    torch.testing.assert_close(mc.compile(fn, backend=backend)(a, b, c), fn(a, b, c))


# ---- values with no literal --------------------------------------------------------------------
TABLE = {Color.RED: 2.0, "red2": 3.0, Level.LOW: 5.0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_str_enum_compared_with_a_string(backend):
    def fn(x, color):
        return (x + 1 if color == "red" else x - 1), Color.RED, {Color.RED: x}

    x = torch.randn(3)
    f = mc.compile(fn, backend=backend)
    for color in (Color.RED, "red", "blue"):
        got, expected = f(x, color), fn(x, color)
        torch.testing.assert_close(got[0], expected[0])
        assert got[1] is Color.RED and list(got[2]) == [Color.RED]
        assert type(list(got[2])[0]) is Color


@pytest.mark.parametrize("backend", BACKENDS)
def test_dict_keys_with_no_literal(backend):
    def fn(x, table):
        return x * table[Color.RED] + table["red2"] * table[Level.LOW]

    x = torch.randn(3)
    f = mc.compile(fn, backend=backend)
    torch.testing.assert_close(f(x, TABLE), fn(x, TABLE))
    changed = {Color.RED: -2.0, "red2": 3.0, Level.LOW: 5.0}
    torch.testing.assert_close(f(x, changed), fn(x, changed))
    plain = {"red": 1.0, "red2": 3.0, 1: 5.0}  # equal keys, other types: traced again
    torch.testing.assert_close(f(x, plain), fn(x, plain))


class Table(dict):
    """A dict subclass: its keys are read through dict.keys, whatever the class overrides."""

    def keys(self):
        return ["not", "these"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_dict_subclass_keys_with_no_literal(backend):
    def fn(x, table):
        return x * table[Color.RED] + table[Level.LOW]

    x = torch.randn(3)
    f = mc.compile(fn, backend=backend)
    for table in (Table({Color.RED: 2.0, Level.LOW: 5.0}), Table({Color.RED: -1.0, Level.LOW: 3.0}),
                  Table({"red": 4.0, 1: 7.0})):
        torch.testing.assert_close(f(x, table), fn(x, table))


def test_dict_subclass_built_while_tracing_with_an_enum_key():
    """A dict subclass made in the frame and returned is rebuilt by the transformed code: a key
    with no literal (a str-Enum member) goes through a bound name, not its repr."""
    import enum

    class Key(str, enum.Enum):
        A = "a"

    class Box(dict):
        def __init__(self, x):
            super().__init__()
            self[Key.A] = x

    def f(x):
        return Box(x * 2)

    x = torch.randn(3)
    assert mc.explain(f)(x).graph_break_count == 0  # built in the graph's frame, then rebuilt
    got, expected = mc.compile(f, backend="eager")(x), f(x)
    assert type(got) is Box and list(got) == [Key.A]
    torch.testing.assert_close(got[Key.A], expected[Key.A])
