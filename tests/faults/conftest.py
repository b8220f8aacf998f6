"""tests/faults: faults injected into the simulators on loopback (no VM), part of the default run. Each case ends
in a bounded time with a message naming the host, what failed and what to do, leaves nothing half-done unreported,
and a re-run converges. The lab's faults (a VM powered off, NFS stopped, ...) are tests/faults_lab (-m lab_faults).

One directory per device, whose conftest takes that area suite's own fixtures (simulators, throw-away CA).
"""

from __future__ import annotations

import pytest

from .summary import register


def pytest_configure(config: pytest.Config) -> None:
    register(config)
