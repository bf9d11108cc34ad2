"""explain_text's "what to try next" table: every finding has an entry, and it renders.

Pure Python (the unit tier): no recording, server or kernel needed.
"""
from __future__ import annotations

from ioattr.analysis.explain_text import NEXT_STEPS, advice, next_steps, render_text
from ioattr.analysis.findings import FINDINGS


def test_every_finding_has_a_mechanism_and_a_next_step() -> None:
    from ioattr.analysis.findings import findings_for
    from ioattr.engines import registry

    # a finding's id is its function's name; its texts are its engine's (or the server's: NEXT_STEPS)
    missing = [(engine, f.__name__) for engine, f in findings_for(registry.ENGINES)
               if next_steps({"id": f.__name__, "engine": engine}) is None]
    assert not missing, f"add NEXT_STEPS entries (the engine's findings module, else explain_text.py): {missing}"
    assert {f.__name__ for f in FINDINGS} >= set(NEXT_STEPS)
    for e in registry.ENGINES:
        for fid, (mechanism, step) in {**NEXT_STEPS, **e.next_steps}.items():
            assert mechanism and step, fid


def test_each_engine_advises_on_its_own_finding() -> None:
    """One id, two engines: InnoDB's working set names the buffer pool, PostgreSQL's shared_buffers."""
    ev = {"id": "working_set", "verdict": "supported", "evidence": {"summary": "s"}}
    inno = advice({**ev, "engine": "innodb"}, {"innodb_buffer_pool_size": 64 << 20})["next_step"]
    pg = advice({**ev, "engine": "postgres"}, {"shared_buffers": 32 << 20})["next_step"]
    assert inno.startswith("raise innodb_buffer_pool_size (now 64 MiB)"), inno
    assert pg.startswith("raise shared_buffers (now 32 MiB) above"), pg
    assert "innodb" not in pg


def test_fields_are_filled_from_settings_or_left_out() -> None:
    f = {"id": "working_set", "verdict": "supported", "evidence": {"summary": "s"}}
    bare = advice(f)
    assert "{" not in bare["next_step"] and "(now" not in bare["next_step"], bare
    filled = advice(f, {"innodb_buffer_pool_size": 16 * 2**20})
    assert "innodb_buffer_pool_size (now 16 MiB)" in filled["next_step"], filled
    for fid in NEXT_STEPS:
        a = advice({"id": fid, "evidence": {}}, {})
        assert "{" not in a["mechanism"] + a["next_step"], (fid, a)
    assert advice({"id": "no_such_finding", "evidence": {}}) == {"mechanism": None, "next_step": None}


def test_text_prints_why_and_try_under_supported_findings_only() -> None:
    side = {"recording": "/r", "phase": "q", "value": 1.0, "ops": 10, "storage_ios": 10, "seconds": 1.0}
    findings = [{"id": "working_set", "title": "W", "verdict": "supported", "evidence": {"summary": "w"}},
                {"id": "log_rereads", "title": "L", "verdict": "refuted", "evidence": {"summary": "l"}}]
    r = {"metric": "reads_per_query", "unit": "per query", "baseline": side, "target": side,
         "contributors": [], "findings": [{**f, **advice(f)} for f in findings]}
    lines = render_text(r).splitlines()
    i = lines.index("  [SUPPORTED] W")
    assert lines[i + 2].startswith("      why: the tables and indexes") and lines[i + 3].startswith("      try: raise")
    j = lines.index("  [refuted: not what changed] L")
    assert not any(ln.startswith("      why:") for ln in lines[j:]), lines[j:]


def test_text_wraps_to_the_width_without_breaking_words() -> None:
    side = {"recording": "/tmp/a-rather-long/recording/path", "phase": "q1000", "value": 1.0, "ops": 10,
            "storage_ios": 10, "seconds": 1.0}
    summary = ("index dives read 0.5 -> 9.02 per query, 89% of the gross change; dived into ib.t.ix_price "
               "(4.1 reads/query), ib.t.ix_register (2.9 reads/query), ib.t.ix_customer (2 reads/query)")
    r = {"metric": "reads_per_query", "unit": "per query", "baseline": side, "target": side,
         "contributors": [{"dims": {"index": "ib.t.ix_register", "level": "leaf", "stage": "estimate",
                                    "role": "connection", "file_class": "tablespace",
                                    "query": "SELECT cashregisterid, price, customerid FROM ib.t FORCE INDEX "
                                             "(ix_register) WHERE cashregisterid >= ? ORDER BY cashregisterid"},
                           "baseline_per_op": 0.01, "target_per_op": 2.9, "share_of_change": 0.31}],
         "findings": [{"id": "optimizer_reads", "title": "Reads issued while queries are optimized (index "
                       "dives estimating ranges)", "verdict": "supported", "evidence": {"summary": summary}}]}
    flat = render_text(r)
    for width in (80, 200):
        text = render_text(r, width)
        assert text.split() == flat.split(), width  # the same words, none broken (stage=estimate whole)
        assert all(len(ln) <= width for ln in text.splitlines()), [ln for ln in text.splitlines() if len(ln) > width]
    narrow = render_text(r, 80).splitlines()
    assert any("stage=estimate" in ln for ln in narrow) and len(narrow) > len(flat.splitlines())
    # a continuation line of a finding's summary stays under the summary, not at the margin
    i = next(n for n, ln in enumerate(narrow) if ln.startswith("      index dives read"))
    assert narrow[i + 1].startswith("        ") and narrow[i + 1].strip(), narrow[i:i + 2]
    # a contributor's continuation starts under its dims, after the numbers
    j = next(n for n, ln in enumerate(narrow) if "31.0%" in ln)
    assert narrow[j + 1].startswith(" " * 30), narrow[j:j + 2]
