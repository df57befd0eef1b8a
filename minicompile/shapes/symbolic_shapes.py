"""Mini version of torch/fx/experimental/symbolic_shapes.py: the ShapeEnv, on SymPy.

A compiled graph should not be thrown away every time a batch size changes. The ShapeEnv makes
sizes *symbolic*: ``x.shape[0]`` becomes the SymPy symbol ``s0`` whose *hint* is the example
value (8). Tracing then computes with expressions (``2*s0``, ``s0 - 1``), and whenever Python
needs a concrete answer (``if x.shape[0] * 2 < 16:``) the ShapeEnv answers with the hint and
records a *guard* (``2*s0 >= 16``): the graph is valid for every input that satisfies it.

What lives here (and is minicompile's own code):

- symbols with hints: :meth:`ShapeEnv.create_symbol` names sizes ``s0, s1, ...``;
- 0/1 specialization: sizes 0 and 1 are never symbolic (broadcasting and empty tensors behave
  differently), so every symbol is known to be >= 2;
- duck sizing: two sizes equal in the example share one symbol, and a guard keeps them equal;
- :meth:`ShapeEnv.evaluate_expr`: decide statically when the ranges allow it, else evaluate with
  the hints and record the guard (an equality on a symbol specialises it: ``s0 == 8`` replaces s0);
- rendering in terms of the inputs (``2*L['a'].size()[0] >= 16``) and :meth:`produce_guards`.

**How symbolic sizes flow through tracing (the design decision).** Real Dynamo wraps a
``torch.fx.experimental.sym_node.SymNode`` (bound to torch's ShapeEnv) into ``torch.SymInt`` and
runs fake tensors whose sizes are those SymInts. ``torch.SymInt`` does not care which Python
object sits behind it: any object with the *SymNode protocol* works. So minicompile passes its
own node (:class:`minicompile.shapes.sym_node.SymNode`: a SymPy expr + hint + this ShapeEnv) to
``torch.SymInt(...)`` and builds fake tensors with ``torch.empty_strided(sym_sizes, sym_strides)``
under ``torch._subclasses.FakeTensorMode``. torch's meta kernels then propagate our SymInts
through pointwise ops with broadcasting, reductions, matmul, view/reshape, cat, indexing and
slicing, calling back into our nodes for every ``+``, ``*`` and comparison. Two things are needed:
the *Python dispatcher* (:func:`symbolic_dispatch`), so ops use their Python meta functions, which
understand SymInts (several C++ meta kernels insist on concrete ints), and the fake-tensor
dispatch cache switched off (its key wants torch's own ShapeEnv). torch's Python helpers
(``guard_or_false``, ``statically_known_true``) also call two methods on ``node.shape_env``;
:class:`ShapeEnv` answers them (``evaluate_sym_node``, ``_maybe_evaluate_static``) with its own
logic. No ``torch.fx.experimental.symbolic_shapes.ShapeEnv`` is created anywhere: symbols, duck
sizing, specialization, guard recording and rendering are all below. When a meta function cannot
take a symbolic *argument* (slicing bounds in some torch versions), the tracer specialises that
argument to its hint with a guard (:func:`specialize_scalars`): slower to reuse, never wrong.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import sympy
import torch
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.str import StrPrinter

from .._logging import trace_artifact
from .functions import integer_fraction
from .sym_node import SymNode

SYMBOL_MIN = 2  # 0/1 specialization: every symbol is at least 2


@dataclass
class ShapeGuard:
    """A SymPy relation that must hold for the compiled code to be reused."""

    expr: sympy.Basic
    user_line: str = ""  # the user source line whose trace made the guard


class PythonPrinter(StrPrinter):
    """Print SymPy as Python source; ``symbol_names`` maps s0 -> "L['a'].size()[0]"."""

    def __init__(self, symbol_names: dict[sympy.Symbol, str] | None = None):
        super().__init__()
        self.symbol_names = symbol_names or {}

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        return self.symbol_names.get(expr, expr.name)

    def _print_Relational(self, expr: sympy.Basic) -> str:  # Eq(a, b) -> a == b
        return f"{self._print(expr.lhs)} {expr.rel_op} {self._print(expr.rhs)}"

    def _print_Not(self, expr: sympy.Basic) -> str:
        return f"not ({self._print(expr.args[0])})"

    def _print_And(self, expr: sympy.Basic) -> str:
        return " and ".join(f"({self._print(a)})" for a in expr.args)

    def _print_Or(self, expr: sympy.Basic) -> str:
        return " or ".join(f"({self._print(a)})" for a in expr.args)

    def _binary(self, op: str, a: sympy.Basic, b: sympy.Basic) -> str:
        """``a // b`` or ``a % b``: Python's ``//`` and ``%`` bind as ``*`` does, from the left,
        so a product on the left needs no parentheses (``2*s // 3`` is ``(2*s) // 3``) and one
        on the right does (``a // (2*s)``; printed bare it reads ``(a // 2) * s``)."""
        level = PRECEDENCE["Mul"]
        return f"{self.parenthesize(a, level, strict=True)} {op} {self.parenthesize(b, level)}"

    def _print_floor(self, expr: sympy.Basic) -> str:  # floor(p/q) -> p // q
        num, den = integer_fraction(expr.args[0]) or (expr.args[0], 1)  # a float: x // 1
        return self._print(num) if den == 1 and num.is_integer else \
            f"({self._binary('//', num, den)})"

    def _print_ceiling(self, expr: sympy.Basic) -> str:  # ceil(p/q) == -((-p) // q)
        num, den = integer_fraction(expr.args[0]) or (expr.args[0], 1)
        return self._print(num) if den == 1 and num.is_integer else \
            f"(-({self._binary('//', -num, den)}))"

    def _print_Float(self, expr: sympy.Basic) -> str:  # every digit of the double: 1/3 too
        return repr(float(expr))

    def _print_Mod(self, expr: sympy.Basic) -> str:
        return f"({self._binary('%', *expr.args)})"

    def _print_Max(self, expr: sympy.Basic) -> str:
        return f"max({', '.join(self._print(a) for a in expr.args)})"

    def _print_Min(self, expr: sympy.Basic) -> str:
        return f"min({', '.join(self._print(a) for a in expr.args)})"

    def _print_BooleanTrue(self, expr: sympy.Basic) -> str:
        return "True"

    def _print_BooleanFalse(self, expr: sympy.Basic) -> str:
        return "False"


class ShapeEnv:
    """Symbols for sizes, their hints, and the guards that tracing made about them."""

    def __init__(self, duck_shape: bool = True, specialize_zero_one: bool = True):
        self.duck_shape = duck_shape
        self.specialize_zero_one = specialize_zero_one
        self.var_to_val: dict[sympy.Symbol, int] = {}  # s0 -> 8: the hint of each symbol
        self.var_to_sources: dict[sympy.Symbol, list[str]] = {}  # s0 -> ["L['a'].size()[0]", ...]
        self.val_to_var: dict[int, sympy.Symbol] = {}  # duck sizing: 8 -> s0
        self.replacements: dict[sympy.Symbol, sympy.Expr] = {}  # s0 -> 8 once a guard pins it
        self.guards: list[ShapeGuard] = []
        self.stride_guards: list[ShapeGuard] = []  # L['x'].stride()[0] == s1 (dense inputs)
        self.location_fn: Callable[[], str] = lambda: ""  # the user line being traced
        self._shifted: dict[sympy.Symbol, sympy.Expr] = {}  # s0 -> s0_minus_2 + 2 (nonneg)
        self._static_cache: dict[sympy.Basic, Any] = {}

    # ---- creating symbols ------------------------------------------------------------------------
    def create_symbol(self, hint: int, source_name: str, duck: bool = True) -> sympy.Expr:
        """The SymPy value of a size: an Integer for 0/1, else a (possibly shared) symbol."""
        hint = int(hint)
        if self.specialize_zero_one and hint < SYMBOL_MIN:
            return sympy.Integer(hint)
        if duck and self.duck_shape and hint in self.val_to_var:
            sym = self.val_to_var[hint]  # duck sizing: same example size, same symbol
            self.var_to_sources[sym].append(source_name)
            trace_artifact("dynamic", f"duck sizing: {source_name} reuses {sym} = {hint}")
            return sym
        sym = self.new_symbol(hint, source_name)
        if duck:
            self.val_to_var.setdefault(hint, sym)
        return sym

    def new_symbol(self, hint: int, source_name: str) -> sympy.Symbol:
        """A fresh symbol ``s<N>`` for ``source_name`` with example value ``hint`` (>= 2)."""
        sym = sympy.Symbol(f"s{len(self.var_to_val)}", positive=True, integer=True)
        self.var_to_val[sym] = int(hint)
        self.var_to_sources[sym] = [source_name]
        self._shifted[sym] = sympy.Symbol(f"{sym.name}_minus_{SYMBOL_MIN}", integer=True,
                                          nonnegative=True) + SYMBOL_MIN
        trace_artifact("dynamic", f"create_symbol {sym} = {hint} for {source_name} "
                                  f"[{SYMBOL_MIN}, oo]  {self.location_fn()}")
        return sym

    def create_symint(self, hint: int, source_name: str, duck: bool = True) -> torch.SymInt | int:
        """A ``torch.SymInt`` backed by our :class:`SymNode` (or a plain int for 0/1)."""
        expr = self.create_symbol(hint, source_name, duck)
        return self.wrap(expr, int(hint))

    def wrap(self, expr: sympy.Expr, hint: int) -> torch.SymInt | int:
        if expr.is_Integer:
            return int(expr)
        return torch.SymInt(SymNode(expr, hint, self, int))

    def create_symbolic_sizes_strides(
        self, t: torch.Tensor, source_name: str, dynamic_dims: set[int],
        dynamic_strides: set[int] = frozenset(), duck: bool = True,
    ) -> tuple[list[torch.SymInt | int], list[torch.SymInt | int]]:
        """Sizes: a symbol per dim in ``dynamic_dims``. Strides: where the example is dense, the
        stride is written with the inner sizes (s1 for a contiguous (s0, s1)); else a symbol of
        its own for a dim in ``dynamic_strides`` (a view of a tensor that grows: its outer
        strides change with sizes it does not have), else it stays an int."""
        sizes = [self.create_symbol(n, f"{source_name}.size()[{d}]", duck) if d in dynamic_dims
                 else sympy.Integer(n) for d, n in enumerate(t.shape)]
        strides: list[sympy.Expr] = [sympy.Integer(s) for s in t.stride()]
        own: set[int] = set()  # the dims whose stride is a symbol of its own
        # Walk dims from the smallest stride up; a dim continues the dense run when its stride
        # equals (inner stride * inner size) in the example.
        order = sorted(range(t.dim()), key=lambda d: (t.stride(d), t.shape[d]))
        expected, expected_hint = sympy.Integer(1), 1
        for d in order:
            if t.stride(d) == expected_hint:
                strides[d] = expected
            elif d in dynamic_strides and t.stride(d) >= SYMBOL_MIN:
                strides[d] = self.new_symbol(t.stride(d), f"{source_name}.stride()[{d}]")
                own.add(d)
            expected, expected_hint = strides[d] * sizes[d], t.stride(d) * t.shape[d]
        for d, stride in enumerate(strides):  # TENSOR_MATCH skips symbolic strides: guard here
            if not stride.is_Integer and d not in own:
                self.stride_guards.append(ShapeGuard(
                    sympy.Eq(sympy.Symbol(f"{source_name}.stride()[{d}]"), stride), "strides"))
        return ([self.wrap(e, n) for e, n in zip(sizes, t.shape)],
                [self.wrap(e, s) for e, s in zip(strides, t.stride())])

    # ---- reasoning about expressions -------------------------------------------------------------
    def simplify(self, expr: sympy.Basic) -> sympy.Basic:
        return expr.xreplace(self.replacements) if self.replacements else expr

    def static_eval(self, expr: sympy.Basic) -> Any:
        """The value of ``expr`` for *every* allowed size, or None when it depends on the sizes.

        Each symbol s is rewritten as ``t + 2`` with t a non-negative integer: SymPy's own
        assumptions then decide things like ``s0*s1 >= 2`` or ``Ne(s0, 1)`` (both True)."""
        expr = self.simplify(expr)
        if expr in self._static_cache:
            return self._static_cache[expr]
        try:
            shifted = expr.xreplace(self._shifted)
        except (ZeroDivisionError, TypeError):
            shifted = expr
        if shifted is sympy.true or shifted is sympy.false:
            result: Any = bool(shifted)
        elif isinstance(shifted, sympy.Expr) and shifted.is_number:
            result = int(shifted) if shifted.is_Integer else shifted
        else:
            result = None
        self._static_cache[expr] = result
        return result

    def size_hint(self, expr: sympy.Basic) -> Any:
        """Evaluate with the example values."""
        value = sympy.sympify(expr).xreplace(self.var_to_val)
        if value is sympy.true or value is sympy.false:
            return bool(value)
        return int(value) if value.is_Integer else float(value)

    def evaluate_expr(self, expr: sympy.Basic, hint: Any = None) -> Any:
        """Answer a question Python asked about sizes; record the guard that keeps it true."""
        expr = self.simplify(sympy.sympify(expr))
        known = self.static_eval(expr)
        if known is not None:
            return known
        value = self.size_hint(expr) if hint is None else hint
        if isinstance(expr, sympy.Expr):  # an int was needed: specialise to its value
            guard = sympy.Eq(expr, value)
        else:
            guard = expr if value else sympy.Not(expr)  # Not(2*s0 < 16) -> 2*s0 >= 16
        self.add_guard(guard)
        return value

    @staticmethod
    def _pinned(guard: sympy.Basic) -> tuple[sympy.Symbol, sympy.Integer] | None:
        """(s0, 2) when ``guard`` fixes one symbol to one value: ``Eq(s0, 2)``, or an equation
        linear in one symbol (``Eq(s0 - 1, 1)``: a slice of s0 broadcast against size 1)."""
        if not isinstance(guard, sympy.Eq) or len(guard.free_symbols) != 1:
            return None
        (sym,) = guard.free_symbols
        difference = sympy.expand(guard.lhs - guard.rhs)
        a, b = difference.coeff(sym, 1), difference.coeff(sym, 0)
        if a == 0 or sympy.expand(a * sym + b - difference) != 0:
            return None  # not linear in sym (s0**2 == 9, s0 // 2 == 1)
        value = -b / a
        return (sym, value) if value.is_Integer else None

    def guard_bool(self, expr: sympy.Basic) -> bool:
        return bool(self.evaluate_expr(expr))

    def add_guard(self, guard: sympy.Basic) -> None:
        guard = self.simplify(guard)
        if self.static_eval(guard) is True or any(g.expr == guard for g in self.guards):
            return
        pinned = self._pinned(guard)
        if pinned is not None:  # s0 == 8, s0 - 1 == 1: s0 is no longer dynamic
            self.replacements[pinned[0]] = pinned[1]
            self._static_cache.clear()
        self.guards.append(ShapeGuard(guard, self.location_fn()))
        trace_artifact("dynamic", f"eval {guard} [guard added]  {self.location_fn()}")

    # ---- the two methods torch's Python helpers call on ``node.shape_env`` ------------------------
    # (torch.fx.experimental.symbolic_shapes.guard_or_false / statically_known_true, used by the
    # fake-tensor fast paths): a thin adapter onto the two methods above.
    def evaluate_sym_node(self, node: SymNode, size_oblivious: bool = False,
                          fallback_value: bool | None = None) -> Any:
        return self.evaluate_expr(node.expr, node.hint)  # backed: guard_or_* guard too

    def _maybe_evaluate_static(self, expr: sympy.Basic, **_: Any) -> Any:
        return self.static_eval(expr)

    # ---- guards in terms of the inputs -----------------------------------------------------------
    def source_names(self) -> dict[sympy.Symbol, str]:
        return {sym: sources[0] for sym, sources in self.var_to_sources.items()}

    def render(self, expr: sympy.Basic) -> str:
        """``2*s0 >= 16`` -> ``2*L['a'].size()[0] >= 16`` (valid Python)."""
        return PythonPrinter(self.source_names()).doprint(expr)

    def produce_guards(self) -> list[ShapeGuard]:
        """Every guard the compiled code needs, as Python-renderable relations over the inputs:
        duck-sizing equalities, the >= 2 range of each symbol, and the guards tracing recorded."""
        out: list[ShapeGuard] = []
        for sym, sources in self.var_to_sources.items():
            first = sympy.Symbol(sources[0])
            for other in sources[1:]:  # duck sizing: the sizes that shared s0 must stay equal
                out.append(ShapeGuard(sympy.Eq(sympy.Symbol(other), first), "duck sizing"))
            if sym in self.replacements:
                out.append(ShapeGuard(sympy.Eq(first, self.replacements[sym]), "specialized"))
            elif not self._range_implied(sym):
                out.append(ShapeGuard(sympy.Ge(first, SYMBOL_MIN), "0/1 specialization"))
        names = {s: sympy.Symbol(n) for s, n in self.source_names().items()}
        for g in [*self.stride_guards, *self.guards]:
            if (pinned := self._pinned(g.expr)) and pinned[0] in self.replacements:
                continue  # already emitted as "specialized"
            out.append(ShapeGuard(g.expr.xreplace(names), g.user_line))
        return out

    def _range_implied(self, sym: sympy.Symbol) -> bool:
        """A recorded guard that forces ``sym >= 2`` by itself (``2*s0 >= 16``) makes the
        range guard redundant: try sym = 1 in each single-symbol guard."""
        for g in self.guards:
            try:
                if g.expr.free_symbols == {sym} and g.expr.xreplace({sym: 1}) is sympy.false:
                    return True
            except (ZeroDivisionError, TypeError):  # e.g. s0 % (s0 // 2) at s0 = 1
                continue
        return False

    def render_guards(self) -> list[str]:
        """Python expressions over ``L``/``G`` that must all be True."""
        printer = PythonPrinter()
        return [printer.doprint(g.expr) for g in self.produce_guards()]

    def format_guards(self) -> str:
        return "\n".join(f"{code:<50}  # {g.user_line}" for code, g in
                         zip(self.render_guards(), self.produce_guards()))


# ---- helpers used by the tracer ------------------------------------------------------------------
SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)


def is_symbolic(x: Any) -> bool:
    """True for a SymInt/SymFloat/SymBool backed by one of our nodes."""
    return isinstance(x, SYM_TYPES) and isinstance(x.node, SymNode)


def hint_of(x: Any) -> Any:
    """The example value of a possibly symbolic scalar (ints pass through)."""
    return x.node.hint if is_symbolic(x) else x


def expr_of(x: Any) -> sympy.Basic:
    return x.node.expr if is_symbolic(x) else sympy.sympify(x)


def has_symbolic_sizes(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and any(is_symbolic(s) for s in (*t.shape, *t.stride()))


@contextlib.contextmanager
def symbolic_dispatch(enabled: bool = True) -> Iterator[None]:
    """Run torch ops so that SymInt sizes flow through them (Python meta functions)."""
    from torch._dispatch.python import enable_python_dispatcher

    with enable_python_dispatcher() if enabled else contextlib.nullcontext():
        yield


def fake_from_sizes(fake_mode: Any, example: torch.Tensor, sizes: Sequence[Any],
                    strides: Sequence[Any]) -> torch.Tensor:
    """A fake tensor like ``example`` (dtype, device, requires_grad, and a leaf or not) with
    symbolic sizes."""
    fake_mode.cache_enabled = False  # its cache key wants torch's own ShapeEnv
    with fake_mode, symbolic_dispatch():
        fake = torch.empty_strided(sizes, strides, dtype=example.dtype, device=example.device,
                                   requires_grad=example.requires_grad)
        if example.requires_grad and not example.is_leaf:
            # an intermediate of the caller stays no leaf, as ``from_tensor`` makes it: written
            # in place (``score += ...`` after a graph break), a leaf that requires grad raises.
            # Its autograd node is torch's identity that refuses a backward through it.
            fake = torch._C._functions.DelayedError("a backward through a graph input", 1)(fake)
        return fake


def _map_scalars(value: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to every symbolic scalar inside args (lists, tuples, dicts, slices)."""
    if is_symbolic(value):
        return fn(value)
    if isinstance(value, slice):
        return slice(*(_map_scalars(p, fn) for p in (value.start, value.stop, value.step)))
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return type(value)(_map_scalars(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_scalars(v, fn) for k, v in value.items()}
    return value


def has_symbolic_scalars(args: Any, kwargs: Any) -> bool:
    found = []
    _map_scalars((args, kwargs), lambda s: found.append(s))
    return bool(found)


def specialize_scalars(args: list, kwargs: dict) -> tuple[list, dict]:
    """Replace each symbolic int/float/bool argument by its hint, with a guard that pins it
    (``L['n'] == 4``): for meta functions that cannot compute with a symbolic argument (some
    torch versions' slicing). Symbolic tensor sizes stay symbolic."""
    concrete = lambda s: type(hint_of(s))(s)  # int(s0) goes through guard_int: a guard
    return _map_scalars(list(args), concrete), _map_scalars(dict(kwargs), concrete)
