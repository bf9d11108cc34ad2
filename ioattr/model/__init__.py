"""The vocabulary every layer shares: io_stats' names, dimensions, storage terms, latency buckets."""
