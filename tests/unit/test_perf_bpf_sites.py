"""benchmarks/perf_bpf_sites.py: samples inside ioattr's programs charged to the right call site.

Why here: docs/cost.md's table of where a point select's BPF time goes is this script's output;
a sample charged to the wrong program, or a map lookup counted as the program's own code, would
send the next lever after the wrong cache miss."""
from __future__ import annotations

from types import ModuleType

from tests.unit.bench_scripts import load

PERF_SCRIPT = """\
mariadbd    200040 
\tffffffff81a1 copy_from_user_nofault+0x51
\tffffffff81a2 bpf_probe_read_user+0x2a
\tffffffffc003131d bpf_prog_c6a4f880d81ba5c0_ioattr_tp_exit+0x1d15
\tffffffff81a3 trace_call_bpf+0xc4
\t55c10416f0a3 [unknown]

mariadbd    200040 
\tffffffffc002f60d bpf_prog_c6a4f880d81ba5c0_ioattr_tp_exit+0x5
\tffffffff81a3 trace_call_bpf+0xc4

kworker/u8:0-wr    100020 
\tffffffff81b1 lookup_nulls_elem_raw+0x20
\tffffffff81b2 __htab_map_lookup_elem+0x40
\tffffffffc0040351 bpf_prog_72a82c2ffb6859ef_ioattr_rq_issue+0x351
\tffffffff81b3 bpf_trace_run1+0x80

sysbench    200040 
\tffffffff81c1 unix_stream_read_generic+0x10
\tffffffff81c2 do_syscall_64+0x80

mariadbd    200040 
\tffffffff81d1 some_helper+0x1
\tffffffffc0050001 bpf_prog_1111111111111111_other_tool+0x11
"""


def _mod() -> ModuleType:
    return load("perf_bpf_sites")


def test_samples_are_charged_to_program_callee_and_site() -> None:
    m = _mod()
    got = m.charge(PERF_SCRIPT.splitlines())
    assert got == {
        # the helper the program called, not the leaf below it
        m.Site("mariadbd", "ioattr_tp_exit", "bpf_probe_read_user", "+1d15"): 200040,
        m.Site("mariadbd", "ioattr_tp_exit", "(own code)", ""): 200040,
        # a process name with a slash and a dash, a hash lookup's wrapper
        m.Site("kworker/u8:0-wr", "ioattr_rq_issue", "__htab_map_lookup_elem", "+351"): 100020,
    }  # the sample outside any program and another tool's program are not ioattr's


def test_table_is_per_query() -> None:
    m = _mod()
    out = m.table(m.charge(PERF_SCRIPT.splitlines()), queries=100)
    # 2 samples x 200,040 ns over 100 queries = 4.001 us a query
    assert "ioattr_tp_exit" in out and "4.001" in out
    assert "other_tool" not in out


def test_missing_file_is_one_line_and_exit_2(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    m = _mod()
    assert m.main([str(tmp_path / "none.data"), "--queries", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err
