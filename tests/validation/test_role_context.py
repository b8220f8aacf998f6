"""The role writes the same context.json (topology + acceptance data) that the CLI builds from the inventory,
from Ansible's resolved variables; only localhost runs, no host is contacted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT

from validation.context import context_from_inventory
from validation.inventory_layers import inventory_args
from validation.site import Measured, Site
from validation.thresholds import bounds_for


def test_prepare_writes_the_context_the_verdict_uses(tmp_path):
    # production: the inventory whose derived ceilings matter (the lab shares the code path)
    inventory = "production"
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_ROLES_PATH=str(ROOT / "roles"))
    p = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-playbook")), *inventory_args(f"inventories/{inventory}"),
         "tests/validation/playbooks/prepare_only.yml", "-e", f"validation_results_dir={tmp_path}",
         "-e", "validate_report_run_id=ctxtest"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:]
    written = json.loads((tmp_path / "ctxtest" / "context.json").read_text())
    assert (tmp_path / "ctxtest" / "raw").is_dir()
    expected = context_from_inventory(ROOT / "inventories" / inventory)
    assert written["nodes"] == expected["nodes"]
    assert written["site"] == expected["site"] == inventory  # the last inventory source: the site, not common
    for key in ("dgx", "powerscale", "acceptance_thresholds", "nfs_server_mode", "nfs_server_map", "dgx_models",
                "validation_stages", "validation_nccl", "validation_fio", "validation_paths", "validation_telemetry"):
        assert written[key] == expected[key], key
    assert written["validation_ddp"]["image"] == "nvcr.io/nvidia/pytorch:24.05-py3"
    measured = Measured(judged=True, storage={"dgx04": 4800.0})
    site = replace(Site.from_context(written), measured=measured)
    assert [b.limit for b in bounds_for(site, "fio_node_read_MBps", "dgx04")] \
        == [pytest.approx(4500.0), pytest.approx(0.8 * 4800.0)]


def test_the_cli_context_reads_the_inventory_as_ansible_does():
    """context_from_inventory goes through Ansible's inventory and variable managers: templates resolve (the DDP
    image is built from ngc_images), and -e extra vars win over the inventory, as in the playbook run."""
    ctx = context_from_inventory(ROOT / "inventories" / "production", extra_vars=[
        '{"validation_repeats": 2, "validation_stages": {"nccl": {"enabled": false}}}', "acceptance_outlier_max_behind_pct=7"])
    assert ctx["validation_ddp"]["image"] == "nvcr.io/nvidia/pytorch:24.05-py3"
    assert ctx["validation_repeats"] == 2 and ctx["validation_stages"] == {"nccl": {"enabled": False}}
    assert ctx["acceptance_outlier_max_behind_pct"] == "7"  # key=value is a string, as ansible-playbook -e reads it
    assert ctx["site"] == "production" and ctx["nodes"] == ["dgx01", "dgx02", "dgx03", "dgx04"]
    with pytest.raises(ValueError, match="extra vars must be a mapping"):
        context_from_inventory(ROOT / "inventories" / "production", extra_vars=["[1, 2]"])
