"""A recording on disk: schemas, writer, compaction, checked reading, a live recorder's control files."""
