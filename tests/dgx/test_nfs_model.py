"""roles/dgx_nfs model: validation, server selection per mode, option rendering, /proc/mounts drift."""

from __future__ import annotations

import copy

import pytest
from ansible.module_utils.dgx_nfs import (
    DesiredMount,
    check_mounts,
    compare_live,
    describe,
    desired_mount,
    find_mount,
    fstab_in_sync,
    parse_mounts_table,
    plan_cycles,
    render_options,
    select_server,
)
from dgx_nfs_plan import build_plan
from dgx_testlib import dgx_hosts, fixture_text, load_group_vars, powerscale_nodes

PROD = load_group_vars("production", "nfs_client")
LAB = load_group_vars("lab", "nfs_client")
PROD_EXPORTS = {e["path"]: e["purpose"] for e in load_group_vars("production", "exports")["powerscale_exports"]}
SMARTCONNECT = load_group_vars("production", "storage")["powerscale_smartconnect"]
DGX = list(dgx_hosts("production"))


def _mount(**changes):
    entry = copy.deepcopy(LAB["nfs_mounts"][0])
    entry.update(changes)
    return entry


# ------------------------------------------------------------------------------------------ inventories


@pytest.mark.parametrize("site", ["production", "lab"])
def test_both_inventories_pass_the_check(site):
    exports = {e["path"]: e["purpose"] for e in load_group_vars(site, "exports")["powerscale_exports"]}
    assert check_mounts("dgx01", load_group_vars(site, "nfs_client")["nfs_mounts"], exports) == []


def test_lab_and_production_mounts_have_the_same_keys():
    assert [sorted(m) for m in PROD["nfs_mounts"]] == [sorted(m) for m in LAB["nfs_mounts"]]


# ------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("changes", "variable", "fragment"),
    [
        ({"extra_options": ["noatime", "bogus"]}, "nfs_mounts[0].extra_options[1]", "unknown mount option 'bogus'"),
        ({"extra_options": ["soft"]}, "nfs_mounts[0].extra_options[0]", "typed field"),
        ({"extra_options": ["nconnect=16"]}, "nfs_mounts[0].extra_options[0]", "typed field"),
        ({"hard": False}, "nfs_mounts[0].hard", "training data must not be soft-mounted"),
        ({"nconnect": 17}, "nfs_mounts[0].nconnect", "1..16"),
        ({"rsize": 1000000}, "nfs_mounts[0].rsize", "power of two"),
        ({"wsize": 2097152}, "nfs_mounts[0].wsize", "power of two"),
        ({"vers": "5"}, "nfs_mounts[0].vers", "unsupported NFS version"),
        ({"proto": "udp"}, "nfs_mounts[0].proto", "tcp or rdma"),
        ({"mount_point": "/etc"}, "nfs_mounts[0].mount_point", "system directory"),
        ({"export": "/data"}, "nfs_mounts[0].export", "/ifs/"),
        ({"export": "/ifs/data/missing"}, "nfs_mounts[0].export", "not an export"),
        ({"timeo": 0}, "nfs_mounts[0].timeo", "1..6000"),
        ({"colour": "blue"}, "nfs_mounts[0].colour", "unknown key"),
        ({"purpose": "scratch"}, "nfs_mounts[0].purpose", "differs from the export's purpose training"),
    ],
)
def test_bad_entry_is_refused_with_variable_and_fix(changes, variable, fragment):
    problems = check_mounts("dgx01", [_mount(**changes)], PROD_EXPORTS)
    assert problems, f"{changes} was accepted"
    assert any(p.variable == variable and fragment in p.problem for p in problems), problems
    assert all(p.fix for p in problems)


def test_soft_scratch_mount_is_allowed_but_not_training():
    scratch = copy.deepcopy(LAB["nfs_mounts"][1])
    scratch["hard"] = False
    assert check_mounts("dgx01", [scratch], PROD_EXPORTS) == []


def test_duplicate_mount_point_is_refused():
    problems = check_mounts("dgx01", [_mount(), _mount(export="/ifs/data/scratch", purpose="scratch")], PROD_EXPORTS)
    assert any("same mount point" in p.problem for p in problems)


def test_missing_typed_field_is_refused():
    entry = _mount()
    del entry["nconnect"]
    assert [p.variable for p in check_mounts("dgx01", [entry])] == ["nfs_mounts[0].nconnect"]


@pytest.mark.parametrize("option", ["_netdev", "nofail", "x-systemd.automount", "x-systemd.mount-timeout=30",
                                    "actimeo=60", "sec=krb5p", "lookupcache=positive", "noatime"])
def test_supported_extra_options_pass(option):
    assert check_mounts("dgx01", [_mount(extra_options=[option])]) == []


# ------------------------------------------------------------------------------------------ servers


def test_static_mode_uses_the_mapped_node_nic_address():
    choice, problems = select_server("static", "dgx02", DGX, PROD["nfs_server_map"], powerscale_nodes("production"),
                                     SMARTCONNECT)
    assert problems == []
    assert (choice.server, choice.node, choice.nic) == ("198.51.100.32", "f800-2", "40gige-2")


def test_static_mode_rejects_a_server_that_is_not_in_the_inventory():
    bad = {"dgx01": {"node": "f800-9", "nic": "40gige-1"}}
    choice, problems = select_server("static", "dgx01", DGX, bad, powerscale_nodes("production"), SMARTCONNECT)
    assert choice is None
    assert problems[0].variable == "nfs_server_map.dgx01.node" and "not a host of the powerscale group" in \
        problems[0].problem and "f800-1" in problems[0].fix


def test_static_mode_rejects_an_unknown_nic_and_a_missing_entry():
    bad = {"dgx01": {"node": "f800-1", "nic": "eth7"}}
    _choice, problems = select_server("static", "dgx01", DGX, bad, powerscale_nodes("production"), SMARTCONNECT)
    assert problems[0].variable == "nfs_server_map.dgx01.nic"
    _choice, problems = select_server("static", "dgx03", DGX, bad, powerscale_nodes("production"), SMARTCONNECT)
    assert problems[0].variable == "nfs_server_map.dgx03"


def test_round_robin_spreads_dgx_over_nodes_first():
    nodes = powerscale_nodes("production")
    servers = [select_server("round_robin", h, DGX, {}, nodes, SMARTCONNECT)[0] for h in DGX]
    assert [s.node for s in servers] == ["f800-1", "f800-2", "f800-3", "f800-4"]
    assert [s.server for s in servers] == ["198.51.100.21", "198.51.100.22", "198.51.100.23", "198.51.100.24"]
    six = [*DGX, "dgx05", "dgx06"]
    fifth, sixth = (select_server("round_robin", h, six, {}, nodes, SMARTCONNECT)[0] for h in ("dgx05", "dgx06"))
    assert (fifth.server, sixth.server) == ("198.51.100.31", "198.51.100.32")


def test_round_robin_wraps_on_a_single_address():
    nodes = powerscale_nodes("lab")
    hosts = ["dgx01", "dgx02", "dgx03"]
    assert {select_server("round_robin", h, hosts, {}, nodes, None)[0].server for h in hosts} == {"198.51.100.21"}


def test_smartconnect_mode_uses_the_zone_name_or_refuses_when_disabled():
    choice, problems = select_server("smartconnect", "dgx01", DGX, {}, [], SMARTCONNECT)
    assert problems == [] and choice.server == "dl.storage.example.com"
    _choice, problems = select_server("smartconnect", "dgx01", DGX, {}, [], {**SMARTCONNECT, "enabled": False})
    assert problems and "disabled" in problems[0].problem


def test_smartconnect_zone_must_be_a_dns_name_for_the_plan_as_for_preflight():
    # one rule (dgx_nfs.select_server, which preflight's rule_server_mapping calls): the plan took any non-empty zone
    _choice, problems = select_server("smartconnect", "dgx01", DGX, {}, [], {**SMARTCONNECT, "zone": "storage"})
    assert [(p.variable, p.value) for p in problems] == [("powerscale_smartconnect.zone", "storage")]


def test_unknown_mode_is_refused():
    _choice, problems = select_server("anycast", "dgx01", DGX, {}, [], None)
    assert problems[0].variable == "nfs_server_mode"


# ------------------------------------------------------------------------------------------ rendering


def test_render_options_are_typed_first_in_a_stable_order():
    assert ",".join(render_options(LAB["nfs_mounts"][0])) == (
        "vers=3,proto=tcp,nconnect=4,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,"
        "noatime,nodiratime,_netdev")
    assert "fsc" in render_options(_mount(fsc=True))
    assert "soft" in render_options(_mount(hard=False))


def test_plan_module_builds_the_lab_plan_and_refuses_bad_input():
    params = {
        "host": "dgx02", "dgx_hosts": ["dgx01", "dgx02"], "nfs_server_mode": "static",
        "nfs_server_map": LAB["nfs_server_map"], "powerscale_nodes": dict(powerscale_nodes("lab")),
        "powerscale_smartconnect": {}, "nfs_mounts": LAB["nfs_mounts"],
        "powerscale_exports": load_group_vars("lab", "exports")["powerscale_exports"],
    }
    plan, rows = build_plan(params)
    assert rows == []
    assert [m["src"] for m in plan["mounts"]] == ["198.51.100.21:/ifs/data/training",
                                                  "198.51.100.21:/ifs/data/scratch"]
    assert plan["fsc_needed"] is False
    bad = {**params, "nfs_mounts": [_mount(extra_options=["bogus"])], "nfs_server_map": {}}
    plan, rows = build_plan(bad)
    assert plan == {} and {r["variable"] for r in rows} == {"nfs_mounts[0].extra_options[0]",
                                                            "nfs_server_map.dgx02"}
    assert all(r["host"] == "dgx02" for r in rows)


# ------------------------------------------------------------------------------------------ /proc/mounts


def _lab_desired(index: int = 0, **changes) -> DesiredMount:
    return desired_mount(_mount(**changes) if index == 0 else LAB["nfs_mounts"][1], "198.51.100.21")


def test_parse_proc_mounts():
    entries = parse_mounts_table(fixture_text("proc-mounts-lab.txt"))
    training = find_mount(entries, "/mnt/training/")
    assert training.fstype == "nfs" and training.options["nconnect"] == "4" and "hard" in training.options
    assert find_mount(entries, "/srv/data disk").fstype == "ext4"
    assert find_mount(entries, "/mnt/nothing") is None


def test_live_share_in_sync_with_negotiated_rsize_reported():
    live = find_mount(parse_mounts_table(fixture_text("proc-mounts-lab.txt")), "/mnt/training")
    result = compare_live(_lab_desired(), live)
    assert result.in_sync, describe(result)
    assert [(d.option, d.desired, d.live) for d in result.negotiated] == [("rsize", 1048576, 262144),
                                                                         ("wsize", 1048576, 262144)]


def test_changed_nconnect_is_drift():
    live = find_mount(parse_mounts_table(fixture_text("proc-mounts-lab.txt")), "/mnt/training")
    result = compare_live(_lab_desired(nconnect=8), live)
    assert not result.in_sync
    assert [(d.option, d.desired, d.live) for d in result.drift] == [("nconnect", 8, 4)]
    assert "nconnect: live 4, desired 8" in describe(result)


@pytest.mark.parametrize(
    ("changes", "option"),
    [({"vers": "4.1"}, "vers"), ({"hard": False, "purpose": "scratch"}, "hard"), ({"timeo": 300}, "timeo"),
     ({"retrans": 5}, "retrans"), ({"fsc": True}, "fsc"), ({"rsize": 131072}, "rsize"),
     ({"extra_options": ["_netdev"]}, "noatime"), ({"export": "/ifs/data/other"}, "source")],
)
def test_each_kernel_visible_change_is_drift(changes, option):
    live = find_mount(parse_mounts_table(fixture_text("proc-mounts-lab.txt")), "/mnt/training")
    result = compare_live(_lab_desired(**changes), live)
    assert option in [d.option for d in result.drift], describe(result)


def test_fstab_only_options_are_not_drift():
    live = find_mount(parse_mounts_table(fixture_text("proc-mounts-lab.txt")), "/mnt/training")
    result = compare_live(_lab_desired(extra_options=["noatime", "nodiratime", "_netdev", "nofail",
                                                      "x-systemd.mount-timeout=30"]), live)
    assert result.in_sync, describe(result)


def test_raised_rsize_request_is_drift_only_when_the_request_changed():
    live = find_mount(parse_mounts_table(fixture_text("proc-mounts-lab.txt")), "/mnt/training")
    old_fstab = parse_mounts_table(
        "198.51.100.21:/ifs/data/training /mnt/training nfs vers=3,proto=tcp,nconnect=4,rsize=262144,"
        "wsize=262144,hard,timeo=600,retrans=2,noatime,nodiratime,_netdev 0 0")[0]
    result = compare_live(_lab_desired(), live, previous=old_fstab)
    assert {d.option for d in result.drift} == {"rsize", "wsize"}
    same_fstab = parse_mounts_table(f"x /mnt/training nfs {_lab_desired().opts} 0 0")[0]
    assert compare_live(_lab_desired(), live, previous=same_fstab).in_sync


def test_nconnect_absent_in_proc_mounts_means_one():
    live = parse_mounts_table("s:/ifs/data/training /mnt/training nfs rw,vers=3,rsize=1048576,wsize=1048576,"
                              "hard,proto=tcp,timeo=600,retrans=2 0 0")[0]
    assert compare_live(_lab_desired(nconnect=1, extra_options=[]), live).drift[0].option == "source"
    desired = desired_mount(_mount(nconnect=1, extra_options=[]), "s")
    assert compare_live(desired, live).in_sync


def test_nfs4_fstype_and_version():
    live = parse_mounts_table("198.51.100.21:/ifs/data/training /mnt/training nfs4 rw,noatime,nodiratime,"
                              "vers=4.1,rsize=1048576,wsize=1048576,hard,nconnect=4,proto=tcp,timeo=600,"
                              "retrans=2 0 0")[0]
    assert compare_live(_lab_desired(vers="4.1"), live).in_sync
    assert compare_live(_lab_desired(vers="4.2"), live).drift[0].option == "vers"


def test_foreign_and_absent_mounts():
    entries = parse_mounts_table(fixture_text("proc-mounts-lab.txt"))
    foreign = compare_live(desired_mount(_mount(mount_point="/srv/data disk"), "x"),
                           find_mount(entries, "/srv/data disk"))
    assert foreign.foreign == "ext4 /dev/vdb1" and not foreign.in_sync
    absent = compare_live(_lab_desired(), None)
    assert not absent.mounted and describe(absent) == "not mounted"


# ------------------------------------------------------------------------------------------ the live module


def _run_live(tmp_path, opts: str, check: bool, scratch_opts: str | None = None,
              packages: list[str] | None = None) -> dict:
    """dgx_nfs_live through ansible on localhost, reading the fixture as /proc/mounts (never unmounts here)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from dgx_testlib import FIXTURES, ROOT

    mounts = [{"path": "/mnt/training", "src": "198.51.100.21:/ifs/data/training", "opts": opts, "fstype": "nfs"}]
    if scratch_opts:
        mounts.append({"path": "/mnt/scratch", "src": "198.51.100.21:/ifs/data/scratch", "opts": scratch_opts,
                       "fstype": "nfs"})
    fstab = tmp_path / "fstab"
    fstab.write_text("".join(f"{m['src']} {m['path']} nfs {m['opts']} 0 0\n" for m in mounts))
    args = json.dumps({"mounts": mounts, "remount": True, "fstab": str(fstab),
                       "proc_mounts": str(FIXTURES / "proc-mounts-lab.txt"), "packages": packages or []})
    env = {**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"}
    cmd = [str(Path(sys.executable).parent / "ansible"), "-i", "localhost,", "localhost", "-c", "local", "-m",
           "dgx_nfs_live", "-a", args, "-e", f"ansible_python_interpreter={sys.executable}", "--diff"]
    proc = subprocess.run(cmd + (["--check"] if check else []), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_live_module_in_sync_share_is_left_alone_and_negotiation_is_warned(tmp_path):
    module = _run_live(tmp_path, _lab_desired().opts, check=False)
    [result] = module["mounts"]
    assert module["changed"] is False and result["in_sync"] is True and result["remounted"] is False
    assert [d["option"] for d in result["negotiated"]] == ["rsize", "wsize"]
    assert any("negotiated rsize=262144" in w for w in module.get("warnings", [])), module


def test_live_module_check_mode_reports_the_remount_it_would_do(tmp_path):
    scratch = desired_mount({**LAB["nfs_mounts"][1], "nconnect": 8}, "198.51.100.21").opts
    module = _run_live(tmp_path, _lab_desired(nconnect=8).opts, check=True, scratch_opts=scratch)
    result, scratch_result = module["mounts"]
    assert module["changed"] is True and result["remounted"] is False and result["in_sync"] is False
    assert scratch_result["changed"] is True  # nconnect is per server: the scratch share goes down and up too
    assert result["drift"] == [{"option": "nconnect", "desired": 8, "live": 4, "note": ""}]
    assert "would be remounted" in result["summary"]
    assert "nconnect=8" in module["diff"]["after"] and "nconnect=4" in module["diff"]["before"]


def test_live_module_with_a_package_missing_reads_and_remounts_nothing(tmp_path):
    """The role's one call on a converged node reads the packages first (the host_state rule); while one is missing
    (mount.nfs may be absent) the module touches no mount, even with a drifted share and remount: true."""
    missing = _run_live(tmp_path, _lab_desired(nconnect=8).opts, check=False,
                        packages=["bash", "nfs-common-not-a-package-xyz"])
    assert missing["changed"] is False and missing["mounts"] == []
    assert missing["packages_missing"] == ["nfs-common-not-a-package-xyz"]
    installed = _run_live(tmp_path, _lab_desired().opts, check=True, packages=["bash"])
    assert installed["packages_missing"] == [] and installed["mounts"][0]["in_sync"] is True


def test_live_module_check_mode_reports_a_blocked_nconnect_change(tmp_path):
    module = _run_live(tmp_path, _lab_desired(nconnect=8).opts, check=True)  # /mnt/scratch is not in the list
    [result] = module["mounts"]
    assert module["changed"] is False and "/mnt/scratch also mount from 198.51.100.21" in result["blocked"]
    assert result["summary"].startswith("NOT remounted")


# ------------------------------------------------------------------------------------------ shared NFS client


def test_differing_nconnect_on_one_server_is_refused():
    mounts = copy.deepcopy(LAB["nfs_mounts"])
    mounts[1]["nconnect"] = 2
    problems = check_mounts("dgx01", mounts, PROD_EXPORTS)
    assert [p.variable for p in problems] == ["nfs_mounts[1].nconnect"]
    assert "one NFS client" in problems[0].problem and problems[0].fix == "set nconnect: 4 on both"
    mounts[1]["vers"] = "4.1"  # another version is another client: allowed
    assert check_mounts("dgx01", mounts, PROD_EXPORTS) == []


def _cycles(desired, text):
    table = parse_mounts_table(text)
    before = {w.path: compare_live(w, find_mount(table, w.path)) for w in desired}
    return [([w.path for w in group], blocked) for group, blocked in plan_cycles(desired, before, table)]


def test_changed_nconnect_cycles_every_share_of_the_server_together():
    text = fixture_text("proc-mounts-lab.txt").replace("nconnect=2", "nconnect=4")
    training, scratch = _lab_desired(nconnect=6), desired_mount({**LAB["nfs_mounts"][1], "nconnect": 6},
                                                                "198.51.100.21")
    assert _cycles([training, scratch], text) == [(["/mnt/training", "/mnt/scratch"], "")]
    assert _cycles([_lab_desired(), desired_mount(LAB["nfs_mounts"][1], "198.51.100.21")], text) == []


def test_a_per_mount_drift_cycles_only_that_share():
    text = fixture_text("proc-mounts-lab.txt").replace("nconnect=2", "nconnect=4")
    scratch = desired_mount({**LAB["nfs_mounts"][1], "timeo": 300}, "198.51.100.21")
    assert _cycles([_lab_desired(), scratch], text) == [(["/mnt/scratch"], "")]


def test_nconnect_change_is_blocked_by_a_share_the_inventory_does_not_own():
    text = fixture_text("proc-mounts-lab.txt") + (
        "198.51.100.21:/ifs/home /home/shared nfs rw,vers=3,hard,nconnect=4,proto=tcp,timeo=600,retrans=2 0 0\n")
    [(group, blocked)] = _cycles([_lab_desired(nconnect=6)], text)
    assert group == ["/mnt/training"] and "/home/shared, /mnt/scratch also mount from 198.51.100.21" in blocked


# ------------------------------------------------------------------ fstab as ansible.posix.mount compares it
FSTAB_SHARE = DesiredMount(src="198.51.100.21:/ifs/data/training", path="/mnt/training", fstype="nfs",
                           options=("vers=3", "proto=tcp", "hard", "_netdev"))
FSTAB_LINE = "198.51.100.21:/ifs/data/training /mnt/training nfs vers=3,proto=tcp,hard,_netdev 0 0\n"


@pytest.mark.parametrize(
    ("text", "in_sync"),
    [
        ("/dev/vda / ext4 rw 0 1\n" + FSTAB_LINE, True),
        (FSTAB_LINE.replace(" ", "\t"), True),
        ("", False),  # absent: the module appends it
        (FSTAB_LINE.replace(",hard", ",soft"), False),
        (FSTAB_LINE.replace(" 0 0", ""), False),  # no dump/pass: posix.mount compares 0 with "0" and rewrites
        (FSTAB_LINE.replace(" 0 0", " 0 2"), False),
        (FSTAB_LINE.replace("198.51.100.21", "198.51.100.22"), False),
        (FSTAB_LINE + FSTAB_LINE.replace("hard", "soft"), False),  # every line of the path is rewritten
        ("# " + FSTAB_LINE, False),
    ],
)
def test_fstab_in_sync_is_posix_mount_rule(text, in_sync):
    assert fstab_in_sync(text, FSTAB_SHARE) is in_sync


def test_fstab_in_sync_escapes_spaces_as_posix_mount_writes():
    share = DesiredMount(src="server:/ifs/my data", path="/mnt/my data", fstype="nfs", options=("hard",))
    assert fstab_in_sync("server:/ifs/my\\040data /mnt/my\\040data nfs hard 0 0\n", share)
