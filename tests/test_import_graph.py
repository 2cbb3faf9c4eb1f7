"""pyutils' import graph has no cycle, and no module is over 500 lines.

Every ``*.py`` under ``pyutils/`` is parsed with ``ast``; every ``import`` / ``from ... import``
statement counts, at module level and inside functions alike (a deferred import still makes
the two modules depend on each other). An edge ``a -> b`` joins two pyutils modules when
``a`` imports ``b`` (``from pyutils.p import m``: the submodule ``m`` when it is one, else the
module or package ``p``). Cycles are the strongly connected components of that graph (Tarjan);
the same test runs on the graph of subpackages (``pyutils.tts`` -> ``pyutils.vc`` when a module
of one imports a module of the other). What is left to untangle is listed below by name,
each with its reason: a new cycle, a cycle that grows, or a new long module fails.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "pyutils"
MAX_LINES = 500

#: cycles of modules still to untangle: {modules of the cycle: why it is still there}
ALLOWED_MODULE_CYCLES: Dict[frozenset, str] = {}

#: cycles of subpackages still to untangle: {subpackages: why}
ALLOWED_PACKAGE_CYCLES: Dict[frozenset, str] = {}

#: modules over MAX_LINES lines still to split: {path under the repo: why}
ALLOWED_LONG: Dict[str, str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> Dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def imports_of(name: str, path: Path, known: Set[str]) -> Set[str]:
    """The pyutils modules ``name`` (file ``path``) imports, anywhere in the file."""
    def owner(dotted: str):
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(owner(a.name) for a in node.names if a.name.split(".")[0] == "pyutils")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            if base.split(".")[0] != "pyutils":
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in known else owner(base))
    out.discard(None)
    out.discard(name)
    return out


def graph() -> Dict[str, Set[str]]:
    mods = modules()
    return {m: imports_of(m, p, set(mods)) for m, p in mods.items()}


def package_graph(g: Dict[str, Set[str]]) -> Dict[str, Set[str]]:
    """Edges between the subpackages (``pyutils.<name>`` folders); top-level modules are their own node."""
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}

    def node(m: str) -> str:
        parts = m.split(".")
        return ".".join(parts[:2]) if len(parts) > 1 and parts[1] in folders else m

    out: Dict[str, Set[str]] = {}
    for a, bs in g.items():
        out.setdefault(node(a), set()).update(node(b) for b in bs if node(b) != node(a))
    return out


def cycles(g: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def one_loop(g: Dict[str, Set[str]], comp: List[str]) -> str:
    """A closed path inside the component, e.g. ``a -> b -> a`` (for the failure message)."""
    inside = set(comp)
    path, seen = [comp[0]], {comp[0]: 0}
    while True:
        nxt = min(w for w in g[path[-1]] if w in inside)
        if nxt in seen:
            return " -> ".join(path[seen[nxt]:] + [nxt])
        seen[nxt] = len(path)
        path.append(nxt)


def _check(g: Dict[str, Set[str]], allowed: Dict[frozenset, str], what: str) -> None:
    found = cycles(g)
    new = [c for c in found if frozenset(c) not in allowed]
    assert not new, f"import cycles of {what}:\n" + "\n".join(f"  {one_loop(g, c)}" for c in new)
    gone = set(allowed) - {frozenset(c) for c in found}
    assert not gone, f"allowed {what} cycles no longer there (remove them from the list): {sorted(map(sorted, gone))}"


def test_no_import_cycle_between_modules():
    _check(graph(), ALLOWED_MODULE_CYCLES, "modules")


def test_no_import_cycle_between_subpackages():
    _check(package_graph(graph()), ALLOWED_PACKAGE_CYCLES, "subpackages")


def test_no_module_over_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in modules().values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    new = {p: n for p, n in long.items() if p not in ALLOWED_LONG}
    assert not new, f"modules over {MAX_LINES} lines (split them by job): {new}"
    gone = set(ALLOWED_LONG) - set(long)
    assert not gone, f"no longer over {MAX_LINES} lines (remove them from the list): {sorted(gone)}"


def test_the_graph_sees_deferred_and_relative_imports(tmp_path):
    """The parser counts an import inside a function and a relative import (checked on a made-up file)."""
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from pyutils.io import atomic_write\n\nfrom .b import c\n")
    known = {"pyutils.io", "pyutils.x.b", "pyutils.x.m"}
    assert imports_of("pyutils.x.m", f, known) == {"pyutils.io", "pyutils.x.b"}
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]] and one_loop(g, ["a", "b", "c"]) == "a -> b -> c -> a"
