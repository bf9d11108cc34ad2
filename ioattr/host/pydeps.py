"""Whether the Python packages ioattr depends on can be imported.

`ioattr doctor` asks this first, with nothing but the standard library: the rest of doctor
reaches numpy through the collectors (`collectors/abi.py` declares the BPF maps' records as
numpy dtypes), so a broken or half-upgraded numpy, pyarrow or duckdb would otherwise end
doctor with one "internal error" line and no check at all. The list is the installed
package's own (`importlib.metadata`, from pyproject.toml's dependencies), not a second copy.
"""
from __future__ import annotations

import re
from importlib import import_module, metadata

DISTRIBUTION = "ioattr"


def _normal(name: str) -> str:
    """A distribution name as PEP 503 compares them (PyMySQL = pymysql, prometheus-client =
    prometheus_client)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def dependencies() -> list[str]:
    """The distributions ioattr requires (extras' left out), as its installed metadata names
    them; none when ioattr runs from a tree that was never installed."""
    try:
        requires = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return []
    names = []
    for spec in requires:
        if "extra ==" in spec:
            continue
        m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec)
        if m:
            names.append(m.group(0))
    return names


def modules_of(distributions: list[str]) -> dict[str, list[str]]:
    """The modules to import to know each distribution works: the top-level module named like
    it (PyMySQL -> pymysql), else all its public top-level modules (a distribution may ship
    optional extras beside its module, as duckdb's adbc_driver_duckdb, that need packages
    ioattr does not); an empty list for one that is not installed."""
    wanted = {_normal(d): d for d in distributions}
    out: dict[str, list[str]] = {d: [] for d in distributions}
    for module, dists in metadata.packages_distributions().items():
        for dist in dists:
            name = wanted.get(_normal(dist))
            if name is not None and not module.startswith("_") and module not in out[name]:
                out[name].append(module)
    for dist, modules in out.items():
        own = [m for m in modules if _normal(m) == _normal(dist)]
        out[dist] = own or modules
    return out


def broken() -> list[tuple[str, str]]:
    """(distribution, why) for every dependency that is missing or fails to import, in the
    order the metadata lists them: empty when all import."""
    problems = []
    for dist, modules in modules_of(dependencies()).items():
        if not modules:
            problems.append((dist, "not installed"))
            continue
        for module in sorted(modules):
            try:
                import_module(module)
            except Exception as e:  # any failure of a third-party import: report it, go on
                problems.append((dist, f"import {module} fails: {type(e).__name__}: {e}".splitlines()[0]))
                break
    return problems


def versions() -> str:
    """The dependencies and their installed versions, one line (doctor's passing check)."""
    out = []
    for dist in dependencies():
        try:
            out.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            out.append(f"{dist} (not installed)")
    return ", ".join(out) or "ioattr is not installed: its dependencies are not known"


def as_checks(problems: list[tuple[str, str]]) -> dict:
    """`run_checks()`'s shape for a host whose Python side cannot run the other checks."""
    names = ", ".join(d for d, _ in problems)
    return {
        "usable": False,
        "verdict": (f"NOT usable: ioattr's Python packages are broken ({names}): reinstall them "
                    "(make build, or pip install --force-reinstall of the package named)"),
        "host": {},
        "checks": [{"name": f"python package {d}", "ok": False, "required": True, "detail": why}
                   for d, why in problems],
    }


def render_plain(checks: dict) -> str:
    """as_checks() as text, without rich (itself one of the packages that may be broken)."""
    lines = ["ioattr doctor: Python packages"]
    lines += [f"  FAIL  {c['name']}: {c['detail']}" for c in checks["checks"]]
    return "\n".join(lines + [checks["verdict"]]) + "\n"
