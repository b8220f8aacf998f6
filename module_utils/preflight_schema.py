"""Preflight schema: the type, range, enum and required-ness of every variable the other stages consume.

Pure data plus a tiny checker. `check(spec, value, path)` returns Findings (path, value, problem, fix); the
caller (module_utils/preflight_rules.py) attaches the host and the severity. Nothing here knows Ansible.
The variable model it describes is inventories/production/hosts.yml and the group_vars/all/*.yml of
inventories/common and inventories/production.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.cumulus_fabric import (
    BREAKOUT_MODE,
    PARENT_PORT_NAME,
    PORT_NAME,
    SN3700V_LANES,
    SN3700V_PORTS,
)
from ansible.module_utils.cumulus_release import FEC_MODES
from ansible.module_utils.inventory_problem import MISSING, is_hostname
from ansible.module_utils.mlnxos_fabric import IB_SPEEDS as QM8700_SPEEDS
from ansible.module_utils.mlnxos_fabric import IPOIB_MTUS


@dataclass(frozen=True)
class Finding:
    """One schema defect of one variable path."""

    path: str
    value: Any
    problem: str
    fix: str


# ---------------------------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class Spec:
    """Base of every value spec. `hint` is the fix shown when the value is wrong."""

    hint: str = field(default="", kw_only=True)

    def check(self, value: Any, path: str) -> list[Finding]:
        raise NotImplementedError

    def bad(self, value: Any, path: str, problem: str, fix: str = "") -> list[Finding]:
        fallback = "correct it (its meaning is commented in inventories/common or inventories/production)"
        return [Finding(path, value, problem, fix or self.hint or fallback)]


@dataclass(frozen=True)
class Any_(Spec):
    def check(self, value: Any, path: str) -> list[Finding]:
        return []


@dataclass(frozen=True)
class Bool(Spec):
    def check(self, value: Any, path: str) -> list[Finding]:
        if isinstance(value, bool):
            return []
        return self.bad(value, path, "must be a boolean", self.hint or "set true or false (unquoted)")


@dataclass(frozen=True)
class Int(Spec):
    min: int | None = None
    max: int | None = None

    def check(self, value: Any, path: str) -> list[Finding]:
        if isinstance(value, bool) or not isinstance(value, int):
            return self.bad(value, path, "must be an integer", self.hint or f"set an integer{self._range()}")
        if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
            return self.bad(value, path, f"out of range{self._range()}", self.hint or f"set a value{self._range()}")
        return []

    def _range(self) -> str:
        if self.min is not None and self.max is not None:
            return f" {self.min}..{self.max}"
        if self.min is not None:
            return f" >= {self.min}"
        if self.max is not None:
            return f" <= {self.max}"
        return ""


@dataclass(frozen=True)
class Number(Spec):
    min: float | None = None
    max: float | None = None
    min_exclusive: bool = False

    def check(self, value: Any, path: str) -> list[Finding]:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return self.bad(value, path, "must be a number", self.hint or "set a number")
        low_bad = self.min is not None and (value <= self.min if self.min_exclusive else value < self.min)
        if low_bad or (self.max is not None and value > self.max):
            low = f"> {self.min}" if self.min_exclusive else f">= {self.min}"
            rng = " and ".join(p for p in (low if self.min is not None else "",
                                           f"<= {self.max}" if self.max is not None else "") if p)
            return self.bad(value, path, f"out of range ({rng})", self.hint or f"set a number {rng}")
        return []


@dataclass(frozen=True)
class Str(Spec):
    nonempty: bool = True
    pattern: str = ""
    pattern_text: str = ""  # what the pattern means, for the problem column

    def check(self, value: Any, path: str) -> list[Finding]:
        if not isinstance(value, str):
            return self.bad(value, path, "must be a string", self.hint or "quote the value")
        if self.nonempty and not value.strip():
            return self.bad(value, path, "must not be empty", self.hint or "set a value")
        if self.pattern and value and not re.fullmatch(self.pattern, value):
            return self.bad(value, path, f"is not {self.pattern_text or 'valid'}",
                            self.hint or (f"write {self.pattern_text}" if self.pattern_text else ""))
        return []


@dataclass(frozen=True)
class Enum(Spec):
    choices: tuple[Any, ...] = ()

    def check(self, value: Any, path: str) -> list[Finding]:
        if isinstance(value, bool) or value not in self.choices:
            shown = ", ".join(str(c) for c in self.choices)
            return self.bad(value, path, f"must be one of: {shown}", self.hint or f"set one of: {shown}")
        return []


@dataclass(frozen=True)
class IP(Spec):
    def check(self, value: Any, path: str) -> list[Finding]:
        try:
            ipaddress.ip_address(str(value))
        except ValueError:
            return self.bad(value, path, "is not an IP address", self.hint or "set an address like 198.51.100.10")
        return [] if isinstance(value, str) else self.bad(value, path, "must be a string", "quote the address")


@dataclass(frozen=True)
class Interface(Spec):
    """An address with its prefix length, e.g. 198.51.100.11/24."""

    def check(self, value: Any, path: str) -> list[Finding]:
        if not isinstance(value, str) or "/" not in value:
            return self.bad(value, path, "is not an address/prefix", self.hint or "write it as ADDRESS/PREFIX, e.g. 198.51.100.11/24")
        try:
            iface = ipaddress.ip_interface(value)
        except ValueError:
            return self.bad(value, path, "is not an address/prefix", self.hint or "write it as ADDRESS/PREFIX, e.g. 198.51.100.11/24")
        if iface.network.prefixlen < iface.max_prefixlen - 1 and iface.ip in (
            iface.network.network_address, iface.network.broadcast_address
        ):
            return self.bad(value, path, "is the network or broadcast address of its subnet", "use a host address")
        return []


@dataclass(frozen=True)
class Network(Spec):
    def check(self, value: Any, path: str) -> list[Finding]:
        try:
            ipaddress.ip_network(str(value), strict=True)
        except ValueError:
            return self.bad(value, path, "is not a network (NETWORK/PREFIX with no host bits set)",
                            self.hint or "e.g. 198.51.100.0/24")
        return [] if isinstance(value, str) and "/" in value else self.bad(
            value, path, "is not a network NETWORK/PREFIX", self.hint or "e.g. 198.51.100.0/24")


def is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostOrIP(Spec):
    allow_port: bool = False

    def check(self, value: Any, path: str) -> list[Finding]:
        text = value
        if self.allow_port and isinstance(value, str) and re.fullmatch(r".+:\d{1,5}", value) and not is_ip(value):
            text, _unused, port = value.rpartition(":")
            if not 1 <= int(port) <= 65535:
                return self.bad(value, path, "has a port out of range 1..65535", self.hint)
        if isinstance(text, str) and (is_ip(text) or is_hostname(text)):
            return []
        return self.bad(value, path, "is not a host name or IP address",
                        self.hint or ("e.g. registry.example.com:5000" if self.allow_port else "e.g. 192.0.2.20"))


@dataclass(frozen=True)
class Version(Spec):
    def check(self, value: Any, path: str) -> list[Finding]:
        if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+){0,3}", value):
            return []
        return self.bad(value, path, "is not a dotted version string", self.hint or 'quote it, e.g. "5.3"')


@dataclass(frozen=True)
class AbsPath(Spec):
    prefix: str = "/"

    def check(self, value: Any, path: str) -> list[Finding]:
        ok = isinstance(value, str) and value.startswith(self.prefix) and "//" not in value and "/../" not in value + "/"
        if ok and (value == self.prefix.rstrip("/") or len(value) > 1):
            return []
        return self.bad(value, path, f"is not an absolute path under {self.prefix}",
                        self.hint or f"e.g. {self.prefix}data/...".replace("//", "/"))


@dataclass(frozen=True)
class ListOf(Spec):
    item: Spec = field(default_factory=Any_)
    min_len: int = 0
    max_len: int | None = None

    def check(self, value: Any, path: str) -> list[Finding]:
        if not isinstance(value, list):
            return self.bad(value, path, "must be a list", self.hint or "write a YAML list")
        if len(value) < self.min_len:
            return self.bad(value, path, f"needs at least {self.min_len} entr{'y' if self.min_len == 1 else 'ies'}",
                            self.hint or "add the missing entries")
        if self.max_len is not None and len(value) > self.max_len:
            return self.bad(value, path, f"has more than {self.max_len} entries", self.hint or "remove entries")
        found: list[Finding] = []
        for pos, item in enumerate(value):
            found += self.item.check(item, f"{path}[{pos}]")
        return found


@dataclass(frozen=True)
class Field:
    spec: Spec
    required: bool = True
    nullable: bool = False


@dataclass(frozen=True)
class Dict(Spec):
    """A mapping with known keys: unknown keys are refused (a typo must not silently fall back to a default)."""

    fields: Mapping[str, Field] = field(default_factory=dict)
    allow_extra: bool = False

    def check(self, value: Any, path: str) -> list[Finding]:
        if not isinstance(value, Mapping):
            return self.bad(value, path, "must be a mapping", self.hint or "write key: value pairs")
        found: list[Finding] = []
        for key, fld in self.fields.items():
            sub = f"{path}.{key}"
            if key not in value:
                if fld.required:
                    found.append(Finding(sub, MISSING, "is required", f"set {key}"))
                continue
            if value[key] is None and fld.nullable:
                continue
            found += fld.spec.check(value[key], sub)
        if not self.allow_extra:
            known = " ".join(sorted(self.fields))
            found += [Finding(f"{path}.{key}", value[key], "is not a known key",
                              f"remove it or fix its spelling (known: {known})")
                      for key in value if key not in self.fields]
        return found


@dataclass(frozen=True)
class MapOf(Spec):
    key: Spec = field(default_factory=Str)
    value: Spec = field(default_factory=Any_)
    min_len: int = 0

    def check(self, value: Any, path: str) -> list[Finding]:
        if not isinstance(value, Mapping):
            return self.bad(value, path, "must be a mapping", self.hint or "write key: value pairs")
        if len(value) < self.min_len:
            return self.bad(value, path, f"needs at least {self.min_len} entries", self.hint or "add entries")
        found: list[Finding] = []
        for key, item in value.items():
            found += self.key.check(key, f"{path}.{key}")
            found += self.value.check(item, f"{path}.{key}")
        return found


@dataclass(frozen=True)
class OneOf(Spec):
    """The value matches at least one of `options` (e.g. an integer or a string sysctl value)."""

    options: tuple[Spec, ...] = ()

    def check(self, value: Any, path: str) -> list[Finding]:
        results = [o.check(value, path) for o in self.options]
        if any(not r for r in results):
            return []
        return results[0] if results else []


# ---------------------------------------------------------------------------------------------- building blocks

PORT = Int(1, 65535)
MTU = Int(576, 9216, hint="set the MTU (9000 for jumbo frames on the storage network)")
SECURITY_FLAVORS = ("unix", "krb5", "krb5i", "krb5p")
NFS_VERSIONS = ("3", "4.0", "4.1", "4.2")
NFS_PROTOCOLS = ("tcp", "rdma")
PURPOSES = ("training", "scratch", "general")
SERVER_MODES = ("smartconnect", "static", "round_robin")
OCTAL_MODE = Str(pattern=r"0?[0-7]{3,4}", pattern_text="an octal mode", hint='quote it, e.g. "0755"')
CLIENT = Str(pattern=r"[^\s,]+", pattern_text="one client (IP, NETWORK/PREFIX or host name)",
             hint="one client per list entry: an IP, a NETWORK/PREFIX or a host name")
# The shape only; whether the port exists on an SN3700V is cumulus_fabric.port_problem (preflight_rules calls it).
SWITCH_PORT = Str(pattern=PORT_NAME, pattern_text="a Cumulus port name (swpN or swpNsM)",
                  hint=f"use the Cumulus name: swp1..swp{SN3700V_PORTS}, or swpNs0..swpNs{SN3700V_LANES - 1} "
                       "for a breakout")

STORAGE_NIC = Dict(fields={
    "name": Field(Str(pattern=r"[A-Za-z0-9_.:-]{1,15}", pattern_text="an interface name (<= 15 characters)")),
    "address": Field(Interface()),
    "speed_gbps": Field(Int(1, 400)),
    "mtu": Field(MTU),
    "switch": Field(Str(hint="name the SN3700V host of the inventory this cable plugs into")),
    "switch_port": Field(SWITCH_PORT),
    # the interface's MAC, optional: the cabling check's evidence where the end sends no LLDP (docs/cabling.md)
    "mac": Field(Str(pattern=r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}", pattern_text="a MAC address like 0c:42:a1:00:00:01"),
                 required=False),
})

DGX_MODEL = Dict(fields={
    "gpus": Field(Int(0, 16)),
    "gpu_model": Field(Str(nonempty=False)),
    "hcas": Field(Int(0, 16)),
    "hca_rate_gbps": Field(Enum(choices=(0, 100, 200, 400))),
    "nvswitch": Field(Bool()),
    # the compute-fabric HCAs by name (a DGX A100 also lists 1 or 2 dual-port storage ConnectX-6)
    "compute_hcas": Field(ListOf(Str(hint="an mlx5 device name as ibstat prints it, e.g. mlx5_0"), max_len=16),
                          required=False),
})

EXPORT = Dict(fields={
    "path": Field(AbsPath(prefix="/ifs/")),
    "description": Field(Str(nonempty=False), required=False),
    "purpose": Field(Enum(choices=PURPOSES)),
    "owner": Field(Str(), required=False),
    "group": Field(Str(), required=False),
    "mode": Field(OCTAL_MODE, required=False),
    "clients": Field(ListOf(item=CLIENT), required=False),
    "root_clients": Field(ListOf(item=CLIENT), required=False),
    "read_only_clients": Field(ListOf(item=CLIENT), required=False),
    "read_write_clients": Field(ListOf(item=CLIENT), required=False),
    "map_root": Field(Str(), required=False),
    "map_non_root": Field(Str(), required=False),
    "read_only": Field(Bool(), required=False),
    "all_dirs": Field(Bool(), required=False),
    "security_flavors": Field(ListOf(item=Enum(choices=SECURITY_FLAVORS), min_len=1), required=False),
    # explicit opt-outs of the secure defaults (preflight_rules.rule_export_exposure)
    "open_to_all_clients": Field(Bool(), required=False),
    "no_root_squash": Field(Bool(), required=False),
})

QUOTA = Dict(fields={
    "path": Field(AbsPath(prefix="/ifs/")),
    "type": Field(Enum(choices=("directory",))),
    "include_snapshots": Field(Bool(), required=False),
    "thresholds": Field(Dict(fields={
        "hard": Field(Int(1), required=False, nullable=True),
        "soft": Field(Int(1), required=False, nullable=True),
        "soft_grace_s": Field(Int(1), required=False, nullable=True),
        "advisory": Field(Int(1), required=False, nullable=True),
    })),
})

SMARTCONNECT = Dict(fields={
    "enabled": Field(Bool()),
    "subnet": Field(Str()),
    "pool": Field(Str()),
    "zone": Field(Str(nonempty=False)),
    "service_address": Field(IP()),
    "ip_ranges": Field(ListOf(item=Dict(fields={"low": Field(IP()), "high": Field(IP())}))),
    "interfaces": Field(ListOf(item=Str())),
    "connect_policy": Field(Enum(choices=("round_robin", "conn_count", "throughput", "cpu_usage"))),
    "groupnet": Field(Str(), required=False),
    "alloc_method": Field(Enum(choices=("dynamic", "static")), required=False),
})

NFS_MOUNT = Dict(fields={
    "export": Field(AbsPath(prefix="/ifs/")),
    "mount_point": Field(AbsPath()),
    "purpose": Field(Enum(choices=PURPOSES)),
    "vers": Field(Enum(choices=NFS_VERSIONS, hint='quote it: "3", "4.0", "4.1" or "4.2"')),
    "proto": Field(Enum(choices=NFS_PROTOCOLS)),
    "nconnect": Field(Int(1, 16)),
    "rsize": Field(Int(4096, 1048576, hint="a power of two from 4096 to 1048576 (1 MiB)")),
    "wsize": Field(Int(4096, 1048576, hint="a power of two from 4096 to 1048576 (1 MiB)")),
    "hard": Field(Bool()),
    "timeo": Field(Int(1, 6000, hint="deciseconds: 600 (60 s) is the TCP default")),
    "retrans": Field(Int(0, 10)),
    "fsc": Field(Bool(), required=False),
    "extra_options": Field(ListOf(item=Str()), required=False),
})

NGC_IMAGE = Dict(fields={
    "name": Field(Str(pattern=r"[a-z0-9.:-]+(/[a-z0-9._-]+)+", pattern_text="a repository name",
                      hint="e.g. nvcr.io/nvidia/pytorch")),
    "tag": Field(Str(pattern=r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", pattern_text="a tag",
                     hint="pin a release tag, e.g. 24.05-py3")),
    "digest": Field(Str(nonempty=False, pattern=r"(sha256:[0-9a-f]{64})?", pattern_text="a sha256 digest",
                        hint="sha256:<64 hex digits> (docker buildx imagetools inspect IMAGE:TAG), or \"\""),
                    required=False),
    "purpose": Field(Str(), required=False),
})

THRESHOLD = Dict(fields={
    "metric": Field(Str(pattern=r"[A-Za-z0-9_]+", pattern_text="a metric name")),
    "stage": Field(Str()),
    "floor": Field(Number(min=0), required=False),
    "ceiling": Field(Dict(fields={
        "derive": Field(Enum(choices=("hcas_x_link_rate", "node_bottleneck_link", "aggregate_links"))),
        "fraction": Field(Number(min=0, max=1, min_exclusive=True)),
    }), required=False),
    # a fraction of a ceiling measured in the same run (validation/thresholds.py MEASURED: the path baselines)
    "measured": Field(Dict(fields={
        "derive": Field(Enum(choices=("storage_path_baseline", "fabric_path_baseline", "host_scaling"))),
        "fraction": Field(Number(min=0, max=1, min_exclusive=True)),
    }), required=False),
    "baseline": Field(Any_(), required=False),
    "source": Field(Str(hint="say where the figure comes from (reference entry, vendor document, earlier run)")),
})

AUTO = Enum(choices=("auto",))
SIZE = Str(pattern=r"\d+[KMGT]?", pattern_text="a size like 1M or 64M")
# fio's file set per client: the validate role (tasks/fio_prepare.yml) splits it over numjobs in MiB, so only M and G
CLIENT_SIZE = Str(pattern=r"[0-9]+[MmGg]", pattern_text="a size in M or G like 64M or 2G")

VALIDATION_NCCL = Dict(fields={
    "tests_bin": Field(AbsPath()),
    "launcher": Field(Enum(choices=("auto", "srun", "mpirun", "gloo"))),
    "container_image": Field(Str(nonempty=False)),
    "procs_per_node": Field(OneOf(options=(Int(1, 64), AUTO))),
    "gpus_per_process": Field(Int(1, 64), required=False),
    "min_bytes": Field(Int(1)),
    "max_bytes": Field(Int(1)),
    "iters": Field(Int(1)),
    "warmup": Field(Int(0)),
    "judge_min_bytes": Field(Int(0)),
    "ib_hca": Field(Str()),
    "extra_env": Field(MapOf(key=Str(pattern=r"[A-Z_][A-Z0-9_]*", pattern_text="an environment variable name"))),
    "rendezvous_port": Field(PORT),
})
VALIDATION_FIO = Dict(fields={
    "bs": Field(SIZE),
    "numjobs": Field(Int(1, 256)),
    "iodepth": Field(Int(1, 1024)),
    "ioengine": Field(Enum(choices=("libaio", "io_uring", "psync", "sync", "posixaio"))),
    "direct": Field(Bool()),
    "size_per_client": Field(OneOf(options=(CLIENT_SIZE, AUTO))),
    "ram_factor": Field(Number(min=1)),
    "runtime_s": Field(Int(1)),
    "server_port": Field(PORT),
    "drop_client_caches": Field(Bool()),
    "server_flush": Field(Dict(fields={"enabled": Field(Bool()), "command": Field(Str(nonempty=False))})),
})
VALIDATION_DDP = Dict(fields={
    "runtime": Field(Enum(choices=("docker", "pyxis", "host"))),
    "image": Field(Str(nonempty=False)),
    "model": Field(Str()),
    "procs_per_node": Field(OneOf(options=(Int(1, 64), AUTO))),
    "batch_size": Field(Int(1)),
    "image_size": Field(Int(8)),
    "num_classes": Field(Int(1)),
    "steps": Field(Int(1)),
    "warmup_steps": Field(Int(0)),
    "workers": Field(Int(0)),
    "amp": Field(Bool()),
    "dataset_dir": Field(AbsPath()),
    "dataset_bytes": Field(OneOf(options=(Int(1), AUTO))),
    "rendezvous_port": Field(PORT),
    # the same training without DDP on every node at once (mode bare): the ideal DDP scaling is judged against
    "host_scaling": Field(Dict(fields={"enabled": Field(Bool()), "min_speedup": Field(Number(min=1))}),
                          required=False),
})

VALIDATION_PATHS = Dict(fields={
    "seconds": Field(Int(1, 600)),
    "storage_streams": Field(OneOf(options=(Int(1, 128), AUTO))),
    "storage_server": Field(Enum(choices=("iperf3", "dgx_pairs"),
                                 hint="iperf3: a server on the PowerScale node each DGX mounts; dgx_pairs: between "
                                      "DGX nodes across the storage switch")),
    "storage_port_base": Field(PORT),
    "storage_pidfile_dir": Field(AbsPath()),
    "fabric_tool": Field(Enum(choices=("ib_write_bw", "iperf3"))),
    "fabric_streams": Field(Int(1, 128)),
    "fabric_port": Field(PORT),
    "ib_port_base": Field(PORT),
})

VALIDATION_TELEMETRY = Dict(fields={
    "enabled": Field(Bool()),
    "interval_s": Field(Number(min=0.2, max=60)),
    "max_gap": Field(Number(min=0, max=1, min_exclusive=True)),
})

# The compute fabric's cable map (module_utils/cabling_design.py holds its rules; preflight rule_compute_cabling).
IB_SWITCH_PORT = OneOf(options=(Int(1, 40), Str(pattern=r"1/[0-9]{1,2}", pattern_text="a QM8700 port 1..40 or 1/N")),
                       hint="a QM8700 port number 1..40 (or its MLNX-OS name 1/N)")
COMPUTE_FABRIC_CABLES = Dict(fields={
    "rails": Field(ListOf(item=Dict(fields={
        "hca": Field(Str(pattern=r"[A-Za-z0-9_.-]+", pattern_text="an HCA name like mlx5_0")),
        "switch": Field(Str(hint="name the QM8700 host of the inventory this rail plugs into")),
        "first_port": Field(IB_SWITCH_PORT),
        "hca_port": Field(Int(1, 2), required=False)})), required=False),
    "cables": Field(ListOf(item=Dict(fields={
        "host": Field(Str(hint="name the DGX host of the inventory")),
        "hca": Field(Str(pattern=r"[A-Za-z0-9_.-]+", pattern_text="an HCA name like mlx5_0")),
        "hca_port": Field(Int(1, 2), required=False),
        "switch": Field(Str(hint="name the QM8700 host of the inventory this cable plugs into")),
        "switch_port": Field(IB_SWITCH_PORT)})), required=False)})
# Known deviations a site accepts (roles/cabling): each names one designed or observed cable end and why.
CABLING_ACCEPTED = ListOf(item=Dict(fields={
    "node": Field(Str()), "port": Field(Str()),
    "status": Field(Enum(choices=("MISWIRED", "MISSING", "DEGRADED", "UNEXPECTED"))),
    "reason": Field(Str(hint="say why the site accepts it (a ticket, a date)"))}))

OS_LIST = ListOf(item=Dict(fields={"distribution": Field(Str()), "versions": Field(ListOf(item=Str(), min_len=1))}),
                 min_len=1)


@dataclass(frozen=True)
class Var:
    """One inventory variable: its spec, the groups whose hosts consume it, and whether it must be set."""

    name: str
    spec: Spec
    groups: tuple[str, ...]
    required: bool = True


def _v(name: str, spec: Spec, groups: str, required: bool = True) -> Var:
    return Var(name, spec, tuple(groups.split()), required)


VARIABLES: tuple[Var, ...] = (
    # hosts.yml: per host
    _v("storage_nics", ListOf(item=STORAGE_NIC, min_len=1), "dgx powerscale"),
    _v("ib_ipoib_address", Interface(), "dgx"),
    _v("dgx_model", Str(), "dgx"),
    _v("dgx_expected_gpus", Int(0, 16), "dgx", required=False),
    _v("dgx_expected_hcas", Int(0, 16), "dgx", required=False),
    _v("powerscale_node_model", Str(), "powerscale"),
    _v("powerscale_lnn", Int(1, 252), "powerscale"),
    _v("sn3700v_clag_role", Enum(choices=("primary", "secondary", "standalone")), "sn3700v"),
    _v("sn3700v_clag_priority", Int(0, 65535), "sn3700v"),
    _v("sn3700v_clag_backup_ip", IP(), "sn3700v", required=False),
    _v("sn3700v_loopback", Interface(), "sn3700v"),
    _v("qm8700_api_host", HostOrIP(), "qm8700"),
    _v("qm8700_api_port", PORT, "qm8700"),
    _v("qm8700_ssh_port", PORT, "qm8700", required=False),
    _v("qm8700_sm_role", Enum(choices=("master", "standby", "none")), "qm8700"),
    _v("qm8700_sm_priority", Int(0, 15, hint="MLNX-OS SM priority 0..15; the master gets the highest"), "qm8700"),
    # dgx.yml
    _v("dgx_models", MapOf(value=DGX_MODEL, min_len=1), "dgx"),
    _v("dgx_nvidia_driver_version", Str(pattern=r"\d{3}\.\d{2,3}(\.\d{2})?", pattern_text="a driver version",
                                        hint='quote it, e.g. "450.51.06"'), "dgx"),
    _v("dgx_min_python", Version(), "dgx"),
    _v("dgx_supported_os", OS_LIST, "dgx"),
    _v("dgx_min_kernel", Version(), "dgx"),
    _v("dgx_sysctl", MapOf(key=Str(pattern=r"[a-z0-9_.]+", pattern_text="a sysctl key"),
                           value=OneOf(options=(Int(0), Str()))), "dgx"),
    # storage.yml
    _v("powerscale_api_host", HostOrIP(), "powerscale"),
    _v("powerscale_api_port", PORT, "powerscale"),
    _v("powerscale_api_user", Str(), "powerscale"),
    _v("powerscale_validate_certs", Bool(), "powerscale"),
    _v("powerscale_ca_path", Str(nonempty=False), "powerscale", required=False),
    _v("powerscale_api_timeout_s", Int(1, 600), "powerscale"),
    _v("powerscale_api_retries", Int(0, 10), "powerscale"),
    _v("powerscale_api_retry_backoff_s", Number(min=0, max=30), "powerscale", required=False),
    _v("powerscale_access_zone", Str(), "powerscale"),
    _v("powerscale_onefs_min_version", Version(), "powerscale"),
    _v("powerscale_pool_mtu", MTU, "powerscale"),
    _v("powerscale_smartconnect", SMARTCONNECT, "powerscale"),
    _v("powerscale_prune", Bool(), "powerscale"),
    _v("powerscale_managed_marker", Str(), "powerscale"),
    # exports.yml
    _v("powerscale_exports", ListOf(item=EXPORT, min_len=1), "powerscale"),
    _v("powerscale_quotas", ListOf(item=QUOTA), "powerscale"),
    # nfs_client.yml
    _v("nfs_server_mode", Enum(choices=SERVER_MODES), "dgx"),
    _v("nfs_server_map", MapOf(value=Dict(fields={"node": Field(Str()), "nic": Field(Str())})), "dgx",
       required=False),
    _v("nfs_mounts", ListOf(item=NFS_MOUNT, min_len=1), "dgx"),
    # storage_fabric.yml
    _v("storage_fabric_method", Enum(choices=("files", "nvue")), "sn3700v"),
    _v("storage_fabric_port_mtu", Int(552, 9216, hint="Cumulus accepts 552..9216; 9216 on fabric ports"), "sn3700v"),
    _v("storage_subnet", Network(), "sn3700v dgx powerscale"),
    _v("storage_fabric_host_mtu", MTU, "sn3700v"),
    _v("storage_fabric_vlans", ListOf(item=Dict(fields={
        "id": Field(Int(2, 4094, hint="a VLAN id 2..4094 (1 is the default VLAN, 4095 reserved)")),
        "name": Field(Str()), "subnet": Field(Network(), required=False)}), min_len=1), "sn3700v"),
    _v("storage_fabric_bridge", Dict(fields={
        "name": Field(Str()), "vlan_aware": Field(Bool()),
        "pvid": Field(Int(2, 4094, hint="the storage VLAN's id, 2..4094 (1 is the default VLAN)"))}), "sn3700v"),
    _v("storage_fabric_clag", Dict(fields={
        "enabled": Field(Bool()),
        "peerlink": Field(Dict(fields={"bond": Field(Str()), "members": Field(ListOf(item=SWITCH_PORT, min_len=1)),
                                       "vlan": Field(Int(2, 4094))})),
        "sys_mac": Field(Str(pattern=r"44:38:39:[fF][fF](:[0-9a-fA-F]{2}){2}",
                             pattern_text="a MAC in the range Cumulus reserves for CLAG",
                             hint="use 44:38:39:ff:00:00..44:38:39:ff:ff:ff, the same on both switches")),
    }), "sn3700v"),
    _v("storage_fabric_uplinks", ListOf(item=Dict(fields={
        "name": Field(SWITCH_PORT), "speed": Field(Str(pattern=r"\d+G", pattern_text="a speed like 100G")),
        "description": Field(Str(nonempty=False), required=False)})), "sn3700v"),
    _v("storage_fabric_roce", Dict(fields={"enabled": Field(Bool())}, allow_extra=True), "sn3700v"),
    _v("storage_fabric_nvue_api_port", PORT, "sn3700v"),
    _v("storage_fabric_validate_certs", Bool(), "sn3700v"),
    _v("storage_fabric_ca_path", Str(nonempty=False), "sn3700v", required=False),
    _v("storage_fabric_breakouts", MapOf(
        key=Str(pattern=PARENT_PORT_NAME, pattern_text="a whole port swpN", hint="break out swpN, e.g. swp29"),
        value=Str(pattern=BREAKOUT_MODE, pattern_text="an SN3700V breakout mode (like 4x25G or 2x100G, disabled, "
                                                      "loopback)")), "sn3700v", required=False),
    _v("storage_fabric_port_speed_managed", Bool(), "sn3700v", required=False),
    _v("storage_fabric_user", Str(), "sn3700v"),
    _v("storage_fabric_speeds_gbps", ListOf(item=Int(1, 400), min_len=1), "sn3700v"),
    # release model, FEC, NVUE takeover, MLAG backup VRF (issue #13; rules in module_utils/cumulus_release.py)
    _v("storage_fabric_port_fec", MapOf(key=OneOf(options=(Int(1, 400), Str(pattern=r"[1-9][0-9]{0,2}"))),
                                        value=Enum(choices=FEC_MODES)), "sn3700v", required=False),
    _v("sn3700v_cumulus_release", Str(nonempty=False, pattern=r"\d+\.\d+(\.\d+)?",
                                      pattern_text="a Cumulus Linux release like 4.2.1 or 5.9.2",
                                      hint='quote it, e.g. "4.2.1"'), "sn3700v", required=False),
    _v("sn3700v_clag_backup_vrf", Str(nonempty=False), "sn3700v", required=False),
    _v("sn3700v_nvue_takeover", Bool(), "sn3700v", required=False),
    # compute_fabric.yml
    _v("qm8700_api_user", Str(), "qm8700"),
    _v("qm8700_validate_certs", Bool(), "qm8700"),
    _v("qm8700_ca_path", Str(nonempty=False), "qm8700", required=False),
    _v("qm8700_ssh_host_key_checking", Bool(), "qm8700", required=False),
    _v("qm8700_transport", Enum(choices=("json", "cli")), "qm8700"),
    _v("qm8700_ports", ListOf(item=Dict(fields={
        "range": Field(Str(pattern=r"1/\d{1,2}(-1/\d{1,2})?", pattern_text="a port or port range like 1/1-1/16")),
        # A QM8700 port supports sdr, qdr, fdr, edr, hdr (hdr100 on a split port); ddr and fdr10 are refused at
        # apply time. One home: module_utils/mlnxos_fabric.IB_SPEEDS.
        "speed": Field(Enum(choices=(*reversed(QM8700_SPEEDS), "hdr100"),
                            hint="a QM8700 port supports " + ", ".join(QM8700_SPEEDS) + " (hdr100 on a split "
                                 "port; ddr and fdr10 are not supported): set one of those")),
        "split": Field(Enum(choices=("none", "2"))),
        "description": Field(Str(nonempty=False), required=False)}), min_len=1), "qm8700"),
    _v("qm8700_partitions", ListOf(item=Dict(fields={
        "name": Field(Str()),
        "pkey": Field(Str(pattern=r"0x[0-7]?[0-9a-fA-F]{1,3}", pattern_text="a partition key 0x0001..0x7fff")),
        "ipoib": Field(Bool()), "ipoib_mtu": Field(Enum(choices=IPOIB_MTUS))}), min_len=1), "qm8700"),
    _v("qm8700_ntp_servers", ListOf(item=HostOrIP()), "qm8700"),
    _v("qm8700_syslog_servers", ListOf(item=HostOrIP()), "qm8700"),
    _v("ib_rate_gbps", Enum(choices=(100, 200, 400)), "qm8700 dgx"),
    _v("compute_fabric_cables", COMPUTE_FABRIC_CABLES, "dgx qm8700", required=False),
    _v("cabling_accepted_deviations", CABLING_ACCEPTED, "dgx sn3700v qm8700 powerscale", required=False),
    _v("cabling_enforce", Bool(), "dgx sn3700v powerscale", required=False),
    _v("cabling_read_infiniband", Bool(), "dgx", required=False),
    _v("dgx_host_lldpd", Bool(), "dgx", required=False),
    # ngc.yml
    _v("ngc_registry", HostOrIP(allow_port=True), "dgx"),
    _v("ngc_username", Str(), "dgx"),
    _v("ngc_container_runtime", Enum(choices=("nvidia", "docker")), "dgx"),
    _v("ngc_images", ListOf(item=NGC_IMAGE, min_len=1), "dgx"),
    _v("ngc_optional_images", ListOf(item=NGC_IMAGE), "dgx", required=False),
    _v("ngc_pull_optional", Bool(), "dgx"),
    _v("ngc_mirror", Dict(fields={"enabled": Field(Bool()), "registry": Field(Str(nonempty=False)),
                                  "username": Field(Str(nonempty=False)),
                                  "ca_path": Field(Str(nonempty=False), required=False)}), "dgx"),
    _v("ngc_enroot_import", Bool(), "dgx"),
    _v("ngc_enroot_dir", AbsPath(), "dgx"),
    _v("ngc_singularity_convert", Bool(), "dgx"),
    _v("ngc_singularity_dir", AbsPath(), "dgx", required=False),
    _v("ngc_docker_engine_packages", ListOf(item=Str(), min_len=1), "dgx", required=False),
    # preflight.yml: the target checks of the non-DGX Linux targets (roles/preflight/README.md)
    _v("preflight_min_python", Version(), "sn3700v powerscale", required=False),
    _v("preflight_target_os", MapOf(key=Str(), value=OS_LIST), "sn3700v powerscale", required=False),
    # acceptance.yml
    _v("validation_stages", MapOf(key=Enum(choices=("paths", "nccl", "fio", "ddp")),
                                  value=Dict(fields={"enabled": Field(Bool())}), min_len=1), "dgx"),
    _v("validation_results_dir", Str(), "dgx"),
    _v("validation_scratch_subdir", Str(pattern=r"[A-Za-z0-9_.-]+", pattern_text="one relative directory name",
                                        hint="a single directory name such as .validation-scratch"), "dgx"),
    _v("validation_scratch_mount", AbsPath(), "dgx"),
    _v("validation_training_mount", AbsPath(), "dgx"),
    _v("validation_repeats", Int(1, 100), "dgx"),
    _v("validation_timeout_s", Int(60, 86400), "dgx"),
    _v("validation_engine", Enum(choices=("auto", "slurm", "mpirun", "ssh")), "dgx"),
    _v("validation_slurm_partition", Str(nonempty=False, pattern=r"[A-Za-z0-9_.-]+",
                                         pattern_text="a Slurm partition name (letters, digits, _ . -) or empty"), "dgx"),
    _v("validation_lab_standins", Bool(), "dgx"),
    _v("acceptance_thresholds", ListOf(item=THRESHOLD, min_len=1), "dgx"),
    _v("validation_nccl", VALIDATION_NCCL, "dgx"),
    _v("validation_fio", VALIDATION_FIO, "dgx"),
    _v("validation_ddp", VALIDATION_DDP, "dgx"),
    _v("validation_paths", VALIDATION_PATHS, "dgx"),
    _v("validation_telemetry", VALIDATION_TELEMETRY, "dgx"),
    _v("acceptance_outlier_max_behind_pct", Number(min=0, max=100), "dgx"),
    _v("acceptance_baseline", Dict(fields={"path": Field(Str(nonempty=False)),
                                           "max_regression_pct": Field(Number(min=0, max=100))}), "dgx"),
)

VARIABLE_NAMES: tuple[str, ...] = tuple(v.name for v in VARIABLES)


def check(spec: Spec, value: Any, path: str) -> list[Finding]:
    """Schema findings of one value (empty when it conforms)."""
    return spec.check(value, path)
