"""Collectors: the libbpf loader, probe drains, target and name tracking."""
