"""The layered inventories: ``inventories/common`` holds the reference architecture's constants, a site inventory
(``inventories/lab``, ``inventories/production``, a real site's) only its own facts and its overrides.

Ansible reads them as two sources, the common layer first (``-i inventories/common -i inventories/<site>``;
ansible.cfg names both for the lab): the group_vars of a later source win, key by key (the default
hash_behaviour, replace). This module is the one home of that order for whatever reads or runs an inventory
outside ansible.cfg: the validation CLI, the lab tools, the tests and the benchmarks; and of reading it the way
Ansible does (AnsibleInventory: templating, host_vars, -e).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
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


def module_utils(name: str) -> Any:
    """module_utils/<name>.py under its Ansible name, ansible.module_utils.<name> (as the modules import it)."""
    import importlib

    import ansible.module_utils

    path = str(ROOT / "module_utils")
    if path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(path)
    return importlib.import_module(f"ansible.module_utils.{name}")


def _plain(value: Any) -> Any:
    """Ansible's tagged containers and strings as plain JSON data (what context.json and the checks hold)."""
    return json.loads(json.dumps(value))


def parse_extra_vars(loader: Any, extra_vars: Sequence[str]) -> dict[str, Any]:
    """``-e`` values as ansible-playbook reads them: ``@file`` (YAML/JSON), a YAML/JSON mapping, or key=value pairs;
    later ones win, key by key."""
    from ansible.parsing.splitter import parse_kv

    merged: dict[str, Any] = {}
    for text in extra_vars:
        if not text:
            continue
        if text.startswith("@"):
            data = loader.load_from_file(text[1:])
        elif text[0] in "[{":
            data = loader.load(text)
        else:
            data = parse_kv(text)
        if not isinstance(data, dict):
            raise ValueError(f"-e {text!r}: extra vars must be a mapping (KEY=VALUE, a YAML/JSON mapping or @FILE)")
        merged.update(data)
    return merged


@dataclass
class AnsibleInventory:
    """A site's inventory read by Ansible's own InventoryManager and VariableManager over ``sources(site)``, so
    group_vars/host_vars precedence, Jinja templating and ``-e`` extra vars (on top of everything, as in a playbook
    run) resolve as they do in a run. The one loader for whatever reads an inventory outside a playbook: the
    validation CLI (validation/context.py) and the handover checks (tests/handover)."""

    loader: Any
    manager: Any
    variables: Any
    extra: dict[str, Any] = field(default_factory=dict)
    # Values the hosts share without a template, resolved once (module_utils/shared_values.py).
    shared: Any = field(default=None, repr=False)

    @classmethod
    def open(cls, site: str | Path, extra_vars: Sequence[str] = (),
             source_list: Sequence[str] | None = None) -> AnsibleInventory:
        from ansible.inventory.manager import InventoryManager
        from ansible.parsing.dataloader import DataLoader
        from ansible.plugins.loader import init_plugin_loader
        from ansible.vars.manager import VariableManager

        # what the ansible CLIs do first (it makes ansible.builtin.* plugins loadable); once per process
        if not any(type(f).__name__ == "_AnsibleCollectionFinder" for f in sys.meta_path):
            init_plugin_loader()
        loader = DataLoader()
        password_file = os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE")
        if password_file:
            from ansible.cli import CLI

            loader.set_vault_secrets(CLI.setup_vault_secrets(loader, vault_ids=[], vault_password_files=[password_file]))
        manager = InventoryManager(loader=loader, sources=sources(site) if source_list is None else list(source_list))
        return cls(loader, manager, VariableManager(loader=loader, inventory=manager),
                   parse_extra_vars(loader, extra_vars))

    @classmethod
    def open_sources(cls, source_list: Sequence[str | Path], extra_vars: Sequence[str] = ()) -> AnsibleInventory:
        """The inventory of explicit ``-i`` sources, in their order (``-i inventories/common -i inventories/lab``),
        as a CLI that takes ansible-playbook's -i arguments gives them."""
        return cls.open("", extra_vars, [str(s) for s in source_list])

    def hosts(self, pattern: str) -> list[str]:
        """The hosts a pattern (a group, a host, ``all``) selects, in the inventory's order."""
        return [h.name for h in self.manager.get_hosts(pattern)]

    def templated(self, host: str, names: Iterable[str]) -> dict[str, Any]:
        """The named variables of a host that it defines, templated as a task on it would see them (``localhost``:
        the implicit control node, group ``all``'s view). Only the named ones are templated: secrets are never read
        unless named."""
        from ansible.template import Templar

        host_vars = {**self.variables.get_vars(host=self.manager.get_host(host)), **self.extra}
        templar = Templar(loader=self.loader, variables=host_vars)
        if self.shared is None:
            self.shared = module_utils("shared_values").SharedValues()
        out: dict[str, Any] = {}
        for name in names:
            if name not in host_vars:
                continue
            try:
                out[name] = self.shared.resolve(host_vars[name],
                                                lambda name=name: _plain(templar.template(host_vars[name])))
            except Exception as exc:  # an undefined or broken template: name the host and the variable
                raise ValueError(f"{host}: {name} cannot be templated: {exc}") from exc
        return out
