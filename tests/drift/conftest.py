"""tests/drift: changes made by hand on the running lab, shown by --check --diff and repaired (marker lab_drift).

They need the converged lab (`python -m lab up`; the suite converges it first) and take minutes, so they run
only when asked for: `pytest -m lab_drift tests/drift`. Otherwise pytest deselects them and says so.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "lab_drift" in (config.option.markexpr or ""):
        return
    here = config.rootpath / "tests" / "drift"
    drift_items = [i for i in items if here in i.path.parents]
    if drift_items:
        config.hook.pytest_deselected(items=drift_items)
        items[:] = [i for i in items if i not in drift_items]
