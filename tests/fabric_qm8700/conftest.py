"""Fixtures for the QM8700 tests: a throw-away CA and server certificate, MLNX-OS simulators on free 127.0.0.1
ports (real processes, `python -m lab.mlnxos_sim`), per-test inventories and an ansible-playbook runner."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from validation.inventory_layers import group_vars as layered_group_vars
from validation.inventory_layers import inventory_args

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
PASSWORD = "Qm8700-t3st-Pa55word"  # distinctive, so that a leak is found by a plain substring search
PLAY = ROOT / "tests/fabric_qm8700/play.yml"


@dataclass(frozen=True)
class Pki:
    ca: Path
    cert: Path
    key: Path
    other_ca: Path  # a CA that did not sign the server certificate


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _make_ca(directory: Path, label: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(label)).issuer_name(_name(label))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    path = directory / f"{label.replace(' ', '-')}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key, cert, path


def make_pki(directory: Path) -> Pki:
    """A CA and a server certificate for mlnxos-sim (SANs 127.0.0.1, localhost, mlnxos-sim), as the lab's."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert, ca_path = _make_ca(directory, "qm8700 test CA")
    _, _, other_path = _make_ca(directory, "unrelated CA")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name("mlnxos-sim")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost"), x509.DNSName("mlnxos-sim")]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = directory / "mlnxos-sim.pem", directory / "mlnxos-sim.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return Pki(ca_path, cert_path, key_path, other_path)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


@dataclass
class Sim:
    """One simulator process. argv can be given (the lab's exact argv); otherwise it is built from the fields."""

    name: str
    state_dir: Path
    pki: Pki
    password_file: Path
    https_port: int = field(default_factory=free_port)
    ssh_port: int = field(default_factory=free_port)
    argv: list[str] | None = None
    process: subprocess.Popen | None = None
    release: str = "3.9"  # MLNX-OS release profile (lab/mlnxos_sim RELEASES)
    system_profile: str = "ib"  # of a factory-new switch: "ib" or "ib split-ready"

    @property
    def state(self) -> Path:
        return self.state_dir / f"{self.name}.json"

    @property
    def log_path(self) -> Path:
        return self.state.with_suffix(".log")

    def start(self) -> Sim:
        return self.launch().wait()

    def launch(self) -> Sim:
        argv = self.argv or [
            sys.executable, "-m", "lab.mlnxos_sim", "--name", self.name, "--https-port", str(self.https_port),
            "--ssh-port", str(self.ssh_port), "--state", str(self.state), "--cert", str(self.pki.cert),
            "--key", str(self.pki.key), "--password-file", str(self.password_file), "--release", self.release,
            "--system-profile", self.system_profile]
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with (self.state_dir / f"{self.name}.out").open("a") as output:
            self.process = subprocess.Popen(argv, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
                                            text=True, start_new_session=True)
        return self

    def wait(self) -> Sim:
        wait_port(self.https_port)
        wait_port(self.ssh_port)
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def log(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line.strip()]

    def config_commands(self) -> list[str]:
        return [e["command"] for e in self.log() if e["kind"] == "config" and e["status"] == "OK"]

    def clear_log(self) -> None:
        self.log_path.unlink(missing_ok=True)

    def set_faults(self, faults: dict[str, Any]) -> None:
        self.state.with_suffix(".faults.json").write_text(json.dumps(faults))

    def config(self, which: str = "running") -> dict[str, Any]:
        return json.loads(self.state.read_text())[which]


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def host_key(tmp_path_factory) -> Path:
    """One SSH host key for every simulator of the session (generating RSA keys costs time)."""
    import paramiko

    path = tmp_path_factory.mktemp("hostkey") / "ssh_host_key"
    paramiko.RSAKey.generate(2048).write_private_key_file(str(path))
    return path


@pytest.fixture
def password_file(tmp_path) -> Path:
    path = tmp_path / "qm8700_api_password"
    path.write_text(PASSWORD + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def pair(request, tmp_path, pki, password_file, host_key):
    """Two simulators of one subnet (shared election file in one state dir), stopped after the test. Indirect
    parameters: {"release": "3.10", "system_profile": "ib split-ready"}."""
    options = getattr(request, "param", {})
    sims = {}
    for name in ("qm8700-01", "qm8700-02"):
        state_dir = tmp_path / "mlnxos"
        state_dir.mkdir(exist_ok=True)
        shutil.copy(host_key, state_dir / f"{name}.ssh_host_key")
        sims[name] = Sim(name, state_dir, pki, password_file, **options).launch()
    for sim in sims.values():
        sim.wait()
    yield sims
    for sim in sims.values():
        sim.stop()


def compute_fabric_vars(**overrides: Any) -> dict[str, Any]:
    """The lab's compute_fabric.yml over inventories/common's, as a test inventory's group_vars (the real files, so
    the tests track them)."""
    values = layered_group_vars(ROOT / "inventories/lab", "compute_fabric")
    values.update(overrides)
    return values


def write_inventory(directory: Path, sims: dict[str, Sim], pki: Pki, host_overrides: dict[str, dict] | None = None,
                    **group_overrides: Any) -> Path:
    roles = {"qm8700-01": ("master", 15), "qm8700-02": ("standby", 14)}
    hosts = {}
    for name, sim in sims.items():
        role, priority = roles[name]
        hosts[name] = {"qm8700_api_host": "127.0.0.1", "qm8700_api_port": sim.https_port,
                       "qm8700_ssh_port": sim.ssh_port, "qm8700_sm_role": role, "qm8700_sm_priority": priority}
        hosts[name].update((host_overrides or {}).get(name, {}))
    inventory = {"all": {"children": {"qm8700": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "hosts": hosts}}}}
    (directory / "group_vars/all").mkdir(parents=True, exist_ok=True)
    (directory / "hosts.yml").write_text(yaml.safe_dump(inventory))
    group = compute_fabric_vars(qm8700_ca_path=str(pki.ca), qm8700_verify_retries=1, qm8700_verify_delay_s=1)
    group.update(group_overrides)
    (directory / "group_vars/all/compute_fabric.yml").write_text(yaml.safe_dump(group))
    (directory / "group_vars/all/secrets.yml").write_text(
        "qm8700_api_password: \"{{ lookup('ansible.builtin.env', 'QM8700_PASSWORD') }}\"\n")
    return directory


@dataclass
class PlaybookRun:
    returncode: int
    output: str
    recap: dict[str, dict[str, int]]

    def counts(self, host: str) -> dict[str, int]:
        return self.recap[host]


RECAP_RE = re.compile(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", re.M)


def run_playbook(inventory: Path, *args: str, playbook: Path = PLAY, env: dict[str, str] | None = None,
                 timeout: int = 300, cache_dir: Path | None = None) -> PlaybookRun:
    """ansible-playbook with the project's ansible.cfg; the fact cache goes to a test directory (cache_dir, by
    default next to a test-written inventory), never into the repository."""
    if cache_dir is None:
        if ROOT in inventory.resolve().parents:
            raise ValueError("give cache_dir for an inventory of the repository")
        cache_dir = inventory / "facts"
    environment = dict(os.environ)
    environment.update({"QM8700_PASSWORD": PASSWORD, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
                        "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
                        # one line per result: messages are searched as substrings, YAML would fold them
                        "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
                        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache_dir)})
    environment.update(env or {})
    # a site inventory of the repository goes after inventories/common, as every site does
    sources = inventory_args(inventory) if ROOT in inventory.resolve().parents else ["-i", str(inventory)]
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), *sources, str(playbook), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=environment)
    output = proc.stdout + proc.stderr
    recap = {m.group(1): {k: int(v) for k, v in (kv.split("=") for kv in m.group(2).split())}
             for m in RECAP_RE.finditer(output)}
    return PlaybookRun(proc.returncode, output, recap)
