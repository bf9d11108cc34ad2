"""Imports flow one way: the import graph of ioattr (module-level and function-level imports,
read with ast) has no cycle, between modules nor between packages (ioattr/analysis,
ioattr/engines, collectors/, ...), and an import inside a function (of anything: ioattr's,
the standard library's, a third party's) is a lazy import marked as such: outside cli/, only
for start-up weight, with a trailing `# lazy: weight (<what>)` on the import; in cli/, a
comment saying `lazy` on it or just above it (`ioattr --help` loads no BPF, numpy, pyarrow or
duckdb: cli/main.py, tests/unit/test_cli_lazy.py).

To see a cycle this test reports: the message names each module in it and what it imports.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the design card's top-level folders are packages of `ioattr` (setup.py PACKAGE_ROOTS)
FOLDERS = {"ioattr": "ioattr", "collectors": "ioattr.collectors", "cli": "ioattr.cli", "bpf": "ioattr.bpf"}
#: how an import inside a function outside cli/ says why it is there (on one of its lines)
WEIGHT_MARK = "# lazy: weight ("


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = FOLDERS[rel.parts[0]].split(".") + list(rel.parts[1:])
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for d in FOLDERS for p in sorted((ROOT / d).rglob("*.py"))}


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines under `if TYPE_CHECKING:` (never run, no edge)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.body:
                out.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return out


def _imports(path: Path, modules: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """(imported ioattr module, line, inside a function) for every import the file runs."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_lines(tree)
    in_function: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        if node.lineno in skip:
            continue
        for name in names:
            while name and name not in modules:  # `from pkg import module` or `from module import name`
                name = name.rpartition(".")[0]
            if name.startswith("ioattr"):
                out.append((name, node.lineno, node.lineno in in_function))
    return out


@functools.lru_cache(maxsize=1)
def _all_imports() -> dict[str, tuple[Path, list[tuple[str, int, bool]]]]:
    """Every module's file and imports, read once for the three tests."""
    modules = _sources()
    return {m: (p, _imports(p, modules)) for m, p in modules.items()}


def _graph() -> tuple[dict[str, set[str]], dict[str, Path]]:
    parsed = _all_imports()
    edges = {m: {t for t, _, _ in imports if t != m} for m, (_, imports) in parsed.items()}
    return edges, {m: p for m, (p, _) in parsed.items()}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return out


def _package(module: str) -> str:
    """ioattr.analysis.report -> ioattr.analysis; ioattr.errors is its own."""
    return ".".join(module.split(".")[:2])


def _describe(cycle: list[str], edges: dict[str, set[str]]) -> str:
    inside = set(cycle)
    return "; ".join(f"{a} -> {', '.join(sorted(edges[a] & inside))}" for a in cycle)


def test_no_module_imports_itself_through_others() -> None:
    edges, _ = _graph()
    assert [_describe(c, edges) for c in _cycles(edges)] == []


def test_no_package_imports_itself_through_others() -> None:
    edges, _ = _graph()
    packages: dict[str, set[str]] = {}
    why: dict[tuple[str, str], list[str]] = {}
    for a, targets in edges.items():
        for b in targets:
            pa, pb = _package(a), _package(b)
            if pa != pb and pb != "ioattr":
                packages.setdefault(pa, set()).add(pb)
                why.setdefault((pa, pb), []).append(f"{a} -> {b}")
    found = []
    for cycle in _cycles(packages):
        inside = set(cycle)
        found.append([w for a in cycle for b in sorted(packages[a] & inside) for w in why[(a, b)]])
    assert found == []


def _function_level_imports(path: Path) -> list[ast.stmt]:
    """Every import statement inside a function of this file (whatever it imports)."""
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.extend(n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return sorted(set(out), key=lambda n: n.lineno)


def test_function_level_imports_are_lazy_and_marked() -> None:
    unmarked_weight, unmarked_cli = [], []
    for path, _ in _all_imports().values():
        rel = str(path.relative_to(ROOT))
        lines = path.read_text().splitlines()
        for node in _function_level_imports(path):
            own = lines[node.lineno - 1:(node.end_lineno or node.lineno)]
            if rel.startswith("cli/"):
                # the import, or the first of the imports just above it, or the comment above
                # that, says it is lazy
                i = node.lineno - 1
                while i > 0 and lines[i - 1].strip().startswith(("from ", "import ")):
                    i -= 1
                if "lazy" not in lines[i] + "".join(own) + (lines[i - 1] if i else ""):
                    unmarked_cli.append(f"{rel}:{node.lineno}")
            elif not any(WEIGHT_MARK in line for line in own):
                unmarked_weight.append(f"{rel}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert unmarked_weight == [], (
        f"import at module level; only a heavy import kept out of start-up stays in a function, "
        f"marked with a trailing `{WEIGHT_MARK}<what>)`")
    assert unmarked_cli == [], "mark a lazy import in cli/ with a comment saying so (# lazy: ...)"
