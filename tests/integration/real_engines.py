"""The type of the `engine` fixture (tests/integration/conftest.py): each real en->es engine.

Its own module because test modules cannot import `conftest` by name: another folder's conftest (media's) may be
the one Python finds first.
"""

from __future__ import annotations

from typing import TypeAlias

from peakgate.backends.apertium import ApertiumBackend
from peakgate.backends.ctranslate2_backend import CTranslate2Backend

Engine: TypeAlias = ApertiumBackend | CTranslate2Backend
