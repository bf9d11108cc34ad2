"""Imports flow one way: the import graph of ioattr (module-level and function-level imports,
read with ast) has no cycle, between modules nor between packages (ioattr/analysis,
ioattr/engines, collectors/, ...), and an import inside a function is either one of the
listed exceptions below (which only shrink) or, in cli/, a lazy import marked as such
(`ioattr --help` loads no BPF, numpy, pyarrow or duckdb: cli/main.py).

To see a cycle this test reports: the message names each module in it and what it imports.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the design card's top-level folders are packages of `ioattr` (setup.py PACKAGE_ROOTS)
FOLDERS = {"ioattr": "ioattr", "collectors": "ioattr.collectors", "cli": "ioattr.cli", "bpf": "ioattr.bpf"}


def _imports_of(path: str, why: str, *modules: str) -> dict[tuple[str, str], str]:
    """FUNCTION_LEVEL entries: `path` imports each of `modules` inside a function, for `why`."""
    return {(path, m): why for m in modules}


#: imports inside functions outside cli/, each with why; the list only shrinks. None of them
#: may close a cycle (the graph below counts them).
FUNCTION_LEVEL = {
    # weight: pyarrow/duckdb or the footer checker loaded only when a merge or a check runs
    **_imports_of("ioattr/format/compact.py", "weight",
                  "ioattr.format.partcheck", "ioattr.format.duck", "ioattr.format.schema"),
    **_imports_of("ioattr/format/recording.py", "weight", "ioattr.format.compact"),
    **_imports_of("ioattr/format/reader.py", "weight", "ioattr.format.partcheck"),
    **_imports_of("ioattr/host/demo.py", "weight", "ioattr.host.sandbox"),
    **_imports_of("ioattr/host/doctor.py", "weight: each check loads what it checks",
                  "ioattr.collectors.elf", "ioattr.collectors.probes", "ioattr.collectors.filesystems",
                  "ioattr.collectors.thd_stages", "ioattr.collectors.stage_probes"),
    **_imports_of("ioattr/live/recorder.py", "weight (pymysql)", "ioattr.collectors.engine"),
    **_imports_of("collectors/probes.py", "the package's data directory, found when asked", "ioattr.bpf"),
}


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


def test_function_level_imports_are_listed_or_lazy() -> None:
    unlisted, unmarked, stale = [], [], set(FUNCTION_LEVEL)
    for path, imports in _all_imports().values():
        rel = str(path.relative_to(ROOT))
        lines = path.read_text().splitlines()
        for target, line, inside in imports:
            if not inside:
                continue
            if rel.startswith("cli/"):
                # the import, or the first of the imports just above it, or the comment above
                # that, says it is lazy
                i = line - 1
                while i > 0 and lines[i - 1].strip().startswith(("from ", "import ")):
                    i -= 1
                if "lazy" not in lines[i] + lines[line - 1] + (lines[i - 1] if i else ""):
                    unmarked.append(f"{rel}:{line}")
            elif (rel, target) in FUNCTION_LEVEL:
                stale.discard((rel, target))
            else:
                unlisted.append(f"{rel}:{line} imports {target}")
    assert unlisted == [], "import at module level (or, for weight only, list it in FUNCTION_LEVEL)"
    assert unmarked == [], "mark a lazy import in cli/ with a comment saying so (# lazy: ...)"
    assert stale == set(), "these are gone: take them off FUNCTION_LEVEL"
