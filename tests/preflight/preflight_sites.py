"""Load an inventory the way Ansible does and turn it into the preflight rules' Site, for the tests."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

from validation.inventory_layers import COMMON

ROOT = Path(__file__).resolve().parents[2]


@cache
def plugin_loader() -> None:
    """Ansible's collection finder can be installed once per process (validation/inventory_layers.py may have)."""
    if not any(type(f).__name__ == "_AnsibleCollectionFinder" for f in sys.meta_path):
        init_plugin_loader()


@cache
def action_plugin() -> ModuleType:
    path = ROOT / "plugins/action/preflight_inventory.py"
    spec = importlib.util.spec_from_file_location("preflight_inventory_action", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_site(*sources: str, offline: bool = True) -> Any:
    """The Site preflight's inventory phase sees for `-i inventories/common -i SOURCE ...` (relative to the
    repository root): the sources of a site, layered after the common one."""
    plugin_loader()
    loader = DataLoader()
    loader.set_basedir(str(ROOT))
    inventory = InventoryManager(loader=loader, sources=[str(COMMON), *(str(ROOT / s) for s in sources)])
    variables = VariableManager(loader=loader, inventory=inventory)
    hostvars = HostVars(inventory=inventory, variable_manager=variables, loader=loader)
    groups = {name: [h.name for h in group.get_hosts()] for name, group in inventory.groups.items()}
    return action_plugin().collect_site(hostvars, groups, offline)
