"""PostgreSQL's explain findings planted under real BPF (ioattr/engines/postgres/findings.py),
each settled by a default recording of a private cluster (tests/fixtures_postgres.py:
16MB shared_buffers, autovacuum off). The numbers a finding shows are checked against the
same PostgreSQL views read directly around each phase:

- full_page_writes: the same batch of 2,000 random-key inserts into an indexed table, once
  after its index leaves were already changed since the last checkpoint (few full-page images),
  once right after a CHECKPOINT (one image per leaf touched); pg_stat_wal wal_fpi per row is
  the ground truth (a backend counts the images of its own records). Refuted for a batch of
  wider rows without a checkpoint between (more WAL, no more images). On 15 and 18: report --by
  phase's WAL split (records, images, bytes inserted) per phase against the same readings, and
  full_page_writes and wal_compression in the recorded settings.
- heap_fetches: 40 index-only scans over a range VACUUM left all-visible read no heap page;
  the same scans over a range updated after the VACUUM read the heap. pg_statio heap_blks_read
  (shared-buffer misses of the table: one 8 KiB pread each, after a restart) is the ground truth.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ioattr.host.pg_sandbox import PrivatePostgres
from tests.fixtures_postgres import ON_15, ON_15_AND_18
from tests.helpers import ioattr, recording, report_json, wait_phase

WAL = "SELECT wal_fpi, wal_bytes FROM pg_stat_wal"
ROWS = "SELECT sum(tup_inserted) FROM pg_stat_database"


def _mark(rec: Path, name: str) -> None:
    """Start phase `name` (the recorder snapshots the counters before listing it in meta.json)."""
    r = ioattr("mark", name, "--recording", str(rec))
    assert r.returncode == 0, r.stderr
    wait_phase(rec, name)


def _explain(rec: Path, baseline: str, target: str, metric: str) -> dict:
    r = ioattr("explain", str(rec), "--baseline", baseline, "--target", target, "--metric", metric,
               "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["metric"] == metric, out["notes"]
    return out


def _finding(out: dict, fid: str) -> dict:
    return next(f for f in out["findings"] if f["id"] == fid)


@ON_15_AND_18
def test_full_page_writes(postgres_versions: PrivatePostgres, tmp_path: Path) -> None:
    pg = postgres_versions
    pg.execute("CREATE TABLE fw (k int, v text); "
               "INSERT INTO fw SELECT (random() * 1e9)::int, 'x' FROM generate_series(1, 100000); "
               "CREATE INDEX fw_k ON fw (k); CHECKPOINT")
    batch = "INSERT INTO fw SELECT (random() * 1e9)::int, {} FROM generate_series(1, 2000)"
    rec = tmp_path / "rec"
    wal: dict[str, tuple] = {}
    with recording(pg.pid, rec, "--phase", "idle"):
        with pg.connect() as c:
            c.execute(batch.format("'x'"))  # changes (nearly) every leaf of fw_k since the checkpoint
            c.execute("SELECT pg_stat_force_next_flush()")  # its rows counted before the phases
            for phase, value, checkpoint in (("base", "'x'", False), ("wide", "repeat('y', 1000)", False),
                                             ("target", "'x'", True)):
                if checkpoint:
                    _mark(rec, "checkpoint")
                    c.execute("CHECKPOINT")
                _mark(rec, phase)
                before = c.execute(WAL).fetchone() + c.execute(ROWS).fetchone()
                c.execute(batch.format(value))
                c.execute("SELECT pg_stat_force_next_flush()")  # its WAL and row counts, before the boundary
                wal[phase] = tuple(a - b for a, b in zip(c.execute(WAL).fetchone() + c.execute(ROWS).fetchone(),
                                                         before))
            _mark(rec, "after")
    assert {p: w[2] for p, w in wal.items()} == {"base": 2000, "wide": 2000, "target": 2000}
    assert wal["target"][0] > 20 * max(wal["base"][0], 1)  # the images: one per leaf after the checkpoint

    out = _explain(rec, "base", "target", "write_bytes_per_insert")
    f = _finding(out, "full_page_writes")
    ev = f["evidence"]
    assert f["verdict"] == "supported", (f, out["baseline"], out["target"])
    assert out["baseline"]["ops"] == out["target"]["ops"] == 2000
    # pg_stat_wal per inserted row as read directly around the phases
    assert ev["wal_fpi_per_op_baseline"] == pytest.approx(wal["base"][0] / 2000, rel=1e-6)
    assert ev["wal_fpi_per_op_target"] == pytest.approx(wal["target"][0] / 2000, rel=1e-6)
    # WAL bytes inserted: the backend's own records, and at most a few background records (the
    # checkpointer's and the background writer's, counted when they report)
    for side, phase in (("baseline", "base"), ("target", "target")):
        assert ev[f"wal_bytes_per_op_{side}"] * 2000 >= float(wal[phase][1]) - 1, side
    # our WAL bytes written, as `report` says for the phase
    for side, phase in (("baseline", "base"), ("target", "target")):
        rows = report_json(rec, "--by", "file_class,op", "--layer", "syscall", "--phase", phase)["rows"]
        ours = sum(r["bytes"] for r in rows if r["file_class"] == "wal" and r["op"] == "write")
        assert ev[f"wal_write_bytes_per_op_{side}"] == pytest.approx(ours / 2000, rel=1e-6), side
    assert ev["checkpoints_between"] == 1 and ev["full_page_writes"] == "on"  # the CHECKPOINT, in its own phase
    assert ev["share_of_change"] >= 0.5 and ev["wal_write_bytes_per_op_target"] > 4 * ev["wal_write_bytes_per_op_baseline"]

    # wider rows, no checkpoint between: more WAL per row, no more page images
    out = _explain(rec, "base", "wide", "write_bytes_per_insert")
    f = _finding(out, "full_page_writes")
    assert f["verdict"] == "refuted", (f, out["baseline"], out["target"])
    assert f["evidence"]["wal_fpi_per_op_target"] == pytest.approx(wal["wide"][0] / 2000, rel=1e-6)
    assert f["evidence"]["checkpoints_between"] == 0

    # report --by phase splits each phase's WAL: records, full-page images and bytes inserted, as
    # pg_stat_wal read directly around the batch (the images exactly; the bytes with at most a few
    # background records beside the batch's), the images' bytes bounded by 8 KiB each
    summary = {x["phase"]: x["postgres"] for x in report_json(rec, "--by", "phase")["summary"]}
    for phase in ("base", "wide", "target"):
        w = summary[phase]
        assert w["wal_fpi"] == wal[phase][0], (phase, w, wal[phase])
        assert wal[phase][1] <= w["wal_bytes"] <= wal[phase][1] + 4096, (phase, w, wal[phase])
        assert w["wal_records"] >= 2000 and w["wal_fpi_bytes_max"] == min(w["wal_fpi"] * 8192, w["wal_bytes"])
    assert summary["target"]["wal_fpi_share_max"] > 0.5 > summary["base"]["wal_fpi_share_max"], summary
    text = " ".join(ioattr("report", str(rec), "--by", "phase", check=True).stdout.split())  # lines unbroken
    assert f"{summary['target']['wal_fpi']:,.0f} full-page images" in text, text
    # the settings that decide the images' size, recorded
    settings = json.loads((rec / "meta.json").read_text())["servers"][0]["settings"]
    assert settings["full_page_writes"] == "on" and settings["wal_compression"] in ("off", "pglz", "lz4", "zstd"), \
        settings


STATIO = ("SELECT t.heap_blks_read, t.heap_blks_hit, i.idx_blks_read FROM pg_statio_user_tables t "
          "JOIN pg_statio_user_indexes i USING (relid) WHERE t.relname = 'h' AND i.indexrelname = 'h_id'")
SCAN = "SELECT count(id) FROM h WHERE id BETWEEN %s AND %s"


@ON_15
def test_heap_fetches(postgres_versions: PrivatePostgres, tmp_path: Path) -> None:
    pg = postgres_versions
    pg.execute("CREATE TABLE h (id int, v int); INSERT INTO h SELECT g, g FROM generate_series(1, 200000) g; "
               "CREATE INDEX h_id ON h (id)")
    pg.execute("VACUUM (ANALYZE) h")  # sets every page all-visible (its own statement: no transaction block)
    # rows changed after the VACUUM: their pages (and the pages of their new versions) are no
    # longer all-visible
    pg.execute("UPDATE h SET v = v + 1 WHERE id BETWEEN 100001 AND 120000; CHECKPOINT")
    with pg.connect() as c:
        c.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        plan = "\n".join(r[0] for r in c.execute("EXPLAIN " + SCAN, (1, 500)).fetchall())
    assert "Index Only Scan using h_id" in plan, plan
    pg.restart()  # cold shared buffers: every heap and index page a scan needs is a read
    rec = tmp_path / "rec"
    statio: dict[str, tuple] = {}
    with recording(pg.pid, rec, "--phase", "idle"):
        with pg.connect() as c, pg.connect() as direct:
            c.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
            # catalogs, the index root and the visibility map page, read before the phases
            assert c.execute(SCAN, (1, 500)).fetchone()[0] == 500
            c.execute("SELECT pg_stat_force_next_flush()")
            direct.execute(STATIO).fetchone()
            for phase, first in (("base", 20001), ("target", 100001)):
                _mark(rec, phase)
                before = direct.execute(STATIO).fetchone()
                for i in range(40):
                    lo = first + 500 * i
                    assert c.execute(SCAN, (lo, lo + 499)).fetchone()[0] == 500
                c.execute("SELECT pg_stat_force_next_flush()")
                statio[phase] = tuple(a - b for a, b in zip(direct.execute(STATIO).fetchone(), before))
            _mark(rec, "after")
    assert statio["base"][0] == 0 and statio["target"][0] > 100, statio  # the heap: not read, then read

    out = _explain(rec, "base", "target", "reads_per_query")
    f = _finding(out, "heap_fetches")
    ev = f["evidence"]
    assert f["verdict"] == "supported", (f, out["baseline"], out["target"])
    ops = {"base": out["baseline"]["ops"], "target": out["target"]["ops"]}
    assert ops["base"] == ops["target"] >= 40
    assert ev["tables"] == "postgres.public.h" and ev["baseline_per_op"] == 0
    # our heap reads under the scan's digest are pg_statio's heap_blks_read, block for block
    for side, phase in (("baseline", "base"), ("target", "target")):
        assert ev[f"heap_blks_read_per_op_{side}"] == pytest.approx(statio[phase][0] / ops[phase], rel=1e-6)
        assert ev[f"heap_blks_per_op_{side}"] == pytest.approx((statio[phase][0] + statio[phase][1]) / ops[phase],
                                                               rel=1e-6)
        assert ev[f"index_per_op_{side}"] == pytest.approx(statio[phase][2] / ops[phase], rel=1e-6)
    assert ev["target_per_op"] == pytest.approx(ev["heap_blks_read_per_op_target"], rel=1e-6)
    assert "VACUUM (or autovacuum) sets the visibility map" in ev["summary"]

    # the other way round: the scans over all-visible pages read less heap; a decrease is
    # explained by the same mechanism read the other way (explain's direction rule), so the
    # finding is supported as its mirror, "Less of: ..."
    f = _finding(_explain(rec, "target", "base", "reads_per_query"), "heap_fetches")
    assert f["verdict"] == "supported" and f["direction"] == "decrease" and f["mirrored"], f
    assert f["title"].startswith("Less of: Index-only scans read the heap"), f


VAC_STATIO = ("SELECT heap_blks_read, idx_blks_read FROM pg_statio_user_tables WHERE relname = 'vac'")
VAC_STAT = "SELECT n_dead_tup, vacuum_count FROM pg_stat_user_tables WHERE relname = 'vac'"


@ON_15_AND_18
def test_vacuum_io(postgres_versions: PrivatePostgres, tmp_path: Path) -> None:
    """Vacuum's IO as a finding: the same 200 point SELECTs in two phases of a cold cluster, the
    target's followed by a VACUUM of the table whose every other row was deleted (a default
    recording). The finding is supported, names the VACUUM statement and the table, and its
    bytes on the table equal pg_statio heap_blks_read x 8 KiB read directly around the VACUUM."""
    pg = postgres_versions
    pg.execute("DROP TABLE IF EXISTS vac")
    pg.execute("CREATE TABLE vac (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO vac SELECT g, repeat('v', 200) FROM generate_series(1, 40000) g")
    pg.execute("VACUUM (ANALYZE) vac")
    pg.execute("DELETE FROM vac WHERE id % 2 = 0")   # 20,000 dead tuples for the VACUUM to remove
    pg.execute("CHECKPOINT")
    pg.restart()   # cold shared buffers: the first phase's SELECTs and the VACUUM read
    ids = list(range(1, 40000, 200))
    rec = tmp_path / "rec"
    truth: dict[str, float] = {}
    with recording(pg.pid, rec, "--phase", "idle"):
        with pg.connect() as c:
            for phase in ("base", "target"):
                _mark(rec, phase)
                for i in ids:
                    c.execute("SELECT v FROM vac WHERE id = %s", (i,)).fetchone()
                if phase == "target":
                    # the SELECTs' own counts flushed (a backend's are flushed once idle, at most once
                    # a second unless forced) before the reading around the VACUUM
                    c.execute("SELECT pg_stat_force_next_flush()")
                    dead = c.execute(VAC_STAT).fetchone()
                    before = c.execute(VAC_STATIO).fetchone()
                    c.execute("VACUUM vac")
                    c.execute("SELECT pg_stat_force_next_flush()")
                    c.execute("SELECT 1")   # idle in between: the VACUUM's counts flushed
                    after = c.execute(VAC_STATIO).fetchone()
                    truth = {"heap": float(after[0] - before[0]), "idx": float(after[1] - before[1]),
                             "dead": float(dead[0]), "vacuums": float(c.execute(VAC_STAT).fetchone()[1] - dead[1])}
            _mark(rec, "after")
    assert truth["dead"] >= 19000 and truth["vacuums"] == 1 and truth["heap"] > 500, truth

    out = _explain(rec, "base", "target", "read_bytes_per_query")
    f = _finding(out, "autovacuum")
    ev = f["evidence"]
    assert f["verdict"] == "supported", (f, out["baseline"], out["target"], out["contributors"][:5])
    assert f["title"].startswith("Vacuum did the IO") and "VACUUM/ANALYZE statements" in ev["summary"], f
    assert ev["vacuum_statements_share"] == 1.0 and ev["autovacuum_setting"] == "off", ev   # autovacuum is off here
    # the table's bytes vacuum read, per SELECT of the target, as pg_statio counted the VACUUM's reads
    ops = out["target"]["ops"]
    assert ev["per_relation"]["postgres.public.vac"] * ops == pytest.approx(truth["heap"] * 8192, rel=0.05), \
        (ev["per_relation"], truth, ops)
    assert ev["share_of_change"] >= 0.5, ev
    # every page of the table's main fork the VACUUM read is named (the `index` dimension, from
    # the pages read): no unnamed "[relation]" share. On 18 the VACUUM's read stream reads
    # buffers that are not adjacent in shared memory with one preadv of several iovecs (5 calls
    # of 2 here, 25 blocks): each iovec's pages are classified at its file offset. The free
    # space map and visibility map forks are no relation pages: "[fsm]", "[vm]"
    assert "[relation]" not in ev["per_relation"], ev["per_relation"]
    by_page = report_json(rec, "--by", "query,index,file_class", "--layer", "syscall", "--phase", "target")["rows"]
    by_file = report_json(rec, "--by", "query,file", "--layer", "syscall", "--phase", "target")["rows"]

    def vacuums(r: dict) -> bool:
        return r["op"] == "read" and (r.get("query") or "").startswith("VACUUM")
    unnamed = [r for r in by_page if vacuums(r) and r["file_class"] == "relation" and r.get("index") is None]
    assert not unnamed, unnamed
    named = sum(r["bytes"] for r in by_page if vacuums(r) and r.get("index") == "postgres.public.vac")
    assert named == sum(r["bytes"] for r in by_file if vacuums(r) and r.get("relation") == "postgres.public.vac"), \
        (by_page, by_file)
    # pg_statio counts the table's every fork: its heap, free space map and visibility map reads
    forks = sum(r["bytes"] for r in by_file if vacuums(r) and (r.get("relation") or "").startswith("postgres.public.vac")
                and not (r.get("relation") or "").startswith("postgres.public.vac_"))
    assert forks == truth["heap"] * 8192, (forks, truth, by_file)
