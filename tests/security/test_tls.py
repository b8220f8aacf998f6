"""TLS is verified by default by every HTTPS client of the project, refuses an untrusted certificate with a
message that names the endpoint and the fix, and accepts the same server once given the CA that signed it.

One local HTTPS server (a certificate of the lab CA minted by lab/pki.py, which no system store trusts) serves
all three clients: the OneFS Platform API client, the MLNX-OS JSON API transport and the NVUE module's fetcher.
The NGC registry login goes through the docker engine, which verifies the registry's certificate itself:
the test below it asserts that nothing in the project turns that off.
"""

from __future__ import annotations

import re
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import nvue_fabric
import pytest
import yaml
from ansible.module_utils.mlnxos_client import CONNECTION_ARGUMENT_SPEC as MLNXOS_SPEC
from ansible.module_utils.mlnxos_client import Endpoint, JsonApiTransport, MlnxosAuthError, MlnxosError
from ansible.module_utils.nvue_client import NvueUnreachable
from ansible.module_utils.onefs import (
    ONEFS_ARGUMENT_SPEC,
    OneFSClient,
    OneFSConnection,
    OneFSError,
    OneFSTLSError,
)

from lab import pki as lab_pki

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    port: int
    ca: Path
    paths: list[str] = field(default_factory=list)


def _handler(seen: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            body = b'{"latest": "17"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            return

    return Handler


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    creds = lab_pki.ensure_credentials(tmp_path_factory.mktemp("run"), [])
    cert, key = creds.cert("onefs-sim")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    seen: list[str] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(seen))
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Server(httpd.server_address[1], creds.ca, seen)
    finally:
        httpd.shutdown()
        httpd.server_close()


def _onefs(server: Server, **kw) -> None:
    OneFSClient(OneFSConnection(host="127.0.0.1", port=server.port, user="u", password="p", retries=0,
                                timeout=10, **kw)).api_version()


def _mlnxos(server: Server, **kw) -> None:
    JsonApiTransport(Endpoint("127.0.0.1", "admin", "p", api_port=server.port, timeout=10, **kw)).login()


def _nvue(server: Server, **kw) -> None:
    params = {"api_user": "cumulus", "api_password": "p", "validate_certs": True, "ca_path": None, "timeout": 10,
              **kw}
    status, _ = nvue_fabric._fetcher(SimpleNamespace(params=params))(
        "GET", f"https://127.0.0.1:{server.port}/nvue_v1/system", None)
    assert status == 200


CLIENTS = {
    # client: (call, the exception an untrusted certificate raises, the words of its fix)
    "onefs": (_onefs, OneFSTLSError, ("ca_path", "powerscale_ca_path", "validate_certs")),
    "mlnxos": (_mlnxos, MlnxosError, ("ca_path", "validate_certs")),
    "nvue": (_nvue, NvueUnreachable, ("storage_fabric_ca_path", "storage_fabric_validate_certs")),
}


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_untrusted_certificate_is_refused_naming_endpoint_and_fix(server, name):
    call, error, fix = CLIENTS[name]
    before = len(server.paths)
    with pytest.raises(error) as caught:
        call(server)
    message = str(caught.value)
    assert f"127.0.0.1:{server.port}" in message, message
    assert re.search(r"certificate|TLS", message), message
    for word in fix:
        assert word in message, f"{name}: {word!r} missing from {message!r}"
    assert len(server.paths) == before, "a request went through although the certificate was not trusted"


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_the_signing_ca_is_accepted(server, name):
    call, _error, _fix = CLIENTS[name]
    before = len(server.paths)
    try:
        call(server, ca_path=str(server.ca))
    except (OneFSTLSError, NvueUnreachable) as exc:  # TLS or connection failures: the CA was not honoured
        pytest.fail(f"{name}: {exc}")
    except MlnxosAuthError:
        pass  # TLS passed: the stand-in server sets no session cookie, so the login itself is refused
    except OneFSError as exc:
        assert "certificate" not in str(exc), exc
    assert len(server.paths) > before, f"{name}: no request reached the server"


def test_clients_verify_by_default():
    assert OneFSConnection(host="h", user="u", password="p").validate_certs is True
    assert Endpoint("h", "u", "p").validate_certs is True
    assert ONEFS_ARGUMENT_SPEC["validate_certs"]["default"] is True
    assert MLNXOS_SPEC["validate_certs"]["default"] is True
    nvue_doc = yaml.safe_load(nvue_fabric.DOCUMENTATION)
    assert nvue_doc["options"]["validate_certs"]["default"] is True
    assert nvue_fabric.argument_spec()["validate_certs"]["default"] is True


@pytest.mark.parametrize("role, variable", [("powerscale", "powerscale_validate_certs"),
                                           ("qm8700", "qm8700_validate_certs")])
def test_role_defaults_and_argument_specs_verify(role, variable):
    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())
    assert defaults[variable] is True, f"roles/{role}/defaults/main.yml: {variable} must default to true"
    spec = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert options[variable].get("default", True) is True, f"roles/{role}/meta/argument_specs.yml: {variable}"


def test_the_nvue_setting_has_no_silent_default():
    """The sn3700v role reads storage_fabric_validate_certs from the inventory (its storage_fabric_* settings have
    no role defaults): preflight requires it, so a site that forgets it stops before any request is sent."""
    from ansible.module_utils.preflight_schema import VARIABLES

    var = next(v for v in VARIABLES if v.name == "storage_fabric_validate_certs")
    assert var.required and "sn3700v" in var.groups


def test_no_inventory_or_role_turns_verification_off():
    """No inventory (the lab's included: it gives its own CA as ca_path), role or playbook sets a
    *_validate_certs to false."""
    tracked = subprocess.run(["git", "ls-files", "inventories", "roles", "playbooks", "site.yml"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    off = re.compile(r"^[^#\n]*validate_certs\s*:\s*[\"']?(false|no)\b", re.M | re.I)
    offenders = [f for f in tracked if f.endswith((".yml", ".yaml"))
                 and off.search((ROOT / f).read_text())]
    assert offenders == [], f"TLS verification turned off in: {offenders}"


def test_registry_tls_is_never_turned_off():
    """The NGC login and pulls go through the docker engine, which verifies the registry's certificate unless
    daemon.json lists it under insecure-registries; a private mirror's CA goes to /etc/docker/certs.d instead."""
    tracked = subprocess.run(["git", "ls-files", "roles", "playbooks", "inventories", "site.yml", "lab"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    insecure = re.compile(r"insecure[-_]registr|--tls-verify[= ]false|tls_verify\s*:\s*(false|no)|"
                          r"--insecure-registry|insecure_skip_verify|tls_hostname", re.I)
    offenders = [f for f in tracked if f.endswith((".yml", ".yaml", ".py", ".j2", ".json"))
                 and insecure.search((ROOT / f).read_text(errors="replace"))]
    assert offenders == [], f"registry TLS turned off in: {offenders}"
    tasks = yaml.safe_load((ROOT / "roles" / "ngc" / "tasks" / "main.yml").read_text())
    flat = [t for task in tasks for t in [task, *task.get("block", [])]]  # the login sits in a block (its rescue)
    login = [t for t in flat if "community.docker.docker_login" in t]
    assert len(login) == 1 and login[0].get("no_log") is True
    assert not {"tls", "validate_certs", "tls_verify"} & set(login[0]["community.docker.docker_login"])
