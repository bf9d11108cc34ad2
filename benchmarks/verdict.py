"""How a benchmark script ends (bench_top.py, bench_exporter.py): says whether its target was
met, writes its results as JSON where --json asked, and gives the exit status (0 met, 1 not)."""
from __future__ import annotations

import json
from pathlib import Path


def finish(res: dict, ok: bool, target: str, json_path: str | None) -> int:
    print(f"target ({target}):", "met" if ok else "NOT met")
    if json_path:
        Path(json_path).write_text(json.dumps(res, indent=2) + "\n")
    return 0 if ok else 1
