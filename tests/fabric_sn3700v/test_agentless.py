"""The agentless files method's pieces: text edits, the remote steps through a local `sh -c` (what the switch's
shell runs), fail-closed parsing, and cumulus_config_file (action plugin) ad hoc over the local connection."""

from __future__ import annotations

import json
import subprocess

import pytest
from ansible.module_utils.cumulus_switch import (
    FRR_MARKER,
    Raw,
    SwitchError,
    expand_sources,
    install_file,
    live_mismatches,
    parse_json,
    read_file,
    replace_block,
    set_lines,
)

from .conftest import ROOT, run_action
from .test_live import LAB_PLAN, lab_live

BEGIN = FRR_MARKER.replace("{mark}", "BEGIN")
END = FRR_MARKER.replace("{mark}", "END")


def sh(command: str) -> Raw:
    proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30)
    return Raw(command, proc.returncode, proc.stdout, proc.stderr)


def test_block_is_appended_then_replaced_in_place():
    site = "frr version 8.4\nservice integrated-vtysh-config\n!\nline vty\n"
    first = replace_block(site, "hostname sw1\n")
    assert first == site + f"{BEGIN}\nhostname sw1\n{END}\n"
    assert replace_block(first, "hostname sw1\n") == first
    moved = first.replace("line vty\n", "") + "line vty\n"
    assert replace_block(moved, "hostname sw2") == moved.replace("hostname sw1", "hostname sw2")


def test_ports_conf_lines_set_where_they_are():
    text = "# ports.conf\n1=100G\n49=100G\n50=100G\n49=40G\n"
    assert set_lines(text, {"49": "4x25G", "52": "4x25G"}) == "# ports.conf\n1=100G\n49=4x25G\n50=100G\n52=4x25G\n"
    assert set_lines(set_lines(text, {"49": "4x25G"}), {"49": "4x25G"}) == set_lines(text, {"49": "4x25G"})


def test_install_checks_the_candidate_and_swaps_in_one_step(tmp_path):
    live = tmp_path / "frr.conf"
    assert read_file(sh, str(live)) is None
    live.write_text("old\n")
    live.chmod(0o640)
    with pytest.raises(SwitchError, match=r"rejected the new .*frr.conf \(rc=1\).*line 2: unknown command"):
        install_file(sh, str(live), "new\n", "sh -c 'echo \"line 2: unknown command\" >&2; exit 1' %s")
    assert live.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["frr.conf"]
    done = install_file(sh, str(live), "new\n'quoted' $HOME `x`\n", "test -s %s")
    assert read_file(sh, str(live)) == "new\n'quoted' $HOME `x`\n"
    assert oct(live.stat().st_mode & 0o777) == "0o640"
    assert done.backup and (tmp_path / done.backup.rsplit("/", 1)[1]).read_text() == "old\n"
    with pytest.raises(SwitchError, match="must contain %s"):
        install_file(sh, str(live), "x\n", "vtysh --dryrun")


def test_unparsable_output_fails_closed():
    with pytest.raises(SwitchError, match=r"`bridge -j vlan show` printed no JSON"):
        parse_json(Raw("bridge -j vlan show", 0, "Command \"-j\" is unknown", ""), "reading the bridge VLANs")
    with pytest.raises(SwitchError, match=r"failed on the switch \(rc=255\): Cannot open netlink socket"):
        parse_json(Raw("ip -d -j link show", 255, "", "Cannot open netlink socket"), "reading the links")
    links = lab_live()[0]
    outputs = {"ip -d -j link show": json.dumps(links), "bridge -j vlan show": "not json",
               "ip -j addr show dev lo": "[]"}
    with pytest.raises(SwitchError, match="bridge -j vlan show"):
        live_mismatches(lambda c: Raw(c, 0, outputs[c], ""), LAB_PLAN, True)


def test_source_patterns_are_expanded_on_the_switch_only_when_safe(tmp_path):
    (tmp_path / "interfaces.d").mkdir()
    (tmp_path / "interfaces.d" / "a.intf").write_text("auto swp40\n")
    base = str(tmp_path / "interfaces")
    assert expand_sources(sh, base, ["interfaces.d/*.intf"]) == [str(tmp_path / "interfaces.d" / "a.intf")]
    assert expand_sources(sh, base, ["interfaces.d/*.none"]) == []
    with pytest.raises(SwitchError, match="is not expanded"):
        expand_sources(sh, base, ["/etc/network/$(reboot)/*"])


def test_config_file_action_block_and_lines(tmp_path):
    frr = tmp_path / "frr.conf"
    frr.write_text("frr defaults datacenter\n!\n")
    args = {"path": str(frr), "block": "hostname sw1\n", "validate": "test -s %s", "backup": False}
    would = run_action("cumulus_config_file", args, check=True)
    assert would["changed"] and "hostname sw1" in would["diff"]["after"]
    assert frr.read_text() == "frr defaults datacenter\n!\n", "check mode wrote the file"
    assert run_action("cumulus_config_file", args)["changed"]
    assert not run_action("cumulus_config_file", args)["changed"]
    rejected = run_action("cumulus_config_file", {**args, "block": "hostname sw2\n",
                                                  "validate": "sh -c 'echo bad line >&2; exit 2' %s"})
    assert rejected["failed"] and "rejected the new" in rejected["msg"] and "bad line" in rejected["msg"]
    assert "hostname sw1" in frr.read_text()
    ports = tmp_path / "ports.conf"
    ports.write_text("49=100G\n")
    assert run_action("cumulus_config_file", {"path": str(ports), "lines": {"49": "4x25G"}, "backup": False})["changed"]
    assert ports.read_text() == "49=4x25G\n"
    missing = run_action("cumulus_config_file", {"path": str(tmp_path / "none.conf"), "lines": {"1": "x"}})
    assert missing["failed"] and "does not exist on the switch" in missing["msg"]


def test_forced_speed_without_fec_is_refused_before_the_switch_is_touched(tmp_path):
    # files method, speeds forced, 100G cables but no FEC mode for 100G: the role stops at its check and names
    # host, variable, value and fix; the interfaces file (a path the run could write, here) is never created.
    from .conftest import fabric_vars, run_playbook, write_inventory
    from .test_nvue_role import cables, switch_vars

    target = tmp_path / "interfaces"
    group_vars = fabric_vars(storage_fabric_method="files", storage_fabric_port_speed_managed=True,
                             storage_fabric_port_fec={25: "rs"}, sn3700v_interfaces_path=str(target),
                             storage_fabric_ca_path="")
    inventory = write_inventory(tmp_path / "hosts.yml", {"swa": switch_vars(1)},
                                cables("swa", {"dgx01": "swp1"}), group_vars)
    run = run_playbook(inventory)
    assert run.stats("swa")["failures"] == 1, run.text()[-3000:]
    failure = run.failure("swa")
    # the plan's row (cumulus_fabric.forced_speed_fec_problems): host: variable=value: problem. Fix: fix
    assert "swa: storage_fabric_port_fec={25: 'rs'}: has no valid FEC" in failure
    assert "forced port speeds [100] Gb/s" in failure and "Fix:" in failure
    assert not target.exists()


# Actions that never run Python on the switch: the controller-side ones (assert, set_fact, meta, include_tasks,
# debug), raw, and the role's agentless action plugins.
AGENTLESS = {"ansible.builtin.assert", "ansible.builtin.set_fact", "ansible.builtin.meta", "ansible.builtin.debug",
             "ansible.builtin.include_tasks", "ansible.builtin.fail", "ansible.builtin.raw", "cumulus_interfaces",
             "cumulus_config_file", "cumulus_release_facts", "cumulus_fabric_verify"}
TASK_KEYS = {"name", "when", "register", "notify", "vars", "changed_when", "failed_when", "check_mode", "become",
             "listen", "delegate_to", "block", "tags", "loop", "run_once", "apply", "no_log"}


def _actions(tasks: list[dict]) -> list[tuple[str, str, bool]]:
    out = []
    for task in tasks:
        if "block" in task:
            out += _actions(task["block"])
            continue
        action = next(k for k in task if k not in TASK_KEYS)
        out.append((task.get("name", ""), action, task.get("delegate_to") == "localhost"))
    return out


def test_files_method_and_handlers_run_no_module_on_the_switch():
    import yaml

    from .inventory_data import ROOT

    role = ROOT / "roles/sn3700v"
    tasks = yaml.safe_load((role / "tasks/files.yml").read_text())
    handlers = yaml.safe_load((role / "handlers/main.yml").read_text())
    on_switch = [(name, action) for name, action, local in _actions(tasks) + _actions(handlers)
                 if not local and action not in AGENTLESS]
    assert on_switch == [], f"these would need Python on the switch: {on_switch}"
    plugins = {p.stem for p in (ROOT / "plugins/action").glob("cumulus_*.py")}
    assert {"cumulus_interfaces", "cumulus_config_file", "cumulus_fabric_verify"} <= plugins


def test_breakout_reloads_switchd_then_ifupdown2():
    import yaml

    from .inventory_data import ROOT

    role = ROOT / "roles/sn3700v"
    handlers = yaml.safe_load((role / "handlers/main.yml").read_text())
    order = [h["name"] for h in handlers]
    by_name = {h["name"]: h for h in handlers}
    # Ansible runs handlers in the order they are written, whatever order they were notified in.
    assert order.index("Reload switchd") < order.index("Reload ifupdown2 interfaces")
    assert by_name["Reload switchd"]["ansible.builtin.raw"] == "systemctl reload switchd.service"
    assert "restart" not in str(handlers)
    breakout = next(t for t in yaml.safe_load((role / "tasks/files.yml").read_text())
                    if t.get("name", "").startswith("Files | Set each declared breakout in ports.conf"))
    assert breakout["notify"] == ["Reload switchd", "Reload ifupdown2 interfaces"]


def test_breakouts_are_written_in_the_switchs_release_syntax(tmp_path):
    # the real /etc/lsb-release of a 4.2.0 switch (tests/fixtures/cumulus/real): ports.conf takes 4x25G; the
    # same plan on a 5.4 switch takes 4x, the lanes' speed set apart; anything unknown stops before a change
    real = (ROOT / "tests/fixtures/cumulus/real/lsb-release-4.2.0.txt").read_text()
    lsb = tmp_path / "lsb-release"
    lsb.write_text(real)
    old = run_action("cumulus_release_facts", {"breakouts": {"swp49": "4x25G"}, "path": str(lsb)})
    assert not old.get("failed"), old
    assert (old["release"], old["syntax"], old["ports_conf"], old["lane_speeds"]) == (
        "4.2.0", "speed", {"49": "4x25G"}, {"swp49": None})
    lsb.write_text(real.replace("4.2.0", "5.4.0"))
    new = run_action("cumulus_release_facts", {"breakouts": {"swp49": "4x25G"}, "path": str(lsb)})
    assert (new["syntax"], new["ports_conf"], new["lane_speeds"]) == ("lanes", {"49": "4x"}, {"swp49": "25G"})
    wrong = run_action("cumulus_release_facts", {"breakouts": {"swp49": "4x25G"}, "path": str(lsb), "expected": "4.2.1"})
    assert wrong["failed"] and "runs Cumulus Linux 5.4.0, the inventory says 4.2.1" in wrong["msg"]
    lsb.write_text('DISTRIB_ID=Debian\nDISTRIB_RELEASE=12\n')
    debian = run_action("cumulus_release_facts", {"breakouts": {"swp49": "4x25G"}, "path": str(lsb)})
    assert debian["failed"] and "not Cumulus Linux's" in debian["msg"] and "nothing was changed" in debian["msg"]
    missing = run_action("cumulus_release_facts", {"breakouts": {"swp49": "4x25G"}, "path": str(tmp_path / "none")})
    assert missing["failed"] and "/etc/lsb-release is missing" in missing["msg"]
