"""A built wheel, installed non-editable, runs: every module imports, `ioattr --help`, and
`record` + `report` + `explain` of a private MariaDB give the server's own numbers.

The rest of the suite runs the editable install, which imports from the checkout and so
cannot notice a package or file the wheel lacks. Here the wheel is built from a copy of the
checkout (a copy: setuptools reuses ./build/, whose leftovers could mask a file the wheel no
longer gets), installed into a fresh venv, and every command runs with its cwd outside the
checkout; each check asserts the module came from the wheel.

Offline and in seconds: the venv is made without pip and the wheel installed `--no-deps`
with the suite's own pip (`pip --python`). Its dependencies (duckdb, pyarrow, ...) come from
a .pth file naming the suite's .venv site-packages. That directory is appended to sys.path,
after the venv's own site-packages, and .pth files inside it are not run, so the editable
install's import hook there never loads: `ioattr` can only be the wheel's. Downloading the
dependencies instead would make the suite depend on the network and cost a minute.
"""
from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from ioattr.collectors.probes import PROBE_SETS
from tests.helpers import ROOT, assert_no_ioattr_programs, ioattr, record_marked_phases, setup_distribution

ROWS = 60_000        # ~9 MiB of clustered index: more than the 8M buffer pool
LOOKUPS = 600        # random secondary-key lookups, on a cold buffer pool: most read from disk
#: not copied to the build tree: the venvs, git, and every earlier build's leftovers
NOT_SOURCES = shutil.ignore_patterns(".venv*", ".git", "build", "dist", "*.egg-info", "__pycache__",
                                     ".pytest_cache")


class Installed:
    """The wheel and the venv it is installed in."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.outside = root / "cwd"  # where every command runs: no checkout on the path
        self.venv = root / "venv"
        self.python = str(self.venv / "bin" / "python")
        self.ioattr = str(self.venv / "bin" / "ioattr")
        self.wheel: Path | None = None

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        r = subprocess.run(args, cwd=self.outside, capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, f"{args} exited {r.returncode}: {r.stderr}"
        return r


def checkout_modules() -> list[str]:
    """Every module of the checkout, by its import name (setup.py's package folders)."""
    modules = []
    for name, folder in setup_distribution().package_dir.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [name, *path.relative_to(ROOT / folder).with_suffix("").parts]
            modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    inst = Installed(tmp_path_factory.mktemp("install"))
    inst.outside.mkdir()
    src, dist = inst.root / "src", inst.root / "dist"
    shutil.copytree(ROOT, src, ignore=NOT_SOURCES, symlinks=True)  # copy2: mtimes kept, BPF objects current
    inst.run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
             "-w", str(dist), str(src), timeout=300)
    (inst.wheel,) = dist.glob("ioattr-*.whl")
    inst.run(sys.executable, "-m", "venv", "--without-pip", str(inst.venv))
    inst.run(sys.executable, "-m", "pip", "--python", inst.python, "install", "-q", "--no-deps", "--no-index",
             str(inst.wheel))
    purelib = inst.run(inst.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout
    (Path(purelib.strip()) / "ioattr-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return inst


def test_the_wheel_carries_the_bpf_objects_and_every_engine(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    objects = sorted(p.name for p in (ROOT / "bpf").glob("*.bpf.o"))
    assert len(objects) == len(list((ROOT / "bpf").glob("*.bpf.c"))) >= 7, objects
    missing = [o for o in objects if f"ioattr/bpf/{o}" not in names]
    assert missing == [], f"the wheel lacks BPF objects: {missing}"
    for engine in ("innodb", "myrocks", "postgres"):
        assert f"ioattr/engines/{engine}/__init__.py" in names, engine


def test_every_module_imports_from_the_wheel(installed: Installed) -> None:
    modules = checkout_modules()
    assert {"ioattr.engines.registry", "ioattr.engines.myrocks", "ioattr.engines.postgres",
            "ioattr.engines.innodb", "ioattr.cli.main"} <= set(modules) and len(modules) > 100
    script = textwrap.dedent("""
        import importlib, json, sys
        import ioattr
        from ioattr.collectors.probes import bpf_object_dir
        files = {m: importlib.import_module(m).__file__ for m in sys.argv[1:]}
        from ioattr.engines.registry import ENGINES
        print(json.dumps({"ioattr": ioattr.__file__, "files": files, "bpf": str(bpf_object_dir()),
                          "engines": sorted(e.name for e in ENGINES)}))
    """)
    got = json.loads(installed.run(installed.python, "-c", script, *modules).stdout)
    site = installed.venv.resolve()
    assert Path(got["ioattr"]).resolve().is_relative_to(site), got["ioattr"]
    assert not Path(got["ioattr"]).resolve().is_relative_to(ROOT), got["ioattr"]
    elsewhere = {m: f for m, f in got["files"].items() if not Path(f).resolve().is_relative_to(site)}
    assert elsewhere == {}, f"imported from outside the wheel's venv: {elsewhere}"
    # the recorder loads its objects from the installed package, not from the checkout's bpf/
    bpf = Path(got["bpf"])
    assert bpf.is_relative_to(site) and sorted(p.name for p in bpf.glob("*.bpf.o")) == sorted(
        p.name for p in (ROOT / "bpf").glob("*.bpf.o"))
    assert got["engines"] == ["innodb", "postgres", "rocksdb"], got["engines"]


def test_help_lists_the_commands(installed: Installed) -> None:
    out = installed.run(installed.ioattr, "--help").stdout
    for command in ("record", "report", "explain", "top", "doctor", "demo"):
        assert re.search(rf"^ +{command} ", out, re.M), (command, out)


@pytest.fixture(scope="module")
def server():
    from tests.fixtures_mariadb import indexed_table_server

    with indexed_table_server(ROWS) as db:
        yield db


def test_record_report_explain_from_the_wheel(installed: Installed, server) -> None:
    """Cached point selects, then cold secondary-key lookups (each reads clustered leaves): the
    wheel's recorder, report and explain give the server's own Innodb_data_reads and name the
    clustered index as what changed."""
    rnd = random.Random(5)

    def cached(cur) -> None:
        for i in range(LOOKUPS):
            cur.execute("SELECT c FROM b.t WHERE id = %s", (1 + i % 20,))

    def uncached(cur) -> None:
        for _ in range(LOOKUPS):
            cur.execute("SELECT c FROM b.t WHERE k = %s", (rnd.randrange(ROWS),))

    server.restart()  # an empty buffer pool
    server.query("SELECT id FROM b.t WHERE id = 1")  # open the table before measuring
    rec = installed.root / "rec"
    truth = record_marked_phases(server, rec, [("cached", cached), ("uncached", uncached)],
                                 "--interval", "0.25", measure=lambda: server.status("Innodb_data_reads"),
                                 exe=installed.ioattr, cwd=installed.outside)
    reads = {name: after - before for name, (before, after) in truth.items()}
    assert reads["uncached"] > LOOKUPS // 2, reads  # the lookups really went to storage
    # every probe set's object was found in the wheel and loaded (a missing optional one would
    # only be a note in `degraded`)
    meta = json.loads((rec / "meta.json").read_text())
    assert not set(meta.get("degraded") or {}) & {p.name for p in PROBE_SETS}, meta["degraded"]

    rep = json.loads(ioattr("report", str(rec), "--by", "phase", "--format", "json",
                            exe=installed.ioattr, cwd=installed.outside, check=True).stdout)
    s = next(row for row in rep["summary"] if row["phase"] == "uncached")
    per_query = reads["uncached"] / (LOOKUPS + 1)  # +1: the phase's marker is its first SELECT
    assert s["engine_reads_per_query"] == pytest.approx(per_query, rel=0.02), (s, per_query)
    assert s["reads_per_query"] == pytest.approx(per_query, rel=0.05), (s, per_query)

    res = json.loads(ioattr("explain", str(rec), "--baseline", "cached", "--target", "uncached",
                            "--format", "json", exe=installed.ioattr, cwd=installed.outside, check=True).stdout)
    assert res["contributors"][0]["dims"]["index"] == "b.t.PRIMARY", res["contributors"][0]
    assert {f["id"]: f["verdict"] for f in res["findings"]}["clustered_lookups"] == "supported", res["findings"]
    assert list(installed.outside.iterdir()) == [], "a command wrote into its working directory"
    assert_no_ioattr_programs()
