"""playbooks/scale_out.yml and scale_in.yml as ansible-playbook sees them (--list-hosts, --list-tasks) on the lab and
the production inventories, with the new node in the site and with it left out: the roles that configure a DGX run
only on the request's nodes, the shared-object roles only in their scale modes; and the refusals of a bad request,
which stop the run on the control node before any change (preflight offline, nothing leaves this machine)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from validation.inventory_layers import inventory_args

from .sites import lab_without

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
SECRETS = ("POWERSCALE_API_PASSWORD", "SN3700V_PASSWORD", "QM8700_PASSWORD", "NGC_API_KEY", "NGC_MIRROR_PASSWORD")
PLAY = re.compile(r"^  play #\d+ \((?P<pattern>.*?)\): (?P<name>.*?)\tTAGS: \[(?P<tags>.*?)\]\n(?P<body>.*?)(?=^  play #|\Z)",
                  re.M | re.S)
DGX_ROLES = ("dgx_host :", "dgx_nfs :", "ngc :")


def ansible(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.update({name: "dummy" for name in SECRETS})
    proc = subprocess.run([PLAYBOOK, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def plays(output: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in PLAY.finditer(output)]


def hosts_of(body: str) -> set[str]:
    m = re.search(r"hosts \(\d+\):\n((?:\s{6}\S+\n?)*)", body)
    return set(m.group(1).split()) if m else set()


@pytest.mark.parametrize("inventory, node", [("production", "dgx04"), ("lab", "dgx02")])
def test_the_dgx_roles_run_on_the_new_node_alone(inventory, node):
    out = ansible(*inventory_args(f"inventories/{inventory}"), "playbooks/scale_out.yml", "--list-tasks",
                  "--list-hosts", "-e", f"scale_out_nodes={node}").stdout
    seen = plays(out)
    assert seen, out[-2000:]
    for p in seen:
        if any(role in p["body"] for role in DGX_ROLES):
            assert hosts_of(p["body"]) == {node}, f"{p['name']} runs on {hosts_of(p['body'])}"
    names = [p["name"] for p in seen]
    first_scale = next(i for i, n in enumerate(names) if n.startswith("Scale-out"))
    assert names[:first_scale] == ["Preflight | inventory rules", "Preflight | target checks"], "preflight first"
    assert {"localhost", node} <= hosts_of(seen[0]["body"]), "preflight checks the whole new inventory"
    # validation: the new node alone, then every DGX
    measured = [hosts_of(p["body"]) for p in seen if p["name"] == "Validate | measurements on the DGX nodes"]
    every = {h for p in seen if p["name"] == "Preflight | target checks" for h in hosts_of(p["body"]) if "dgx" in h}
    assert measured == [{node}, every]


def test_the_shared_object_roles_run_only_in_their_scale_modes():
    out = ansible(*inventory_args("inventories/production"), "playbooks/scale_out.yml", "--list-tasks",
                  "-e", "scale_out_nodes=dgx04").stdout
    text = (ROOT / "playbooks/scale_out.yml").read_text()
    assert "tasks_from: scale" in text and "powerscale_scale_mode: add" in text
    assert "sn3700v_scale_mode: add" in text and "qm8700_only_add_ports: true" in text
    storage = next(p for p in plays(out) if p["name"].startswith("Scale-out | storage"))
    assert "Scale | export clients" in storage["body"] and "Content | NFS exports" not in storage["body"]
    assert "prune" not in storage["body"].lower()


def test_a_site_with_the_node_left_out_lists_no_host_for_it(tmp_path):
    site = lab_without(tmp_path, "dgx02")
    out = ansible("-i", "inventories/common", "-i", str(site), "playbooks/scale_out.yml", "--list-hosts",
                  "-e", "scale_out_nodes=dgx02").stdout
    for p in plays(out):
        assert "dgx02" not in hosts_of(p["body"]), p["name"]
    site_out = ansible("-i", "inventories/common", "-i", str(site), "site.yml", "--list-hosts").stdout
    assert all("dgx02" not in hosts_of(p["body"]) for p in plays(site_out))
    assert any(hosts_of(p["body"]) == {"dgx01"} for p in plays(site_out) if p["name"].startswith("Compute"))


def test_scale_in_touches_only_the_leaving_node():
    out = ansible(*inventory_args("inventories/production"), "playbooks/scale_in.yml", "--list-tasks", "--list-hosts",
                  "-e", "scale_in_nodes=dgx04").stdout
    seen = plays(out)
    for p in seen:
        if p["name"].startswith("Scale-in | the leaving") or p["name"].startswith("Scale-in | unmount"):
            assert hosts_of(p["body"]) == {"dgx04"}, p["name"]
        assert not any(role in p["body"] for role in DGX_ROLES), f"{p['name']} runs a DGX role"
    assert "sn3700v_scale_mode: remove" in (ROOT / "playbooks/scale_in.yml").read_text()


def _offline(tmp_path: Path, playbook: str, *extra: str) -> tuple[int, str, list[str]]:
    proc = ansible(*inventory_args("inventories/production"), playbook, "-e", "preflight_offline=true",
                   "-e", f"validation_results_dir={tmp_path}", *extra, check=False)
    out = proc.stdout + proc.stderr
    return proc.returncode, out, re.findall(r"^PLAY \[(.*?)\]", out, re.M)


def _report(tmp_path: Path, run: str, nodes: list[str]) -> Path:
    d = tmp_path / run
    d.mkdir()
    (d / "report.json").write_text(json.dumps({"run": run, "nodes": nodes, "verdict": {"checks": []}}))
    return d


@pytest.mark.parametrize("playbook, extra, expected", [
    ("playbooks/scale_out.yml", ["-e", "scale_out_nodes=dgx09"], "dgx09 | is not a host of group dgx or powerscale"),
    ("playbooks/scale_out.yml", [], "scale_out_nodes | (empty) | names no node"),
    ("playbooks/scale_out.yml", ["-e", "scale_out_nodes=dgx01,dgx02,dgx03,dgx04"], "none would stay in production"),
    ("playbooks/scale_out.yml", ["-e", "scale_out_nodes=dgx04"], "no validation run of dgx01, dgx02, dgx03"),
    ("playbooks/scale_in.yml", ["-e", "scale_in_nodes=sn3700v01"], "sn3700v01 | is not a host of group dgx"),
])
def test_a_bad_request_stops_on_the_control_node_before_any_change(tmp_path, playbook, extra, expected):
    rc, out, played = _offline(tmp_path, playbook, *extra)
    assert rc != 0, out[-3000:]
    assert expected in out, out[-3000:]
    assert played[-1].endswith("the request (nodes known to the inventory; the earlier run of the nodes that stay)") \
        or played[-1].startswith("Scale-in | the request"), played
    assert "preflight (inventory): 0 error(s)" in out, "preflight ran first, on the whole inventory"


def test_an_earlier_run_of_another_node_set_is_refused(tmp_path):
    other = _report(tmp_path, "20261101T000000Z", ["dgx01", "dgx02"])
    rc, out, _ = _offline(tmp_path, "playbooks/scale_out.yml", "-e", "scale_out_nodes=dgx04",
                          "-e", f"scale_out_baseline={other}")
    assert rc != 0 and "that run validated dgx01, dgx02, not the nodes that stay (dgx01, dgx02, dgx03)" in out, \
        out[-3000:]
