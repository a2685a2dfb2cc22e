"""The import graph between hetplace's own modules: acyclic, and the benchmark sweep module stays at the top.

The graph is built statically with :mod:`ast` over every ``.py`` module of the package, counting every
``import``/``from ... import`` statement wherever it stands (module level, inside functions, under
``TYPE_CHECKING``). How a statement maps to modules:

- ``import hetplace.a.b`` is an edge to ``hetplace.a.b``;
- ``from .a import name`` is an edge to ``hetplace.<pkg>.a.name`` when ``name`` is a submodule of ``a``,
  else to ``hetplace.<pkg>.a`` (the package ``__init__`` if ``a`` is a package);
- ``from . import name`` likewise: the submodule ``name`` if there is one, else the package ``__init__``.

A package ``__init__`` is the node of the package's own name; an ``__init__`` that re-exports its
submodules has edges to them. The implicit import of the parent packages that Python performs before
any submodule is not an edge (else every re-exporting ``__init__`` would be a cycle); so a submodule
that needs a helper must not take it from its own package's ``__init__``: that is an explicit edge and
closes a cycle. Dynamic imports (``importlib.import_module`` of a computed name, the lazy attributes of
``hetplace/__init__.py``) are not seen.
"""

import ast
from pathlib import Path

import hetplace

PACKAGE_DIR = Path(hetplace.__file__).resolve().parent
# the one library module allowed to import the benchmark sweep module (benchmarks/ and tests/ are not library)
BENCH = "hetplace.bench"
BENCH_IMPORTERS = {"hetplace.cli"}


def _module_names():
    """``{dotted name: path}`` of every ``.py`` module of the package (``__init__`` as the package name)."""
    names = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = ("hetplace",) + path.relative_to(PACKAGE_DIR).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _target(modules, base, name):
    """The module that ``from base import name`` runs: the submodule ``base.name`` if it exists, else ``base``."""
    sub = f"{base}.{name}"
    return sub if sub in modules else base


def import_graph():
    """``{module: set of hetplace modules it imports}`` (see the module docstring for the rules)."""
    modules = _module_names()
    graph = {}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        package = module if is_package else module.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "hetplace" or alias.name.startswith("hetplace."):
                        edges.add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = package.split(".")
                    if node.level > 1:
                        base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if not (base == "hetplace" or base.startswith("hetplace.")):
                    continue
                for alias in node.names:
                    edges.add(_target(modules, base, alias.name))
        unknown = {e for e in edges if e not in modules and not _compiled(e)}
        assert not unknown, f"{module} imports {sorted(unknown)}, which the graph does not know"
        graph[module] = {e for e in edges if e in modules and e != module}
    return graph


def _compiled(name):
    """True for a compiled extension module of the package (a ``.pyx`` source, no ``.py``)."""
    return (PACKAGE_DIR.parent / Path(*name.split("."))).with_suffix(".pyx").exists()


def _cycles(graph):
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def longest_chain(graph):
    """The longest import chain, as a list of modules (each cycle collapsed to its first module)."""
    comp_of = {v: comp[0] for comp in _cycles(graph) for v in comp}
    node = lambda v: comp_of.get(v, v)  # noqa: E731
    succ = {}
    for v, edges in graph.items():
        succ.setdefault(node(v), set()).update(node(w) for w in edges)
    memo = {}

    def chain(c):
        if c not in memo:
            memo[c] = [c] + max((chain(s) for s in sorted(succ[c] - {c})), key=len, default=[])
        return memo[c]

    return max((chain(c) for c in sorted(succ)), key=len)


def test_import_graph_has_no_cycle():
    graph = import_graph()
    assert _cycles(graph) == []


def test_only_the_cli_imports_the_benchmark_sweep_module():
    graph = import_graph()
    importers = {m for m, edges in graph.items() if BENCH in edges}
    assert importers <= BENCH_IMPORTERS, f"library modules importing {BENCH}: {sorted(importers - BENCH_IMPORTERS)}"


def test_the_graph_sees_function_level_and_relative_imports():
    # guards the walker itself: the CLI imports bench inside its functions, and the package re-exports api
    graph = import_graph()
    assert BENCH in graph["hetplace.cli"]
    assert "hetplace.api" in graph["hetplace"]
    assert "hetplace.online.simulator" in graph["hetplace.online"]


if __name__ == "__main__":  # python tests/test_imports.py: print the graph's depth and its cycles
    g = import_graph()
    chain = longest_chain(g)
    print(f"{len(g)} modules; depth {len(chain)} modules ({len(chain) - 1} edges): {' -> '.join(chain)}")
    print("cycles:", _cycles(g))
