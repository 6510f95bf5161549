"""How many examples the property tests (Hypothesis) draw, and which: one place for every property file.

- ``make test``: 300 per test, the same ones every run (derandomized, no example database), so a run
  can be repeated and CI never fails on a draw nobody saw before.
- ``ONCALL_PROPERTY_PROFILE=explore``: 5,000 new random ones per test, to look for what the fixed ones
  miss; run it after changing the schedule or people rules
  (``ONCALL_PROPERTY_PROFILE=explore .venv/bin/python -m pytest tests/test_oncall_properties_runtime.py``).
  A failure prints the smallest example; add it to the hand-computed cases.
- ``ONCALL_PROPERTY_PROFILE=mutate`` (tools/mutate.py sets it): 30 fixed ones, once per mutant.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_FIXED = {"derandomize": True, "database": None}
_PROFILES = {
    "fixed": settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], **_FIXED),
    "explore": settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]),
    "mutate": settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], **_FIXED),
}
PROPERTY = _PROFILES[os.environ.get("ONCALL_PROPERTY_PROFILE", "fixed")]
