"""The package's shape, checked (tinygrad keeps its line count in a test the same way).

DESIGN.md's layering: a shared layer (shapes/, config, logging, metrics, debug, names) below the
stages dynamo -> aot_autograd -> decompositions -> inductor -> cudagraphs; course tooling (viz/,
grading/, grade, bench, course/, artifacts) above them; the composition roots
(minicompile/__init__.py, backends/) wire them together and may import anything.

(a) no module imports a later layer (course tooling and the roots may import anything) (top-level and function-level imports alike);
(b) no import cycle between modules, except among dynamo/variables/ (trackers make each other);
(c) every module is at most 400 lines;
(d) every stage module's docstring names its torch/ counterpart (or says "no counterpart").

Each check is parametrised by module, so a failure names it. KNOWN_VIOLATIONS lists what is
still wrong (mostly in inductor/, being rewritten); an entry whose violation is gone fails too,
so delete it when you fix it.
"""

from __future__ import annotations

import ast
import pathlib

import networkx as nx
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "minicompile"
MAX_LINES = 600  # one idea a module: past ~600 lines it usually holds two (CONVENTIONS.md)

# (check, module) -> why it is still so. Delete the entry once the violation is gone.
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {
}

SHARED_MODULES = {"_logging", "config", "metrics", "debug", "shapes", "names"}
STAGES = ["dynamo", "aot_autograd", "decompositions", "inductor", "cudagraphs"]
COURSE = {"viz", "grading", "grade", "bench", "course", "artifacts", "fuzz"}
ROOTS = {"backends"}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer(module: str) -> tuple[int, str]:
    """(rank, name): a module may import only modules of rank <= its own (roots: anything)."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ROOTS:
        return (len(STAGES) + 2, "composition root")
    if parts[1] in SHARED_MODULES:
        return (0, "shared layer")
    if parts[1] in STAGES:
        return (1 + STAGES.index(parts[1]), parts[1])
    assert parts[1] in COURSE, f"{module}: add its package to a layer in test_structure.py"
    return (len(STAGES) + 2, "course tooling")  # above every stage: may use the public API


def _resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The minicompile modules an import statement loads (``from .x import y``: x.y if it is a
    module, else x)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = module.split(".")
        if node.level:
            if not MODULES[module].name == "__init__.py":
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
        pkg = ".".join(base + [node.module] if node.level and node.module else
                       base if node.level else [node.module])
        names = [f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in MODULES else pkg for a in node.names]
    out = []
    for name in names:
        while name not in MODULES and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in MODULES and name != module:
            out.append(name)
    return out


def imports(module: str) -> dict[str, tuple[int, bool]]:
    """Every minicompile module ``module`` imports -> (line, inside a function?); imports under
    ``if TYPE_CHECKING:`` are annotations only and do not count."""
    found: dict[str, tuple[int, bool]] = {}

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _resolve(module, child):
                    found.setdefault(target, (child.lineno, in_function))
            walk(child, in_function or isinstance(child, (ast.FunctionDef,
                                                          ast.AsyncFunctionDef)))

    walk(ast.parse(MODULES[module].read_text()), False)
    return found


def _check_known(check: str, module: str, problem: str | None) -> None:
    known = KNOWN_VIOLATIONS.get((check, module))
    if known is not None:
        assert problem is not None, f"{module}: fixed ({known}); delete it from KNOWN_VIOLATIONS"
    else:
        assert problem is None, problem


def test_known_violations_name_real_modules():
    checks = {"layer", "cycle", "lines", "docstring"}
    assert all(c in checks and m in MODULES for c, m in KNOWN_VIOLATIONS)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_of_a_later_layer(module):
    rank, name = layer(module)
    later = [f"{t} ({layer(t)[1]}, line {line})" for t, (line, _) in imports(module).items()
             if layer(t)[0] > rank]
    _check_known("layer", module, f"{module} ({name}) imports {later}" if later else None)


def _import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for module in MODULES:
        graph.add_edges_from((module, target) for target in imports(module))
    return graph


CYCLES = {m: sorted(scc) for scc in nx.strongly_connected_components(_import_graph())
          if len(scc) > 1 for m in scc}
CYCLES_ALLOWED_IN = "minicompile.dynamo.variables"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_cycle(module):
    scc = CYCLES.get(module)
    allowed = scc is not None and all(m.startswith(CYCLES_ALLOWED_IN + ".") for m in scc)
    _check_known("cycle", module, f"{module} is in an import cycle with {scc}"
                 if scc and not allowed else None)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_is_small(module):
    n = len(MODULES[module].read_text().splitlines())
    _check_known("lines", module, f"{module} has {n} lines (> {MAX_LINES}): split it by idea"
                 if n > MAX_LINES else None)


@pytest.mark.parametrize("module", sorted(m for m in MODULES
                                          if layer(m)[1] in STAGES + ["shared layer"]))
def test_stage_module_names_its_torch_counterpart(module):
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text())) or ""
    _check_known("docstring", module, None if "torch/" in doc or "no counterpart" in doc else
                 f"{module}'s docstring should name its torch/ counterpart (or 'no counterpart')")


def test_import_cycle_check_can_fail():
    """The cycle check sees function-level imports: graph_break stopped importing eval_frame
    (the frame cache compiles callees), and would be caught if it did again."""
    graph = _import_graph()
    graph.add_edge("minicompile.dynamo.graph_break", "minicompile.dynamo.eval_frame")
    assert any(len(s) > 1 and "minicompile.dynamo.graph_break" in s
               for s in nx.strongly_connected_components(graph))
