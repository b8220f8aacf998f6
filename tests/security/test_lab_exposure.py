"""The lab's exposure, tested without starting it: every host service and qemu forward binds 127.0.0.1 only
(the VMs reach host services through qemu user networking, where the guest's 10.0.2.2 / guestfwd lead to the
host's loopback), its secrets and private keys are written owner-only, and the NFS exports the OneFS simulator
writes into the storage VM admit only the storage network's clients, root squashed."""

from __future__ import annotations

import argparse
import ipaddress
import re
import stat
from pathlib import Path

import pytest
import yaml

from lab import hub, pki, qemu, registry, relay
from lab.lifecycle import substitute
from lab.mlnxos_sim import __main__ as mlnxos_main
from lab.mlnxos_sim.cli import load_host_key
from lab.nvue_sim import __main__ as nvue_main
from lab.onefs_sim import __main__ as onefs_main
from lab.onefs_sim.backends import MemoryBackend, render_exports
from lab.onefs_sim.server import OneFSSimulator
from lab.topology import load_topology
from validation.inventory_layers import group_vars, sources

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
# NFS and its side services: never forwarded from the host into the storage VM.
NFS_PORTS = {111, 2049, 20048}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def creds(tmp_path_factory) -> pki.Credentials:
    return pki.ensure_credentials(tmp_path_factory.mktemp("run"), ["dgx01"])


# ---------------------------------------------------------------------------------------------- loopback


def _service_args(name: str) -> list[str]:
    """The argv topology.yml gives a host service, after `python -m MODULE`, with {run_dir} etc. filled in."""
    spec = yaml.safe_load((ROOT / "lab" / "topology.yml").read_text())
    service = next(s for s in spec["host_services"] if s["name"] == name)
    argv = substitute(tuple(service["argv"]), python="python3", run_dir=Path("/run"), root=ROOT)
    return argv[argv.index("-m") + 2:]


def test_every_host_service_listens_on_loopback():
    spec = yaml.safe_load((ROOT / "lab" / "topology.yml").read_text())
    for service in spec["host_services"]:
        args = _service_args(service["name"])
        if service["module"] == "lab.mlnxos_sim":
            assert mlnxos_main.parse_args(args).listen == LOOPBACK, service["name"]
        else:
            assert "--listen" in args, f"{service['name']}: say where it listens"
            assert args[args.index("--listen") + 1].rpartition(":")[0] == LOOPBACK, service["name"]


def test_simulator_defaults_are_loopback():
    common = ["--cert", "c", "--key", "k", "--password-file", "p"]
    assert onefs_main.parse_args([*common, "--user", "u"]).listen.rpartition(":")[0] == LOOPBACK
    assert nvue_main.parse_args([*common, "--state", "s"]).listen.rpartition(":")[0] == LOOPBACK
    assert mlnxos_main.parse_args([*common, "--name", "q", "--https-port", "1", "--ssh-port", "2",
                                   "--state", "s"]).listen == LOOPBACK


def test_onefs_simulator_binds_the_default_address(creds):
    host = onefs_main.parse_args(["--cert", "c", "--key", "k", "--user", "u", "--password-file", "p"]).listen
    cert, key = creds.cert("onefs-sim")
    httpd = OneFSSimulator(MemoryBackend(), "u", "p")._make_server(host.rpartition(":")[0], 0, str(cert), str(key))
    try:
        assert httpd.socket.getsockname()[0] == LOOPBACK
    finally:
        httpd.server_close()


def test_services_refuse_an_address_off_the_machine(tmp_path, capsys):
    assert nvue_main.main(["--listen", "0.0.0.0:0", "--cert", "c", "--key", "k", "--password-file", "p",
                           "--state", "s"]) == 2
    assert "loopback only" in capsys.readouterr().err
    with pytest.raises(SystemExit, match=r"127\.0\.0\.1"):
        hub.serve("0.0.0.0", 0, ())
    with pytest.raises(SystemExit, match=r"127\.0\.0\.1 only"):
        registry.serve(argparse.Namespace(listen="0.0.0.0:15000", run_dir=str(tmp_path)))
    assert relay.main(["relay.py", "192.0.2.1", "15000"]) == 2


def test_every_qemu_network_end_is_loopback_and_nfs_is_not_forwarded():
    topo = load_topology()
    for node in topo.nodes:
        for nic in node.nics:
            if nic.kind == "user":
                netdev = qemu.user_netdev(node, nic, topo, "python3 relay.py 127.0.0.1 15000")
                assert "restrict=on" in netdev, node.name
                for host in re.findall(r"hostfwd=tcp:([^:]*):", netdev):
                    assert host == LOOPBACK, f"{node.name}: {netdev}"
            else:
                netdev = qemu.data_netdev(nic)
                addresses = re.findall(r"(?:listen|connect|udp|localaddr)=([^:,]+):", netdev)
                assert addresses and set(addresses) == {LOOPBACK}, f"{node.name}: {netdev}"
        assert not NFS_PORTS & {f.guest_port for f in node.forwards}, f"{node.name} forwards NFS off the lab"


# ---------------------------------------------------------------------------------------------- secrets


def test_lab_credentials_are_owner_only(creds):
    run = creds.secrets.parent
    for directory in (run / "ssh", run / "ssh" / "hostkeys", creds.pki, creds.secrets):
        assert mode(directory) == 0o700, directory
    private = [*creds.secrets.iterdir(), creds.ssh_key, creds.host_key("dgx01"), creds.dgx_key, creds.pki / "ca.key",
               *(creds.cert(s)[1] for s in pki.SERVICES)]
    # the secrets, MUNGE's key (Slurm), root's SSH key, a host key, the DGX-to-DGX key (mpirun), the CA's key
    assert len(private) == len(pki.SECRETS) + 1 + 4 + len(pki.SERVICES)
    assert creds.munge_key in private
    for path in private:
        assert mode(path) & 0o077 == 0, f"{path} is {oct(mode(path))}"


def test_registry_secrets_are_owner_only(tmp_path):
    password = registry.ensure_password(tmp_path)
    assert mode(tmp_path / "secrets") == 0o700 and mode(tmp_path / "secrets" / "ngc_mirror_password") == 0o600
    htpasswd = registry.write_htpasswd(tmp_path, password)
    _ca, cert, key = registry.ensure_pki(tmp_path)
    config = registry.write_config(tmp_path, "127.0.0.1:15000", cert, key, htpasswd)
    assert "secret" in yaml.safe_load(config.read_text())["http"]
    for path in (htpasswd, key, tmp_path / "pki" / "ca.key", config):
        assert mode(path) == 0o600, f"{path} is {oct(mode(path))}"
    assert mode(tmp_path / "pki") == 0o700


def test_switch_simulator_host_key_is_owner_only(tmp_path):
    load_host_key(tmp_path / "q.ssh_host_key")
    assert mode(tmp_path / "q.ssh_host_key") == 0o600


def _tasks(node) -> list[dict]:
    """Every task of a task file, blocks unrolled."""
    out = []
    for task in node or []:
        out.append(task)
        for key in ("block", "rescue", "always"):
            out.extend(_tasks(task.get(key)))
    return out


SECRET_WORDS = re.compile(r"password|api_key|secret|token|vault_|private[_ ]key|credential", re.I)
FILE_WRITERS = ("ansible.builtin.copy", "ansible.builtin.template", "ansible.builtin.lineinfile",
                "ansible.builtin.blockinfile", "ansible.builtin.get_url")


@pytest.mark.parametrize("task_file", sorted(p.relative_to(ROOT).as_posix()
                                             for p in (ROOT / "roles").glob("*/tasks/*.yml")))
def test_role_tasks_write_secrets_owner_only(task_file):
    """A task that writes a secret into a file gives it an owner-only mode; docker's login, which takes no mode,
    is followed by a task that makes its credential file 0600."""
    tasks = _tasks(yaml.safe_load((ROOT / task_file).read_text()))
    for i, task in enumerate(tasks):
        module = next((m for m in FILE_WRITERS if m in task), None)
        if module and (task.get("no_log") or SECRET_WORDS.search(yaml.safe_dump(task[module]))):
            assert str(task[module].get("mode")) in ("0600", "0400"), f"{task_file}: {task.get('name')}"
        if "community.docker.docker_login" in task:
            config = task["community.docker.docker_login"].get("config_path")
            assert config, f"{task_file}: {task.get('name')}: name the credential file (config_path)"
            after = [t.get("ansible.builtin.file") or {} for t in tasks[i + 1:]]
            assert any(a.get("path") == config and str(a.get("mode")) == "0600" for a in after), (
                f"{task_file}: no task makes {config} mode 0600 after the login")


# ---------------------------------------------------------------------------------------------- NFS exports


def _lab_exports() -> tuple[str, ipaddress.IPv4Network]:
    """The /etc/exports.d file the OneFS simulator writes in the lab: the lab inventory's exports, templated the
    way roles/powerscale sends them (its tasks and vars, evaluated with Ansible on the lab inventory), turned into
    request bodies by the powerscale_nfs_export module and rendered by the simulator's own function."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    from ansible.template import Templar, trust_as_template
    from ansible.vars.hostvars import HostVars
    from ansible.vars.manager import VariableManager
    from powerscale_nfs_export import papi_value

    init_plugin_loader()
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=sources(ROOT / "inventories" / "lab"))
    host = inventory.get_hosts("powerscale")[0]
    manager = VariableManager(loader=loader, inventory=inventory)
    HostVars(inventory, manager, loader)  # registers itself: templates see hostvars, as in a play
    variables = dict(manager.get_vars(host=host))
    role = ROOT / "roles" / "powerscale"
    variables.update(loader.load_from_file(str(role / "vars" / "main.yml"), trusted_as_template=True))
    tasks = loader.load_from_file(str(role / "tasks" / "content.yml"), trusted_as_template=True)
    task = next(t for t in tasks if "powerscale_nfs_export" in t and "state" not in t["powerscale_nfs_export"])
    bodies = {}
    for eid, export in enumerate(Templar(loader=loader, variables=variables).template(trust_as_template("{{ powerscale_exports }}")),
                                 start=1):
        params = Templar(loader=loader, variables={**variables, "item": export}).template(task["powerscale_nfs_export"])
        body = {name: papi_value(name, params) for name in params if params[name] is not None
                and name in ("clients", "root_clients", "read_only_clients", "read_write_clients", "map_root",
                             "security_flavors", "read_only")}
        bodies[eid] = {**body, "paths": [params["path"]], "zone": params["zone"]}
    subnet = ipaddress.ip_network(Templar(loader=loader, variables=variables).template(trust_as_template("{{ storage_subnet }}")))
    return render_exports(bodies, lambda user: (65534, 65534)), subnet


def test_lab_nfs_exports_admit_only_the_storage_network_root_squashed():
    text, subnet = _lab_exports()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(lines) == len(group_vars(ROOT / "inventories/lab", "exports")["powerscale_exports"])
    for line in lines:
        path, *entries = line.split()
        assert entries, line
        for entry in entries:
            client, options = re.fullmatch(r"([^(]+)\((.*)\)", entry).groups()
            assert ipaddress.ip_network(client, strict=False).subnet_of(subnet), f"{path}: {client} not in {subnet}"
            assert "root_squash" in options.split(",") and "no_root_squash" not in options, f"{path}: {options}"
