"""Hypothesis profiles for the whole suite.

CI must give the same verdict on every run of the same commit, so its profile derandomizes the
search; a developer's run explores new examples each time and keeps failures in the local
example database. ``HYPOTHESIS_PROFILE`` picks a profile explicitly.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("dev", print_blob=True)
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
