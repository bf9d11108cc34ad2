"""Build and install ioattr (metadata: pyproject.toml).

Building compiles bpf/*.bpf.c into CO-RE objects (clang, vendored
vmlinux.h, libbpf's headers) and ships them inside the package, with the
bpftrace scripts. The top-level folders of the design card map onto one
import package: ioattr.collectors <- collectors/, ioattr.cli <- cli/,
ioattr.bpf <- bpf/, ioattr.examples <- examples/ (the demo runs the
miniature insert benchmark from there, in a checkout and once installed).

Everything else (name, version, dependencies, the `ioattr` command) lives
in pyproject.toml only.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
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


setup(
    packages=["ioattr", "ioattr.collectors", "ioattr.cli", "ioattr.bpf", "ioattr.examples",
              # ioattr/'s own folders, lowest layer first: each imports only from those
              # before it (and ioattr.errors, ioattr.collectors)
              "ioattr.model", "ioattr.format", "ioattr.live", "ioattr.analysis", "ioattr.output",
              "ioattr.topview", "ioattr.prometheus", "ioattr.host",
              # storage-engine adapters (use collectors and model; the core reaches them through
              # ioattr.engines.registry)
              "ioattr.engines", "ioattr.engines.innodb"],
    package_dir={
        "ioattr": "ioattr",
        "ioattr.collectors": "collectors",
        "ioattr.cli": "cli",
        "ioattr.bpf": "bpf",
        "ioattr.examples": "examples",
    },
    package_data={
        "ioattr.bpf": ["*.bpf.o", "*.bt", "*.h", "*.bpf.c", "Makefile"],
        "ioattr.examples": ["*.sh", "README.md"],
    },
    cmdclass={"build_py": BuildWithBpf},
)
