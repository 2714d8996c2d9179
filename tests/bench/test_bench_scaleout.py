"""bench.scaleout's arithmetic: ratios against 1 gateway x 1 worker, and the queue's cost per request."""

from __future__ import annotations

import json

from bench.scaleout import Cost, Run, probes, report

CORES = {"gateways": 0.2, "workers": 0.1, "redis": 0.05, "client": 0.05}


def test_report_gives_ratios_to_one_gateway_one_worker_and_the_queue_cost() -> None:
    runs = [Run(1, 1, 100.0, 50.0, 0, CORES), Run(1, 2, 190.0, 25.0, 0, CORES), Run(2, 3, 280.0, 40.0, 1, CORES)]
    costs = [Cost("in-process", 10, {"server": 200.0}),
             Cost("redis queue", 10, {"gateway": 250.0, "redis": 50.0, "worker": 150.0})]
    text = report(runs, costs)
    rows = [line.split() for line in text.splitlines() if line[:1] == " " or line[:1].isdigit()]
    assert rows[1][:7] == ["1", "2", "190.00", "25.00", "0", "1.90", "0.50"]
    assert rows[2][5:8] == ["2.80", "0.80", "0.40"]  # req/s ratio, p99 ratio, cores busy
    assert "gateway + Redis 300 us against the in-process server's 200 us (1.50x)" in text
    assert "with the worker 450 us (2.25x)" in text


def test_probes_are_distinct_so_nothing_coalesces() -> None:
    bodies = [json.loads(p.body)["segments"][0] for p in probes(500)]
    assert len(set(bodies)) == 500
