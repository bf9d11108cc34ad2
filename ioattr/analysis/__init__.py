"""Answers from a recording: reports, per-phase terms, completeness, explain's findings and words."""
