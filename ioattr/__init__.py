"""ioattr: eBPF IO attribution for database benchmarks (MariaDB/MySQL with InnoDB or MyRocks, PostgreSQL)."""

# The one copy of the version: pyproject.toml reads it ([tool.setuptools.dynamic]),
# `ioattr --version` prints it.
__version__ = "0.1.0"
