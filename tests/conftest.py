import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import os

from hypothesis import HealthCheck, settings

# `HYPOTHESIS_PROFILE=thorough` runs the property tests ten times longer.
# default: the same 300 examples every run (CI is reproducible); thorough explores at random
settings.register_profile("default", max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
