"""Target checks: parsing the raw probe and judging it (pure), with failing and passing cases."""

from __future__ import annotations

import pytest
from ansible.module_utils import preflight_targets as targets

UBUNTU = """@@kernel 5.4.0-144-generic
@@os
NAME="Ubuntu"
VERSION_ID="20.04"
ID=ubuntu
@@python
3.8.10
"""
CUMULUS = """@@kernel 4.19.0-cl-1-amd64
@@os
NAME="Cumulus Linux"
VERSION_ID=4.2.1
ID=cumulus-linux
@@python
3.7.3
"""
DGX_REQ = targets.Requirement(
    supported_os=[{"distribution": "Ubuntu", "versions": ["18.04", "20.04", "22.04"]}], os_var="dgx_supported_os",
    min_python="3.8", python_var="dgx_min_python", min_kernel="5.3", kernel_var="dgx_min_kernel")
SWITCH_REQ = targets.Requirement(
    supported_os=[{"distribution": "Cumulus Linux", "versions": ["4", "5"]}], os_var="preflight_target_os.sn3700v",
    min_python="3.8", python_var="preflight_min_python")


def result(stdout: str, **extra):
    return {"rc": 0, "stdout": stdout, "ansible_host": "192.0.2.11", **extra}


def variables(rows):
    return [(r.host, r.variable) for r in rows]


def test_parse_probe():
    probe = targets.parse_probe(UBUNTU)
    assert (probe.kernel, probe.os_id, probe.os_version, probe.python, probe.complete) == (
        "5.4.0-144-generic", "ubuntu", "20.04", "3.8.10", True)


def test_supported_dgx_passes():
    assert targets.check_target("dgx01", result(UBUNTU), DGX_REQ) == []


def test_unsupported_os_fails():
    rows = targets.check_target("dgx01", result(UBUNTU.replace("20.04", "16.04")), DGX_REQ)
    assert variables(rows) == [("dgx01", "dgx_supported_os")]


def test_old_kernel_fails():
    rows = targets.check_target("dgx01", result(UBUNTU.replace("5.4.0-144", "4.15.0-20")), DGX_REQ)
    assert variables(rows) == [("dgx01", "dgx_min_kernel")]
    assert rows[0].value == "4.15.0-20-generic"


def test_old_python_fails_on_cumulus_4():
    # Cumulus Linux 4.x ships Python 3.7: ansible-core 2.19 modules cannot run there.
    rows = targets.check_target("sn3700v01", result(CUMULUS), SWITCH_REQ)
    assert variables(rows) == [("sn3700v01", "preflight_min_python")]


def test_the_agentless_switch_role_needs_no_python_on_cumulus_4():
    # the sn3700v role sends the switch shell commands only: Cumulus 4.2.1's Python 3.7 is no obstacle
    req = targets.Requirement(supported_os=SWITCH_REQ.supported_os, os_var=SWITCH_REQ.os_var,
                              min_python=targets.min_python_for("sn3700v", "3.8"), python_var="preflight_min_python")
    assert targets.check_target("sn3700v01", result(CUMULUS), req) == []
    assert targets.min_python_for("powerscale", "3.8") == "3.8"


def test_cumulus_5_passes():
    text = CUMULUS.replace("4.2.1", "5.9.1").replace("3.7.3", "3.9.2")
    assert targets.check_target("sn3700v01", result(text), SWITCH_REQ) == []


def test_missing_python_fails():
    rows = targets.check_target("dgx01", result(UBUNTU.replace("3.8.10\n", "")), DGX_REQ)
    assert variables(rows) == [("dgx01", "dgx_min_python")]


@pytest.mark.parametrize("res", [
    {"unreachable": True, "msg": "ssh: connect to host 192.0.2.11 port 22: Connection refused"},
    {"failed": True, "rc": 127, "msg": "sh: not found"},
    result("@@kernel 5.4.0\n"),                         # truncated: no OS, no Python section
])
def test_no_data_is_an_error_not_a_skip(res):
    rows = targets.check_target("dgx01", res, DGX_REQ)
    assert rows and rows[0].variable == "ansible_host" and rows[0].severity == "error" and rows[0].fix


def test_undeclared_os_list_fails():
    rows = targets.check_target("powerscale01", result(UBUNTU), targets.Requirement(os_var="preflight_target_os.powerscale"))
    assert variables(rows) == [("powerscale01", "preflight_target_os.powerscale")]


@pytest.mark.parametrize(("os_version", "versions", "ok"), [
    ("4.2.1", ["4"], True), ("5.9.1", ["4"], False), ("22.04", ["22.04"], True), ("22.10", ["22"], True),
    ("12", ["12"], True), ("11", ["12"], False),
])
def test_os_version_prefix(os_version, versions, ok):
    probe = targets.Probe(os_id="debian", os_name="Debian GNU/Linux", os_version=os_version)
    assert targets.os_matches(probe, [{"distribution": "Debian", "versions": versions}]) is ok


def test_describe_what_a_target_reported():
    assert targets.describe(result(UBUNTU)) == "Ubuntu 20.04, kernel 5.4.0-144-generic, Python 3.8.10"
    assert targets.describe({"unreachable": True}) == "no answer"
