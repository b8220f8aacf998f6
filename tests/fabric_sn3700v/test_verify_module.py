"""cumulus_fabric_verify (the agentless action plugin, ad hoc over the local connection), with stand-ins for `ip`/`bridge` that print the switch's JSON:
mismatch reported, repaired by the repair command, or (check mode) reported as a change that would be made."""

from __future__ import annotations

import json
import stat

from .conftest import run_action
from .test_live import LAB_PLAN, lab_live


def _stand_ins(tmp_path):
    links, vlans, lo = lab_live()
    drifted = json.loads(json.dumps(links))
    drifted[1]["mtu"] = 1500  # swp2 changed by hand
    (tmp_path / "good.json").write_text(json.dumps(links))
    (tmp_path / "live.json").write_text(json.dumps(drifted))
    (tmp_path / "vlans.json").write_text(json.dumps(vlans))
    (tmp_path / "lo.json").write_text(json.dumps(lo))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "ip": f'#!/bin/sh\ncase "$*" in *addr*) cat {tmp_path}/lo.json;; *) cat {tmp_path}/live.json;; esac\n',
        "bridge": f"#!/bin/sh\ncat {tmp_path}/vlans.json\n",
        # the "ifreload -a" of this test: the kernel gets the configured state back
        "fake-ifreload": f"#!/bin/sh\ncp {tmp_path}/good.json {tmp_path}/live.json\n",
    }
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return bin_dir


BIN: dict[str, str] = {}


def run_module(args: dict, check: bool = False) -> dict:
    return run_action("cumulus_fabric_verify", args, check=check, path_prefix=BIN["dir"])


def test_report_check_mode_and_repair(tmp_path):
    BIN["dir"] = str(_stand_ins(tmp_path))
    plan = LAB_PLAN
    report = run_module({"plan": plan, "wait_seconds": 0})
    assert report["failed"]
    assert "fabric port (dgx02 storage0) swp2: MTU 1500, expected 9216" in report["msg"]

    would = run_module({"plan": plan, "wait_seconds": 0, "repair_command": "fake-ifreload"}, check=True)
    assert would["changed"] and "would run `fake-ifreload`" in would["msg"]
    assert (tmp_path / "live.json").read_text() != (tmp_path / "good.json").read_text(), "check mode repaired"

    repair = run_module({"plan": plan, "wait_seconds": 0, "repair_command": "fake-ifreload"})
    assert repair["changed"] and repair["repaired"] == ["fabric port (dgx02 storage0) swp2: MTU 1500, expected 9216"]
    again = run_module({"plan": plan, "wait_seconds": 0, "repair_command": "fake-ifreload"})
    assert not again["changed"] and again["mismatches"] == []
