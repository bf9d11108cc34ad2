"""BPF sources, compiled objects (*.bpf.o) and bpftrace scripts (*.bt)."""
