"""`ioattr script`: every shipped bpftrace script is runnable by name from wherever ioattr is
installed (issue 14), listed with its own header's purpose, and a wrong name is one line, exit 2."""
from __future__ import annotations

from pathlib import Path

from ioattr.cli.main import main

BPF = Path(__file__).resolve().parents[2] / "bpf"


def test_lists_every_shipped_script_with_its_purpose(capsys) -> None:
    assert main(["script"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = sorted(p.stem for p in BPF.glob("*.bt"))
    assert [line.split()[0] for line in lines] == names
    for line in lines:
        assert len(line.split(None, 1)[1]) > 20  # a sentence from the header, not empty


def test_print_gives_the_bpftrace_command_with_the_scripts_arguments(capsys) -> None:
    assert main(["script", "--print", "io_latency", "1234"]) == 0
    assert capsys.readouterr().out.split() == ["bpftrace", str(BPF / "io_latency.bt"), "1234"]


def test_unknown_name_is_one_line_and_usage_exit(capsys) -> None:
    assert main(["script", "no_such"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no script named 'no_such'" in err and "io_latency" in err


def test_only_the_harmless_rlimit_line_is_filtered() -> None:
    from ioattr.cli.script import harmless_bpftrace_line, kernel_version

    line = ('ERROR: Unknown error -1: couldn\'t set RLIMIT_MEMLOCK for bpftrace. If your program is not '
            'loading, you can try "ulimit -l 8192" to fix the problem\n')
    assert harmless_bpftrace_line(line, (6, 18)) and harmless_bpftrace_line(line, (5, 11))
    assert not harmless_bpftrace_line(line, (5, 10))  # the limit still applies there: keep it
    assert not harmless_bpftrace_line("ERROR: failed to attach probe\n", (6, 18))
    assert kernel_version("6.18.44-fc-v1045") == (6, 18) and kernel_version("5.4.0-150-generic") == (5, 4)
