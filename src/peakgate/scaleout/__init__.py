"""Scale-out: gateways and worker processes sharing one work queue in Redis Streams.

`settings` (the `QueueConfig`) is imported by `peakgate.config`, so nothing here imports Redis at package load.
See docs/scaleout.md for the layout of keys and the life of an entry.
"""
