"""The benchmark lab: the harness owns the clock, the cache state and the CSV; cases declare axes."""
