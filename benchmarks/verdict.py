"""How a benchmark script starts and ends. bench_parser declares the options every benchmark
shares once (--rounds where it runs rounds, --json where its results go); finish (bench_top.py,
bench_exporter.py) says whether its target was met, writes its results as JSON where --json
asked, and gives the exit status (0 met, 1 not); write_json writes a results file, its directory
made if need be (the other benchmarks)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

#: where a benchmark that always keeps its results writes them by default
RESULTS = Path(__file__).resolve().parent / "results"


def _rounds(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least 1 round")
    return n


def bench_parser(description: str, *, raw: bool = False, rounds: int | None = None,
                 rounds_help: str | None = None, results: str | None = None, json: bool = True,
                 json_help: str | None = None) -> argparse.ArgumentParser:
    """A benchmark's parser with the shared options: `--rounds` (default `rounds`) when the
    benchmark runs rounds, `--json` (a path; default RESULTS/`results` when the benchmark always
    keeps its results, else only when asked) unless `json` is False. `raw` keeps the
    description's own lines (a docstring with a table or commands)."""
    ap = argparse.ArgumentParser(description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter if raw
                                 else argparse.HelpFormatter)
    if rounds is not None:
        ap.add_argument("--rounds", type=_rounds, default=rounds, help=rounds_help or f"rounds (default {rounds})")
    if json:
        ap.add_argument("--json", type=Path, default=RESULTS / results if results else None,
                        help=json_help or ("where the results go" + (f" (default results/{results})" if results
                                                                    else "; none unless given")))
    return ap


def write_json(path: str | Path, doc: object) -> Path:
    """`doc` as indented JSON (and a newline) in `path`, its parent directories made; the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    return out


def finish(res: dict, ok: bool, target: str, json_path: str | None) -> int:
    print(f"target ({target}):", "met" if ok else "NOT met")
    if json_path:
        write_json(json_path, res)
    return 0 if ok else 1
