"""tests/faults_lab: faults on the running lab (marker lab_faults): a DGX VM powered off mid-stage, NFS stopped
during fio, the registry refusing the login, the scratch quota full.

They need the converged lab (`python -m lab up`; the suite converges it first), change it on purpose and put it
back, and take minutes, so they run only when asked for: `pytest -m lab_faults tests/faults_lab` (with tests/faults
for the whole count). Otherwise pytest deselects them and says so.
"""

from __future__ import annotations

import pytest
from faults.summary import register


def pytest_configure(config: pytest.Config) -> None:
    register(config)
