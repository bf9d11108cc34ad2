"""Live capture: the probe session, interval rows, the recorder, the servers' own counters."""
