"""PyCodegen: writes the transformed function as readable Python (mirrors
torch/_dynamo/codegen.py, which emits bytecode instead).

Real Dynamo replaces the frame's bytecode with new bytecode that calls the compiled graph and
rebuilds the return value. minicompile writes the same program as Python source, so a learner
can print it::

    def __transformed_code_0_fn(x, y):
        graph_out_0 = __compiled_fn_0(x, y)
        return (graph_out_0[0], 3, {'a': graph_out_0[1]})

Each VariableTracker's ``reconstruct(codegen)`` returns the expression that rebuilds it: a graph
output, a constant literal, a source expression (an input returned as it is), or a tuple/list/dict
of those. Objects with no literal form (the compiled graph, resume functions, a torch function,
a constant with no literal) get a fresh name with :meth:`PyCodegen.install_global`.

Where those names live: real Dynamo writes them into the frame's globals (``install_global``).
minicompile binds them as *closure variables* of the transformed function instead
(:func:`make_function` defines it inside a factory whose parameters are the installed names), so
the user's module gains no ``__compiled_fn_0`` / ``__resume_at_40_1`` entries -- real Dynamo,
run on the same module afterwards, refuses names that already exist there. Every other name the
transformed function reads (``torch``, the user's helpers, ``print``) still comes from the user's
live globals and builtins.

One object, one reconstruction: a list or dict built while tracing has no source to name it by,
so each ``reconstruct`` makes a *new* one. When the code needs it twice -- two locals naming it
(``b = a``), a list passed to a function that runs natively and still live after the call, a
dict and its ``.items()`` view -- :meth:`PyCodegen.share_repeated` finds it first, and it is
built once into a temporary that every use names (real Dynamo's codegen keeps such values in
``tempvars`` for the same reason)::

    __list_0 = [graph_out_0[0]]
    __break_result = __compiled_native_appends_2(__list_0)
    return __resume_at_30_1(__break_result, x, __list_0)
"""

from __future__ import annotations

import itertools
import linecache
from typing import Any, Callable

from ..names import literal, readable
from .source import ChainedSource, keys_list

_unique = itertools.count()


class PyCodegen:
    def __init__(self, f_globals: dict, installed: dict[str, Any],
                 graph_out_name: str = "graph_out_0"):
        self.f_globals = f_globals  # read only: which names the user's module already has
        self.installed = installed  # name -> value, the transformed function's closure variables
        self.graph_out_name = graph_out_name
        self.graph_outputs: list = []  # TensorVariables, in output order (deduplicated by node)
        self.shared: set[int] = set()  # id() of containers used more than once (share_repeated)
        self.bound: dict[int, str] = {}  # id() of a shared container -> its temporary
        self.prelude: list[str] = []  # the lines that build the shared containers, in order
        self.rebuilding: list = []  # the objects whose expressions are being written (outermost first)

    def __call__(self, vt) -> str:
        if id(vt) not in self.shared:
            return vt.reconstruct(self)
        if id(vt) not in self.bound:
            expr = vt.reconstruct(self)  # its items first: they may be shared too
            name = f"__{readable(vt.python_type().__name__)}_{len(self.bound)}"
            while name in self.installed:  # a class installed under its own name: __E_0 too
                name += "_"
            self.prelude.append(f"{name} = {expr}")
            self.bound[id(vt)] = name
        return self.bound[id(vt)]

    def bind(self, vt, name: str) -> None:
        """``vt`` is already held by the temporary ``name`` (a line of the prelude made it)."""
        self.shared.add(id(vt))
        self.bound[id(vt)] = name

    def share_repeated(self, roots) -> None:
        """Mark the containers built while tracing that ``roots`` (and what they hold) reach more
        than once: each is then rebuilt once, into a temporary of :attr:`prelude`."""
        seen: set[int] = set()

        def visit(vt) -> None:
            if not hasattr(vt, "source"):
                return
            if vt.is_built_container():
                if id(vt) in seen:
                    self.shared.add(id(vt))
                    return
                seen.add(id(vt))
            for child in vt.children():
                visit(child)

        for root in roots:
            visit(root)

    def graph_call(self, graph_name: str, sources: list) -> list[str]:
        """The lines that call the compiled graph on its inputs, read from ``sources``. A read
        two or more inputs go through (``args[0].param_groups[0]['params']`` for every parameter
        of an optimizer step) is made once, into a temporary the inputs read from::

            __read_0 = args[0]
            __params_1 = __read_0.param_groups[0]['params']
            __state_2 = __read_0.state
            __keys_3 = list(dict.keys(__state_2))
            graph_out_0 = __compiled_fn_1(__params_1[0], __params_1[1], ..., __params_1[0].grad,
                                          ..., __state_2[__keys_3[0]]['momentum_buffer'], ...)

        Written out in full, each input walks the whole path again at every call: hundreds of
        attribute and item reads a step for a model's parameters and an optimizer's state. The
        same goes for a dict's keys where its items are read by position (an optimizer's state
        is keyed by the parameters): their list is made once, not once per item."""
        branches: dict[Any, set] = {}  # a value -> the reads (or inputs) made from it
        for source in dict.fromkeys(sources):
            while isinstance(source, ChainedSource):
                branches.setdefault(source.base, set()).add(source)
                source = source.base
        # a read gets a temporary where the inputs' paths part after it (one taken only on the
        # way to a single next read is that read's business; a local or a global is a name
        # already), a dict its keys' list where two of its items are read by position
        shared = {read for read, after in branches.items()
                  if len(after) > 1 and isinstance(read, ChainedSource)}
        keyed = {read for read, after in branches.items()
                 if sum(r.by_position() for r in after) > 1}
        names: dict[Any, str] = {}
        lines: list[str] = []

        def temporary(hint: Any, text: str) -> str:
            name = f"__{readable(hint) if isinstance(hint, str) else 'read'}_{len(lines)}"
            while name in self.installed:
                name += "_"
            lines.append(f"{name} = {text}")
            return name

        def render(source) -> str:
            if source in names:
                return names[source]
            if not isinstance(source, ChainedSource):
                return source.expr()
            base = render(source.base)
            if source.base in keyed and source.by_position():
                if ("keys", source.base) not in names:
                    names["keys", source.base] = temporary("keys", keys_list(base))
                text = source.read_keyed(base, names["keys", source.base])
            else:
                text = source.read(base)
            if source not in shared:
                return text
            hint = getattr(source, "member", None) or getattr(source, "index", None)
            names[source] = temporary(hint, text)
            return names[source]

        args = ", ".join([render(source) for source in sources])
        return [*lines, f"{self.graph_out_name} = {graph_name}({args})"]

    def graph_output(self, tensor_vt) -> str:
        """The expression of a tensor the graph computes: it becomes one of the graph outputs."""
        for i, existing in enumerate(self.graph_outputs):
            if existing.proxy.node is tensor_vt.proxy.node:
                return f"{self.graph_out_name}[{i}]"
        self.graph_outputs.append(tensor_vt)
        return f"{self.graph_out_name}[{len(self.graph_outputs) - 1}]"

    def constant(self, value: Any) -> str:
        """``value`` as a literal where Python has one (``3``, ``'a'``), else an installed name
        (a str-Enum member, whose ``repr`` is no Python)."""
        text = literal(value)
        return text if text is not None else self.install_global("const", value)

    def install_global(self, hint: str, value: Any) -> str:
        """Give ``value`` a fresh name (``__const_3``) the transformed function can read; the name
        is one of its closure variables (Dynamo's name: it writes the frame's globals)."""
        hint = readable(hint)  # "compiled_<lambda>", a function named "x y": no < > or space
        for name, v in self.installed.items():
            if name.startswith(f"__{hint}_") and v is value:
                return name
        name = f"__{hint}_{next(_unique)}"
        while name in self.bound.values():  # (a temporary's name, see __call__)
            name = f"__{hint}_{next(_unique)}"
        self.installed[name] = value
        return name


def make_function(source: str, name: str, f_globals: dict, installed: dict[str, Any]) -> Callable:
    """Define the transformed function ``name`` from its ``source``. It runs with the user's
    globals; the ``installed`` names are bound by a factory around it::

        def __make___transformed_code_0_fn(__compiled_fn_0):   # closure variables
            def __transformed_code_0_fn(x, y):                 # the source, as printed
                ...
            return __transformed_code_0_fn
    """
    params = ", ".join(installed)
    body = "".join(f"    {line}\n" for line in source.splitlines())
    factory = f"def __make_{name}({params}):\n{body}    return {name}\n"
    filename = f"<{name}>"  # tracebacks through the transformed function show its lines
    linecache.cache[filename] = (len(factory), None, factory.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(factory, filename, "exec"), f_globals, namespace)
    return namespace[f"__make_{name}"](**installed)
