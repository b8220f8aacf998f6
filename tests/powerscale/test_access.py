"""The privilege and licence check of the storage stage: module_utils/onefs_access.py (the rule), the README's RBAC
role (the same list), and powerscale_access in the role, which stops the run before any change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible.module_utils.onefs_access import (
    Plan,
    held_privileges,
    missing_licences,
    missing_privileges,
    needs,
)

from .conftest import make_sim, run_playbook
from .test_rbac import ROLE
from .test_role import PLAYBOOK, inventory

README = Path(__file__).resolve().parents[2] / "roles/powerscale/README.md"
FULL = Plan(pool=True, pool_dynamic=True)


def readme_role() -> dict[str, str]:
    """The RBAC table of roles/powerscale/README.md: privilege -> 'r' (read-only) or 'w' (read-write)."""
    rows = re.findall(r"^\| `(ISI_PRIV_[A-Z_]+)` \| (read-only|read-write) \|", README.read_text(), re.M)
    return {p: "w" if kind == "read-write" else "r" for p, kind in rows}


def test_the_readme_role_is_the_rule_and_the_simulated_user_holds_exactly_it():
    rule = {n.privilege: "w" if n.write else "r" for n in needs(FULL)}
    assert readme_role() == rule
    assert rule == ROLE


def test_privileges_are_read_from_both_token_formats():
    new = {"ntoken": {"privilege": [{"id": "ISI_PRIV_NFS", "name": "NFS", "permission": "w"},
                                    {"id": "ISI_PRIV_AUTH", "name": "Auth", "permission": "x"},
                                    {"id": "ISI_PRIV_QUOTA", "name": "Quota", "permission": "-"}]}}
    old = {"ntoken": {"privilege": [{"id": "ISI_PRIV_NFS", "name": "NFS", "read_only": False},
                                    {"id": "ISI_PRIV_AUTH", "name": "Auth", "read_only": True}]}}
    assert held_privileges(new) == held_privileges(old) == {"ISI_PRIV_NFS": "w", "ISI_PRIV_AUTH": "r"}


def test_each_missing_privilege_is_named_with_what_needs_it():
    for need in needs(FULL):
        held = {k: v for k, v in ROLE.items() if k != need.privilege}
        (text,) = missing_privileges(FULL, held)
        assert text.startswith(need.privilege) and need.why in text and "lacks it" in text
    (text,) = missing_privileges(FULL, {**ROLE, "ISI_PRIV_NFS": "r"})
    assert "ISI_PRIV_NFS (read-write)" in text and "holds it read-only" in text
    assert missing_privileges(Plan(directory_owners=False), {k: v for k, v in ROLE.items()
                                                              if k != "ISI_PRIV_IFS_RESTORE"}) == []


def test_smartconnect_advanced_is_needed_for_dynamic_pools_and_a_second_pool():
    assert missing_licences(Plan(pool=True), [], {}) == []
    (text,) = missing_licences(Plan(pool=True, pool_dynamic=True), [], {"SmartConnect Advanced": "Expired"})
    assert "SmartConnect Advanced" in text and "alloc_method dynamic" in text and "Expired" in text
    (text,) = missing_licences(Plan(pool=True), ["pool0"], {"SmartQuotas": "Licensed"})
    assert "second pool" in text and "pool0" in text and "absent" in text
    assert missing_licences(FULL, ["pool0"], {"SmartConnect Advanced": "Evaluation"}) == []


# The least-privilege run that converges, and the licence case, are in test_production.py (production inventory).
@pytest.mark.parametrize("privilege", ["ISI_PRIV_IFS_RESTORE", "ISI_PRIV_NETWORK"])
def test_one_privilege_missing_stops_the_role_before_any_change(pki, tmp_path, privilege):
    held = {k: v for k, v in ROLE.items() if k != privilege}
    if privilege == "ISI_PRIV_NETWORK":
        held[privilege] = "r"  # read-only: may read interfaces, may not manage the pool
    sim, port = make_sim(pki, privileges=held)
    sim.port = port
    try:
        run = run_playbook(tmp_path, PLAYBOOK, inventory=inventory(sim, pki))
        assert run.rc != 0
        msg = run.result("Cluster | the API user's privileges and the licences allow this run (read before anything "
                         "else)")["msg"]
        assert "stops before any change" in msg
        assert privilege in msg, msg
        assert sim.mutating_requests() == []
    finally:
        sim.stop()
