"""DGX host readiness: parse what the node reports, then check it as data against the inventory's expectations.

Shared by the dgx_facts action plugin (plugins/action/dgx_facts.py: one shell command on the DGX runs every probe,
probe_script; the control node reads its answer, facts_from_probe) and the testinfra handover checks
(tests/handover/). Standard library only, Python 3.8+. Parsing (did the tool answer, what did it say?) is kept apart from evaluation
(is that what the inventory expects?). A tool that is absent is a fact (no GPU driver = 0 GPUs); a tool that
is present but fails or prints something unparsable is an error, and every check that depends on it FAILS.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import ansible.module_utils.shell_probe as sp

NVIDIA_SMI_QUERY = "index,name,driver_version,pci.bus_id,uuid"
PASS, FAIL, NOT_APPLICABLE = "pass", "fail", "n/a"


@dataclass
class Gpu:
    index: int
    name: str
    driver_version: str
    pci_bus_id: str
    uuid: str


@dataclass
class HcaPort:
    number: int
    state: str
    physical_state: str
    rate_gbps: int
    link_layer: str


@dataclass
class Hca:
    name: str
    ca_type: str
    firmware: str
    ports: list[HcaPort] = field(default_factory=list)


@dataclass
class ToolResult:
    """What one probe produced: present (the tool exists), error (it exists but failed or was unparsable)."""

    present: bool
    error: str = ""


@dataclass
class DgxFacts:
    gpus: list[Gpu] = field(default_factory=list)
    gpu_probe: ToolResult = field(default_factory=lambda: ToolResult(present=False))
    hcas: list[Hca] = field(default_factory=list)
    hca_probe: ToolResult = field(default_factory=lambda: ToolResult(present=False))
    fabricmanager: str = "absent"  # systemctl is-active answer, or "absent"
    modules: list[str] = field(default_factory=list)  # loaded kernel modules of interest
    nic_mtu: dict[str, int | None] = field(default_factory=dict)  # None: the NIC does not exist
    sysctl: dict[str, str | None] = field(default_factory=dict)  # None: the key does not exist

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["gpu_count"] = len(self.gpus)
        data["hca_count"] = len(self.hcas)
        return data


@dataclass
class Check:
    name: str
    status: str
    expected: Any
    actual: Any
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Expectations:
    """What the inventory expects: dgx_models[dgx_model], dgx_nvidia_driver_version, storage_nics, dgx_sysctl."""

    gpus: int
    gpu_model: str
    hcas: int
    hca_rate_gbps: int
    nvswitch: bool
    driver_version: str
    nic_mtu: dict[str, int] = field(default_factory=dict)
    sysctl: dict[str, str] = field(default_factory=dict)
    # The compute-fabric HCAs by name (dgx_models[*].compute_hcas). A DGX A100 lists 10 or 12 mlx5 devices:
    # 8 single-port ConnectX-6 for the compute fabric and 1 or 2 dual-port storage ConnectX-6, whose ports
    # may be Ethernet or unused. Only the compute ones are counted, Active at the HDR rate, and given to NCCL.
    compute_hcas: list[str] = field(default_factory=list)

    @classmethod
    def from_inventory(cls, model: dict[str, Any], driver_version: str, storage_nics: list[dict[str, Any]],
                       sysctl: dict[str, Any]) -> Expectations:
        return cls(gpus=int(model.get("gpus", 0)), gpu_model=str(model.get("gpu_model", "")),
                   hcas=int(model.get("hcas", 0)), hca_rate_gbps=int(model.get("hca_rate_gbps", 0)),
                   nvswitch=bool(model.get("nvswitch", False)), driver_version=str(driver_version or ""),
                   nic_mtu={str(n["name"]): int(n.get("mtu", 1500)) for n in storage_nics},
                   sysctl={str(k): normalize_sysctl(v) for k, v in (sysctl or {}).items()},
                   compute_hcas=[str(h) for h in model.get("compute_hcas") or []])


# ---------------------------------------------------------------------------------------------- parsing


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """Rows of `nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,uuid --format=csv,noheader`."""
    gpus: list[Gpu] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 5 or not cells[0].isdigit():
            raise ValueError(f"nvidia-smi line {number} is not index,name,driver,bus,uuid: {line.strip()!r}")
        gpus.append(Gpu(index=int(cells[0]), name=cells[1], driver_version=cells[2], pci_bus_id=cells[3],
                        uuid=cells[4]))
    return gpus


_RATE = re.compile(r"^\s*Rate:\s*(\d+)", re.MULTILINE)


def parse_ibstat(text: str) -> list[Hca]:
    """HCAs and their ports from the plain `ibstat` output (CA 'mlx5_0' blocks, Port N: blocks)."""
    hcas: list[Hca] = []
    current: Hca | None = None
    port: HcaPort | None = None
    for raw in text.splitlines():
        line = raw.strip()
        match = re.match(r"^CA '([^']+)'", line)
        if match:
            if any(h.name == match.group(1) for h in hcas):
                raise ValueError(f"ibstat lists CA '{match.group(1)}' twice: two outputs concatenated or interleaved")
            current = Hca(name=match.group(1), ca_type="", firmware="")
            hcas.append(current)
            port = None
            continue
        if current is None:
            continue
        match = re.match(r"^Port (\d+):$", line)
        if match:
            port = HcaPort(number=int(match.group(1)), state="", physical_state="", rate_gbps=0, link_layer="")
            current.ports.append(port)
            continue
        key, _unused, value = line.partition(":")
        value = value.strip()
        if port is None:
            if key == "CA type":
                current.ca_type = value
            elif key == "Firmware version":
                current.firmware = value
            continue
        if key == "State":
            port.state = value
        elif key == "Physical state":
            port.physical_state = value
        elif key == "Rate":
            port.rate_gbps = int(value) if value.isdigit() else 0
        elif key == "Link layer":
            port.link_layer = value
    if text.strip() and not hcas:
        raise ValueError(f"ibstat printed no CA block: {text.strip()[:120]!r}")
    return hcas


def _failed(rc: int, out: str, err: str) -> str:
    """Why a probe that exited non-zero failed: the probe's `timeout` kills with 124."""
    what = "timed out (rc 124)" if rc == 124 else f"rc {rc}"
    return f"{what}: {(err or out).strip()[:300]}"


def read_gpus(rc: int, out: str, err: str) -> tuple[list[Gpu], ToolResult]:
    """What an nvidia-smi query that ran tells: the GPUs, or the error every GPU check then fails with."""
    if rc != 0:
        return [], ToolResult(present=True, error=_failed(rc, out, err))
    try:
        return parse_nvidia_smi(out), ToolResult(present=True)
    except ValueError as exc:
        return [], ToolResult(present=True, error=str(exc))


def read_hcas(rc: int, out: str, err: str) -> tuple[list[Hca], ToolResult]:
    """What an ibstat that ran tells: the HCAs (none where it says "No IB devices"), or the error."""
    if rc != 0 and "No IB devices" not in (out + err):
        return [], ToolResult(present=True, error=_failed(rc, out, err))
    try:
        return parse_ibstat(out if rc == 0 else ""), ToolResult(present=True)
    except ValueError as exc:
        return [], ToolResult(present=True, error=str(exc))


def parse_lsmod(text: str) -> list[str]:
    return [line.split()[0] for line in text.splitlines()[1:] if line.split()]


def normalize_sysctl(value: Any) -> str:
    return " ".join(str(value).split())


# ---------------------------------------------------------------------------------------------- evaluation


def _check(name: str, ok: bool, expected: Any, actual: Any, detail: str = "") -> Check:
    return Check(name=name, status=PASS if ok else FAIL, expected=expected, actual=actual, detail=detail)


def evaluate(facts: DgxFacts, want: Expectations) -> list[Check]:
    """Every readiness check, as data. n/a only where the node model has no such hardware (lab-vm)."""
    checks: list[Check] = []
    gpu_error = facts.gpu_probe.error
    if gpu_error:
        checks.append(Check("gpu_count", FAIL, want.gpus, None, f"nvidia-smi failed: {gpu_error}"))
    else:
        source = "nvidia-smi" if facts.gpu_probe.present else "nvidia-smi not installed: 0 GPUs"
        checks.append(_check("gpu_count", len(facts.gpus) == want.gpus, want.gpus, len(facts.gpus),
                             f"{source}; a missing GPU is a failure" if len(facts.gpus) < want.gpus else source))
    if want.gpus == 0:
        checks.append(Check("gpu_model", NOT_APPLICABLE, want.gpu_model, None, "the node model has no GPUs"))
        checks.append(Check("driver_version", NOT_APPLICABLE, want.driver_version, None,
                            "the node model has no GPUs"))
    else:
        wrong = [g.name for g in facts.gpus if want.gpu_model not in g.name]
        checks.append(_check("gpu_model", bool(facts.gpus) and not wrong and not gpu_error, want.gpu_model,
                             sorted({g.name for g in facts.gpus}),
                             f"unexpected models: {wrong}" if wrong else gpu_error))
        drivers = sorted({g.driver_version for g in facts.gpus})
        checks.append(_check("driver_version", drivers == [want.driver_version], want.driver_version, drivers,
                             "" if facts.gpus else "no GPU answered"))
    if want.nvswitch:
        checks.append(_check("nvidia_fabricmanager", facts.fabricmanager == "active", "active", facts.fabricmanager,
                             "NVSwitch systems need nvidia-fabricmanager for CUDA to see the GPUs"))
    else:
        checks.append(Check("nvidia_fabricmanager", NOT_APPLICABLE, "not required", facts.fabricmanager,
                            "the node model has no NVSwitch"))
    checks.append(peer_memory_check(want, facts))
    compute, why = compute_hca_set(want, facts.hcas)
    if facts.hca_probe.error:
        checks.append(Check("hca_count", FAIL, want.hcas, None, f"ibstat failed: {facts.hca_probe.error}"))
    else:
        missing = [n for n in want.compute_hcas if n not in {h.name for h in facts.hcas}]
        detail = (f"compute HCA(s) missing: {', '.join(missing)}" if missing else why) if facts.hca_probe.present \
            else "ibstat not installed: 0 HCAs"
        checks.append(_check("hca_count", len(compute) == want.hcas and not missing, want.hcas, len(compute), detail))
    if want.hcas > 0:
        ports = [(h.name, p) for h in compute for p in h.ports]
        not_active = [f"{name}/{p.number}:{p.state}" for name, p in ports if p.state != "Active"]
        checks.append(_check("hca_state", bool(ports) and not not_active, "Active",
                             not_active or ("all Active" if ports else None),
                             "" if ports else "no compute HCA port found"))
        slow = [f"{name}/{p.number}:{p.rate_gbps}" for name, p in ports if p.rate_gbps != want.hca_rate_gbps]
        checks.append(_check("hca_rate", bool(ports) and not slow, want.hca_rate_gbps,
                             slow or (want.hca_rate_gbps if ports else None), "" if ports else "no compute HCA port found"))
    else:
        checks.append(Check("hca_state", NOT_APPLICABLE, "none", None, "the node model has no HCAs"))
        checks.append(Check("hca_rate", NOT_APPLICABLE, "none", None, "the node model has no HCAs"))
    for nic, mtu in sorted(want.nic_mtu.items()):
        actual = facts.nic_mtu.get(nic)
        checks.append(_check(f"mtu:{nic}", actual == mtu, mtu, actual,
                             "interface not found" if actual is None else ""))
    for key, value in sorted(want.sysctl.items()):
        setting = facts.sysctl.get(key)
        checks.append(_check(f"sysctl:{key}", setting is not None and normalize_sysctl(setting) == value, value,
                             setting, "key not found (module not loaded?)" if setting is None else ""))
    return checks


def compute_hca_set(want: Expectations, hcas: list[Hca]) -> tuple[list[Hca], str]:
    """The compute-fabric HCAs among those ibstat lists: the model's compute_hcas by name; without names,
    every adapter whose ports are all InfiniBand (a storage card in Ethernet mode is left out; one in
    InfiniBand mode cannot be told apart: name the compute HCAs in dgx_models)."""
    if want.compute_hcas:
        wanted = set(want.compute_hcas)
        return [h for h in hcas if h.name in wanted], ""
    ib = [h for h in hcas if h.ports and all(p.link_layer in ("InfiniBand", "") for p in h.ports)]
    return ib, "compute HCAs not named in dgx_models: every InfiniBand adapter counted"


def driver_branch(version: str) -> int | None:
    """The driver branch (major version) of '535.183.01', or None."""
    head = str(version or "").split(".", maxsplit=1)[0]
    return int(head) if head.isdigit() else None


# nvidia_peermem ships with the NVIDIA driver from R465 on; before it, GPUDirect RDMA comes from MLNX_OFED's
# nv_peer_mem (DGX OS 5 built the DeepOps way still loads nv_peer_mem on R470). Exactly one may be loaded.
PEERMEM_IN_DRIVER_FROM = 465


def peer_memory_check(want: Expectations, facts: DgxFacts) -> Check:
    """GPUDirect RDMA for NCCL: nvidia_peermem or nv_peer_mem according to the driver branch, never both."""
    loaded = [m for m in ("nvidia_peermem", "nv_peer_mem") if m in facts.modules]
    if not (want.gpus > 0 and want.hcas > 0):
        return Check("peer_memory", NOT_APPLICABLE, "not required", loaded, "the node model has no GPU + HCA pair")
    branch = driver_branch(want.driver_version)
    accepted = ["nv_peer_mem"] if branch is not None and branch < PEERMEM_IN_DRIVER_FROM \
        else ["nvidia_peermem", "nv_peer_mem"]
    expected = " or ".join(accepted) + " (exactly one)"
    if len(loaded) == 1 and loaded[0] in accepted:
        return Check("peer_memory", PASS, expected, loaded, "")
    if len(loaded) > 1:
        fix = "both GPUDirect RDMA modules are loaded: unload nv_peer_mem (rmmod nv_peer_mem) and keep nvidia_peermem"
    elif loaded:
        fix = (f"{loaded[0]} does not exist for driver {want.driver_version} (R{branch}): "
               "install MLNX_OFED's nv_peer_mem (modprobe nv_peer_mem)")
    else:
        fix = ("no GPUDirect RDMA module: NCCL falls back to host memory; "
               + ("modprobe nvidia_peermem (DGX OS 6: nvidia-peermem-loader)" if "nvidia_peermem" in accepted
                  else "modprobe nv_peer_mem (MLNX_OFED)"))
    return Check("peer_memory", FAIL, expected, loaded, fix)


def failures(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.status == FAIL]


def format_checks(checks: list[Check]) -> str:
    return "\n".join(f"{c.status.upper():4} {c.name}: expected {c.expected!r}, actual {c.actual!r}"
                     + (f" ({c.detail})" if c.detail else "") for c in checks)


def readiness_result(facts: DgxFacts, expected: dict[str, Any] | None) -> dict[str, Any]:
    """What dgx_facts returns: the facts, and with expected (one dgx_models entry + driver_version, nic_mtu,
    sysctl) the checks as data. A ValueError names what expected lacks."""
    result: dict[str, Any] = {"changed": False, "ansible_facts": {"dgx": facts.as_dict()}}
    if expected is None:
        return result
    missing = [k for k in ("gpus", "hcas", "driver_version") if k not in expected]
    if missing:
        raise ValueError(f"expected is missing {missing}: give one dgx_models entry + driver_version")
    want = Expectations(
        gpus=int(expected["gpus"]), gpu_model=str(expected.get("gpu_model", "")), hcas=int(expected["hcas"]),
        hca_rate_gbps=int(expected.get("hca_rate_gbps", 0)), nvswitch=bool(expected.get("nvswitch", False)),
        driver_version=str(expected["driver_version"]),
        nic_mtu={str(k): int(v) for k, v in (expected.get("nic_mtu") or {}).items()},
        sysctl={str(k): normalize_sysctl(v) for k, v in (expected.get("sysctl") or {}).items()},
        compute_hcas=[str(h) for h in expected.get("compute_hcas") or []],
    )
    checks = evaluate(facts, want)
    result.update(checks=[c.as_dict() for c in checks], failed_checks=[c.name for c in failures(checks)],
                  ready=not failures(checks), report=format_checks(checks),
                  failure_report="; ".join(format_checks(failures(checks)).splitlines()))
    return result


# ---------------------------------------------------------------------------------------------- the probe


WATCHED_MODULES = ("nvidia_peermem", "nv_peer_mem", "nvidia", "nvidia_uvm", "mlx5_core", "ib_core", "sunrpc")


def probe_script(storage_nics: list[str], sysctl_keys: list[str], timeout: int) -> str:
    """One POSIX shell command that gathers every readiness fact on the node, read-only (framing:
    module_utils/shell_probe.py): nvidia-smi's GPU query, ibstat, the fabric manager's unit state, /proc/modules
    (lsmod where it is empty), each storage NIC's MTU and each sysctl value. A name that is not a plain NIC name
    or dotted key is refused (ProbeError, a ValueError)."""
    for name in [*storage_nics, *sysctl_keys]:
        if "/" in name:
            raise sp.ProbeError(f"not a NIC name or sysctl key: {name!r}")
    return sp.script([
        sp.tool("gpus", ["nvidia-smi", f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader"]),
        sp.tool("hcas", ["ibstat"]),
        sp.tool("fabricmanager", ["systemctl", "is-active", "nvidia-fabricmanager"]),
        sp.file("modules", "/proc/modules"),
        sp.raw_line("grep -q . /proc/modules 2>/dev/null || " + sp.tool("lsmod", ["lsmod"])),
        *[sp.file(f"mtu:{nic}", f"/sys/class/net/{nic}/mtu") for nic in storage_nics],
        *[sp.file(f"sysctl:{key}", "/proc/sys/" + key.replace(".", "/")) for key in sysctl_keys],
    ], timeout)


def facts_from_probe(text: str, storage_nics: list[str], sysctl_keys: list[str]) -> DgxFacts:
    """The readiness facts from what probe_script printed. A probe that should have answered and did not is a
    ProbeError naming it (fail closed: the node's answer was cut or the shell failed)."""
    answers = sp.read(text, ["gpus", "hcas", "fabricmanager", "modules", *[f"mtu:{n}" for n in storage_nics],
                             *[f"sysctl:{k}" for k in sysctl_keys]])
    facts = DgxFacts()
    gpus = sp.ran(answers, "gpus")
    if gpus is None:
        facts.gpu_probe = ToolResult(present=False)
    else:
        facts.gpus, facts.gpu_probe = read_gpus(*gpus)
    hcas = sp.ran(answers, "hcas")
    if hcas is None:
        facts.hca_probe = ToolResult(present=False)
    else:
        facts.hcas, facts.hca_probe = read_hcas(*hcas)
    fm = sp.ran(answers, "fabricmanager")
    # is-active prints active / inactive / failed / unknown ... and exits non-zero for all but active
    facts.fabricmanager = "absent" if fm is None else (fm[1].strip().splitlines() or ["unknown"])[0]
    mods = sp.ran(answers, "modules")
    loaded = [line.split()[0] for line in (mods[1] if mods and mods[0] == 0 else "").splitlines() if line.split()]
    lsmod = sp.ran(answers, "lsmod") if "lsmod" in answers else None
    if not loaded and lsmod:
        loaded = parse_lsmod(lsmod[1])
    facts.modules = sorted(m for m in set(loaded) if m in WATCHED_MODULES)
    for nic in storage_nics:
        mtu = sp.ran(answers, f"mtu:{nic}")
        value = mtu[1].strip() if mtu and mtu[0] == 0 else ""
        facts.nic_mtu[nic] = int(value) if value.isdigit() else None
    for key in sysctl_keys:
        got = sp.ran(answers, f"sysctl:{key}")
        facts.sysctl[key] = got[1].strip() if got and got[0] == 0 else None
    return facts
