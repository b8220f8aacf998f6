"""Read the project's inventories (hosts.yml + storage_fabric.yml, layered after inventories/common) into cumulus_fabric_plan settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from validation.inventory_layers import group_vars

ROOT = Path(__file__).resolve().parents[2]


def settings_for(inventory: str, switch: str, **overrides: Any) -> dict[str, Any]:
    hosts = yaml.safe_load((ROOT / f"inventories/{inventory}/hosts.yml").read_text())["all"]["children"]
    fabric = group_vars(ROOT / "inventories" / inventory, "storage_fabric")
    nics = {name: h.get("storage_nics", []) for group in ("dgx", "powerscale")
            for name, h in hosts[group]["hosts"].items()}
    me = hosts["sn3700v"]["hosts"][switch]
    settings = {
        "method": fabric["storage_fabric_method"],
        "nics_by_host": nics,
        "port_mtu": fabric["storage_fabric_port_mtu"],
        "vlans": fabric["storage_fabric_vlans"],
        "bridge": fabric["storage_fabric_bridge"],
        "clag": fabric["storage_fabric_clag"],
        "clag_role": me.get("sn3700v_clag_role", "standalone"),
        "clag_priority": me.get("sn3700v_clag_priority"),
        "clag_backup_ip": me.get("sn3700v_clag_backup_ip"),
        "loopback": me.get("sn3700v_loopback"),
        "uplinks": fabric["storage_fabric_uplinks"],
        "roce": fabric["storage_fabric_roce"],
        "breakouts": fabric.get("storage_fabric_breakouts", {}),
        "speeds_gbps": fabric["storage_fabric_speeds_gbps"],
        "port_speed_managed": fabric.get("storage_fabric_port_speed_managed", True),
        "port_fec": fabric.get("storage_fabric_port_fec", {}),
    }
    settings.update(overrides)
    return settings
