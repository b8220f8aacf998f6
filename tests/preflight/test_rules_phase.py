"""preflight_phase: rules (roles/preflight/tasks/rules.yml): a role's own input check is preflight's rules by name,
with the rows about the role's variables and about the host (or a group). dgx_host, ngc and powerscale use it;
tests/dgx/test_role_input.py and tests/powerscale/test_role.py run it through the roles."""

from __future__ import annotations

import copy

import pytest
from ansible.module_utils import preflight_rules as rules

from tests.preflight.preflight_sites import action_plugin


def test_only_the_named_rules_run(production):
    site = copy.deepcopy(production)
    site.hostvars["dgx01"]["dgx_model"] = "dgx-h100"
    rows = rules.evaluate(site, only=["node_model"])
    assert [(r.host, r.variable) for r in rows] == [("dgx01", "dgx_model")]
    assert any(r.variable == "dgx_model" for r in rules.evaluate(site))  # the whole set holds it too


def test_an_unknown_rule_name_is_refused_with_the_names():
    with pytest.raises(ValueError, match=r"no preflight rule named \['node_models'\].*'node_model'"):
        rules.evaluate(rules.Site(groups={}, hostvars={}, allvars={}), only=["node_models"])


@pytest.mark.parametrize(("variable", "host", "counts"), [
    ("dgx_model", "dgx01", True),
    ("dgx_model", "dgx02", False),                    # another host's row
    ("dgx_model", "all", True),                       # a group's row
    ("storage_nics[0].name", "dgx01", True),          # indices as []
    ("storage_nics[1].switch", "dgx01", False),       # a part not named
    ("dgx_models.dgx-a100.hcas", "dgx01", True),      # dgx_models.* takes every part
    ("powerscale_api_port", "dgx01", False),          # not this role's
])
def test_which_rows_count_for_a_role(variable, host, counts):
    names = ["dgx_model", "dgx_models.*", "storage_nics", "storage_nics[].name"]
    row = {"variable": variable, "host": host}
    assert action_plugin().row_about(row, names, "dgx01", {"dgx01": {}, "dgx02": {}}) is counts
