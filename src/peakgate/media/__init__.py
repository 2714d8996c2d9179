"""Long tasks beside text: images (OCR) and speech (ASR), run in their own process pool (`media.pool`).

Kept import-light: `peakgate.config` imports `media.settings`, and the engines load only in the pool's processes.
"""
