"""Per-phase sums read in one pass (ioattr/analysis/phase_sums.py) equal the per-phase queries
they replaced, on a recording with the awkward cases: counters a phase lacks, several processes
and host rows (pid NULL), values that fall, tables that appear mid-recording, a phase with no
rows at all, and `pids` filters. The replaced queries are kept here as the definition."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ioattr.analysis.phase_stats import counter_deltas, phase_stats, table_sizes
from ioattr.format.reader import Recording
from ioattr.format.schema import HIST_COLUMNS, IO_SCHEMA
from tests.helpers import finish_synthetic, synthetic_writer

PHASES = ["load", "empty", "q1", "q2"]
T0 = 1_700_000_000.0


def _write(path: Path) -> Path:
    rng = random.Random(7)
    w = synthetic_writer(path, PHASES[0], T0, ["pid 10"], ["syscalls"])
    counters, io = [], []
    t = T0
    for i, phase in enumerate(PHASES):
        if i:
            w.start_phase(phase, at=t)
        for _ in range(0 if phase == "empty" else 12):
            t += 1.0
            for pid in (10, 11, None):
                for name in ("Com_select", "Innodb_data_reads", "Threads_running"):
                    if rng.random() < 0.8:  # some snapshots lack some counters
                        counters.append((t, phase, pid, "status", name, float(rng.randint(0, 10_000)), None))
            for table in ("db.t1", "db.t2", "db.t3"):
                # db.t3 is listed from q1 on only; sizes fall and grow
                if (table != "db.t3" or phase.startswith("q")) and rng.random() < 0.5:
                    for what in ("bytes", "allocated"):
                        counters.append((t, phase, 10, "table_files", f"{table}:{what}",
                                         float(rng.randint(1, 1 << 30)), None))
            counters.append((t, phase, 10, "status", "Com_insert", None, "text"))  # value NULL: left out
            row = {f.name: None for f in IO_SCHEMA}
            row.update(ts_start=t - 1, ts_end=t, phase=phase, layer=rng.choice(["syscall", "block"]),
                       op=rng.choice(["read", "write", "fsync"]), pid=10, tid=10, process="mariadbd",
                       thread="mariadbd", role="connection", file_class=rng.choice(["tablespace", "redo_log"]),
                       dev="8:0", ino=7, file="/d/t1.ibd", count=rng.randint(1, 100),
                       bytes=rng.randint(1, 1 << 20), lat_sum_ns=0, **dict.fromkeys(HIST_COLUMNS, 0))
            io.append(row)
        t += 1.0
    w.add_columns({f.name: [r[f.name] for r in io] for f in IO_SCHEMA})
    return finish_synthetic(w, path, counters, t)


def _deltas_sql(rec: Recording, phase: str, pids: list[int] | None) -> dict[str, float]:
    names = rec.phase_names()
    only = "" if pids is None else f"AND pid IN ({', '.join(str(int(p)) for p in pids) or 'NULL'}) "
    rows = rec.query(
        "WITH c AS (SELECT source, name, coalesce(pid, 0) AS pid, value, ts, phase FROM counters "
        f"           WHERE value IS NOT NULL {only}), "
        "cur AS (SELECT source, name, pid, arg_max(value, ts) AS last_v, arg_min(value, ts) AS first_v, "
        "               max(value) AS max_v FROM c WHERE phase = ? GROUP BY ALL), "
        "before AS (SELECT source, name, pid, arg_max(value, ts) AS prev_v FROM c "
        "           WHERE list_contains(?, phase) GROUP BY ALL) "
        "SELECT cur.source, cur.name, sum(cur.last_v - coalesce(before.prev_v, cur.first_v)), "
        "       sum(cur.last_v), sum(cur.max_v) "
        "FROM cur LEFT JOIN before USING (source, name, pid) GROUP BY ALL",
        [phase, names[: names.index(phase)]])
    out = {}
    for src, name, delta, last, mx in rows:
        out[f"{src}:{name}"], out[f"{src}_last:{name}"], out[f"{src}_max:{name}"] = delta, last, mx
    return out


def _sizes_sql(rec: Recording, phase: str) -> dict[str, tuple[int, int]]:
    names = rec.phase_names()
    rows = rec.query(
        "WITH t AS (SELECT name, coalesce(pid, 0) AS pid, value, ts, phase FROM counters "
        "           WHERE source = 'table_files' AND value IS NOT NULL), "
        "t0 AS (SELECT pid, min(ts) AS first_read FROM t GROUP BY pid), "
        "cur AS (SELECT name, pid, arg_max(value, ts) AS last_v, min(ts) AS first_ts, "
        "               arg_min(value, ts) AS first_v FROM t WHERE phase = ? GROUP BY ALL), "
        "before AS (SELECT name, pid, arg_max(value, ts) AS prev_v FROM t "
        "           WHERE list_contains(?, phase) GROUP BY ALL) "
        "SELECT name, sum(coalesce(cur.last_v, before.prev_v)), "
        "       sum(CASE WHEN cur.name IS NULL THEN 0 ELSE cur.last_v - coalesce(before.prev_v, "
        "           CASE WHEN cur.first_ts > t0.first_read THEN 0 ELSE cur.first_v END) END) "
        "FROM cur FULL OUTER JOIN before USING (name, pid) JOIN t0 USING (pid) GROUP BY name",
        [phase, names[: names.index(phase)]])
    return {n: (int(last or 0), int(change or 0)) for n, last, change in rows}


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return Recording(_write(tmp_path_factory.mktemp("sums") / "rec"))


@pytest.mark.parametrize("pids", [None, [10], [11, 10], [12], []])
def test_counter_deltas_equal_the_per_phase_query(rec: Recording, pids: list[int] | None) -> None:
    for phase in PHASES:
        want = _deltas_sql(rec, phase, pids)
        got = counter_deltas(rec, phase, pids)
        assert got.keys() == want.keys(), phase
        for k, v in want.items():
            assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-9), (phase, k)
    assert counter_deltas(rec, "empty") == {}


def test_table_sizes_equal_the_per_phase_query(rec: Recording) -> None:
    seen = 0
    for phase in PHASES:
        want = _sizes_sql(rec, phase)
        got = table_sizes(rec, phase)
        for key, (last, change) in want.items():
            table, _, what = key.rpartition(":")
            if table in got:
                assert (got[table][what], got[table][f"{what}_change"]) == (last, change), (phase, key)
        changed = {k.rpartition(":")[0] for k, (_, c) in want.items() if c}
        assert set(got) == changed, phase
        seen += len(got)
    assert seen  # the case is exercised: tables changed size


def test_io_sums_equal_the_per_phase_query(rec: Recording) -> None:
    from ioattr.model import storage

    for phase in PHASES:
        st = phase_stats(rec, phase)
        want = {op: (n, b) for op, n, b in rec.query(
            f"SELECT op, sum(count), sum(bytes) FROM io WHERE phase = ? AND {storage.storage_sql('io')} "
            "AND op IN ('read', 'write') GROUP BY op", [phase])}
        assert (st.reads, st.read_bytes) == tuple(float(x) for x in want.get("read", (0, 0)))
        assert (st.writes, st.write_bytes) == tuple(float(x) for x in want.get("write", (0, 0)))
        ops = rec.query("SELECT coalesce(sum(count), 0) FROM io WHERE phase = ? AND layer = 'syscall'", [phase])
        assert st.io_ops == float(ops[0][0])


def _report(path: Path, by: list[str]) -> list[dict]:
    from ioattr.analysis.report import ReportRequest, build_report

    return build_report(Recording(path), ReportRequest(by=by))["rows"]


def test_derived_files_are_reused_renewed_and_never_trusted_blindly(tmp_path: Path) -> None:
    """The sums over time written beside the recording (ioattr/format/derived.py) give the same
    report as the rows they sum; a later command reads them; a part that changes, or a derived file
    that is damaged or not the owner's alone, makes them computed again."""
    import os
    import stat

    from ioattr.format.derived import DIR

    path = _write(tmp_path / "rec")
    with_rows = _report(path, ["file", "phase", "op"])
    d = path / DIR
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    files = sorted(d.glob("io_totals-*"))
    assert len(files) == 1
    # the parts partcheck passed, listed so that the next command does not check them again
    checked = json.loads((d / "checked.json").read_text())
    assert sorted(checked) == sorted(f"{p.parent.name}/{p.name}" for t in ("io", "counters")
                                     for p in (path / t).glob("*.parquet"))
    assert stat.S_IMODE((d / "checked.json").stat().st_mode) == 0o600
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    # no intervals in them: one row per key
    rec = Recording(path)
    n_rows, n_keys = rec.query("SELECT count(*) FROM io")[0][0], rec.query(f"SELECT count(*) FROM {rec.totals('io')}")[0][0]
    assert n_keys < n_rows
    mtime = files[0].stat().st_mtime_ns
    assert _report(path, ["file", "phase", "op"]) == with_rows
    assert files[0].stat().st_mtime_ns == mtime            # read, not written again
    # a part that changed: new sums, the old file removed
    part = next((path / "io").glob("*.parquet"))
    os.utime(part, ns=(part.stat().st_atime_ns, part.stat().st_mtime_ns + 1))
    assert _report(path, ["file", "phase", "op"]) == with_rows
    now = sorted(d.glob("io_totals-*"))
    assert len(now) == 1 and now != files
    # a damaged derived file is left aside and written anew
    now[0].write_bytes(b"PAR1 not parquet PAR1")
    assert _report(path, ["file", "phase", "op"]) == with_rows
    # ... also when it is still valid Parquet of the right shape, other sums in it (the reader
    # fuzz: a bit flipped in a value); its name's hash of its bytes no longer holds
    import duckdb

    now = sorted(d.glob("io_totals-*"))
    other = tmp_path / "other.parquet"
    duckdb.sql(f"COPY (SELECT * REPLACE (bytes + 1 AS bytes) FROM read_parquet('{now[0]}')) TO '{other}'")
    now[0].write_bytes(other.read_bytes())
    assert _report(path, ["file", "phase", "op"]) == with_rows
    again = sorted(d.glob("io_totals-*"))                               # written anew
    assert len(again) == 1 and again[0].read_bytes() != other.read_bytes(), again
    # a derived file others may write is not read
    now = sorted(d.glob("io_totals-*"))
    os.chmod(now[0], 0o666)
    assert _report(path, ["file", "phase", "op"]) == with_rows
    assert stat.S_IMODE(sorted(d.glob("io_totals-*"))[0].stat().st_mode) == 0o600


@pytest.mark.parametrize("bad, error, check", [
    # a typo in a query is the query's fault: it is raised without searching the files
    ("SELEC count(*) FROM io", "ParserException", "SELECT count(*) FROM io"),
    # a binder error holds with no rows at all: it is the query's, so no file is left out
    ("SELECT sum(bytez) FROM io", "BinderException", "SELECT count(*), sum(bytes) FROM io"),
], ids=["syntax_error", "misspelt_column"])
def test_a_querys_own_error_is_raised_as_it_is_and_leaves_every_file_in(
        rec: Recording, capsys: pytest.CaptureFixture[str], bad: str, error: str, check: str) -> None:
    """An error of the query itself: raised as duckdb raised it, no part reported damaged, and
    every file still read afterwards (`check` answers as before)."""
    import duckdb

    before = rec.query(check)
    with pytest.raises(getattr(duckdb, error)):
        rec.query(bad)
    assert "damaged" not in capsys.readouterr().err
    assert rec.query(check) == before


def test_a_backends_own_counters_start_at_zero(tmp_path: Path) -> None:
    """pg_stat_backend_io (EngineAdapter.counters_from_zero): a backend first listed after the
    source's first reading (its "backends" gauge, listed at every reading) started at 0, so its
    phase delta is its last value; one listed at the first reading is counted from there, as
    every counter is; a backend that lives on into the next phase is counted from its last
    value before it."""
    w = synthetic_writer(tmp_path / "r", "a", T0, ["pid 10"], ["syscalls"])
    w.start_phase("b", at=T0 + 10)
    src = "pg_stat_backend_io"
    rows = [(T0 + 0.5, "a", 10, src, "backends", 1.0),                        # the first reading: one alive
            (T0 + 0.5, "a", 10, src, "400:relation:read_bytes", 100.0),     # ... counted from there
            (T0 + 5, "a", 10, src, "400:relation:read_bytes", 300.0),
            (T0 + 1, "a", 10, src, "backends", 1.0),
            (T0 + 1, "a", 10, src, "100:relation:read_bytes", 8192.0),      # listed from the second: from 0
            (T0 + 5, "a", 10, src, "100:relation:read_bytes", 81920.0),
            (T0 + 5, "a", 10, src, "200:relation:read_bytes", 40960.0),     # born after it: from 0
            (T0 + 9, "a", 10, src, "200:relation:read_bytes", 49152.0),
            (T0 + 12, "b", 10, src, "200:relation:read_bytes", 57344.0),    # lives on into b
            (T0 + 12, "b", 10, src, "300:relation:read_bytes", 16384.0),    # born in b
            (T0 + 1, "a", 10, "pg_stat_io", "read_bytes", 100.0),           # a cluster counter: as before
            (T0 + 12, "b", 10, "pg_stat_io", "read_bytes", 300.0)]
    rec = Recording(finish_synthetic(w, tmp_path / "r", [(*r, None) for r in rows], T0 + 13))
    a, b = counter_deltas(rec, "a"), counter_deltas(rec, "b")
    assert a[f"{src}:100:relation:read_bytes"] == 81920.0 and a[f"{src}:200:relation:read_bytes"] == 49152.0
    assert a[f"{src}:400:relation:read_bytes"] == 200.0
    assert b[f"{src}:200:relation:read_bytes"] == 8192.0 and b[f"{src}:300:relation:read_bytes"] == 16384.0
    assert a["pg_stat_io:read_bytes"] == 0.0 and b["pg_stat_io:read_bytes"] == 200.0


@pytest.mark.parametrize("value", ["x", [1, 2], {"a": 1}, float("inf"), float("nan"), -1, True, 1.5])
def test_a_damaged_count_in_meta_json_is_ignored_with_a_warning(tmp_path: Path, value: object) -> None:
    """block_untimed (a count report prints) and a phase's ops (--ops-pattern) of a damaged
    meta.json were taken as they were: report and explain failed with an internal error
    (int(nan): the reader fuzz, seed 31). Each is left out with a warning naming it; the rows stay."""
    from ioattr.analysis.report import ReportRequest, build_report

    path = _write(tmp_path / "rec")
    want = _report(path, ["file", "phase", "op"])
    meta = json.loads((path / "meta.json").read_text())
    meta["block_untimed"] = value
    meta["phases"][2]["ops"] = value
    (path / "meta.json").write_text(json.dumps(meta))
    said: list[str] = []
    rec = Recording(path, warn=said.append)
    assert any("'block_untimed'" in m for m in said), said
    rep = build_report(rec, ReportRequest(by=["file", "phase", "op"]))
    assert rep["rows"] == want and "block_untimed" not in rep
    if value == 1.5:        # a fractional count of operations is one (a pattern's number)
        assert phase_stats(rec, "q1").ops == 1.5 and not any("'ops'" in m for m in said), said
    else:
        assert phase_stats(rec, "q1").ops is None and any("'ops'" in m and "q1" in m for m in said), said


def test_a_column_only_a_damaged_part_had_is_not_asked_for_once_it_is_left_out(tmp_path: Path) -> None:
    """The reader fuzz (seed 78): a flipped bit renamed a column in a segment's footer (h25 ->
    i25) and broke one of its pages. The sums over time were asked for every column the parts
    had, i25 too; the query found the segment damaged and left it out, then asked again for i25,
    which no part had any more: an internal error (Binder Error) instead of the others' rows."""
    import duckdb

    import shutil

    path = _write(tmp_path / "rec")
    victim = sorted((path / "io").glob("chunk-*.parquet"))[0]
    shutil.copy(victim, path / "io" / "chunk-999999.parquet")     # a second part, of the same rows
    want = _report(_write(tmp_path / "ok"), ["file", "phase", "op"])
    new = victim.with_name("new.parquet")
    duckdb.sql(f"COPY (SELECT * RENAME (h25 AS i25) FROM read_parquet('{victim}')) TO '{new}' "
               "(FORMAT parquet, COMPRESSION zstd)")
    from ioattr.format import duck
    from ioattr.format.partcheck import part_problem
    from ioattr.format.reader import damaged_part

    good = new.read_bytes()
    con = duck.connect()
    for at in range(16, len(good) // 2):      # a byte inside a compressed page: its sizes hold,
        data = bytearray(good)                 # its payload does not decompress (found mid-query)
        data[at] ^= 0xFF
        victim.write_bytes(bytes(data))
        if part_problem(victim) is None and damaged_part(con, victim) is not None:
            try:                               # ... in a column the sums read
                con.sql(f"SELECT * EXCLUDE (ts_start, ts_end) FROM read_parquet('{victim}')").fetchall()
            except Exception:                  # noqa: BLE001 - whatever DuckDB raises on it
                break
    else:
        raise AssertionError("no byte of the part breaks it inside only")
    new.unlink()
    said: list[str] = []
    from ioattr.analysis.report import ReportRequest, build_report

    rows = build_report(Recording(path, warn=said.append), ReportRequest(by=["file", "phase", "op"]))["rows"]
    assert any(victim.name in m for m in said), said
    assert rows == want
