"""How a benchmark script ends: finish (bench_top.py, bench_exporter.py) says whether its target
was met, writes its results as JSON where --json asked, and gives the exit status (0 met, 1 not);
write_json writes a results file, its directory made if need be (the other benchmarks)."""
from __future__ import annotations

import json
from pathlib import Path


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
