"""The lab's credentials under the run dir: SSH keys, a CA with server certificates, random secrets.

Everything is generated with the openssl / ssh-keygen CLIs on first `up` and kept afterwards, so the
inventory's file lookups and the simulators see stable values across `up`/`down` cycles.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Server certificates the lab issues: SANs are 127.0.0.1, localhost and the service name (LAB_CONTRACT.md).
SERVICES = ("onefs-sim", "mlnxos-sim", "registry.lab", "nvue-sim")
SECRETS = (
    "powerscale_api_password",
    "storage_fabric_password",
    "qm8700_api_password",
    "ngc_api_key",
    "ngc_mirror_password",
)
CERT_DAYS = 825


@dataclass(frozen=True)
class Credentials:
    ssh_key: Path
    known_hosts: Path
    ca: Path
    pki: Path
    secrets: Path

    def cert(self, service: str) -> tuple[Path, Path]:
        return self.pki / f"{service}.pem", self.pki / f"{service}.key"

    def secret(self, name: str) -> str:
        return (self.secrets / name).read_text().strip()

    def host_key(self, node: str) -> Path:
        return self.ssh_key.parent / "hostkeys" / f"{node}_ed25519"

    @property
    def dgx_key(self) -> Path:
        """root's key for SSH between the DGX VMs (mpirun starts its daemons over SSH); never leaves the lab."""
        return self.ssh_key.parent / "dgx_ed25519"

    @property
    def munge_key(self) -> Path:
        """The lab cluster's MUNGE key (Slurm's authentication), the same on every DGX VM."""
        return self.secrets / "munge.key"


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}")


def san_extension(service: str) -> str:
    """The x509v3 extension file for a lab server certificate (pure; tested)."""
    sans = ["IP:127.0.0.1", "DNS:localhost", f"DNS:{service}"]
    return (
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        f"subjectAltName={','.join(sans)}\n"
    )


def _ssh_keygen(path: Path, comment: str) -> None:
    if path.is_file() and path.with_suffix(".pub").is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.unlink(missing_ok=True)
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])


def _ca(pki: Path) -> None:
    ca_key, ca = pki / "ca.key", pki / "ca.pem"
    if ca_key.is_file() and ca.is_file():
        return
    _run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(ca_key), "-out", str(ca), "-days", "3650", "-subj", "/O=powerscale-dgx-ra/CN=powerscale-dgx-ra lab CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
    )
    ca_key.chmod(0o600)
    # A new CA invalidates every certificate it did not sign.
    for service in SERVICES:
        (pki / f"{service}.pem").unlink(missing_ok=True)


def _server_cert(pki: Path, service: str) -> None:
    pem, key = pki / f"{service}.pem", pki / f"{service}.key"
    if pem.is_file() and key.is_file():
        return
    with tempfile.TemporaryDirectory() as tmp:
        csr, ext = Path(tmp) / "req.csr", Path(tmp) / "ext.cnf"
        ext.write_text(san_extension(service))
        _run(
            ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(key), "-out", str(csr), "-subj", f"/O=powerscale-dgx-ra lab/CN={service}"]
        )
        _run(
            ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(pki / "ca.pem"), "-CAkey", str(pki / "ca.key"),
             "-CAcreateserial", "-days", str(CERT_DAYS), "-sha256", "-out", str(pem), "-extfile", str(ext)]
        )
    key.chmod(0o600)


def ensure_credentials(run_dir: Path, nodes: list[str]) -> Credentials:
    """Create whatever is missing; never replaces what exists (idempotent)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    ssh_dir, pki, sec = run_dir / "ssh", run_dir / "pki", run_dir / "secrets"
    for d in (ssh_dir, ssh_dir / "hostkeys", pki, sec):
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o700)
    creds = Credentials(ssh_dir / "id_ed25519", ssh_dir / "known_hosts", pki / "ca.pem", pki, sec)
    _ssh_keygen(creds.ssh_key, "powerscale-dgx-ra-lab")
    _ssh_keygen(creds.dgx_key, "lab-dgx-to-dgx")
    if not creds.munge_key.is_file() or creds.munge_key.stat().st_size < 1024:
        # munged wants at least 32 bytes; mungekey(8) makes 1024 random bytes by default
        fd = os.open(creds.munge_key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(1024))
    creds.munge_key.chmod(0o600)
    for node in nodes:
        _ssh_keygen(creds.host_key(node), f"root@{node}")
    _ca(pki)
    for service in SERVICES:
        _server_cert(pki, service)
    for name in SECRETS:
        path = sec / name
        if not path.is_file() or not path.read_text().strip():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(24) + "\n")
        path.chmod(0o600)
    return creds


def known_hosts_lines(creds: Credentials, ports: dict[str, int]) -> str:
    """known_hosts entries pinning each VM's host key on its forwarded 127.0.0.1 port."""
    lines = []
    for node, port in sorted(ports.items()):
        key_type, key_b64 = creds.host_key(node).with_suffix(".pub").read_text().split()[:2]
        lines.append(f"[127.0.0.1]:{port} {key_type} {key_b64}")
    return "\n".join(lines) + "\n"
