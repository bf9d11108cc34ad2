"""The host around ioattr: what it can trace (doctor), private MariaDB servers, the demo."""
