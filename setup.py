"""Build and install ioattr.

Building compiles bpf/*.bpf.c into CO-RE objects (clang, vendored
vmlinux.h) and ships them inside the package, with the bpftrace scripts.
The top-level folders of the design card map onto one import package:
ioattr.collectors <- collectors/, ioattr.cli <- cli/, ioattr.bpf <- bpf/.
"""
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithBpf(build_py):
    def run(self):
        subprocess.run(["make", "-C", "bpf"], check=True)
        super().run()


setup(
    name="ioattr",
    version="0.1.0",
    description="eBPF IO attribution for MySQL/MariaDB benchmarks",
    python_requires=">=3.9",
    packages=["ioattr", "ioattr.collectors", "ioattr.cli", "ioattr.bpf"],
    package_dir={
        "ioattr": "ioattr",
        "ioattr.collectors": "collectors",
        "ioattr.cli": "cli",
        "ioattr.bpf": "bpf",
    },
    package_data={"ioattr.bpf": ["*.bpf.o", "*.bt", "*.h", "*.bpf.c", "Makefile"]},
    install_requires=["duckdb", "pyarrow", "numpy", "rich", "prometheus_client", "pymysql"],
    entry_points={"console_scripts": ["ioattr = ioattr.cli.main:main"]},
    cmdclass={"build_py": BuildWithBpf},
)
