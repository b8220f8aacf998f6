"""Issue #16 (bad input): every variable family a role consumes from the inventory has a preflight case that makes
it invalid (tests/preflight_cases/, run by test_cases.py).

Definition. A *variable family* is one top-level variable that a role's ``meta/argument_specs.yml`` declares
(any entry point) and that the inventory supplies: it is set in ``inventories/common``, ``inventories/production``
or ``inventories/lab`` (a key of ``group_vars/all/*.yml``, or a host's or a group's variable in ``hosts.yml``).
The family holds everything under that name: a list's items and a dict's fields (``nfs_mounts[0].proto`` belongs
to ``nfs_mounts``). Families are listed per role; a variable that several roles declare (``validation_repeats``)
is a family of each, and one case covers it for all of them. Variables a role declares that no inventory sets
(paths, packages, phase switches the playbooks or the role's defaults give) are not inventory input, so not
families. A family is *covered* when some case's ``expect.yml`` names it: its ``variable`` is the family name or
starts with it followed by ``.`` or ``[``. (That the case really fails preflight with an ERROR row, a value and a
fix for that host and variable is what test_cases.py proves.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
INVENTORIES = ("common", "production", "lab")


def inventory_variables(root: Path = ROOT) -> set[str]:
    """Every variable name some inventory sets: group_vars/all keys, host and group variables of hosts.yml."""
    names: set[str] = set()
    for site in INVENTORIES:
        for path in sorted((root / "inventories" / site / "group_vars" / "all").glob("*.yml")):
            names |= set(yaml.safe_load(path.read_text()) or {})
        hosts = root / "inventories" / site / "hosts.yml"
        if hosts.is_file():
            names |= _group_variables((yaml.safe_load(hosts.read_text()) or {}).get("all") or {})
    return names


def _group_variables(group: dict[str, Any]) -> set[str]:
    names = set(group.get("vars") or {})
    for host in (group.get("hosts") or {}).values():
        names |= set(host or {})
    for child in (group.get("children") or {}).values():
        names |= _group_variables(child or {})
    return names


def families(root: Path = ROOT) -> dict[str, list[str]]:
    """role -> its variable families (sorted), by the definition above."""
    supplied = inventory_variables(root)
    out: dict[str, list[str]] = {}
    for spec in sorted(root.glob("roles/*/meta/argument_specs.yml")):
        declared: set[str] = set()
        for entry in (yaml.safe_load(spec.read_text())["argument_specs"] or {}).values():
            declared |= set((entry or {}).get("options") or {})
        out[spec.parents[1].name] = sorted(declared & supplied)
    return out


def case_variables(root: Path = ROOT) -> dict[str, str]:
    """case name -> the variable its expect.yml says preflight must reject."""
    return {p.parent.name: str(yaml.safe_load(p.read_text())["variable"])
            for p in sorted((root / "tests/preflight_cases").glob("*/expect.yml"))}


def family_of(variable: str) -> str:
    return re.split(r"[.\[]", variable, maxsplit=1)[0]


def uncovered(by_role: dict[str, list[str]], cases: dict[str, str]) -> list[str]:
    """'role: family' for every family no case makes invalid."""
    covered = {family_of(v) for v in cases.values()}
    return [f"{role}: {name}" for role, names in by_role.items() for name in names if name not in covered]


def test_every_role_variable_family_has_a_preflight_case():
    by_role = families()
    # the roles consume many inventory variables: 87 families (distinct: one role's entry points share theirs)
    assert len(set().union(*by_role.values())) >= 85, by_role
    missing = uncovered(by_role, case_variables())
    assert not missing, "variable families without a preflight case (add one to tests/preflight_cases/): " + \
        ", ".join(missing)


def test_every_case_names_a_variable_preflight_knows():
    """A case's variable is one the inventory sets or preflight's schema describes (an optional one such as
    dgx_expected_gpus, a secret): a typo in expect.yml would otherwise count as coverage of nothing."""
    from ansible.module_utils.preflight_rules import SECRET_NAMES
    from ansible.module_utils.preflight_schema import VARIABLE_NAMES

    supplied = inventory_variables() | set(VARIABLE_NAMES) | SECRET_NAMES | {"ansible_host"}
    strangers = {name: v for name, v in case_variables().items() if family_of(v) not in supplied}
    assert not strangers, strangers


def test_the_coverage_check_sees_a_family_without_a_case(tmp_path):
    """The check can fail: a role variable that the inventory sets and no case names is reported."""
    (tmp_path / "roles/r/meta").mkdir(parents=True)
    (tmp_path / "roles/r/meta/argument_specs.yml").write_text(yaml.safe_dump({"argument_specs": {
        "main": {"options": {"r_port": {"type": "int"}, "r_list": {"type": "list"}, "r_internal": {"type": "str"}}}}}))
    (tmp_path / "inventories/common/group_vars/all").mkdir(parents=True)
    (tmp_path / "inventories/common/group_vars/all/r.yml").write_text("r_port: 8080\n")
    (tmp_path / "inventories/production").mkdir(parents=True)
    (tmp_path / "inventories/production/hosts.yml").write_text(
        "all:\n  children:\n    g:\n      hosts:\n        h1: {r_list: [1]}\n")
    by_role = families(tmp_path)
    assert by_role == {"r": ["r_list", "r_port"]}   # r_internal: no inventory sets it
    assert uncovered(by_role, {"c": "r_list[0]"}) == ["r: r_port"]
    assert uncovered(by_role, {"c": "r_list[0]", "d": "r_port"}) == []
