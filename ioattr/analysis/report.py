"""`ioattr report`: a recording's IO grouped by the dimensions asked for (analysis/grouping.py),
with what the reader must know beside the rows: the recording's state, drops, IO not charged
to files, the stage mode and, grouped by phase, the per-phase terms (analysis/phase_stats.py).
"""
from __future__ import annotations

from ioattr.analysis.grouping import ReportRequest, report_rows
from ioattr.analysis.phase_stats import all_phase_summaries
from ioattr.analysis.rec_state import recording_state
from ioattr.format.reader import Recording
from ioattr.model.dimensions import PAGE_ONLY, parse_dimensions, stage_mode
from ioattr.model.labels import LAYERS, drop_details

__all__ = ["LAYERS", "ReportRequest", "build_report"]


# meta.json "degraded" entries about filesystems whose block IO was not charged to files
# (collectors/filesystems.py): every report says them
FILESYSTEM_LINES = ("btrfs",)


def build_report(rec: Recording, req: ReportRequest) -> dict:
    rows, unjoined = report_rows(rec, req)
    dims = parse_dimensions(req.by)
    page_dims = [d for d in dims if d in PAGE_ONLY]
    out = {
        "recording": str(rec.path),
        "phases": rec.phases(),
        "rows": rows,
        "dropped": rec.dropped_total(),
    }
    state = recording_state(rec)
    if state is not None:
        # still being written, stopped by an error, or crashed: said before anything else
        out["recording_state"] = state
    untimed = int(rec.meta.get("block_untimed") or 0)
    if untimed:
        # block requests counted without a latency: their completion never reached the probes
        # (docs/block.md); their bytes are in the rows, their time is not in the latencies
        out["block_untimed"] = untimed
    degraded = rec.meta.get("degraded")
    notes = [degraded[k] for k in FILESYSTEM_LINES if isinstance(degraded, dict) and degraded.get(k)]
    if notes:
        # additive: IO the recording could not charge to files, said once (absent when none)
        out["notes"] = notes
    if out["dropped"]:
        # additive: which map was full, per reason (absent when nothing was dropped)
        out["dropped_by"] = drop_details(rec.meta.get("dropped"), rec.meta.get("max_entries"))
    if page_dims:
        # rows carry "pages" (InnoDB pages); count stays IO operations, apportioned to page
        # classes by pages (page_split.py), so it sums to the report without page dimensions
        if unjoined:
            out["pages_without_io"] = unjoined
    if "stage" in dims:
        # "statement": the stage inside a statement was not traced, so it is null there
        out["stages"] = stage_mode(rec.meta)
    if "phase" in dims:
        # the insert benchmark's per-phase terms, next to the attributed rows
        out["summary"] = all_phase_summaries(rec)
    return out
