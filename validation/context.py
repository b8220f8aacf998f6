"""What a validation run is judged against: the site's topology and acceptance data, as one dict.

roles/validate (entry point prepare) writes it to ``<run dir>/context.json`` from Ansible's resolved variables (so
``-e`` overrides count); ``context_from_inventory`` builds the same dict from the same inventory read by Ansible's own
managers, for the CLI and the tests. Keys follow the inventory's variable names.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .inventory_layers import AnsibleInventory

# Inventory variables the verdict needs (group_vars/all/*.yml of inventories/common and the site), copied verbatim into the context.
CONTEXT_VARS = (
    "acceptance_thresholds",
    "acceptance_outlier_max_behind_pct",
    "acceptance_baseline",
    "validation_stages",
    "validation_repeats",
    "validation_lab_standins",
    "validation_nccl",
    "validation_fio",
    "validation_ddp",
    "validation_paths",
    "validation_telemetry",
    "nfs_server_mode",
    "nfs_server_map",
    "powerscale_smartconnect",
    "dgx_models",
    "ib_rate_gbps",
)


def context_from_inventory(inventory_dir: str | Path, nodes: list[str] | None = None,
                           extra_vars: Sequence[str] = ()) -> dict[str, Any]:
    """Build the context dict from a site inventory directory, read by Ansible's own inventory and variable
    managers (layered after inventories/common, templated, host_vars applied, ``-e`` extra vars on top:
    validation.inventory_layers.AnsibleInventory), as the prepare entry point of roles/validate sees it."""
    inv = AnsibleInventory.open(inventory_dir, extra_vars)
    group_vars = inv.templated("localhost", CONTEXT_VARS)
    dgx = {h: inv.templated(h, ("dgx_model", "storage_nics", "ib_ipoib_address")) for h in inv.hosts("dgx")}
    powerscale = {h: inv.templated(h, ("storage_nics", "powerscale_lnn")) for h in inv.hosts("powerscale")}
    return build_context(group_vars, dgx, powerscale, nodes or sorted(dgx), site=Path(inventory_dir).name)


def build_context(
    group_vars: dict[str, Any],
    dgx_hostvars: dict[str, dict[str, Any]],
    powerscale_hostvars: dict[str, dict[str, Any]],
    nodes: list[str],
    site: str,
) -> dict[str, Any]:
    """The context dict from resolved variables (group_vars) and per-host variables."""
    ctx: dict[str, Any] = {key: group_vars.get(key) for key in CONTEXT_VARS}
    ctx["site"] = site
    ctx["nodes"] = list(nodes)
    ctx["dgx"] = {
        h: {
            "dgx_model": v.get("dgx_model"),
            "storage_nics": v.get("storage_nics") or [],
            "ib_ipoib_address": v.get("ib_ipoib_address"),
        }
        for h, v in dgx_hostvars.items()
        if h in nodes
    }
    ctx["powerscale"] = {
        h: {"storage_nics": v.get("storage_nics") or [], "powerscale_lnn": v.get("powerscale_lnn")}
        for h, v in powerscale_hostvars.items()
    }
    return ctx


def with_overrides(ctx: dict[str, Any], thresholds: list[dict[str, Any]] | None = None,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of ctx with other acceptance data (``evaluate`` re-judges stored results with it)."""
    new = dict(ctx)
    if thresholds is not None:
        new["acceptance_thresholds"] = thresholds
    for key, value in (extra or {}).items():
        new[key] = value
    return new
