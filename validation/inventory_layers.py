"""The layered inventories: ``inventories/common`` holds the reference architecture's constants, a site inventory
(``inventories/lab``, ``inventories/production``, a real site's) only its own facts and its overrides.

Ansible reads them as two sources, the common layer first (``-i inventories/common -i inventories/<site>``;
ansible.cfg names both for the lab): the group_vars of a later source win, key by key (the default
hash_behaviour, replace). This module is the one home of that order for whatever reads or runs an inventory
outside ansible.cfg: the validation CLI, the lab tools, the tests and the benchmarks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
COMMON = ROOT / "inventories" / "common"


def sources(site: str | Path) -> list[str]:
    """Ansible's inventory sources of a site, in their order: the common layer, then the site."""
    return [str(COMMON), str(site)]


def inventory_args(site: str | Path) -> list[str]:
    """The ``-i`` arguments of ansible-playbook, ansible and ansible-inventory for a site."""
    return [arg for source in sources(site) for arg in ("-i", source)]


def _load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    if doc is not None and not isinstance(doc, dict):
        raise ValueError(f"{path}: group_vars must be a mapping, not {type(doc).__name__}")
    return doc or {}


def group_vars(site: str | Path, feature: str | None = None) -> dict[str, Any]:
    """Group ``all``'s variables of a site as plain YAML (Jinja left as strings), layered as Ansible does.

    Every layer's ``group_vars/all/*.yml`` in name order, the common layer first; a later file replaces a
    variable of an earlier one. With ``feature``, only the files ``<feature>.yml`` of each layer.
    """
    merged: dict[str, Any] = {}
    for layer in (COMMON, Path(site)):
        folder = layer / "group_vars" / "all"
        for path in sorted(folder.glob(f"{feature}.yml" if feature else "*.yml")):
            merged.update(_load(path))
    return merged
