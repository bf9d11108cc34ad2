# ioattr: the two commands a fresh Debian 12 machine (as root) needs.
#   make demo   install what is needed, then record a private MariaDB under load and report
#   make test   install what is needed, then run the whole suite
# Everything else here is what those two depend on.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
APT_PACKAGES := clang llvm libbpf-dev libbpf1 bpftool bpftrace libelf-dev zlib1g-dev pkg-config \
	gcc make liburing-dev mariadb-server mariadb-client sysbench prometheus tmux \
	python3-venv python3-dev util-linux procps iproute2 linux-perf chromium
DEPS_STAMP := $(VENV)/.deps-installed

.PHONY: all deps venv build test demo bench clean

all: build

# System packages from apt. Installing mariadb-server must not start (or be used as) the
# host's service: policy-rc.d keeps apt from starting it; ioattr only runs private servers.
deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		export DEBIAN_FRONTEND=noninteractive; \
		if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; rm_policy=1; fi; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; rc=$$?; \
		[ -n "$$rm_policy" ] && rm -f /usr/sbin/policy-rc.d; \
		exit $$rc; \
	fi

$(DEPS_STAMP): setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q pytest
	touch $@

venv: deps $(DEPS_STAMP)

build: venv
	$(MAKE) -s -C bpf
	$(MAKE) -s -C tests/workloads
	$(MAKE) -s -C tests/fuzz
	$(PY) -m pip install -q -e .

test: build
	$(PY) -m pytest tests -q -rs

demo: build
	$(VENV)/bin/ioattr demo

bench: build
	$(PY) benchmarks/bench_syscall_cost.py
	$(PY) benchmarks/bench_sysbench_qps.py

clean:
	$(MAKE) -s -C bpf clean
	$(MAKE) -s -C tests/workloads clean
	$(MAKE) -s -C tests/fuzz clean
	rm -rf build *.egg-info
