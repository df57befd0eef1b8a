"""Sources: where a traced value came from (mirrors torch/_dynamo/source.py).

Every VariableTracker built from a real Python object remembers its Source. A Source renders two
ways: ``name()`` for guards and messages, exactly like real Dynamo (``L['x']``, ``G['w']``,
``L['self'].layer.weight``, ``L['xs'][0]``), and ``expr()`` for the generated transformed
function, whose parameters are the frame's locals and whose globals are the frame's globals
(so ``L['self'].layer.weight`` becomes ``self.layer.weight`` there).

Both are Python that runs, and names in them come from user code and data, so a name is
written as it is only where it is an identifier that means itself; any other attribute is
``getattr(L['o'], 'x y')`` and any key a literal (minicompile/names.py), as real Dynamo writes
them: an attribute named ``x or __import__('os').system(...)`` stays a string.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field
from typing import Callable

from ..names import attr, literal
from .exc import unimplemented


class Source:
    def name(self) -> str:  # "L['self'].fc.weight": guards, explain, graph input names
        raise NotImplementedError

    def expr(self) -> str:  # "self.fc.weight": the transformed function's Python
        raise NotImplementedError

    def is_global(self) -> bool:
        return False

    def __str__(self) -> str:
        return self.name()


@dataclass(frozen=True)
class LocalSource(Source):
    local_name: str

    def name(self) -> str:
        return f"L[{self.local_name!r}]"

    def expr(self) -> str:
        return self.local_name


@dataclass(frozen=True)
class GlobalSource(Source):
    global_name: str

    def name(self) -> str:
        return f"G[{self.global_name!r}]"

    def expr(self) -> str:
        return self.global_name

    def is_global(self) -> bool:
        return True


class ChainedSource(Source):
    """A value read from another source's value (real Dynamo's ``ChainedSource``): ``read``
    says how, given the text of that base value. The guard tree reads it from a local holding
    the base (``read("model")``: ``model.config``); a name starts from the frame (``L['m']``)."""

    base: Source

    def read(self, base: str) -> str:
        raise NotImplementedError

    def by_position(self) -> bool:
        """Is this a read by the position of a key among a dict's keys (``read_keyed``)?"""
        return False

    def read_keyed(self, base: str, keys: str) -> str:
        """The read, given the expression of ``base``'s keys as a list (``keys_list``): one list
        for all the items read by position, not one per item."""
        raise NotImplementedError

    def name(self) -> str:
        return self.read(self.base.name())

    def expr(self) -> str:
        return self.read(self.base.expr())

    def is_global(self) -> bool:
        return self.base.is_global()


@dataclass(frozen=True)
class AttrSource(ChainedSource):
    base: Source
    member: str

    def read(self, base: str) -> str:  # getattr(L['o'], 'x y') where the member is no identifier
        return attr(base, self.member)


@dataclass(frozen=True)
class GenericAttrSource(ChainedSource):
    """``object.__getattribute__(obj, 'x')``: an attribute read past the class's own
    ``__getattribute__``, which the trace inlined (real Dynamo's ``GenericAttrSource``)."""

    base: Source
    member: str

    def read(self, base: str) -> str:
        return f"object.__getattribute__({base}, {self.member!r})"


@dataclass(frozen=True)
class TypeSource(ChainedSource):
    """``type(obj)``: where a method of a user object is looked up (``type(L['c']).go``)."""

    base: Source

    def read(self, base: str) -> str:
        return f"type({base})"


@dataclass(frozen=True)
class CallMethodSource(ChainedSource):
    """``x.storage_offset()``: the answer of a method without arguments, guarded as a value."""

    base: Source
    method: str

    def read(self, base: str) -> str:
        return f"{base}.{self.method}()"


def own_keys(cls: type) -> Callable:
    """The C ``keys`` of a dict subclass's builtin base, which knows the order the class keeps:
    an ``OrderedDict``'s own (``move_to_end`` changes it, not the order of the dict beneath),
    else the dict's insertion order (either way past a ``keys()`` the class may override)."""
    return collections.OrderedDict.keys if issubclass(cls, collections.OrderedDict) else dict.keys


def keys_list(base: str) -> str:
    """The keys of the dict at ``base``, in order, as a list (``keys()`` may be overridden)."""
    return f"list(dict.keys({base}))"


@dataclass(frozen=True)
class GetItemSource(ChainedSource):
    base: Source
    index: object  # an int, a str key, or any constant key
    # where ``index`` has no literal (an Enum member, a device): its position among the keys
    # of the dict, which the dict's keys guard pins (real Dynamo's ConstDictKeySource)
    position: int | None = field(default=None, compare=False)

    def read(self, base: str) -> str:
        key = literal(self.index)
        if key is not None:
            return f"{base}[{key}]"
        if self.position is None:
            unimplemented(f"the key {self.index!r} of {base} has no literal form")
        return self.read_keyed(base, keys_list(base))

    def by_position(self) -> bool:
        return literal(self.index) is None and self.position is not None

    def read_keyed(self, base: str, keys: str) -> str:
        return f"{base}[{keys}[{self.position}]]"


@dataclass(frozen=True)
class DictKeySource(ChainedSource):
    """Key number ``position`` of the dict at ``base`` (real Dynamo's ``ConstDictKeySource``):
    a key that is an object, not a literal, read where the dict's keys guard pins it."""

    base: Source
    position: int

    def read(self, base: str) -> str:
        return self.read_keyed(base, keys_list(base))

    def by_position(self) -> bool:
        return True

    def read_keyed(self, base: str, keys: str) -> str:
        return f"{keys}[{self.position}]"


@dataclass(frozen=True)
class ClosureSource(ChainedSource):
    """The contents of closure cell ``index`` of the function at ``base``."""

    base: Source
    index: int

    def read(self, base: str) -> str:
        return f"{base}.__closure__[{self.index}].cell_contents"


@dataclass(frozen=True)
class DefaultsSource(ChainedSource):
    """Default value ``index`` of the function at ``base`` (``__defaults__`` or ``__kwdefaults__``)."""

    base: Source
    index: int | str

    def read(self, base: str) -> str:
        field = "__kwdefaults__" if isinstance(self.index, str) else "__defaults__"
        return f"{base}.{field}[{self.index!r}]"


# ``._modules['0']``, ``._parameters['weight']``: how guards read a module's children (fast dict
# lookups); a name made for a reader spells them as the attribute path ``.0.weight``
_MODULE_TABLE = re.compile(r"\._(?:modules|parameters|buffers)\['([^']*)'\]")


def _path_name(source: Source) -> str:
    return _MODULE_TABLE.sub(r".\1", source.name())


def graph_input_name(source: Source) -> str:
    """A valid Python identifier for a placeholder, like Dynamo's ``L_self_fc_weight_``."""
    return re.sub(r"[^0-9a-zA-Z_]+", "_", _path_name(source)).strip("_") + "_"


def module_attr_name(source: Source) -> str:
    """The attribute name of a parameter or submodule on the output GraphModule
    (Dynamo spells ``L['self'].fc.weight`` as ``L__self___fc_weight``)."""
    name = re.sub(r"\[(\d+)\]", r"_\1", _path_name(source))  # [0] -> _0
    return re.sub(r"[^0-9a-zA-Z_]", "_", name.replace(".", "_"))
