"""setup.py installs every module of the checkout and every file the runtime opens by path.

An editable install imports from the checkout, so a package or data file that setup.py
forgets goes unnoticed there and breaks only a real (wheel) install. What a wheel carries is
build_py's output: the modules of setup.py's packages plus their package data. Both come
here from setup.py's own Distribution (read, not built: run_setup stops after setup()'s
arguments), so this checks what `pip install .` would install in well under a second,
without root. tests/test_install.py builds and installs a real wheel.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from ioattr.collectors.probes import PROBE_SETS
from ioattr.host import demo
from tests.helpers import ROOT, setup_distribution


@pytest.fixture(scope="module")
def dist():
    return setup_distribution()


@pytest.fixture(scope="module")
def installed(dist) -> set[str]:
    """Paths the package's files get, relative to site-packages ("ioattr/bpf/block.bpf.o")."""
    build_py = dist.get_command_obj("build_py")
    with contextlib.chdir(ROOT):  # build_py globs package_dir's folders relative to the cwd
        build_py.ensure_finalized()
        outputs = build_py.get_outputs(include_bytecode=False)
    return {Path(out).relative_to(build_py.build_lib).as_posix() for out in outputs}


def _roots(dist) -> dict[str, Path]:
    """{import name: folder in the checkout} of setup.py's top-level package folders."""
    return {name: ROOT / folder for name, folder in dist.package_dir.items()}


def _walk(folder: Path) -> list[tuple[Path, list[str]]]:
    return [(Path(d), files) for d, dirs, files in os.walk(folder)
            if "__pycache__" not in Path(d).parts]


def test_package_roots_are_the_design_cards_folders(dist) -> None:
    assert _roots(dist) == {"ioattr": ROOT / "ioattr", "ioattr.collectors": ROOT / "collectors",
                            "ioattr.cli": ROOT / "cli", "ioattr.bpf": ROOT / "bpf",
                            "ioattr.examples": ROOT / "examples", "ioattr.dashboards": ROOT / "dashboards"}


def test_every_folder_with_an_init_is_a_package(dist) -> None:
    missing = []
    for name, folder in _roots(dist).items():
        for d, files in _walk(folder):
            if "__init__.py" in files:
                package = ".".join([name, *d.relative_to(folder).parts])
                if package not in dist.packages:
                    missing.append(package)
    assert missing == [], f"setup.py would not install: {missing}"
    # the engine adapters a hand-kept list once left out
    assert {"ioattr.engines.innodb", "ioattr.engines.myrocks", "ioattr.engines.postgres"} <= set(dist.packages)


def test_every_module_is_installed(dist, installed: set[str]) -> None:
    """Every .py file under the roots, also in a folder someone forgot to give an __init__.py."""
    missing = []
    for name, folder in _roots(dist).items():
        target = Path(*name.split("."))
        for d, files in _walk(folder):
            for f in files:
                if f.endswith(".py"):
                    rel = (target / d.relative_to(folder) / f).as_posix()
                    if rel not in installed:
                        missing.append(rel)
    assert missing == [], f"modules a wheel would lack: {missing}"
    assert len([p for p in installed if p.endswith(".py")]) > 100


def test_the_runtimes_files_are_package_data(installed: set[str]) -> None:
    """The files ioattr opens by path next to its modules: each probe set's compiled object
    (collectors/probes.bpf_object_dir: the ioattr.bpf package's folder) and doctor's, the
    bpftrace scripts (`ioattr script`), the demo's benchmark, the example scripts, the
    dashboards and the engines' file classes."""
    bpf = ROOT / "bpf"
    objects = [f"{name}.bpf.o" for name in sorted({p.name for p in PROBE_SETS} | {"doctor_probes"})]
    unbuilt = [o for o in objects if not (bpf / o).is_file()]
    assert unbuilt == [], f"bpf/ is not built (make -C bpf): {unbuilt}"
    # every source's object, not just the ones loaded today
    assert {s.name.removesuffix(".c") + ".o" for s in bpf.glob("*.bpf.c")} >= set(objects)
    wanted = [f"ioattr/bpf/{s.name.removesuffix('.c')}.o" for s in bpf.glob("*.bpf.c")]
    wanted += [f"ioattr/bpf/{p.name}" for p in bpf.glob("*.bt")]
    wanted += [f"ioattr/examples/{p.name}" for p in (ROOT / "examples").iterdir() if p.is_file()]
    wanted += [f"ioattr/dashboards/{p.name}" for p in (ROOT / "dashboards").glob("*.json")]
    # each engine's own file classes (collectors/file_classes.py reads them by path)
    wanted += [p.relative_to(ROOT).as_posix() for p in (ROOT / "ioattr" / "engines").glob("*/file_classes.toml")]
    missing = sorted(set(wanted) - installed)
    assert missing == [], f"runtime files a wheel would lack: {missing}"
    assert len([w for w in wanted if w.endswith(".bt")]) >= 5 and len(wanted) > 20
    # the demo looks for its benchmark at this path inside the installed package
    demo_path = demo.EXAMPLE_CANDIDATES[0]
    assert demo_path.parts[-3:] == ("ioattr", "examples", "insert_benchmark.py")
    assert "ioattr/examples/insert_benchmark.py" in installed

