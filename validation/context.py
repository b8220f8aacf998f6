"""What a validation run is judged against: the site's topology and acceptance data, as one dict.

The validate_report role writes it to ``<run dir>/context.json`` from Ansible's resolved variables (so
``-e`` overrides count); ``context_from_inventory`` builds the same dict straight from an inventory's
YAML files, for the CLI and the tests. Keys follow the inventory's variable names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .inventory_layers import group_vars as layered_group_vars

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


def _load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _walk_hosts(group: dict[str, Any], name: str, out: dict[str, dict[str, Any]], inherited: dict[str, Any]) -> None:
    gvars = {**inherited, **(group.get("vars") or {})}
    for host, hvars in (group.get("hosts") or {}).items():
        entry = out.setdefault(host, {"groups": set(), "vars": {}})
        entry["groups"].add(name)
        entry["vars"] = {**gvars, **entry["vars"], **(hvars or {})}
    for child, cdef in (group.get("children") or {}).items():
        _walk_hosts(cdef or {}, child, out, gvars)


def context_from_inventory(inventory_dir: str | Path, nodes: list[str] | None = None) -> dict[str, Any]:
    """Build the context dict from a site inventory directory (hosts.yml + group_vars/all/*.yml, layered after
    inventories/common as Ansible reads them).

    Only plain data is read; Jinja expressions are left as strings (the keys used here hold none).
    """
    inv = Path(inventory_dir)
    hosts_doc = _load_yaml(inv / "hosts.yml") or {}
    hosts: dict[str, dict[str, Any]] = {}
    _walk_hosts(hosts_doc.get("all") or {}, "all", hosts, {})
    group_vars = layered_group_vars(inv)
    dgx = {h: e["vars"] for h, e in hosts.items() if "dgx" in e["groups"]}
    powerscale = {h: e["vars"] for h, e in hosts.items() if "powerscale" in e["groups"]}
    return build_context(group_vars, dgx, powerscale, nodes or sorted(dgx), site=inv.name)


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
