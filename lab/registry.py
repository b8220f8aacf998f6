"""The lab's NGC mirror: Debian's docker-registry on 127.0.0.1 with htpasswd auth and TLS, seeded with stand-ins.

    python -m lab.registry serve  --listen 127.0.0.1:15000 --run-dir lab/.run   # what `lab up` starts
    python -m lab.registry seed   --listen 127.0.0.1:15000 --run-dir lab/.run   # push the stand-ins again
    python -m lab.registry digests                                            # digests, no registry needed

`serve` prepares what the registry needs in the run dir (LAB_CONTRACT.md):
  secrets/ngc_mirror_password   kept if present, else random (0600)
  pki/registry.lab.pem/.key     kept if present, else signed by pki/ca.pem + ca.key (a CA is made when the run dir
                                has none yet, in the same places the lab's PKI uses)
  registry/htpasswd             user `lab`, bcrypt (docker-registry accepts bcrypt only)
  registry/config.yml           storage under registry/data, TLS, htpasswd auth, listen address
then runs /usr/bin/docker-registry, waits for its port, pushes one small stand-in image per repository:tag of
the lab inventory's ngc.yml (ngc_images and ngc_optional_images, over inventories/common's) over the registry HTTP API, prints
their digests and stays in the foreground with the registry (SIGTERM/SIGINT stop both).

The stand-ins are deterministic (fixed timestamps, owners and gzip header), so their digests are the same on every
machine and every `up`: the lab inventory pins them like a site pins NGC's. They hold one text file and no
executable: enough for pull, tag, digest pinning, enroot/SIF conversion tests; the lab's training runs use the
VM's own Python, not the container.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import gzip
import hashlib
import io
import ipaddress
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from validation.inventory_layers import group_vars

ROOT = Path(__file__).resolve().parent.parent
LAB_INVENTORY = ROOT / "inventories" / "lab"
REGISTRY_BIN = "/usr/bin/docker-registry"
SERVICE_NAME = "registry.lab"
USER = "lab"
MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG_TYPE = "application/vnd.docker.container.image.v1+json"
LAYER_TYPE = "application/vnd.docker.image.rootfs.diff.tar.gzip"
CREATED = "2024-01-01T00:00:00Z"  # fixed: the digests must not depend on when the lab was brought up


@dataclass(frozen=True)
class Blob:
    media_type: str
    data: bytes

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class StandIn:
    """One stand-in image: repository path below the registry (nvidia/pytorch), tag, and its blobs."""

    repository: str
    tag: str
    config: Blob
    layer: Blob
    manifest: bytes

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.manifest).hexdigest()


# ---------------------------------------------------------------------------------------------- images


def _layer_tar(repository: str, tag: str) -> bytes:
    text = (f"Lab stand-in for nvcr.io/{repository}:{tag}.\n"
            "Not the NGC image: it only lets the lab pull, retag, pin and convert an image of that name.\n").encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data, mode in (("ngc-standin", None, 0o755), ("ngc-standin/README", text, 0o644)):
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = 0, 0, 0, "", "", mode
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _gzip(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as handle:
        handle.write(data)
    return buffer.getvalue()


def _canonical(document: dict) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def build_standin(repository: str, tag: str) -> StandIn:
    tar = _layer_tar(repository, tag)
    layer = Blob(LAYER_TYPE, _gzip(tar))
    config = Blob(CONFIG_TYPE, _canonical({
        "architecture": "amd64",
        "os": "linux",
        "created": CREATED,
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                   "Labels": {"org.opencontainers.image.title": f"lab stand-in for nvcr.io/{repository}:{tag}",
                              "lab.standin": "true"}},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(tar).hexdigest()]},
        "history": [{"created": CREATED, "created_by": "lab.registry stand-in"}],
    }))
    manifest = _canonical({
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "size": len(config.data), "digest": config.digest},
        "layers": [{"mediaType": LAYER_TYPE, "size": len(layer.data), "digest": layer.digest}],
    })
    return StandIn(repository=repository, tag=tag, config=config, layer=layer, manifest=manifest)


def inventory_images(site: Path = LAB_INVENTORY) -> list[tuple[str, str]]:
    """(repository path, tag) of every ngc_images and ngc_optional_images entry of the lab inventory (its ngc.yml
    over inventories/common's)."""
    data = group_vars(site, "ngc")
    registry = str(data.get("ngc_registry", "nvcr.io"))
    found: list[tuple[str, str]] = []
    for entry in list(data.get("ngc_images") or []) + list(data.get("ngc_optional_images") or []):
        name = str(entry["name"])
        if not name.startswith(registry + "/"):
            raise SystemExit(f"registry: {site}: image {name} is not under {registry}/")
        found.append((name[len(registry) + 1:], str(entry["tag"])))
    return found


# ---------------------------------------------------------------------------------------------- run dir


def ensure_password(run_dir: Path) -> str:
    path = run_dir / "secrets" / "ngc_mirror_password"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(24))
    return path.read_text().strip()


def write_htpasswd(run_dir: Path, password: str) -> Path:
    import bcrypt  # paramiko's dependency; docker-registry only accepts bcrypt htpasswd entries

    path = run_dir / "registry" / "htpasswd"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        user, _, hashed = path.read_text().strip().partition(":")
        if user == USER and bcrypt.checkpw(password.encode(), hashed.encode()):
            return path
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=10)).decode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{USER}:{hashed}\n")
    return path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def ensure_pki(run_dir: Path) -> tuple[Path, Path, Path]:
    """(ca.pem, registry.lab.pem, registry.lab.key): the lab PKI's files, made here when they are missing."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    pki = run_dir / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    pki.chmod(0o700)  # holds the CA's and the registry's private keys
    ca_pem, ca_key_path = pki / "ca.pem", pki / "ca.key"
    cert_path, key_path = pki / f"{SERVICE_NAME}.pem", pki / f"{SERVICE_NAME}.key"
    if cert_path.exists() and key_path.exists() and ca_pem.exists():
        return ca_pem, cert_path, key_path
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    pem = serialization.Encoding.PEM

    def pkcs8(private_key: ec.EllipticCurvePrivateKey) -> bytes:
        return private_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    if not ca_pem.exists():
        ca_key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "powerscale-dgx-ra lab CA")])
        ca_cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(ca_key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now)
                   .not_valid_after(now + dt.timedelta(days=365))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                content_commitment=False, key_encipherment=False,
                                                data_encipherment=False, key_agreement=False,
                                                encipher_only=False, decipher_only=False), critical=True)
                   .sign(ca_key, hashes.SHA256()))
        _write_private(ca_key_path, pkcs8(ca_key))
        ca_pem.write_bytes(ca_cert.public_bytes(pem))
    if not ca_key_path.exists():
        raise SystemExit(f"registry: {ca_pem} exists without its key, and {cert_path} is missing: "
                         "let `python -m lab up` issue the registry certificate, or remove the run dir's pki/")
    ca_cert = x509.load_pem_x509_certificate(ca_pem.read_bytes())
    issuer_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
    if not isinstance(issuer_key, ec.EllipticCurvePrivateKey):  # this function and lab/pki.py make P-256 CA keys
        raise SystemExit(f"registry: {ca_key_path} is not an EC private key ({type(issuer_key).__name__}): "
                         "remove the run dir's pki/ and let `python -m lab up` make the lab CA again")
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName(SERVICE_NAME), x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVICE_NAME)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(issuer_key, hashes.SHA256()))
    _write_private(key_path, pkcs8(key))
    cert_path.write_bytes(cert.public_bytes(pem))
    return ca_pem, cert_path, key_path


def write_config(run_dir: Path, listen: str, cert: Path, key: Path, htpasswd: Path) -> Path:
    data_dir = run_dir / "registry" / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "version": 0.1,
        "log": {"level": "warn", "fields": {"service": "registry"}},
        "storage": {"filesystem": {"rootdirectory": str(data_dir)}, "delete": {"enabled": True},
                    "cache": {"blobdescriptor": "inmemory"}},
        "http": {"addr": listen, "secret": secrets.token_hex(16), "tls": {"certificate": str(cert), "key": str(key)},
                 "headers": {"X-Content-Type-Options": ["nosniff"]}},
        "auth": {"htpasswd": {"realm": "lab-ngc-mirror", "path": str(htpasswd)}},
    }
    path = run_dir / "registry" / "config.yml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    return path


# ---------------------------------------------------------------------------------------------- HTTP API


@dataclass
class RegistryClient:
    base: str  # https://127.0.0.1:15000
    user: str
    password: str
    context: ssl.SSLContext

    def request(self, method: str, url: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        all_headers = {"Authorization": f"Basic {token}", **(headers or {})}
        req = urllib.request.Request(urllib.parse.urljoin(self.base, url), data=body, method=method,
                                     headers=all_headers)
        try:
            with urllib.request.urlopen(req, context=self.context, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def push_blob(self, repository: str, blob: Blob) -> None:
        status, _, _ = self.request("HEAD", f"/v2/{repository}/blobs/{blob.digest}")
        if status == 200:
            return
        status, headers, body = self.request("POST", f"/v2/{repository}/blobs/uploads/")
        if status != 202 or "Location" not in headers:
            raise RuntimeError(f"start upload to {repository}: HTTP {status} {body[:200]!r}")
        location = headers["Location"]
        separator = "&" if "?" in location else "?"
        status, _, body = self.request("PUT", f"{location}{separator}digest={blob.digest}", body=blob.data,
                                       headers={"Content-Type": "application/octet-stream"})
        if status != 201:
            raise RuntimeError(f"upload {blob.digest} to {repository}: HTTP {status} {body[:200]!r}")

    def push(self, image: StandIn) -> str:
        self.push_blob(image.repository, image.layer)
        self.push_blob(image.repository, image.config)
        status, headers, body = self.request("PUT", f"/v2/{image.repository}/manifests/{image.tag}",
                                             body=image.manifest, headers={"Content-Type": MANIFEST_TYPE})
        if status != 201:
            raise RuntimeError(f"push manifest {image.repository}:{image.tag}: HTTP {status} {body[:200]!r}")
        served = headers.get("Docker-Content-Digest", "")
        if served != image.digest:
            raise RuntimeError(f"{image.repository}:{image.tag}: registry says {served}, computed {image.digest}")
        return served


def client_for(listen: str, run_dir: Path, password: str) -> RegistryClient:
    context = ssl.create_default_context(cafile=str(run_dir / "pki" / "ca.pem"))
    host, port = listen.rsplit(":", 1)
    return RegistryClient(base=f"https://{host}:{port}", user=USER, password=password, context=context)


def wait_for_port(listen: str, process: subprocess.Popen | None, timeout_s: float = 30.0) -> None:
    host, port = listen.rsplit(":", 1)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"registry: docker-registry exited with {process.returncode} before listening")
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"registry: nothing listens on {listen} after {timeout_s:.0f} s")


def seed(listen: str, run_dir: Path, password: str) -> list[tuple[str, str, str]]:
    client = client_for(listen, run_dir, password)
    pushed = []
    for repository, tag in inventory_images():
        image = build_standin(repository, tag)
        pushed.append((repository, tag, client.push(image)))
    return pushed


def print_digests(rows: list[tuple[str, str, str]]) -> None:
    for repository, tag, digest in rows:
        print(f"registry: nvcr.io/{repository}:{tag} digest {digest}", flush=True)


# ---------------------------------------------------------------------------------------------- main


def serve(args: argparse.Namespace) -> int:
    host = args.listen.rpartition(":")[0]
    if host not in ("127.0.0.1", "localhost"):
        raise SystemExit(f"registry: refusing to listen on {host!r}: the lab's mirror serves 127.0.0.1 only "
                         "(the DGX VMs reach it through a qemu guestfwd)")
    run_dir = Path(args.run_dir).resolve()
    if not Path(REGISTRY_BIN).exists():
        raise SystemExit(f"registry: {REGISTRY_BIN} not found: apt-get install docker-registry "
                         "(scripts/apt-packages.txt lists it)")
    password = ensure_password(run_dir)
    _ca, cert, key = ensure_pki(run_dir)
    config = write_config(run_dir, args.listen, cert, key, write_htpasswd(run_dir, password))
    log = open(run_dir / "registry" / "registry.log", "ab")  # noqa: SIM115 - lives as long as the child
    process = subprocess.Popen([REGISTRY_BIN, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)

    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        # Only ask the registry to stop here; the main thread's wait() returns once it has exited.
        stopping.append(signum)
        process.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        wait_for_port(args.listen, process)
        rows = seed(args.listen, run_dir, password)
        (run_dir / "registry" / "digests.json").write_text(json.dumps(
            [{"name": f"nvcr.io/{r}", "tag": t, "digest": d} for r, t, d in rows], indent=2) + "\n")
        print_digests(rows)
        print(f"registry: serving https://{args.listen} (user {USER}, log {run_dir / 'registry' / 'registry.log'})",
              flush=True)
    except BaseException:
        process.terminate()
        raise
    status = process.wait()
    return 0 if stopping else status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.registry", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("serve", "prepare, run docker-registry, seed, stay in the foreground"),
                       ("seed", "push the stand-ins to a running registry")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--listen", default="127.0.0.1:15000")
        cmd.add_argument("--run-dir", default=str(ROOT / "lab" / ".run"))
    sub.add_parser("digests", help="print the stand-ins' digests (deterministic, no registry needed)")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "seed":
        run_dir = Path(args.run_dir).resolve()
        wait_for_port(args.listen, None, timeout_s=5)
        print_digests(seed(args.listen, run_dir, ensure_password(run_dir)))
        return 0
    print_digests([(r, t, build_standin(r, t).digest) for r, t in inventory_images()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
