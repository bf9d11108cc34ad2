"""Load a script of benchmarks/ as a module, for the unit tests of its pure parts.

Why: benchmarks/ is no package (its scripts run as files, with `verdict` beside them on the
path); a test imports one by its path, registered under a name of its own so two tests of one
script share nothing by accident."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(script: str) -> ModuleType:
    """benchmarks/<script>.py as a fresh module, with benchmarks/ on the path as when the script
    runs as a file (its `from verdict import ...`)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.append(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"{script}_under_test", BENCHMARKS / f"{script}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
