"""Helpers of the DGX unit tests: the inventories' own values, read as plain YAML (no templating needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
# pytest puts tests/ on sys.path, where tests/lab/ would shadow the project's lab package as a namespace
# package: the project root goes first so that `import lab.registry` is the real one.
if sys.path[0] != str(ROOT):
    sys.path.insert(0, str(ROOT))
if "lab" in sys.modules and getattr(sys.modules["lab"], "__file__", None) is None:
    del sys.modules["lab"]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


def load_group_vars(site: str, feature: str) -> dict:
    """The variables of `<feature>.yml` as the site resolves them: inventories/common's, then the site's."""
    from validation.inventory_layers import group_vars

    return group_vars(ROOT / "inventories" / site, feature)


def _hosts(site: str) -> dict:
    return yaml.safe_load((ROOT / "inventories" / site / "hosts.yml").read_text())["all"]["children"]


def powerscale_nodes(site: str) -> list[tuple[str, list[dict]]]:
    return [(name, list(data["storage_nics"])) for name, data in _hosts(site)["powerscale"]["hosts"].items()]


def dgx_hosts(site: str) -> dict[str, dict]:
    return _hosts(site)["dgx"]["hosts"]
