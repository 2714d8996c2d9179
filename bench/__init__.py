"""Benchmarks run against the real peakgate backends (not part of the test suite).

- ``python -m bench.quality``: chrF/BLEU of every en→es model on the dev set, the Apertium == CLI check, and
  the int8-vs-fp32 quality gate.
- ``python -m bench.engines``: sentences/s per model at batch sizes 1, 8, 32 and the int8/fp32 throughput ratio.
"""
