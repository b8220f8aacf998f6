"""The verdict-and-report play (roles/validate, entry point report) judges a stored run the way the validation stage does:
PASS lets the play finish; a threshold the run cannot meet fails the play, and the failure names the metric.
Only localhost runs; the run directory is the production fixture (tests/validation/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

from validation.inventory_layers import inventory_args


def _report_play(run: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
               ANSIBLE_FORCE_COLOR="0")
    nodes = json.loads((run / "context.json").read_text())["nodes"]
    return subprocess.run(
        [str(Path(sys.executable).with_name("ansible-playbook")), *inventory_args("inventories/production"),
         "tests/validation/playbooks/report_only.yml", "-e", json.dumps({"validate_run": {"id": run.name, "dir": str(run), "nodes": nodes}}), *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_report_play_passes_a_run_that_meets_its_thresholds(production_run):
    p = _report_play(production_run)
    assert p.returncode == 0, p.stdout[-3000:]
    assert "Validation PASSED" in p.stdout
    assert json.loads((production_run / "report.json").read_text())["verdict"]["status"] == "PASS"
    assert (production_run / "report.html").is_file() and (production_run / "environment.json").is_file()


def test_report_play_fails_naming_the_metric_of_an_impossible_threshold(production_run):
    ctx_path = production_run / "context.json"
    ctx = json.loads(ctx_path.read_text())
    for rule in ctx["acceptance_thresholds"]:
        if rule["metric"] == "nccl_multi_node_busbw_gbps":
            rule["floor"] = 1e9
    ctx_path.write_text(json.dumps(ctx))
    p = _report_play(production_run)
    assert p.returncode != 0, "an impossible threshold must fail the play"
    assert "Validation FAILED: nccl_multi_node_busbw_gbps" in p.stdout, p.stdout[-3000:]
    assert json.loads((production_run / "report.json").read_text())["verdict"]["failed"] == [
        "nccl_multi_node_busbw_gbps"]


def test_report_play_fills_the_handover_and_uses_the_site_template(production_run, tmp_path):
    site = tmp_path / "site-template"
    site.mkdir()
    (site / "report.html.j2").write_text('{% extends "default/report.html.j2" %}\n'
                                         '{% block logo %}<p id="site-logo">ACME</p>{% endblock %}\n')
    handover = {"customer": "ACME Research", "signoff": [{"role": "CIO", "name": "Grace Hopper", "date": "2026-11-26"}]}
    p = _report_play(production_run, "-e", json.dumps({"validate_report_handover": handover,
                                                       "validate_report_template": str(site)}))
    assert p.returncode == 0, p.stdout[-3000:]
    assert json.loads((production_run / "handover.json").read_text()) == handover
    assert json.loads((production_run / "report.json").read_text())["handover"] == {**handover, "logo": ""}
    html = (production_run / "report.html").read_text()
    assert '<p id="site-logo">ACME</p>' in html and "ACME Research" in html and "Grace Hopper" in html
    assert (production_run / "metrics.prom").is_file()


def test_report_play_names_a_missing_site_template(production_run, tmp_path):
    missing = tmp_path / "no-such-template"
    p = _report_play(production_run, "-e", f"validate_report_template={missing}")
    assert p.returncode != 0
    said = " ".join(p.stdout.split()).replace("''", "'")  # the failure as the YAML callback folds and quotes it
    assert "fatal: [localhost]" in said and "report.html not written" in said, p.stdout[-3000:]
    assert f"validate_report_template (--template) = '{missing}': no such file or directory (fix:" in said, said


def test_the_probe_of_an_unfinished_node_goes_to_the_node_not_the_control_node(tmp_path):
    """The report play runs with connection: local; its probe of a DGX that did not finish is delegated to that
    DGX and must reach it over its own connection: a powered-off node (here one whose SSH port refuses) is
    unreachable, not "ok" from a ping on the control node (the lab fault case read a powered-off dgx02 as
    reachable before). The task is taken from the role as it is."""
    import yaml

    tasks = yaml.safe_load((ROOT / "roles/validate/tasks/report.yml").read_text())
    (probe,) = [t for t in tasks if str(t.get("name", "")).startswith("Report | reach each DGX")]
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False,
             "vars": {"validate_run": {"nodes": ["ghost"]}, "validate_measurements_started": True},
             "tasks": [probe, {"name": "show", "ansible.builtin.debug": {
                 "msg": "{{ validate_report_probe.results | map(attribute='unreachable', default=False) | list }}"}}]}]
    (tmp_path / "probe.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": {
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "ghost": {"ansible_host": "127.0.0.1", "ansible_port": 1}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    p = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp_path / "inventory.yml"),
                        str(tmp_path / "probe.yml")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:]
    assert '"msg": [\n        true\n    ]' in p.stdout or "- true" in p.stdout, p.stdout[-3000:]
