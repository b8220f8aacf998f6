"""Fixtures for the PowerScale tests: a throw-away PKI, the in-memory OneFS simulator on 127.0.0.1, and a
runner for real ansible-playbook runs against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lab.onefs_sim.backends import MemoryBackend  # noqa: E402
from lab.onefs_sim.server import OneFSSimulator  # noqa: E402
from validation.inventory_layers import inventory_args  # noqa: E402

VENV_BIN = Path(sys.executable).parent
API_USER = "svc-ansible"
# A distinctive password, so that a leak is found by a plain substring search.
API_PASSWORD = "Pw-7f3e9c1a-NeverLogMe-b52d"
LAB_INTERFACES = [{"lnn": 1, "name": "storage0", "ip_addrs": ["198.51.100.21"], "status": "up", "mtu": 9000}]


@dataclass(frozen=True)
class Pki:
    ca: Path
    cert: Path
    key: Path
    other_ca: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA, a server certificate it signs for 127.0.0.1/localhost, and an unrelated second CA."""
    d = tmp_path_factory.mktemp("pki")
    for name in ("ca", "other"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
                 "-days", "2", "-subj", f"/CN=test {name} CA", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=onefs-sim", cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:onefs-sim\n"
                               "extendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    return Pki(ca=d / "ca.pem", cert=d / "server.pem", key=d / "server.key", other_ca=d / "other.pem")


def make_sim(pki: Pki, **kw: Any) -> tuple[OneFSSimulator, int]:
    backend = kw.pop("backend", None) or MemoryBackend(interfaces=[dict(i) for i in LAB_INTERFACES])
    sim = OneFSSimulator(backend, API_USER, API_PASSWORD, **kw)
    port = sim.start("127.0.0.1", 0, str(pki.cert), str(pki.key))
    return sim, port


@pytest.fixture
def sim(pki: Pki):
    simulator, port = make_sim(pki)
    simulator.port = port  # type: ignore[attr-defined]
    yield simulator
    simulator.stop()


def api_vars(sim: OneFSSimulator, pki: Pki, **extra: Any) -> dict[str, Any]:
    """Connection options for the modules (the password comes from the environment, never from here)."""
    args = {"api_host": "127.0.0.1", "api_port": sim.port, "api_user": API_USER,  # type: ignore[attr-defined]
            "ca_path": str(pki.ca), "api_retry_backoff": 0.01}
    args.update(extra)
    return args


@dataclass
class PlaybookRun:
    rc: int
    stdout: str
    stderr: str
    data: dict[str, Any] | None

    def task_results(self, name: str) -> list[dict[str, Any]]:
        """Per-host results of the task(s) named ``name`` (json callback)."""
        assert self.data is not None, self.stdout[-3000:] + self.stderr[-3000:]
        out = []
        for play in self.data["plays"]:
            for task in play["tasks"]:
                if task["task"]["name"] in (name, f"powerscale : {name}"):
                    out.extend(task["hosts"].values())
        assert out, f"no task named {name!r} ran"
        return out

    def result(self, name: str) -> dict[str, Any]:
        return self.task_results(name)[0]

    @property
    def changed_total(self) -> int:
        assert self.data is not None
        return sum(s.get("changed", 0) for s in self.data["stats"].values())


def run_playbook(tmp_path: Path, playbook: str, *, inventory: str | None = None, args: list[str] | None = None,
                 json_output: bool = True, env: dict[str, str] | None = None,
                 inventory_path: Path | None = None) -> PlaybookRun:
    """Run ansible-playbook for real (subprocess) with the project's ansible.cfg, library and module_utils.
    ``inventory_path``: an inventory of the repository (e.g. inventories/production) instead of ``inventory``."""
    book = tmp_path / "playbook.yml"
    book.write_text(textwrap.dedent(playbook))
    inv = inventory_path or tmp_path / "inventory.yml"
    if inventory_path is None:
        inv.write_text(textwrap.dedent(inventory) if inventory else "all:\n  hosts:\n    localhost:\n"
                       "      ansible_connection: local\n      ansible_python_interpreter: " + sys.executable + "\n")
    full_env = dict(os.environ)
    full_env.update({
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_LIBRARY": str(ROOT / "library"),
        "ANSIBLE_MODULE_UTILS": str(ROOT / "module_utils"),
        "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "facts"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
        "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote"),
        "ANSIBLE_NOCOLOR": "1",
        "POWERSCALE_API_PASSWORD": API_PASSWORD,
    })
    if json_output:
        full_env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
    full_env.update(env or {})
    sources = inventory_args(inv) if inventory_path else ["-i", str(inv)]  # a site of the repository: common first
    cmd = [str(VENV_BIN / "ansible-playbook"), *sources, str(book), *(args or [])]
    proc = subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=300)
    data = None
    if json_output:
        start = proc.stdout.find("{")
        if start >= 0:
            try:
                data = json.loads(proc.stdout[start:])
            except ValueError:
                data = None
    return PlaybookRun(proc.returncode, proc.stdout, proc.stderr, data)



def papi_client(sim: OneFSSimulator, pki: Pki) -> Any:
    """A PAPI client for the test's simulator (trusting the test CA, no pauses between retries)."""
    from ansible.module_utils.onefs import OneFSClient, OneFSConnection

    return OneFSClient(OneFSConnection(host="127.0.0.1", port=sim.port, user=API_USER,  # type: ignore[attr-defined]
                                       password=API_PASSWORD, ca_path=str(pki.ca), retry_backoff=0.0),
                       sleep=lambda s: None)


def make_dir(client: Any, path: str, mode: str = "0755") -> None:
    """Create a directory (and its parents) through the namespace API, as an administrator would."""
    client.put("/namespace" + path, query={"recursive": "true"},
               headers={"x-isi-ifs-target-type": "container", "x-isi-ifs-access-control": mode})
