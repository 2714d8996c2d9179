"""Per-model queues, dynamic batching and the worker loops that feed the backends.

`Scheduler` is the facade; `batcher.plan` is the pure planning policy; everything else is mechanism.
"""

from peakgate.scheduling.scheduler import Scheduler

__all__ = ["Scheduler"]
