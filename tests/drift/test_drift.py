"""Drift: a change made by hand on each kind of host of the running lab, then

1. `--check --diff` of the stage that owns it reports a change on that host only and shows the drift,
2. a normal run of the stage repairs it and reports it as changed on that host only,
3. a third run reports 0 changed everywhere, and the live state reads as the inventory says.

    pytest -m lab_drift tests/drift        (the lab must be up: python -m lab up)

Each case names the host, the stage playbook, the change and the text the diff must show. The suite prints
"drift cases: N, N shown and repaired".
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.mlnxos_client import Endpoint, JsonApiTransport
from ansible.module_utils.onefs import OneFSClient, OneFSConnection

from lab.lifecycle import default_run_dir
from validation.inventory_layers import group_vars

pytestmark = pytest.mark.lab_drift

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RUN_DIR = default_run_dir()
RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+ok=\d+\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unr>\d+)\s+"
                   r"failed=(?P<failed>\d+)", re.M)
RESULTS: list[str] = []
LAB = group_vars(ROOT / "inventories" / "lab")
QM8700_01 = yaml.safe_load((ROOT / "inventories" / "lab" / "hosts.yml").read_text())["all"]["children"]["qm8700"][
    "hosts"]["qm8700-01"]


def lab_ssh(node: str, script: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "lab", "ssh", node, script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"{node}: {script}: {proc.stdout[-1000:]} {proc.stderr[-1000:]}"
    return proc.stdout


def playbook(name: str, *extra: str) -> tuple[str, dict[str, int]]:
    proc = subprocess.run([str(BIN / "ansible-playbook"), name, *extra], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{name} {' '.join(extra)} failed:\n{out[-5000:]}"
    recap = out[out.rfind("PLAY RECAP"):]
    changed = {m["host"]: int(m["changed"]) for m in RECAP.finditer(recap)}
    assert changed, f"no PLAY RECAP:\n{out[-3000:]}"
    return out, changed


def secret(name: str) -> str:
    return (RUN_DIR / "secrets" / name).read_text().strip()


# ------------------------------------------------------------------------------------ changes by hand
def onefs() -> OneFSClient:
    return OneFSClient(OneFSConnection(host=LAB["powerscale_api_host"], port=LAB["powerscale_api_port"],
                                       user=LAB["powerscale_api_user"],
                                       password=secret("powerscale_api_password"),
                                       ca_path=str(RUN_DIR / "pki" / "ca.pem"), retries=0))


def scratch_export(client: OneFSClient) -> dict:
    exports = client.get_all(client.platform(4, "protocols/nfs/exports"), "exports")
    found = [e for e in exports if "/ifs/data/scratch" in e.get("paths", [])]
    assert len(found) == 1, f"expected one export of /ifs/data/scratch, found {found}"
    return found[0]


def add_export_client() -> None:
    client = onefs()
    export = scratch_export(client)
    client.put(client.platform(4, f"protocols/nfs/exports/{export['id']}"),
               {"clients": [*export["clients"], "198.51.100.99"]})


def export_clients_repaired() -> bool:
    return "198.51.100.99" not in scratch_export(onefs())["clients"]


def qm8700() -> JsonApiTransport:
    return JsonApiTransport(Endpoint(host=QM8700_01["qm8700_api_host"], username=LAB["qm8700_api_user"],
                                     password=secret("qm8700_api_password"), api_port=QM8700_01["qm8700_api_port"],
                                     ca_path=str(RUN_DIR / "pki" / "ca.pem")))


def set_sm_priority() -> None:
    api = qm8700()
    api.login()
    try:
        api.run(["configure terminal", "ib sm sm-priority 3", "exit"])
    finally:
        api.close()


def sm_priority_repaired() -> bool:
    api = qm8700()
    api.login()
    try:
        out = json.dumps(api.run(["show running-config"]))
    finally:
        api.close()
    return f"sm-priority {QM8700_01['qm8700_sm_priority']}" in out and "sm-priority 3" not in out


def mount_opts(node: str, path: str) -> str:
    return lab_ssh(node, f"awk '$2 == \"{path}\" {{print $4}}' /proc/mounts").strip()


def remount_with_retrans() -> None:
    """Both shares of the server (they share one NFS client, so one superblock's options: changing one share
    alone does not take), unmounted and mounted again with retrans=5 instead of the inventory's 2."""
    script = ("set -e; awk '$2 ~ \"^/mnt/(training|scratch)$\" {print $1, $2, $4}' /etc/fstab > /tmp/drift-mounts; "
              "awk '{print $2}' /tmp/drift-mounts | xargs umount; "
              "while read src path opts; do mount -t nfs -o \"$(echo $opts | sed s/retrans=2/retrans=5/)\" "
              "\"$src\" \"$path\"; done < /tmp/drift-mounts; rm /tmp/drift-mounts")
    lab_ssh("dgx02", script)


@dataclass(frozen=True)
class Drift:
    name: str
    host: str
    playbook: str
    make: Callable[[], None]
    shown: str  # what the --check --diff output must contain
    repaired: Callable[[], bool]


CASES = [
    Drift("sysctl value (dgx01 net.core.rmem_max)", "dgx01", "playbooks/compute.yml",
          lambda: lab_ssh("dgx01", "sysctl -w net.core.rmem_max=1000000"), "net.core.rmem_max = 1000000",
          lambda: lab_ssh("dgx01", "sysctl -n net.core.rmem_max").strip() == "268435456"),
    Drift("mount option (dgx02 /mnt/training retrans=5)", "dgx02", "playbooks/compute.yml",
          remount_with_retrans, "retrans=5",
          lambda: "retrans=2" in mount_opts("dgx02", "/mnt/training")),
    Drift("deleted image (dgx01 nvcr.io/nvidia/pytorch:24.05-py3)", "dgx01", "playbooks/containers.yml",
          lambda: lab_ssh("dgx01", "docker rmi nvcr.io/nvidia/pytorch:24.05-py3"), "nvcr.io/nvidia/pytorch:24.05-py3",
          lambda: "nvcr.io/nvidia/pytorch:24.05-py3" in lab_ssh("dgx01", "docker images --format "
                                                                       "'{{.Repository}}:{{.Tag}}'")),
    Drift("port MTU (sn3700v01 swp2 mtu 1500)", "sn3700v01", "playbooks/fabric.yml",
          lambda: lab_ssh("sn3700v01", "ip link set swp2 mtu 1500"), "swp2",
          lambda: "mtu 9216" in lab_ssh("sn3700v01", "ip -o link show swp2")),
    Drift("export clients (powerscale01 /ifs/data/scratch + 198.51.100.99)", "powerscale01",
          "playbooks/storage.yml", add_export_client, "198.51.100.99", export_clients_repaired),
    Drift("SM priority (qm8700-01 sm-priority 3)", "qm8700-01", "playbooks/fabric.yml", set_sm_priority,
          f"sm.priority: {QM8700_01['qm8700_sm_priority']}", sm_priority_repaired),
]


@pytest.fixture(scope="module")
def converged():
    status = subprocess.run([sys.executable, "-m", "lab", "status", "--json"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    nodes = json.loads(status.stdout or "{}").get("nodes", [])
    if not nodes or any(n.get("state") != "running" for n in nodes):
        pytest.fail("the lab is not up: run `python -m lab up` first")
    playbook("site.yml", "--skip-tags", "validate")
    yield
    print(f"drift cases: {len(CASES)}, {len(RESULTS)} shown and repaired: {RESULTS}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_drift_is_shown_then_repaired(converged, case: Drift):
    case.make()
    assert not case.repaired(), f"{case.name}: the change by hand did not take"
    out, changed = playbook(case.playbook, "--check", "--diff")
    others = {h: n for h, n in changed.items() if n and h != case.host}
    assert changed.get(case.host, 0) >= 1 and not others, \
        f"{case.name}: --check --diff must report a change on {case.host} only, got {changed}"
    assert case.shown in out, f"{case.name}: --check --diff does not show {case.shown!r}:\n{out[-4000:]}"
    assert not case.repaired(), f"{case.name}: --check changed the live state"
    _, changed = playbook(case.playbook)
    others = {h: n for h, n in changed.items() if n and h != case.host}
    assert changed.get(case.host, 0) >= 1 and not others, \
        f"{case.name}: the run must repair it on {case.host} only, got {changed}"
    assert case.repaired(), f"{case.name}: the run reported a change but the live state is not repaired"
    _, changed = playbook(case.playbook)
    assert not any(changed.values()), f"{case.name}: a third run still changes something: {changed}"
    RESULTS.append(case.name)
