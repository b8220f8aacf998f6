"""PowerScale's inventory rules have one home (powerscale_inventory.inventory_problems): the role's input check
(library/powerscale_inventory_check.py, roles/powerscale/tasks/check_input.yml) and preflight (rule_exports,
rule_export_exposure, rule_smartconnect) call the same function, so a defect is refused by both, on the same
variable. The role run itself is in test_role.py (test_bad_quota_stops_before_any_request)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import powerscale_inventory_check
import pytest
from ansible.module_utils import powerscale_inventory as model
from ansible.module_utils import preflight_rules as rules
from ansible.module_utils.testing import patch_module_args

NAMES = (model.EXPORTS, model.QUOTAS, model.SMARTCONNECT)


def values(site: Any) -> dict[str, Any]:
    return {name: copy.deepcopy(site.cluster(name, "powerscale")[0]) for name in NAMES}


def dgx_addresses(site: Any) -> list[str]:
    return [n["address"] for h in site.hosts("dgx") for n in site.var(h, "storage_nics", [])]


def set_all(site: Any, name: str, value: Any) -> None:
    """As if group_vars/all set `name` (tests/preflight/test_rules.py does the same)."""
    site.allvars[name] = copy.deepcopy(value)
    for hostvars in site.hostvars.values():
        hostvars[name] = copy.deepcopy(value)


def run_module(args: dict[str, Any], capsys: Any) -> dict[str, Any]:
    with patch_module_args(args), pytest.raises(SystemExit):
        powerscale_inventory_check.main()
    return json.loads(capsys.readouterr().out)


def module_args(v: dict[str, Any], addresses: list[str]) -> dict[str, Any]:
    return {"host": "f800-1", "exports": v[model.EXPORTS], "quotas": v[model.QUOTAS],
            "smartconnect": v[model.SMARTCONNECT], "dgx_storage_addresses": addresses}


def thresholds(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda v: v[model.QUOTAS][0]["thresholds"].update(changes)


def export(pos: int, **changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda v: v[model.EXPORTS][pos].update(changes)


def smart(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda v: v[model.SMARTCONNECT].update(changes)


def drop_threshold(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda v: v[model.QUOTAS][0]["thresholds"].pop(key)


# name -> (change of the production values, the variable refused, words of the problem, the preflight rule)
CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str, str, Callable[[Any], list[Any]]]] = {
    # exports
    "export-path-twice": (lambda v: v[model.EXPORTS].append(dict(v[model.EXPORTS][0], path="/ifs/data/training/")),
                          "powerscale_exports[2].path", "duplicate export path", rules.rule_exports),
    "export-path-outside-ifs": (export(1, path="/data/scratch"), "powerscale_exports[1].path", "under /ifs/",
                                rules.rule_exports),
    "export-path-with-space": (export(1, path="/ifs/data/my scratch"), "powerscale_exports[1].path",
                               "no spaces", rules.rule_exports),
    "export-mode-unquoted": (export(0, mode=755), "powerscale_exports[0].mode", "octal", rules.rule_exports),
    "export-flavor-unknown": (export(0, security_flavors=["unix", "sys"]), "powerscale_exports[0].security_flavors[1]",
                              "security flavor", rules.rule_exports),
    "export-clients-a-string": (export(0, clients="198.51.100.0/24"), "powerscale_exports[0].clients",
                                "must be a list", rules.rule_exports),
    "export-read-only-string": (export(0, read_only="no"), "powerscale_exports[0].read_only", "boolean",
                                rules.rule_exports),
    "export-group-root": (export(1, group="root"), "powerscale_exports[1].group", "wheel", rules.rule_exports),
    # exposure
    "export-open-to-all": (export(1, clients=["*"]), "powerscale_exports[1].clients", "every host",
                           rules.rule_export_exposure),
    "export-root-not-squashed": (export(0, map_root="root"), "powerscale_exports[0].map_root", "root squash",
                                 rules.rule_export_exposure),
    # quotas
    "quota-outside-exports": (lambda v: v[model.QUOTAS][0].update(path="/ifs/home"), "powerscale_quotas[0].path",
                              "not inside any export", rules.rule_exports),
    "quota-soft-above-hard": (thresholds(soft=2 ** 60), "powerscale_quotas[0].thresholds.soft",
                              "must not exceed hard", rules.rule_exports),
    # the resolved disagreement: the role took an advisory above soft (it checked advisory <= hard only)
    "quota-advisory-above-soft-below-hard": (thresholds(advisory=104453604638720),
                                             "powerscale_quotas[0].thresholds.advisory", "must not exceed soft",
                                             rules.rule_exports),
    # each pair: with no soft threshold, advisory <= hard still holds
    "quota-advisory-above-hard-no-soft": (lambda v: (drop_threshold("soft")(v), thresholds(advisory=2 ** 60)(v)),
                                          "powerscale_quotas[0].thresholds.advisory", "must not exceed hard",
                                          rules.rule_exports),
    "quota-soft-without-grace": (drop_threshold("soft_grace_s"), "powerscale_quotas[0].thresholds.soft_grace_s",
                                 "grace period", rules.rule_exports),
    "quota-threshold-misspelt": (thresholds(sof=1), "powerscale_quotas[0].thresholds.sof", "not a threshold",
                                 rules.rule_exports),
    "quota-type-not-directory": (lambda v: v[model.QUOTAS][0].update(type="user"), "powerscale_quotas[0].type",
                                 "quota type", rules.rule_exports),
    # SmartConnect
    "smartconnect-no-interfaces": (smart(interfaces=[]), "powerscale_smartconnect.interfaces",
                                   "member interfaces", rules.rule_smartconnect),
    "smartconnect-policy-unknown": (smart(connect_policy="random"), "powerscale_smartconnect.connect_policy",
                                    "OneFS takes", rules.rule_smartconnect),
    "smartconnect-range-reversed": (lambda v: v[model.SMARTCONNECT]["ip_ranges"][0].update(low="198.51.100.29"),
                                    "powerscale_smartconnect.ip_ranges[0]", "low is above high",
                                    rules.rule_smartconnect),
    "smartconnect-ranges-overlap": (lambda v: v[model.SMARTCONNECT]["ip_ranges"][1].update(low="198.51.100.24"),
                                    "powerscale_smartconnect.ip_ranges[1]", "overlaps", rules.rule_smartconnect),
    "smartconnect-service-in-range": (smart(service_address="198.51.100.22"),
                                      "powerscale_smartconnect.service_address", "hand it to a node",
                                      rules.rule_smartconnect),
}


def test_the_real_inventories_pass(production, lab, capsys):
    for site in (production, lab):
        v = values(site)
        assert model.inventory_problems("all", v[model.EXPORTS], v[model.QUOTAS], v[model.SMARTCONNECT],
                                        dgx_addresses(site)) == []
    result = run_module(module_args(values(production), dgx_addresses(production)), capsys)
    assert result["changed"] is False and "failed" not in result and result["parts"] == list(model.PARTS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_role_and_preflight_refuse_the_same_defect(name, production, capsys):
    change, variable, words, rule = CASES[name]
    v = values(production)
    change(v)
    # the model
    rows = model.inventory_problems("f800-1", v[model.EXPORTS], v[model.QUOTAS], v[model.SMARTCONNECT],
                                    dgx_addresses(production))
    hits = [p for p in rows if p.variable == variable and words in p.problem]
    assert hits and all(p.fix for p in hits), [(p.variable, p.problem) for p in rows]
    # the role's input check: fails, naming the variable, the problem and the fix
    result = run_module(module_args(v, dgx_addresses(production)), capsys)
    assert result["failed"] is True and "nothing was sent" in result["msg"]
    assert any(r["variable"] == variable and words in r["problem"] for r in result["problems"]), result["problems"]
    assert variable in result["msg"] and hits[0].fix.split(" (")[0] in " ".join(result["msg"].split())
    # preflight: the rule, on the group-level variable (what the schema already reports is not repeated)
    site = copy.deepcopy(production)
    for var_name in NAMES:
        set_all(site, var_name, v[var_name])
    found = rules.collapse(rule(site), site.groups) + rules.collapse(rules.rule_schema(site), site.groups)
    assert [p for p in found if p.host == "all" and p.variable.startswith(variable)], [(p.variable, p.problem)
                                                                                       for p in found]
    assert any(p.variable.startswith(variable) for p in rules.evaluate(site))


def test_the_quota_row_names_the_quota_path_and_the_order(production):
    v = values(production)
    thresholds(soft=999999999999, hard=268435456, advisory=134217728)(v)
    (row,) = model.quota_problems("f800-1", v[model.QUOTAS], v[model.EXPORTS])
    assert row.variable == "powerscale_quotas[0].thresholds.soft"
    assert "must not exceed hard (268435456)" in row.problem and "/ifs/data/scratch" in row.problem


def test_one_row_per_lower_threshold():
    """advisory above soft and above hard: one row on advisory (against soft), one on soft (against hard)."""
    rows = model.quota_problems("h", [{"path": "/ifs/d", "thresholds": {"hard": 1, "soft": 2, "advisory": 3,
                                                                        "soft_grace_s": 60}}], None)
    assert [(p.variable, p.problem.split(" on ")[0]) for p in rows] == [
        ("powerscale_quotas[0].thresholds.advisory", "must not exceed soft (2)"),
        ("powerscale_quotas[0].thresholds.soft", "must not exceed hard (1)")]


def test_thresholds_at_the_same_value_and_absent_ones_pass():
    ok = [{"hard": 10, "soft": 10, "advisory": 10, "soft_grace_s": 1}, {"hard": 10}, {"advisory": 5},
          {"soft": 3, "soft_grace_s": 60, "hard": None, "advisory": None}, {}]
    for t in ok:
        assert model.quota_problems("h", [{"path": "/ifs/d", "thresholds": t}], None) == [], t


def test_powerscale_quota_module_orders_the_api_thresholds_alike():
    """powerscale_quota (the API's names: soft_grace) refuses what the inventory rule refuses."""
    import powerscale_quota
    from ansible.module_utils.onefs import OneFSError

    with pytest.raises(OneFSError, match=r"thresholds.advisory=150 is above thresholds.soft=100"):
        powerscale_quota.desired_thresholds({"hard": 200, "soft": 100, "soft_grace": 60, "advisory": 150},
                                            "/ifs/data/scratch")
    assert powerscale_quota.desired_thresholds({"hard": 200, "soft": 100, "soft_grace": 60, "advisory": 100},
                                               "/ifs/data/scratch")["advisory"] == 100


def test_an_export_with_only_root_clients_has_a_client():
    """clients: [] is derived from the DGX storage addresses; with none to derive, an export that lists a client
    in another list (root_clients here) is still restricted on OneFS and passes; one with no client at all is
    open to every host and is refused. (The role refused the first too: it looked at clients only.)"""
    base = {"path": "/ifs/data/x", "clients": []}
    assert model.exposure_problems("h", [dict(base, root_clients=["198.51.100.50"])], []) == []
    (row,) = model.exposure_problems("h", [base], [])
    assert row.variable == "powerscale_exports[0].clients" and "every host" in row.problem
    assert model.exposure_problems("h", [base], ["198.51.100.11"]) == []
    assert model.exposure_problems("h", [base], None) == []  # not known: not judged


def test_opt_outs_are_honoured():
    exports = [{"path": "/ifs/a", "clients": ["0.0.0.0/0"], "open_to_all_clients": True},
               {"path": "/ifs/b", "clients": ["198.51.100.0/24"], "map_root": "root", "no_root_squash": True}]
    assert model.inventory_problems("h", exports, [], None, []) == []


def test_smartconnect_disabled_is_not_judged_and_the_role_default_passes():
    assert model.smartconnect_problems("h", {"enabled": False, "zone": "", "ip_ranges": []}) == []
    role_default = {"enabled": True, "subnet": "subnet0", "groupnet": "groupnet0", "pool": "pool-dl",
                    "zone": "dl.example.com", "service_address": "", "ip_ranges": [{"low": "198.51.100.21",
                                                                                    "high": "198.51.100.21"}],
                    "interfaces": ["storage0"], "connect_policy": "round_robin", "alloc_method": "dynamic"}
    assert model.smartconnect_problems("h", role_default) == []
    assert [p.variable for p in model.smartconnect_problems("h", {"enabled": "yes"})] == [
        "powerscale_smartconnect.enabled"]


def test_preflight_reports_a_defect_the_schema_sees_once(production):
    """A threshold of 0 is the schema's row (Int >= 1); rule_exports does not repeat it (beside_schema)."""
    site = copy.deepcopy(production)
    v = values(production)
    thresholds(advisory=0)(v)
    set_all(site, model.QUOTAS, v[model.QUOTAS])
    rows = [p for p in rules.evaluate(site) if p.variable == "powerscale_quotas[0].thresholds.advisory"]
    assert len(rows) == 1, rows
    assert rules.rule_exports(site) == []


def test_unknown_parts_are_refused():
    with pytest.raises(ValueError, match="unknown parts"):
        model.inventory_problems("h", [], [], None, [], parts=["export"])
