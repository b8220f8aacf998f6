"""The lab flow without VMs: the two simulators started with the argv `python -m lab up` uses (lab/topology.yml,
LAB_CONTRACT.md), a run dir laid out as the lab's (pki/, secrets/), and the real playbooks/fabric.yml on the lab
inventory, limited to the qm8700 group."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

from lab.mlnxos_sim.__main__ import parse_args

from .conftest import PASSWORD, ROOT, Sim, free_port, run_playbook

LAB_PORTS = {"qm8700-01": ("18443", "18022"), "qm8700-02": ("18444", "18023")}


def lab_argv(name: str, run_dir: Path) -> list[str]:
    topology = yaml.safe_load((ROOT / "lab/topology.yml").read_text())
    service = next(s for s in topology["host_services"] if s["name"] == name)
    return [a.replace("{python}", sys.executable).replace("{run_dir}", str(run_dir)).replace("{root}", str(ROOT))
            for a in service["argv"]]


def test_the_lab_argv_is_what_the_simulator_parses(tmp_path):
    for name, (https, ssh) in LAB_PORTS.items():
        argv = lab_argv(name, tmp_path)
        assert argv[1:3] == ["-m", "lab.mlnxos_sim"]
        args = parse_args(argv[3:])
        assert (args.name, str(args.https_port), str(args.ssh_port)) == (name, https, ssh)
        assert args.state == tmp_path / "mlnxos" / f"{name}.json"
        assert args.cert == f"{tmp_path}/pki/mlnxos-sim.pem" and args.key == f"{tmp_path}/pki/mlnxos-sim.key"
        assert args.password_file == tmp_path / "secrets/qm8700_api_password"
        assert args.listen == "127.0.0.1"


def test_fabric_playbook_on_the_lab_inventory(tmp_path, pki, host_key):
    # A run dir as `lab up` lays it out: the CA, the mlnxos-sim certificate it signed, the generated secret.
    run_dir = tmp_path / "run"
    (run_dir / "pki").mkdir(parents=True)
    (run_dir / "secrets").mkdir()
    (run_dir / "mlnxos").mkdir()
    shutil.copy(pki.ca, run_dir / "pki/ca.pem")
    shutil.copy(pki.cert, run_dir / "pki/mlnxos-sim.pem")
    shutil.copy(pki.key, run_dir / "pki/mlnxos-sim.key")
    # Every secret `lab up` generates: preflight resolves them all, whatever the stage.
    for secret in ("powerscale_api_password", "storage_fabric_password", "ngc_api_key", "ngc_mirror_password"):
        (run_dir / "secrets" / secret).write_text(f"{secret}-for-test\n")
    (run_dir / "secrets/qm8700_api_password").write_text(PASSWORD + "\n")
    # The lab's exact argv, on free ports (the fixed ones may belong to a lab that is up on this machine).
    sims: dict[str, Sim] = {}
    ports: dict[str, dict[str, int]] = {}
    for name, (https, ssh) in LAB_PORTS.items():
        ports[name] = {"qm8700_api_port": free_port(), "qm8700_ssh_port": free_port()}
        argv = [{https: str(ports[name]["qm8700_api_port"]), ssh: str(ports[name]["qm8700_ssh_port"])}.get(a, a)
                for a in lab_argv(name, run_dir)]
        shutil.copy(host_key, run_dir / "mlnxos" / f"{name}.ssh_host_key")
        sims[name] = Sim(name, run_dir / "mlnxos", pki, run_dir / "secrets/qm8700_api_password",
                         https_port=ports[name]["qm8700_api_port"], ssh_port=ports[name]["qm8700_ssh_port"],
                         argv=argv).launch()
    try:
        for sim in sims.values():
            sim.wait()
        # Only the ports differ from inventories/lab: a second inventory source overrides them per host.
        override = tmp_path / "ports.yml"
        override.write_text(yaml.safe_dump({"all": {"children": {"qm8700": {"hosts": ports}}}}))
        lab = ("-i", str(override), "--limit", "qm8700", "-e", f"lab_run_dir={run_dir}",
               "-e", "qm8700_verify_delay_s=1")
        inventory = ROOT / "inventories/lab"
        fabric = ROOT / "playbooks/fabric.yml"
        # First run of the stage playbook (preflight, its gate, then the role): both switches configured.
        first = run_playbook(inventory, *lab, playbook=fabric, cache_dir=tmp_path / "facts")
        assert first.returncode == 0, first.output[-6000:]
        assert "preflight (inventory)" in first.output, "the stage playbook did not run preflight"
        assert first.counts("qm8700-01")["changed"] == 1 and first.counts("qm8700-02")["changed"] == 1
        assert sims["qm8700-01"].config("saved")["smnodes"] == {"qm8700-01": {"priority": 15}}
        assert sims["qm8700-02"].config("saved")["smnodes"] == {"qm8700-02": {"priority": 14}}
        assert "SM master (priority 15)" in first.output and "SM standby (priority 14)" in first.output
        # A second run and a --check run change nothing.
        for extra in ((), ("--check", "--diff")):
            again = run_playbook(inventory, *lab, *extra, playbook=fabric, cache_dir=tmp_path / "facts")
            assert again.returncode == 0, again.output[-6000:]
            assert again.counts("qm8700-01")["changed"] == 0 and again.counts("qm8700-02")["changed"] == 0
    finally:
        for sim in sims.values():
            sim.stop()
