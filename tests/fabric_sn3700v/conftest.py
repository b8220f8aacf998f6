"""Fixtures for the SN3700V tests: a throwaway CA, NVUE simulators on loopback, ansible-playbook runs."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from validation.inventory_layers import group_vars as layered_group_vars

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
PLAYBOOK = Path(__file__).with_name("fabric_role.yml")
PASSWORD = "sim-secret-do-not-log"


def run_action(name: str, args: dict[str, Any], check: bool = False, diff: bool = True,
               path_prefix: str | None = None) -> dict[str, Any]:
    """Run one of the agentless modules (an action plugin, plugins/action/) ad hoc against localhost over the local
    connection, so its shell commands run here through /bin/sh as they would on the switch; its JSON result.
    ``path_prefix`` puts stand-ins for switch commands (ip, bridge, ifreload) first in PATH."""
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    if path_prefix:
        env["PATH"] = f"{path_prefix}:{env['PATH']}"
    cmd = [str(VENV_BIN / "ansible"), "localhost", "-i", "localhost,", "-c", "local", "-m", name,
           "-a", json.dumps(args), *(["--check"] if check else []), *(["--diff"] if diff else [])]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    try:
        data = json.loads(proc.stdout[proc.stdout.index("{"):])
        return data["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError) as exc:
        raise AssertionError(f"ansible printed no result: {proc.stdout[-3000:]} {proc.stderr[-3000:]}") from exc


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> dict[str, Path]:
    """A CA and a server certificate for 127.0.0.1/localhost, made with cryptography (an ansible-core dependency)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    out = tmp_path_factory.mktemp("pki")
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sn3700v test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nvue-sim")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.DNSName("nvue-sim"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (out / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (out / "server.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (out / "server.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    (out / "password").write_text(PASSWORD + "\n")
    return {"ca": out / "ca.pem", "cert": out / "server.pem", "key": out / "server.key", "password": out / "password"}


@dataclass
class Sim:
    port: int
    state: Path
    proc: subprocess.Popen

    def data(self) -> dict[str, Any]:
        return json.loads(self.state.read_text())

    def mutations(self) -> list[dict[str, Any]]:
        return self.data().get("audit", [])


@pytest.fixture
def start_sim(pki, tmp_path):
    """Start NVUE simulators (python -m lab.nvue_sim) on free loopback ports; stopped after the test."""
    sims: list[Sim] = []

    def start(name: str, *extra: str) -> Sim:
        state = tmp_path / f"{name}.json"
        port_file = tmp_path / f"{name}.port"
        proc = subprocess.Popen(
            [sys.executable, "-m", "lab.nvue_sim", "--listen", "127.0.0.1:0", "--cert", str(pki["cert"]),
             "--key", str(pki["key"]), "--password-file", str(pki["password"]), "--state", str(state),
             "--hostname", name, "--port-file", str(port_file), "--apply-delay", "0.2", *extra],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )
        deadline = time.monotonic() + 15
        while not port_file.exists() or not port_file.read_text().strip():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nvue_sim did not start: {proc.stdout.read() if proc.stdout else ''}")
            time.sleep(0.05)
        sim = Sim(int(port_file.read_text()), state, proc)
        sims.append(sim)
        return sim

    yield start
    for sim in sims:
        if sim.proc.poll() is None:
            os.killpg(sim.proc.pid, signal.SIGTERM)
            sim.proc.wait(timeout=10)


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fabric_vars(**overrides: Any) -> dict[str, Any]:
    """The storage_fabric group_vars of the lab inventory (layered after inventories/common), for the nvue method
    against simulators."""
    data = layered_group_vars(ROOT / "inventories/lab", "storage_fabric")
    data.update({"storage_fabric_method": "nvue", "storage_fabric_password": PASSWORD,
                 "sn3700v_verify_wait_seconds": 1, "sn3700v_nvue_apply_timeout": 20,
                 # the simulated switches are NVUE's: confirm its first-apply prompt (takeover tests set false)
                 "sn3700v_nvue_takeover": True,
                 "storage_fabric_port_fec": {100: "rs", 25: "rs", 40: "off"}})
    data.update(overrides)
    return data


def write_inventory(path: Path, switches: dict[str, dict[str, Any]], endpoints: dict[str, list[dict[str, Any]]],
                    group_vars: dict[str, Any]) -> Path:
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **group_vars},
        "children": {
            "dgx": {"hosts": {h: {"storage_nics": n} for h, n in endpoints.items() if h.startswith("dgx")}},
            "powerscale": {"hosts": {h: {"storage_nics": n} for h, n in endpoints.items() if not h.startswith("dgx")}},
            "sn3700v": {"hosts": switches},
        },
    }}
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


@dataclass
class Run:
    rc: int
    data: dict[str, Any]
    stderr: str

    def stats(self, host: str) -> dict[str, int]:
        return self.data.get("stats", {}).get(host, {})

    def results(self, host: str) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for play in self.data.get("plays", []):
            for task in play.get("tasks", []):
                if host in task.get("hosts", {}):
                    out.append((task["task"]["name"], task["hosts"][host]))
        return out

    def failure(self, host: str) -> str:
        return "\n".join(str(r.get("msg", "")) for _, r in self.results(host) if r.get("failed"))

    def text(self) -> str:
        return json.dumps(self.data)


def run_playbook(inventory: Path, *args: str, limit: str | None = None, playbook: Path = PLAYBOOK) -> Run:
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_FACT_CACHING="memory", ANSIBLE_NOCOLOR="1")
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(playbook), *args]
    if limit:
        cmd += ["--limit", limit]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    try:
        data = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError as exc:
        raise AssertionError(f"ansible-playbook printed no JSON: {proc.stdout[-3000:]} {proc.stderr[-3000:]}") from exc
    return Run(proc.returncode, data, proc.stderr)
