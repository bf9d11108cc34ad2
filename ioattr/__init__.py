"""ioattr: eBPF IO attribution for MySQL/MariaDB."""

__version__ = "0.1.0"
