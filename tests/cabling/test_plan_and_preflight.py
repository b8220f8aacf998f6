"""The plan from the inventories, and preflight's refusals of a bad compute map (rule_compute_cabling)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.module_utils import cabling_design
from ansible.module_utils import preflight_rules as rules

from validation.cabling import plan
from validation.cabling.model import CablingError

ROOT = Path(__file__).resolve().parents[2]


def test_production_plan_lists_every_cable_of_the_reference_site():
    out = subprocess.run([sys.executable, "-m", "validation", "cabling", "plan", "-i", "inventories/common", "-i",
                          "inventories/production"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    cables = yaml.safe_load(out.stdout)
    assert len(out.stdout.splitlines()) == len(cables) == 4 + 8 + 2 + 32
    assert cables[0] == {"a": {"node": "dgx01", "port": "enp225s0f0"}, "b": {"node": "sn3700v01", "port": "swp1"},
                         "speed": "100G"}
    assert {"a": {"node": "sn3700v01", "port": "swp31"}, "b": {"node": "sn3700v02", "port": "swp31"}} in cables
    compute = [c for c in cables if c.get("width")]
    assert len(compute) == 32 and {c["speed"] for c in compute} == {"HDR"}
    assert {(c["a"]["node"], c["a"]["port"]) for c in compute} == {
        (f"dgx0{n}", f"mlx5_{h}/1") for n in range(1, 5) for h in (0, 1, 2, 3, 6, 7, 8, 9)}
    assert {(c["b"]["node"], c["b"]["port"]) for c in compute} == {
        (s, str(p)) for s in ("qm8700-01", "qm8700-02") for p in range(1, 17)}
    assert {"a": {"node": "dgx02", "port": "mlx5_7/1"}, "b": {"node": "qm8700-02", "port": "6"}, "speed": "HDR",
            "width": "4x"} in compute


def test_plan_round_trips_through_its_yaml(tmp_path):
    view = plan.load_view(["inventories/common", "inventories/lab"])
    cables = plan.design(view)
    path = tmp_path / "plan.yml"
    path.write_text(plan.to_yaml(cables))
    assert plan.read_plan(path) == cables
    assert yaml.safe_load(path.read_text()) == [c.to_dict() for c in cables]


def test_plan_refuses_a_bad_compute_map():
    view = plan.load_view(["inventories/common", "inventories/production"])
    for host in view.groups["dgx"]:
        view.hostvars[host]["compute_fabric_cables"] = {"rails": [{"hca": "mlx5_0", "switch": "qm8700-01",
                                                                    "first_port": 39}]}
    with pytest.raises(CablingError, match="port 41 does not exist"):
        plan.design(view)


@pytest.fixture
def site(production):
    return copy.deepcopy(production)


def set_map(site, value):
    site.allvars["compute_fabric_cables"] = copy.deepcopy(value)
    for host in site.hosts("dgx"):
        site.hostvars[host]["compute_fabric_cables"] = copy.deepcopy(value)


def rows(site):
    return [(p.host, p.variable, p.problem, p.severity) for p in rules.rule_compute_cabling(site)]


def test_production_and_lab_maps_pass(production, lab):
    assert rules.rule_compute_cabling(production) == []
    assert rules.rule_compute_cabling(lab) == []


def test_a_port_used_twice_names_both_hosts_and_the_port(site):
    design = copy.deepcopy(site.allvars["compute_fabric_cables"])
    design["rails"][1]["first_port"] = 4        # mlx5_1 of dgx01 lands on qm8700-01 port 4, dgx04 mlx5_0's port
    set_map(site, design)
    got = rows(site)
    assert ("dgx01", "compute_fabric_cables.rails[1]",
            "qm8700-01 port 4 is used twice: by dgx04 mlx5_0 (compute_fabric_cables.rails[0]) and by dgx01 mlx5_1 "
            "(compute_fabric_cables.rails[1])", "error") in got


def test_an_hca_cabled_twice_or_not_at_all(site):
    design = copy.deepcopy(site.allvars["compute_fabric_cables"])
    design["cables"] = [{"host": "dgx02", "hca": "mlx5_3", "switch": "qm8700-02", "switch_port": "1/20"}]
    del design["rails"][7]                       # mlx5_9 of every DGX loses its cable
    set_map(site, design)
    site.hostvars["qm8700-02"]["qm8700_ports"] = [{"range": "1/1-1/24", "speed": "hdr", "split": "none"}]
    got = rows(site)
    assert any(r[0] == "dgx02" and "dgx02 mlx5_3 is cabled twice" in r[2] for r in got)
    assert [r[0] for r in got if "mlx5_9 has no cable" in r[2]] == ["dgx01", "dgx02", "dgx03", "dgx04"]


def test_ports_outside_the_switch_or_qm8700_ports(site):
    design = copy.deepcopy(site.allvars["compute_fabric_cables"])
    design["rails"][3]["first_port"] = 38        # mlx5_3: ports 38..41 of qm8700-01
    set_map(site, design)
    got = rows(site)
    assert ("dgx04", "compute_fabric_cables.rails[3]", "qm8700-01 has ports 1..40; port 41 does not exist",
            "error") in got
    assert any(r[0] == "dgx01" and "port 1/38 is not declared in qm8700_ports (declared whole ports: 1/1-1/16)"
               in r[2] for r in got)


def test_unknown_switch_and_hca_and_missing_map(site):
    set_map(site, {"cables": [{"host": "dgx01", "hca": "mlx5_4", "switch": "qm8700-09", "switch_port": 1}]})
    got = rows(site)
    assert any("mlx5_4 is not a compute HCA of dgx01's model" in r[2] for r in got)
    assert any("qm8700-09 is not a QM8700 host of the inventory" in r[2] for r in got)
    del site.allvars["compute_fabric_cables"]
    for host in site.hosts("dgx"):
        del site.hostvars[host]["compute_fabric_cables"]
    assert [(r[1], r[3]) for r in rows(site)] == [("compute_fabric_cables", "warning")]


def test_schema_refuses_a_typo(site):
    set_map(site, {"rails": [{"hca": "mlx5_0", "swtich": "qm8700-01", "first_port": 1}]})
    found = [p for p in rules.rule_schema(site) if p.variable.startswith("compute_fabric_cables")]
    assert {p.variable for p in found} >= {"compute_fabric_cables.rails[0].swtich"}


def test_expand_rails_in_node_order():
    cables, bad = cabling_design.expand({"rails": [{"hca": "mlx5_0", "switch": "s1", "first_port": "1/5"}]},
                                        ["n1", "n2", "n3"])
    assert bad == [] and [(c.host, c.switch_port) for c in cables] == [("n1", 5), ("n2", 6), ("n3", 7)]
