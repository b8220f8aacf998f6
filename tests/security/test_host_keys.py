"""SSH host keys are checked for every inventory but the lab's own pinning: ansible.cfg (tests/test_repo.py),
each non-lab inventory's resolved variables, the QM8700 role's own SSH client, and the handover checks' SSH."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.handover.handover_inventory import NodeSpec, load_nodes
from validation.inventory_layers import sources

ROOT = Path(__file__).resolve().parents[2]
# Site inventories (the common layer lists no host; the lab pins its own keys).
SITES = sorted(p.name for p in (ROOT / "inventories").iterdir() if p.is_dir() and p.name not in ("lab", "common"))
OFF = re.compile(r"StrictHostKeyChecking[= ]+no|UserKnownHostsFile[= ]+/dev/null", re.I)
SWITCHES = ("host_key_checking", "ansible_host_key_checking", "ansible_ssh_host_key_checking",
            "qm8700_ssh_host_key_checking")


def test_the_qm8700_ssh_client_checks_host_keys_by_default():
    defaults = yaml.safe_load((ROOT / "roles" / "qm8700" / "defaults" / "main.yml").read_text())
    assert defaults["qm8700_ssh_host_key_checking"] is True


@pytest.mark.parametrize("site", SITES)
def test_site_inventories_keep_host_key_checking_on(site):
    assert SITES, "no site inventory besides the lab's"
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    from ansible.vars.manager import VariableManager

    init_plugin_loader()
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=sources(ROOT / "inventories" / site))
    manager = VariableManager(loader=loader, inventory=inventory)
    hosts = inventory.get_hosts()
    assert hosts, f"inventories/{site} lists no host"
    for host in hosts:
        variables = manager.get_vars(host=host)
        for name in SWITCHES:
            assert str(variables.get(name, True)).lower() not in ("false", "no", "0"), f"{site} {host}: {name}"
        for name in ("ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_ssh_args"):
            assert not OFF.search(str(variables.get(name, ""))), f"{site} {host}: {name}"


@pytest.mark.parametrize("site", SITES)
def test_handover_ssh_checks_host_keys(site):
    nodes = load_nodes(str(ROOT / "inventories" / site), "dgx")
    assert nodes, f"inventories/{site}: no dgx host for the handover checks"
    for node in nodes:
        url, kwargs = node.connection_url()
        assert url.startswith("ssh://") and not OFF.search(kwargs["ssh_extra_args"]), (node.name, kwargs)


def test_handover_ssh_adds_nothing_that_skips_host_keys():
    _url, kwargs = NodeSpec("n", {"ansible_host": "192.0.2.1"}).connection_url()
    assert not OFF.search(kwargs["ssh_extra_args"]) and "BatchMode=yes" in kwargs["ssh_extra_args"]
