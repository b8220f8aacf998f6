"""What the handover checks expect, read from an Ansible inventory, and how to reach its DGX nodes.

The inventory is loaded with Ansible's own classes, so group_vars/host_vars precedence and Jinja templating
(e.g. the lab's key path `{{ lab_run_dir }}/ssh/id_ed25519`, `lab_run_dir` built from `inventory_dir`) resolve
exactly as in a playbook run.
Only the variables the checks need are templated: secrets are never read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from validation.inventory_layers import AnsibleInventory

USAGE = "pytest tests/handover --hosts=ansible://dgx --ansible-inventory=inventories/<site>"

NEEDED = (
    "nfs_server_mode", "nfs_server_map", "nfs_mounts", "powerscale_smartconnect", "powerscale_exports",
    "dgx_model", "dgx_models", "dgx_nvidia_driver_version", "dgx_sysctl", "storage_nics",
    "ngc_registry", "ngc_images", "ngc_optional_images", "ngc_pull_optional", "ngc_mirror",
    "ansible_host", "ansible_port", "ansible_user", "ansible_ssh_private_key_file", "ansible_private_key_file",
    "ansible_connection", "ansible_ssh_common_args", "ansible_become",
)


@dataclass
class NodeSpec:
    """One host of the inventory with the variables the checks need (templated)."""

    name: str
    vars: dict[str, Any]
    dgx_hosts: list[str] = field(default_factory=list)
    powerscale_nodes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def connection_url(self) -> tuple[str, dict[str, Any]]:
        """testinfra backend URL and keyword arguments for this host."""
        if self.vars.get("ansible_connection") == "local":
            return "local://", {}
        user = self.vars.get("ansible_user") or "root"
        address = self.vars.get("ansible_host") or self.name
        port = self.vars.get("ansible_port") or 22
        kwargs: dict[str, Any] = {
            "ssh_extra_args": " ".join(filter(None, [
                # host keys as the inventory says (the known hosts, or the lab's pinned file): never skipped
                "-o ConnectTimeout=15 -o BatchMode=yes -o LogLevel=ERROR",
                self.vars.get("ansible_ssh_common_args") or "",
            ])),
        }
        key = self.vars.get("ansible_ssh_private_key_file") or self.vars.get("ansible_private_key_file")
        if key:
            kwargs["ssh_identity_file"] = os.path.normpath(str(key))
        if self.vars.get("ansible_become"):
            kwargs["sudo"] = True
        return f"ssh://{user}@{address}:{port}", kwargs


def load_nodes(inventory: str, pattern: str) -> list[NodeSpec]:
    """Every host matching `pattern` (e.g. `dgx`) with its templated variables (validation.inventory_layers:
    the inventory read by Ansible's own managers)."""
    inv = AnsibleInventory.open(inventory)
    dgx_hosts = inv.hosts("dgx")
    powerscale = {h: list(inv.templated(h, ["storage_nics"]).get("storage_nics") or []) for h in inv.hosts("powerscale")}
    return [NodeSpec(name=h, vars=inv.templated(h, NEEDED), dgx_hosts=dgx_hosts, powerscale_nodes=powerscale)
            for h in inv.hosts(pattern)]


_NODES = pytest.StashKey[list]()


def hosts_option(config: pytest.Config) -> str:
    try:
        return config.getoption("hosts") or ""
    except ValueError:  # pytest-testinfra is not installed: no --hosts option at all
        return ""


def _patterns(config: pytest.Config) -> list[str]:
    patterns = []
    for item in hosts_option(config).split(","):
        item = item.strip()
        if not item:
            continue
        if not item.startswith("ansible://"):
            raise pytest.UsageError(f"tests/handover: --hosts={item!r}: use ansible://<group or host> with "
                                    f"--ansible-inventory, e.g. {USAGE}")
        patterns.append(item[len("ansible://"):] or "all")
    return patterns


def handover_nodes(config: pytest.Config) -> list[NodeSpec]:
    cached = config.stash.get(_NODES, None)
    if cached is not None:
        return cached
    inventory = config.getoption("ansible_inventory", None)
    if not inventory:
        raise pytest.UsageError(f"tests/handover: --ansible-inventory is required: {USAGE}")
    nodes: list[NodeSpec] = []
    for pattern in _patterns(config):
        nodes += [n for n in load_nodes(str(Path(inventory).resolve()), pattern) if n not in nodes]
    dgx = [n for n in nodes if n.name in n.dgx_hosts]
    if not dgx:
        raise pytest.UsageError(f"tests/handover: {hosts_option(config)} matches no host of the dgx group of "
                                f"{inventory}")
    config.stash[_NODES] = dgx
    return dgx


