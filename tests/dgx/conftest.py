"""tests/dgx: the tests marked `lab` need the running lab (`python -m lab up`) and take minutes.

They run only when asked for with a marker expression that names `lab` (`pytest -m lab tests/dgx`, or the
lead's full lab flow); otherwise pytest deselects them and says so in its summary ("N deselected").
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "lab" in (config.option.markexpr or ""):
        return
    here = config.rootpath / "tests" / "dgx"
    lab_items = [i for i in items if i.get_closest_marker("lab") and here in i.path.parents]
    if lab_items:
        config.hook.pytest_deselected(items=lab_items)
        items[:] = [i for i in items if i not in lab_items]
