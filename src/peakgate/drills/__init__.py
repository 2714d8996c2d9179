"""Drills: exercise a running deployment the way a holiday peak would, and check the pre-holiday list.

`peakgate surge` (profile → arrivals → mix → runner → summary → report) and `peakgate checklist`.
"""
