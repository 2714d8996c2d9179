"""Cluster routing: `peakgate route`, a front door that sends each request to a cluster of gateways.

`config` (the `[cluster]` section) → `selector` (preferred cluster from the region header, the client's
address, the tenant) → `policy` (pure: which cluster serves it, spilling on load or health) → `proxy` (streams
the exchange to a gateway of that cluster); `health` keeps each gateway's up/down state, `router` the
in-flight counts and sticky tenants, `app` wires them and serves.
"""
