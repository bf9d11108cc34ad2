"""`ioattr exporter`: a live session served as Prometheus metrics over HTTP."""
