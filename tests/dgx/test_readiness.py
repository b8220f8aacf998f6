"""roles/dgx_host readiness: nvidia-smi/ibstat parsing and the checks as data (8 expected, 7 found = FAIL)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.module_utils.dgx_readiness import (
    FAIL,
    NOT_APPLICABLE,
    PASS,
    DgxFacts,
    Expectations,
    ToolResult,
    evaluate,
    failures,
    parse_ibstat,
    parse_nvidia_smi,
)
from dgx_testlib import ROOT, dgx_hosts, fixture_text, load_group_vars

PROD = load_group_vars("production", "dgx")
LAB = load_group_vars("lab", "dgx")
PROD_NICS = dgx_hosts("production")["dgx01"]["storage_nics"]
LAB_NICS = dgx_hosts("lab")["dgx01"]["storage_nics"]


def prod_expectations() -> Expectations:
    return Expectations.from_inventory(PROD["dgx_models"]["dgx-a100"], PROD["dgx_nvidia_driver_version"],
                                       PROD_NICS, PROD["dgx_sysctl"])


def healthy_dgx(gpus: str = "nvidia-smi-8.csv", ibstat: str = "ibstat-10-dgx-a100.txt",
                driver: str = PROD["dgx_nvidia_driver_version"]) -> DgxFacts:
    # the nvidia-smi fixture was taken at driver 450.51.06: the driver column is set to the one asked for
    return DgxFacts(
        gpus=[dataclasses.replace(g, driver_version=driver) for g in parse_nvidia_smi(fixture_text(gpus))],
        gpu_probe=ToolResult(present=True),
        hcas=parse_ibstat(fixture_text(ibstat)), hca_probe=ToolResult(present=True),
        # GPUDirect RDMA through MLNX_OFED's nv_peer_mem (DGX OS 5 built the DeepOps way; any driver branch)
        fabricmanager="active", modules=["mlx5_core", "nvidia", "nv_peer_mem"],
        nic_mtu={"enp225s0f0": 9000},
        # /proc/sys prints tcp_rmem with tabs: the comparison normalizes whitespace.
        sysctl={k: "\t".join(str(v).split()) for k, v in PROD["dgx_sysctl"].items()},
    )


def by_name(checks):
    return {c.name: c for c in checks}


def test_parse_nvidia_smi_and_ibstat():
    gpus = parse_nvidia_smi(fixture_text("nvidia-smi-8.csv"))
    assert len(gpus) == 8 and gpus[7].pci_bus_id == "00000000:BD:00.0" and gpus[0].driver_version == "450.51.06"
    hcas = parse_ibstat(fixture_text("ibstat-8-active.txt"))
    assert [h.name for h in hcas] == [f"mlx5_{i}" for i in range(8)]
    assert hcas[0].ports[0].state == "Active" and hcas[0].ports[0].rate_gbps == 200 and hcas[0].ca_type == "MT4123"


@pytest.mark.parametrize("text", ["NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
                                  "0, A100, 450.51.06"])
def test_unparsable_nvidia_smi_raises(text):
    with pytest.raises(ValueError, match="nvidia-smi line 1"):
        parse_nvidia_smi(text)


def test_unparsable_ibstat_raises():
    with pytest.raises(ValueError, match="no CA block"):
        parse_ibstat("ibpanic: [12] could not open umad")


def test_healthy_production_dgx_passes_every_check():
    checks = evaluate(healthy_dgx(), prod_expectations())
    assert failures(checks) == []
    assert {c.status for c in checks} == {PASS}
    assert {"gpu_count", "gpu_model", "driver_version", "nvidia_fabricmanager", "peer_memory", "hca_count",
            "hca_state", "hca_rate", "mtu:enp225s0f0", "sysctl:net.ipv4.tcp_rmem"} <= set(by_name(checks))


def test_seven_gpus_of_eight_is_a_failure_not_a_skip():
    checks = by_name(evaluate(healthy_dgx(gpus="nvidia-smi-7.csv"), prod_expectations()))
    assert checks["gpu_count"].status == FAIL
    assert (checks["gpu_count"].expected, checks["gpu_count"].actual) == (8, 7)
    assert "missing GPU is a failure" in checks["gpu_count"].detail


def test_no_nvidia_smi_on_a_dgx_fails_every_gpu_check():
    facts = healthy_dgx()
    facts.gpus, facts.gpu_probe = [], ToolResult(present=False)
    checks = by_name(evaluate(facts, prod_expectations()))
    assert [checks[n].status for n in ("gpu_count", "gpu_model", "driver_version")] == [FAIL, FAIL, FAIL]


def test_nvidia_smi_error_fails_closed():
    facts = healthy_dgx()
    facts.gpus, facts.gpu_probe = [], ToolResult(present=True, error="rc 9: NVIDIA-SMI has failed")
    checks = by_name(evaluate(facts, prod_expectations()))
    assert checks["gpu_count"].status == FAIL and "NVIDIA-SMI has failed" in checks["gpu_count"].detail


def test_wrong_driver_model_and_stopped_fabricmanager_fail():
    facts = healthy_dgx()
    facts.gpus[3].driver_version = "470.57.02"
    facts.gpus[5].name = "NVIDIA A100-PCIE-40GB"
    facts.fabricmanager = "inactive"
    failed = {c.name for c in failures(evaluate(facts, prod_expectations()))}
    assert failed == {"driver_version", "gpu_model", "nvidia_fabricmanager"}


def test_peer_memory_module_follows_the_driver_branch():
    # R450 (before R465): only MLNX_OFED's nv_peer_mem exists
    facts = healthy_dgx(driver="450.51.06")
    r450 = prod_expectations()
    r450.driver_version = "450.51.06"
    assert by_name(evaluate(facts, r450))["peer_memory"].status == PASS
    facts.modules = ["nvidia", "nvidia_peermem"]
    check = by_name(evaluate(facts, r450))["peer_memory"]
    assert check.status == FAIL and "does not exist for driver 450" in check.detail
    # R535: either module, exactly one
    r535 = prod_expectations()
    r535.driver_version = "535.183.01"
    for loaded in (["nvidia_peermem"], ["nv_peer_mem"]):
        facts.modules = ["nvidia", *loaded]
        assert by_name(evaluate(facts, r535))["peer_memory"].status == PASS, loaded
    facts.modules = ["nvidia", "nvidia_peermem", "nv_peer_mem"]
    assert "unload nv_peer_mem" in by_name(evaluate(facts, r535))["peer_memory"].detail
    facts.modules = ["nvidia"]
    check = by_name(evaluate(facts, r535))["peer_memory"]
    assert check.status == FAIL and "no GPUDirect RDMA module" in check.detail


def test_a_dgx_a100_with_storage_adapters_passes_on_its_compute_hcas():
    # 10 mlx5 devices: 8 compute HCAs (InfiniBand, 200) and the two storage functions mlx5_4/mlx5_5 (Ethernet, 100)
    checks = by_name(evaluate(healthy_dgx(), prod_expectations()))
    assert all(checks[n].status == PASS for n in ("hca_count", "hca_state", "hca_rate")), checks
    assert checks["hca_count"].actual == 8


def test_a_missing_compute_hca_is_named():
    # the 8-device layout (mlx5_0..7) lacks the compute HCAs mlx5_8 and mlx5_9
    check = by_name(evaluate(healthy_dgx(ibstat="ibstat-8-active.txt"), prod_expectations()))["hca_count"]
    assert check.status == FAIL and "mlx5_8, mlx5_9" in check.detail


def test_down_hca_and_slow_rate_fail():
    checks = by_name(evaluate(healthy_dgx(ibstat="ibstat-10-one-down.txt"), prod_expectations()))
    assert checks["hca_count"].status == PASS
    assert checks["hca_state"].status == FAIL and checks["hca_state"].actual == ["mlx5_3/1:Down"]
    assert checks["hca_rate"].status == FAIL and checks["hca_rate"].actual == ["mlx5_3/1:10"]


def test_mtu_and_sysctl_mismatches_fail():
    facts = healthy_dgx()
    facts.nic_mtu = {"enp225s0f0": 1500}
    facts.sysctl["net.core.rmem_max"] = "212992"
    facts.sysctl["sunrpc.tcp_slot_table_entries"] = None
    failed = by_name(failures(evaluate(facts, prod_expectations())))
    assert set(failed) == {"mtu:enp225s0f0", "sysctl:net.core.rmem_max", "sysctl:sunrpc.tcp_slot_table_entries"}
    assert "not found" in failed["sysctl:sunrpc.tcp_slot_table_entries"].detail


def test_lab_vm_expects_zero_gpus_and_says_why_the_rest_is_not_applicable():
    want = Expectations.from_inventory(LAB["dgx_models"]["lab-vm"], LAB["dgx_nvidia_driver_version"], LAB_NICS,
                                       LAB["dgx_sysctl"])
    facts = DgxFacts(nic_mtu={"storage0": 9000}, sysctl={k: str(v) for k, v in LAB["dgx_sysctl"].items()})
    checks = by_name(evaluate(facts, want))
    assert checks["gpu_count"].status == PASS and checks["gpu_count"].actual == 0
    assert "not installed" in checks["gpu_count"].detail
    assert all(c.detail for c in checks.values() if c.status == NOT_APPLICABLE)
    assert failures(list(checks.values())) == []
    facts.nic_mtu = {"storage0": 1500}
    assert [c.name for c in failures(evaluate(facts, want))] == ["mtu:storage0"]


def _run_dgx_facts(tmp_path: Path, smi_fixture: str | None, check_mode: bool = False) -> dict:
    """Run the real module through ansible on localhost, with fake nvidia-smi/ibstat first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if smi_fixture:
        smi = bin_dir / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\ncat {ROOT / 'tests/dgx/fixtures' / smi_fixture}\n")
        smi.chmod(0o755)
    ibstat = bin_dir / "ibstat"
    ibstat.write_text(f"#!/bin/sh\ncat {ROOT / 'tests/dgx/fixtures/ibstat-8-active.txt'}\n")
    ibstat.chmod(0o755)
    args = json.dumps({"storage_nics": ["lo"], "sysctl_keys": ["net.core.somaxconn"],
                       "expected": {**PROD["dgx_models"]["dgx-a100"], "driver_version": "450.51.06",
                                    "nic_mtu": {"lo": 65536}}})
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_LOCALHOST_WARNING": "0"}
    cmd = [str(Path(sys.executable).parent / "ansible"), "-i", "localhost,", "localhost", "-c", "local", "-m", "dgx_facts",
           "-a", args, "-e", f"ansible_python_interpreter={sys.executable}"] + (["--check"] if check_mode else [])
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_module_end_to_end_with_seven_gpus(tmp_path):
    result = _run_dgx_facts(tmp_path, "nvidia-smi-7.csv", check_mode=True)
    assert result["changed"] is False and result["ready"] is False
    assert "gpu_count" in result["failed_checks"]
    assert result["ansible_facts"]["dgx"]["gpu_count"] == 7 and result["ansible_facts"]["dgx"]["hca_count"] == 8
    assert "FAIL gpu_count: expected 8, actual 7" in result["failure_report"]


# ---------------------------------------------------------------------------------------------- the agentless probe
def _probe(tmp_path: Path, tools: dict[str, str], nics: list[str], keys: list[str], timeout: int = 10) -> str:
    """probe_script run by a real sh, with stand-in tools (name -> shell body) first on PATH."""
    from ansible.module_utils.dgx_readiness import probe_script

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in tools.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    proc = subprocess.run(["sh", "-c", probe_script(nics, keys, timeout)], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_probe_reads_what_the_tools_print_byte_for_byte(tmp_path):
    from ansible.module_utils.dgx_readiness import facts_from_probe, parse_ibstat, parse_nvidia_smi

    fix = ROOT / "tests/dgx/fixtures"
    out = _probe(tmp_path, {"nvidia-smi": f"cat {fix / 'nvidia-smi-8.csv'}",
                            "ibstat": f"cat {fix / 'ibstat-10-dgx-a100.txt'}",
                            "systemctl": "echo active"}, ["lo"], ["net.core.somaxconn"])
    facts = facts_from_probe(out, ["lo"], ["net.core.somaxconn"])
    assert facts.gpus == parse_nvidia_smi(fixture_text("nvidia-smi-8.csv"))
    assert facts.hcas == parse_ibstat(fixture_text("ibstat-10-dgx-a100.txt"))
    assert facts.fabricmanager == "active" and facts.nic_mtu == {"lo": 65536}
    assert facts.sysctl["net.core.somaxconn"] == Path("/proc/sys/net/core/somaxconn").read_text().strip()


def test_the_probe_keeps_a_failed_or_hung_tool_as_its_error(tmp_path):
    from ansible.module_utils.dgx_readiness import facts_from_probe

    out = _probe(tmp_path, {"nvidia-smi": "echo 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate' >&2; exit 9",
                            "ibstat": "sleep 30"}, [], [], timeout=1)
    facts = facts_from_probe(out, [], [])
    assert facts.gpu_probe.present and facts.gpu_probe.error.startswith("rc 9: NVIDIA-SMI has failed")
    assert facts.hca_probe.present and facts.hca_probe.error.startswith("timed out (rc 124)")


def test_a_cut_or_incomplete_probe_answer_fails_closed(tmp_path):
    from ansible.module_utils.dgx_readiness import facts_from_probe, probe_script
    from ansible.module_utils.shell_probe import PROBE_MARK

    out = _probe(tmp_path, {}, ["lo"], [])
    with pytest.raises(ValueError, match=r"lacks the probe.*mtu:lo"):
        facts_from_probe("\n".join(line for line in out.splitlines() if "mtu:lo" not in line), ["lo"], [])
    with pytest.raises(ValueError, match="cut"):
        facts_from_probe(out + f"{PROBE_MARK} gpus 0 QQ==\n", ["lo"], [])
    with pytest.raises(ValueError, match="not base64"):
        facts_from_probe(out.replace(f"{PROBE_MARK} hcas absent - -", f"{PROBE_MARK} hcas 0 %%% -"), ["lo"], [])
    with pytest.raises(ValueError, match="not a name a probe can carry"):
        probe_script(["eth0;reboot"], [], 5)
