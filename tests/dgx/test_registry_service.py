"""lab/registry.py for real: Debian's docker-registry with TLS + htpasswd, seeded, answering the pinned digests."""

from __future__ import annotations

import base64
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from dgx_testlib import ROOT, load_group_vars

from lab.registry import MANIFEST_TYPE, REGISTRY_BIN


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, context: ssl.SSLContext, auth: tuple[str, str] | None, accept: str = "") -> tuple[int, dict]:
    headers = {"Accept": accept} if accept else {}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), context=context, timeout=10) as r:
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


@pytest.fixture
def registry(tmp_path):
    assert Path(REGISTRY_BIN).exists(), f"{REGISTRY_BIN} missing: ./scripts/install.sh installs docker-registry"
    listen = f"127.0.0.1:{_free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "lab.registry", "serve", "--listen", listen, "--run-dir",
                             str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "registry: serving" in line:
            break
    assert lines and "registry: serving" in lines[-1], "".join(lines)
    yield listen, tmp_path, "".join(lines), proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_registry_serves_the_pinned_stand_ins_over_tls_with_auth(registry):
    listen, run_dir, output, proc = registry
    context = ssl.create_default_context(cafile=str(run_dir / "pki" / "ca.pem"))
    password = (run_dir / "secrets" / "ngc_mirror_password").read_text().strip()
    assert (run_dir / "secrets" / "ngc_mirror_password").stat().st_mode & 0o077 == 0
    assert password not in output
    base = f"https://{listen}"
    assert _get(f"{base}/v2/_catalog", context, None)[0] == 401
    assert _get(f"{base}/v2/_catalog", context, ("lab", "wrong"))[0] == 401
    assert _get(f"{base}/v2/_catalog", context, ("lab", password))[0] == 200
    ngc = load_group_vars("lab", "ngc")
    for image in ngc["ngc_images"] + ngc["ngc_optional_images"]:
        path = image["name"].split("/", 1)[1]
        status, headers = _get(f"{base}/v2/{path}/manifests/{image['tag']}", context, ("lab", password),
                               accept=MANIFEST_TYPE)
        assert status == 200 and headers["Docker-Content-Digest"] == image["digest"], (image, status, headers)
        assert f"{image['name']}:{image['tag']} digest {image['digest']}" in output
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0
    with pytest.raises(OSError):
        socket.create_connection(tuple([listen.split(":")[0], int(listen.split(":")[1])]), timeout=2).close()
