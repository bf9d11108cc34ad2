"""Build and install ioattr (metadata: pyproject.toml).

Building compiles bpf/*.bpf.c into CO-RE objects (clang, vendored
vmlinux.h, libbpf's headers) and ships them inside the package, with the
bpftrace scripts: a wheel runs on a host without clang. The top-level
folders of the design card map onto one import package (PACKAGE_ROOTS):
ioattr.collectors <- collectors/, ioattr.cli <- cli/, ioattr.bpf <- bpf/,
ioattr.examples <- examples/ (the demo runs the miniature insert benchmark
from there, in a checkout and once installed), ioattr.dashboards <-
dashboards/; the packages inside them are found, not listed.
tests/unit/test_packaging.py checks that every module and runtime file is
in what this installs, tests/test_install.py installs a built wheel.

Everything else (name, version, dependencies, the `ioattr` command) lives
in pyproject.toml only.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
BPF_DIR = HERE / "bpf"
#: where clang looks for <bpf/bpf_helpers.h> (libbpf-dev) without extra -I flags
INCLUDE_DIRS = (Path("/usr/include"), Path("/usr/local/include"))


def missing_build_packages() -> list[str]:
    """Debian package names of what compiling the BPF programs needs and this host lacks.

    Checked before running make so that a host without them gets one line
    naming what to install, not a compiler error from deep inside make.
    """
    missing = []
    if shutil.which(os.environ.get("CLANG", "clang")) is None:
        missing.append("clang")
    if shutil.which("make") is None:
        missing.append("make")
    if not any((d / "bpf" / "bpf_helpers.h").is_file() for d in INCLUDE_DIRS):
        missing.append("libbpf-dev")
    return missing


def bpf_objects_current() -> bool:
    """True if every bpf/*.bpf.c has an object newer than it and the headers.

    An unpacked source distribution or a tree built by `make` already has
    them; then no compiler is needed.
    """
    sources = sorted(BPF_DIR.glob("*.bpf.c"))
    newest_header = max((h.stat().st_mtime for h in BPF_DIR.glob("*.h")), default=0.0)
    for src in sources:
        obj = src.with_suffix(".o")
        if not obj.is_file() or obj.stat().st_mtime < max(src.stat().st_mtime, newest_header):
            return False
    return bool(sources)


class BuildWithBpf(build_py):
    """build_py that compiles the BPF objects first, so package_data ships them."""

    def run(self) -> None:
        if not bpf_objects_current():
            missing = missing_build_packages()
            if missing:
                # one line (pip frames it); exit status 1
                sys.exit("error: ioattr's BPF programs cannot be built: missing system packages: "
                         + " ".join(missing) + " (Debian/Ubuntu: apt-get install " + " ".join(missing) + ")")
            subprocess.run(["make", "-s", "-C", str(BPF_DIR)], check=True)
        super().run()


#: the design card's top-level folders, each one folder of the one import package `ioattr`;
#: the packages inside them are found (find_packages), so a new one needs no edit here
PACKAGE_ROOTS = {
    "ioattr": "ioattr",
    "ioattr.collectors": "collectors",
    "ioattr.cli": "cli",
    "ioattr.bpf": "bpf",
    # data folders (no __init__.py): the demo runs examples/insert_benchmark.py by path, and a
    # host with only the wheel needs the Grafana dashboards from somewhere
    "ioattr.examples": "examples",
    "ioattr.dashboards": "dashboards",
}
#: files the runtime opens by path inside the installed package, besides the modules:
#: the compiled BPF objects (collectors/probes.bpf_object_dir), the bpftrace scripts
#: (`ioattr script`), the example scripts (`ioattr demo`), the dashboards; the BPF sources
#: too, so a source distribution can be built again
PACKAGE_DATA = {
    "ioattr.bpf": ["*.bpf.o", "*.bt", "*.h", "*.bpf.c", "Makefile"],
    "ioattr.examples": ["*.sh", "README.md"],  # its *.py are the package's modules
    "ioattr.dashboards": ["*.json"],
    "ioattr.cli": ["commands.toml"],  # every command's help, description and examples
    # every engine folder's own file classes (ioattr.collectors.file_classes reads them)
    "": ["file_classes.toml"],
}


def all_packages() -> list[str]:
    """Every package under PACKAGE_ROOTS: each root, and each folder with an __init__.py below it.

    A hand-kept list missed new engine folders, and a non-editable install then lacked them
    (an editable one does not notice: it imports from the checkout)."""
    packages = []
    for name, folder in PACKAGE_ROOTS.items():
        packages.append(name)
        packages += [f"{name}.{sub}" for sub in find_packages(where=str(HERE / folder))]
    return packages


setup(
    packages=all_packages(),
    package_dir=PACKAGE_ROOTS,
    package_data=PACKAGE_DATA,
    cmdclass={"build_py": BuildWithBpf},
)
