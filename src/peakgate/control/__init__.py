"""The control plane: signals, forecaster, policies, clamps, providers (+ warm pool), cost.

It reads metrics and acts on providers; the request path never calls it.
"""
