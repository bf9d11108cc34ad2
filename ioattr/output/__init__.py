"""Reports as people read them: terminal tables and the self-contained HTML page."""
