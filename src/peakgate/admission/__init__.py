"""Admission: API keys, per-key and per-class rate limits, billing-period quotas, in-process or shared in Redis.

`settings` (the `AdmissionConfig`) is imported by `peakgate.config`, so nothing here is imported at package
load: the facade is `peakgate.admission.admission.Admission`.
"""
