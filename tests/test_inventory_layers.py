"""The layered inventories (issue #18 item 3): inventories/common holds the architecture's constants once, each
site inventory only its facts and overrides, and Ansible resolves every host of both sites with common first."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.vars.manager import VariableManager

from validation.inventory_layers import COMMON, ROOT, group_vars, sources

SITES = ("lab", "production")
# Which hosts each role runs on (playbooks/*.yml); "all": the localhost plays, which see group all's variables.
ROLE_GROUPS = {"dgx_host": "dgx", "dgx_nfs": "dgx", "ngc": "dgx", "powerscale": "powerscale", "sn3700v": "sn3700v",
               "qm8700": "qm8700", "preflight": "all", "validate": "all", "cabling": "all",
               # the day 2 flow's own steps (playbooks/scale_out.yml, scale_in.yml): on the DGX nodes of the request
               "scale": "dgx"}


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def _files(layer: Path) -> dict[str, dict]:
    return {p.name: _yaml(p) for p in sorted((layer / "group_vars" / "all").glob("*.yml"))}


@cache
def plugin_loader() -> None:
    """Ansible's collection finder can be installed once per process."""
    init_plugin_loader()


@cache
def resolved(*inventory_sources: str) -> dict[str, set[str]]:
    """Every host's variable names as Ansible resolves the sources (later sources win)."""
    plugin_loader()
    loader = DataLoader()
    loader.set_basedir(str(ROOT))
    inventory = InventoryManager(loader=loader, sources=list(inventory_sources))
    variables = VariableManager(loader=loader, inventory=inventory)
    return {h.name: set(variables.get_vars(host=h)) for h in inventory.get_hosts()}


def hosts_of(site: str, group: str) -> list[str]:
    hosts = _yaml(ROOT / "inventories" / site / "hosts.yml")["all"]["children"]
    return sorted(hosts[group]["hosts"]) if group != "all" else sorted(
        h for g in hosts.values() for h in (g.get("hosts") or {}))


def _playbook_vars() -> set[str]:
    """Variables a playbook passes itself (play vars, and the vars of each include_role/import_role task): the
    inventory need not hold them (powerscale_scale_mode: add, set by playbooks/scale_out.yml)."""
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("vars"), dict) and ("hosts" in node or "include_role" in node
                                                        or "ansible.builtin.include_role" in node
                                                        or "ansible.builtin.import_role" in node):
                names.update(node["vars"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in sorted((ROOT / "playbooks").glob("*.yml")):
        walk(yaml.safe_load(path.read_text()))
    return names


def required_by(role: str) -> set[str]:
    """Options a role's argument specs require that neither its defaults nor the playbooks that apply it provide."""
    specs = _yaml(ROOT / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]
    defaults_file = ROOT / "roles" / role / "defaults" / "main.yml"
    defaults = set(_yaml(defaults_file)) if defaults_file.is_file() else set()
    required = {name for entry in specs.values() for name, spec in (entry.get("options") or {}).items()
                if spec.get("required")}
    return required - defaults - _playbook_vars()


def test_every_role_is_mapped_to_its_hosts():
    assert set(ROLE_GROUPS) == {p.parent.parent.name for p in (ROOT / "roles").glob("*/meta/argument_specs.yml")}
    # preflight's inputs are the other roles' variables (module_utils/preflight_schema.py): it requires none itself;
    # nor does cabling, whose plan reads the other roles' variables from every host (validation/cabling/plan.py)
    assert {role for role in ROLE_GROUPS if not required_by(role)} == {"preflight", "cabling"}


def test_the_common_layer_lists_no_host_and_holds_constants():
    assert _yaml(COMMON / "hosts.yml") == {"all": {}}
    assert resolved(str(COMMON)) == {}
    assert len(group_vars(ROOT / "inventories" / "production")) > len(_merged(ROOT / "inventories" / "production"))


def _merged(layer: Path) -> dict:
    out: dict = {}
    for values in _files(layer).values():
        out.update(values)
    return out


@pytest.mark.parametrize("site", SITES)
@pytest.mark.parametrize("role", sorted(set(ROLE_GROUPS) - {"preflight", "cabling"}))
def test_every_host_resolves_what_its_roles_require(site, role):
    layered = resolved(*sources(ROOT / "inventories" / site))
    alone = resolved(str(ROOT / "inventories" / site))
    needed = required_by(role)
    assert needed, f"roles/{role} requires nothing: the check would be empty"
    for host in hosts_of(site, ROLE_GROUPS[role]):
        missing = needed - layered[host]
        assert not missing, f"{site}/{host}: roles/{role} requires {sorted(missing)}, not set with common layered"
        assert layered[host] >= alone[host], f"{site}/{host}: the common layer hid a variable of the site"


@pytest.mark.parametrize("site", SITES)
def test_a_site_alone_misses_the_common_constants(site):
    """The layer is load-bearing: without it each host lacks exactly the variables only common defines."""
    common = set(_merged(COMMON))
    own = set(_merged(ROOT / "inventories" / site))
    layered = resolved(*sources(ROOT / "inventories" / site))
    alone = resolved(str(ROOT / "inventories" / site))
    for host in layered:
        assert layered[host] - alone[host] == common - own, host


def test_each_constant_lives_in_one_file_of_the_common_layer():
    seen: dict[str, str] = {}
    for name, values in _files(COMMON).items():
        for key in values:
            assert key not in seen, f"{key} is set in common's {seen[key]} and {name}"
            seen[key] = name


@pytest.mark.parametrize("site", SITES)
def test_a_site_overrides_common_in_the_file_of_the_same_name_and_never_copies_it(site):
    common = {key: (name, value) for name, values in _files(COMMON).items() for key, value in values.items()}
    seen: dict[str, str] = {}
    for name, values in _files(ROOT / "inventories" / site).items():
        for key, value in values.items():
            assert key not in seen, f"inventories/{site}: {key} is set in {seen[key]} and {name}"
            seen[key] = name
            if key in common:
                home, constant = common[key]
                assert name == home, f"inventories/{site}/group_vars/all/{name} overrides {key} of common's {home}"
                assert value != constant, f"inventories/{site}: {key} copies inventories/common's value"
