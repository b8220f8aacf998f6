"""Fast unit tests of the lab's pure parts: topology, qemu argv, ports, recipe hash, config disk, hub."""

from __future__ import annotations

import copy
import dataclasses
import tarfile
from pathlib import Path

import pytest
import yaml

from lab import hub, image_files, images, pki, qemu, vmconfig
from lab.lifecycle import substitute
from lab.topology import DEFAULT_TOPOLOGY, TopologyError, build_topology, expand, load_topology

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load(DEFAULT_TOPOLOGY.read_text())
INVENTORY = yaml.safe_load((ROOT / "inventories/lab/hosts.yml").read_text())


def topo(**kw):
    return build_topology(copy.deepcopy(SPEC), copy.deepcopy(INVENTORY), **kw)


# ---------------------------------------------------------------- topology


def test_default_topology_matches_the_contract():
    t = load_topology()
    assert [n.name for n in t.nodes] == ["dgx01", "dgx02", "sn3700v01", "powerscale01"]
    assert {n.name: n.ssh_port for n in t.nodes} == {"dgx01": 2221, "dgx02": 2222, "powerscale01": 2231, "sn3700v01": 2241}
    dgx01 = t.node("dgx01")
    assert [n.name for n in dgx01.nics] == ["mgmt0", "storage0", "cfab0"]
    assert dgx01.nic("storage0").address == "198.51.100.11/24"
    assert dgx01.nic("storage0").mtu == 9000
    assert dgx01.nic("cfab0").address == "203.0.113.11/24"
    assert dgx01.nic("storage0").peer == "sn3700v01:swp1"
    switch = t.node("sn3700v01")
    assert [n.name for n in switch.nics if n.kind == "listen"] == ["swp1", "swp2", "swp9"]
    assert all(n.address is None for n in switch.nics)
    ps = t.node("powerscale01")
    assert ps.nic("storage0").peer == "sn3700v01:swp9"
    assert ps.forwards[0].host_port == 18080 and ps.forwards[0].guest_port == 8080
    assert ps.data_disk is not None and ps.data_disk.mount == "/ifs"
    assert {s.name for s in t.host_services} == {"qm8700-01", "qm8700-02", "registry"}


def test_cables_pair_listen_and_connect_ends_on_the_same_port():
    t = topo()
    for c in t.cables:
        ep_node, ep_nic = c.endpoint.split(":")
        sw_node, sw_port = c.switch.split(":")
        assert t.node(ep_node).nic(ep_nic).port == c.port
        assert t.node(ep_node).nic(ep_nic).kind == "connect"
        assert t.node(sw_node).nic(sw_port).port == c.port
        assert t.node(sw_node).nic(sw_port).kind == "listen"


def test_a_miswire_swaps_two_storage_cables_at_the_switch_and_keeps_the_inventory_design():
    t = topo(miswire=("dgx01", "dgx02"))
    assert t.node("dgx01").nic("storage0").peer == "sn3700v01:swp2"
    assert t.node("dgx02").nic("storage0").peer == "sn3700v01:swp1"
    assert t.miswire == "dgx01,dgx02"
    assert any("dgx01 storage0 is cabled to sn3700v01:swp2, where the inventory designs sn3700v01:swp1" in n
               for n in t.notes)
    assert topo().miswire == ""
    with pytest.raises(TopologyError, match="LAB_MISWIRE=dgx01,powerscale01: name two different DGX VMs"):
        topo(miswire=("dgx01", "powerscale01"))


def test_dgx_count_resizes_and_notes_nodes_missing_from_the_inventory():
    t = topo(dgx_count=4)
    assert [n.name for n in t.nodes if n.role == "dgx"] == ["dgx01", "dgx02", "dgx03", "dgx04"]
    assert t.node("dgx04").ssh_port == 2224
    assert t.node("dgx04").nic("storage0").address == "198.51.100.14/24"
    assert t.node("dgx04").nic("storage0").peer == "sn3700v01:swp4"
    assert len(t.notes) == 2 and "dgx03" in t.notes[0]
    assert len([n for n in t.node("sn3700v01").nics if n.kind == "listen"]) == 5
    one = topo(dgx_count=1)
    assert [n.name for n in one.nodes] == ["dgx01", "sn3700v01", "powerscale01"]


@pytest.mark.parametrize("count", [0, 5, "two"])
def test_dgx_count_out_of_range_is_refused(count):
    with pytest.raises(TopologyError, match="dgx count"):
        topo(dgx_count=count)


def test_port_offset_moves_every_host_port_but_not_host_services():
    base, moved = topo(), topo(port_offset=1000)
    assert moved.node("dgx01").ssh_port == base.node("dgx01").ssh_port + 1000
    assert moved.hub_port == base.hub_port + 1000
    assert [c.port for c in moved.cables] == [c.port + 1000 for c in base.cables]
    assert moved.node("powerscale01").forwards[0].host_port == 19080
    assert moved.host_services == base.host_services


def test_ports_are_unique():
    ports = [p for _, p in topo(dgx_count=4).host_ports()]
    assert len(ports) == len(set(ports))


def test_port_collision_is_reported_with_both_owners():
    spec = copy.deepcopy(SPEC)
    spec["ports"]["cable_base"] = 2230  # cables 2230, 2231, 2232: 2231 is powerscale01's SSH
    with pytest.raises(TopologyError) as err:
        build_topology(spec, copy.deepcopy(INVENTORY))
    assert "2231" in str(err.value) and "powerscale01 ssh" in str(err.value)


def test_inventory_disagreement_names_host_variable_value_and_fix():
    inv = copy.deepcopy(INVENTORY)
    inv["all"]["children"]["dgx"]["hosts"]["dgx01"]["ansible_port"] = 2299
    inv["all"]["children"]["dgx"]["hosts"]["dgx02"]["storage_nics"][0]["switch_port"] = "swp7"
    with pytest.raises(TopologyError) as err:
        build_topology(copy.deepcopy(SPEC), inv)
    text = str(err.value)
    assert "dgx01: ansible_port 2299 differs" in text and "make them equal" in text
    assert "dgx02 storage_nics storage0" in text and "swp7" in text


def test_bad_address_and_unknown_key_and_double_cabled_port():
    inv = copy.deepcopy(INVENTORY)
    inv["all"]["children"]["powerscale"]["hosts"]["powerscale01"]["storage_nics"][0]["address"] = "198.51.100.21"
    spec = copy.deepcopy(SPEC)
    spec["bogus"] = 1
    spec["nodes"]["powerscale01"]["cables"][0]["switch_port"] = "swp1"
    with pytest.raises(TopologyError) as err:
        build_topology(spec, inv)
    problems = err.value.problems
    assert any("unknown key 'bogus'" in p for p in problems)
    assert any("no prefix length" in p for p in problems)
    assert any("sn3700v01:swp1 is cabled to both" in p for p in problems)


def test_non_switch_cable_target_and_data_disk_options_are_refused():
    spec = copy.deepcopy(SPEC)
    spec["nodes"]["powerscale01"]["cables"][0]["switch"] = "dgx01"
    spec["nodes"]["powerscale01"]["data_disk"] = {"size_gb": 8, "mount": "/data"}
    with pytest.raises(TopologyError) as err:
        build_topology(spec, copy.deepcopy(INVENTORY))
    assert any("is not a node with role switch" in p for p in err.value.problems)
    assert any("only size_gb can be set (mount given)" in p for p in err.value.problems)


def test_start_order_puts_the_listening_switch_first():
    order = [n.name for n in topo().start_order()]
    assert order[0] == "sn3700v01"


def test_expand_templates():
    assert expand("dgx{n:02d}", 3) == "dgx03"
    assert expand("swp{n}", 12) == "swp12"
    assert expand("198.51.100.{10+n}/24", 4) == "198.51.100.14/24"
    with pytest.raises(ValueError, match="unsupported placeholder"):
        expand("{n*2}", 1)


def test_macs_are_unique_per_lab():
    macs = [nic.mac for n in topo(dgx_count=4).nodes for nic in n.nics]
    assert len(macs) == len(set(macs))
    assert all(m.startswith("52:54:00:") for m in macs)


# ---------------------------------------------------------------- qemu argv


def _files(tmp: Path, node) -> qemu.VmFiles:
    return qemu.vm_files(tmp, node)


def test_qemu_argv_dgx(tmp_path):
    t = topo()
    node = t.node("dgx01")
    argv = qemu.qemu_argv(
        node, t, _files(tmp_path, node), kernel=tmp_path / "vmlinuz", initrd=tmp_path / "initrd", accel="tcg",
        relay_cmd="/usr/bin/python3 /r/lab/relay.py 127.0.0.1 15000",
    )
    joined = " ".join(argv)
    assert argv[0] == "qemu-system-x86_64"
    assert "-accel tcg,thread=multi,tb-size=256 -cpu max -smp 2" in joined
    assert "-m 2048" in joined
    netdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-netdev"]
    assert netdevs[0].startswith("user,id=mgmt0,restrict=on,")
    assert "hostfwd=tcp:127.0.0.1:2221-:22" in netdevs[0]
    assert "guestfwd=tcp:10.0.2.100:15000-cmd:/usr/bin/python3 /r/lab/relay.py 127.0.0.1 15000" in netdevs[0]
    assert netdevs[1] == "socket,id=storage0,connect=127.0.0.1:24100"
    assert netdevs[2] == "socket,id=cfab0,udp=127.0.0.1:24200,localaddr=127.0.0.1:24201"
    assert "virtio-net-pci,netdev=storage0,mac=52:54:00:4c:01:01,addr=0x11" in argv
    assert "virtio-blk-pci,drive=root,addr=0x3" in argv
    assert "virtio-blk-pci,drive=labcfg,serial=labcfg,addr=0x4" in argv
    assert argv[-1] == "-daemonize"
    # every address any netdev names is loopback or the guest-side user net
    for nd in netdevs:
        assert "0.0.0.0" not in nd


def test_qemu_argv_switch_listens_and_storage_has_data_disk_and_forward(tmp_path):
    t = topo()
    sw = t.node("sn3700v01")
    argv = qemu.qemu_argv(sw, t, _files(tmp_path, sw), kernel=tmp_path / "k", initrd=tmp_path / "i", accel="kvm")
    assert "socket,id=swp9,listen=127.0.0.1:24102" in argv
    assert "-accel" in argv and argv[argv.index("-accel") + 1] == "kvm"
    assert not any("guestfwd" in a for a in argv)
    ps = t.node("powerscale01")
    argv = qemu.qemu_argv(ps, t, _files(tmp_path, ps), kernel=tmp_path / "k", initrd=tmp_path / "i", accel="tcg")
    user = next(a for a in argv if a.startswith("user,"))
    assert "hostfwd=tcp:127.0.0.1:18080-:8080" in user and "guestfwd" not in user
    assert "virtio-blk-pci,drive=data,serial=data,addr=0x5" in argv


def test_qemu_argv_refuses_commas_long_socket_paths_and_bad_accel(tmp_path):
    t = topo()
    node = t.node("sn3700v01")
    bad = tmp_path / "a,b"
    with pytest.raises(qemu.ArgvError, match="comma"):
        qemu.qemu_argv(node, t, _files(bad, node), kernel=tmp_path / "k", initrd=tmp_path / "i", accel="tcg")
    deep = tmp_path / ("x" * 120)
    with pytest.raises(qemu.ArgvError, match="shorter LAB_RUN_DIR"):
        qemu.qemu_argv(node, t, _files(deep, node), kernel=tmp_path / "k", initrd=tmp_path / "i", accel="tcg")
    with pytest.raises(qemu.ArgvError, match="not kvm or tcg"):
        qemu.qemu_argv(node, t, _files(tmp_path, node), kernel=tmp_path / "k", initrd=tmp_path / "i", accel="hvf")


def test_accel_override_skips_the_probe(tmp_path):
    assert qemu.choose_accel(tmp_path / "k", tmp_path / "i", tmp_path, "tcg").accel == "tcg"
    with pytest.raises(qemu.ArgvError, match="LAB_ACCEL"):
        qemu.choose_accel(tmp_path / "k", tmp_path / "i", tmp_path, "xen")


# ---------------------------------------------------------------- recipe hash


def test_recipe_hash_is_stable_and_sensitive():
    r = images.Recipe()
    assert images.role_hash(r, "dgx") == images.role_hash(images.Recipe(), "dgx")
    assert len({images.role_hash(r, role) for role in ("dgx", "storage", "switch")}) == 3
    more = dataclasses.replace(r, base_packages=(*r.base_packages, "vim-tiny"))
    assert images.base_hash(more) != images.base_hash(r)
    assert images.role_hash(more, "switch") != images.role_hash(r, "switch")
    roles = tuple(dataclasses.replace(x, wheels=("torch==2.12.0",)) if x.role == "dgx" else x for x in r.roles)
    other = dataclasses.replace(r, roles=roles)
    assert images.role_hash(other, "dgx") != images.role_hash(r, "dgx")
    assert images.role_hash(other, "storage") == images.role_hash(r, "storage")


def test_recipe_hash_covers_baked_files(monkeypatch):
    before = images.role_hash(images.Recipe(), "switch")
    changed = (*image_files.COMMON_FILES, image_files.ImageFile("/etc/motd", "hi\n"))
    monkeypatch.setattr(image_files, "COMMON_FILES", changed)
    assert images.role_hash(images.Recipe(), "switch") != before


def test_recipe_packages_match_the_contract():
    r = images.Recipe()
    assert {"python3", "fio", "iperf3", "nfs-common", "docker.io", "iputils-ping"} <= {*r.role("dgx").packages, *r.base_packages}
    assert "torch==2.13.0" in r.role("dgx").wheels
    assert {"nfs-kernel-server", "xfsprogs", "python3", "iputils-ping"} <= set(r.role("storage").packages)
    assert {"ifupdown2", "frr", "frr-pythontools", "bridge-utils", "python3", "iputils-ping"} <= set(r.role("switch").packages)
    # real LLDP on every lab cable (the cabling stage): lldpd in each image, enabled, the host ends on storage only
    for role in ("dgx", "storage", "switch"):
        assert "lldpd" in r.role(role).packages and "lldpd.service" in image_files.ROLE_ENABLE_UNITS[role]
    assert image_files.LLDPD_HOST.endswith("configure system interface pattern storage*\n")
    assert "linux-image-cloud-amd64" in r.base_packages


def test_cache_dir_override(monkeypatch, tmp_path):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path / "c"))
    assert images.default_cache_dir() == tmp_path / "c"


# ---------------------------------------------------------------- config disk, pki, hub, services


def test_network_units_name_nics_by_mac_and_address_data_nics():
    t = topo()
    units = vmconfig.network_units(t.node("dgx01"))
    assert "MACAddress=52:54:00:4c:01:01" in units["10-lab-storage0.link"] and "Name=storage0" in units["10-lab-storage0.link"]
    assert "Address=198.51.100.11/24" in units["20-lab-storage0.network"]
    assert "MTUBytes=9000" in units["20-lab-storage0.network"]
    assert "Address=10.0.2.15/24" in units["20-lab-mgmt0.network"]
    assert "DHCP" not in units["20-lab-mgmt0.network"]  # the DHCPv4 client raced the NIC rename (EBUSY)
    sw = vmconfig.network_units(t.node("sn3700v01"))
    assert "Unmanaged=yes" in sw["20-lab-swp1.network"] and "Address" not in sw["20-lab-swp1.network"]


def test_config_disk_round_trip(tmp_path):
    t = topo()
    src = tmp_path / "onefs_sim"
    src.mkdir()
    (src / "__init__.py").write_text("")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "x.pyc").write_bytes(b"\0")
    files = vmconfig.config_files(
        t.node("powerscale01"), t, authorized_key="ssh-ed25519 AAAA lab", host_key=b"KEY", host_key_pub="ssh-ed25519 BBBB",
        onefs_sim_source=src, onefs_cert=(b"PEM", b"PRIV"), onefs_password="pw",
    )
    disk = tmp_path / "cfg.tar"
    vmconfig.write_config_disk(disk, files)
    assert disk.stat().st_size % 512 == 0
    with tarfile.open(disk) as tar:
        names = tar.getnames()
        assert tar.getmember("etc/onefs-sim/password").mode == 0o600
        assert tar.getmember("root/.ssh").mode == 0o700
        assert tar.extractfile("etc/hostname").read() == b"powerscale01\n"
    assert "opt/onefs-sim/onefs_sim/__init__.py" in names
    assert not any("__pycache__" in n for n in names)
    dgx_hosts = vmconfig.hosts_file(t.node("dgx01"), t)
    assert "10.0.2.100\tregistry.lab" in dgx_hosts
    assert "registry.lab" not in vmconfig.hosts_file(t.node("sn3700v01"), t)


def test_san_extension_has_the_contract_sans():
    ext = pki.san_extension("registry.lab")
    assert "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:registry.lab" in ext
    assert "CA:FALSE" in ext


def test_hub_repeats_to_other_members_only():
    assert hub.forward_targets(24201, (24201, 24202, 24203)) == [24202, 24203]
    assert hub.forward_targets(9999, (24201, 24202)) == []


def test_host_service_argv_substitution():
    s = next(s for s in topo().host_services if s.name == "qm8700-01")
    argv = substitute(s.argv, python="/py", run_dir=Path("/run"), root=Path("/root"))
    assert argv[:3] == ["/py", "-m", "lab.mlnxos_sim"]
    assert "/run/secrets/qm8700_api_password" in argv
    assert not any("{" in a for a in argv)


# ---------------------------------------------------------------- the launch engines (Slurm, Open MPI) on the DGX VMs


def test_slurm_conf_puts_every_dgx_in_one_partition_over_the_fabric():
    conf = vmconfig.slurm_conf(topo())
    lines = conf.splitlines()
    assert "SlurmctldHost=dgx01(203.0.113.11)" in lines and "AuthType=auth/munge" in lines
    assert "NodeName=dgx01 NodeAddr=203.0.113.11 CPUs=2 RealMemory=1024 State=UNKNOWN" in lines
    assert "NodeName=dgx02 NodeAddr=203.0.113.12 CPUs=2 RealMemory=1024 State=UNKNOWN" in lines
    assert "PartitionName=dgx Nodes=dgx01,dgx02 Default=YES MaxTime=INFINITE State=UP" in lines
    # the paths Debian 12's packages make and its units' PID files
    assert "StateSaveLocation=/var/lib/slurm/slurmctld" in lines and "SlurmdPidFile=/run/slurmd.pid" in lines
    assert "MpiDefault=none" in lines  # the validation names --mpi=pmix itself
    three = vmconfig.slurm_conf(topo(dgx_count=3))
    assert "NodeName=dgx03 NodeAddr=203.0.113.13" in three and "Nodes=dgx01,dgx02,dgx03 " in three


def test_engine_files_only_on_dgx_and_the_controller_marker_on_the_first(tmp_path):
    t = topo()
    keys = {n.name: f"ssh-ed25519 KEY{n.name} root@{n.name}" for n in vmconfig.dgx_nodes(t)}
    files = {f.path: f for f in vmconfig.engine_files(t.node("dgx01"), t, munge_key=b"M" * 1024, dgx_key=b"PRIV",
                                                        host_keys=keys)}
    assert files["etc/munge/munge.key"].mode == 0o400 and files["root/.ssh/id_ed25519"].mode == 0o600
    assert vmconfig.SLURM_CONTROLLER_MARKER in files
    assert files["etc/slurm/slurm.conf"].data.decode() == vmconfig.slurm_conf(t)
    assert files["etc/ssh/ssh_known_hosts"].data.decode().splitlines() == [
        "dgx01,203.0.113.11 ssh-ed25519 KEYdgx01", "dgx02,203.0.113.12 ssh-ed25519 KEYdgx02"]
    assert "oob_tcp_if_include = cfab0" in files["etc/openmpi/openmpi-mca-params.conf"].data.decode()
    dgx02 = [f.path for f in vmconfig.engine_files(t.node("dgx02"), t, munge_key=b"M", dgx_key=b"P", host_keys=keys)]
    assert vmconfig.SLURM_CONTROLLER_MARKER not in dgx02 and "etc/slurm/slurm.conf" in dgx02
    assert vmconfig.engine_files(t.node("powerscale01"), t, munge_key=b"M", dgx_key=b"P", host_keys=keys) == []
    disk = tmp_path / "cfg.tar"
    vmconfig.write_config_disk(disk, list(files.values()))
    with tarfile.open(disk) as tar:
        assert tar.getmember("etc/munge/munge.key").mode == 0o400


def test_dgx_image_has_the_engines_and_starts_them():
    r = images.Recipe()
    assert {"slurmd", "slurmctld", "slurm-client", "munge", "libpmix-dev", "openmpi-bin"} <= set(r.role("dgx").packages)
    assert {"munge.service", "slurmd.service", "slurmctld.service"} <= set(image_files.ROLE_ENABLE_UNITS["dgx"])
    dropins = {f.path: f.content for f in image_files.ROLE_FILES["dgx"]}
    assert "ConditionPathExists=/etc/lab/slurmctld" in dropins["/etc/systemd/system/slurmctld.service.d/lab.conf"]
    assert "/" + vmconfig.SLURM_CONTROLLER_MARKER in dropins["/etc/systemd/system/slurmctld.service.d/lab.conf"]
    assert "ExecStartPre=+/bin/chown munge:munge /etc/munge/munge.key" in dropins[
        "/etc/systemd/system/munge.service.d/lab.conf"]


def test_credentials_carry_a_munge_key_and_the_dgx_to_dgx_key(tmp_path):
    creds = pki.ensure_credentials(tmp_path / "run", ["dgx01"])
    key = creds.munge_key.read_bytes()
    assert len(key) == 1024 and creds.munge_key.stat().st_mode & 0o777 == 0o600
    assert creds.dgx_key.is_file() and creds.dgx_key.with_suffix(".pub").read_text().startswith("ssh-ed25519 ")
    again = pki.ensure_credentials(tmp_path / "run", ["dgx01"])
    assert again.munge_key.read_bytes() == key  # kept across `up`s: every VM keeps the same key


def test_slurm_conf_sets_only_parameters_of_the_22_05_manual():
    terms = set((ROOT / "tests/fixtures/slurm/manual/slurm.conf.5-22.05.8-terms.txt").read_text().split())
    keys = {tok.split("=", 1)[0] for line in vmconfig.slurm_conf(topo()).splitlines() if not line.startswith("#")
            for tok in line.split() if "=" in tok}
    assert keys and keys <= terms, f"not in slurm.conf(5) of 22.05.8: {sorted(keys - terms)}"
