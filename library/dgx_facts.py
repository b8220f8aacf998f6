#!/usr/bin/python
"""Ansible module dgx_facts: gather DGX readiness facts and check them as data against the inventory."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.dgx_readiness import (
    NVIDIA_SMI_QUERY,
    DgxFacts,
    Expectations,
    ToolResult,
    evaluate,
    failures,
    format_checks,
    normalize_sysctl,
    parse_lsmod,
    read_gpus,
    read_hcas,
)

DOCUMENTATION = r"""
---
module: dgx_facts
short_description: Gather DGX A100 readiness facts (GPUs, NVSwitch, peermem, HCAs, NIC MTU, sysctl) and check them
description:
  - Gathers, read-only, what a DGX needs for NCCL with GPUDirect RDMA and for NFS over TCP;
    GPU count, model and driver (C(nvidia-smi --query-gpu)); the NVSwitch fabric manager
    (C(systemctl is-active nvidia-fabricmanager)); the C(nvidia_peermem) kernel module (and the obsolete
    C(nv_peer_mem)); InfiniBand HCAs, port state and rate (C(ibstat)); the MTU of the storage NICs
    (C(/sys/class/net/<nic>/mtu)); sysctl values (C(/proc/sys)).
  - A tool that is not installed is a fact, not an error; no C(nvidia-smi) means 0 GPUs, no C(ibstat) 0 HCAs.
    A tool that is installed but fails, or prints what cannot be parsed, is recorded as an error and every
    check that depends on it fails.
  - With O(expected), returns the readiness checks as data (name, status pass/fail/n/a, expected, actual,
    detail). The module does not fail on a failed check; the caller asserts (roles/dgx_host).
    n/a is only used where the node model has no such hardware (the lab's VMs).
  - Sets the fact C(dgx) (C(ansible_facts.dgx)).
version_added: "0.1.0"
author: powerscale-dgx-ra
options:
  storage_nics:
    description: Names of the storage NICs whose MTU is read.
    type: list
    elements: str
    default: []
  sysctl_keys:
    description: sysctl keys to read (dotted names).
    type: list
    elements: str
    default: []
  expected:
    description:
      - Expectations to check against. Keys C(gpus), C(gpu_model), C(hcas), C(hca_rate_gbps), C(nvswitch)
        (one entry of C(dgx_models)), C(driver_version), C(nic_mtu) (NIC name to MTU), C(sysctl) (key to value).
      - Omit to gather only.
    type: dict
  command_timeout:
    description: Seconds each probe command may run before it counts as failed.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    support: full
    platforms: posix
    details: The DGX OS (Ubuntu) host itself.
notes:
  - Read-only; identical in check mode. Parsing and evaluation live in module_utils/dgx_readiness.py.
seealso:
  - module: dgx_sysctl
  - module: host_state
  - name: Role dgx_host
    link: roles/dgx_host/README.md
    description: The DGX host role that gathers and judges these facts.
"""

EXAMPLES = r"""
- name: Gather DGX readiness and check it against the inventory
  dgx_facts:
    storage_nics: "{{ storage_nics | map(attribute='name') }}"
    sysctl_keys: "{{ dgx_sysctl.keys() | list }}"
    expected:
      gpus: 8
      gpu_model: A100-SXM4
      hcas: 8
      hca_rate_gbps: 200
      nvswitch: true
      driver_version: "450.51.06"
      nic_mtu: {enp225s0f0: 9000}
      sysctl: {net.core.rmem_max: 268435456}
  register: dgx_readiness
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the module.
  returned: always
  type: dict
  contains:
    dgx:
      description: gpus, gpu_count, gpu_probe, hcas, hca_count, hca_probe, fabricmanager, modules, nic_mtu, sysctl.
      type: dict
      sample:
        gpu_count: 8
        gpus: [{index: 0, name: NVIDIA A100-SXM4-40GB, driver_version: "450.51.06",
                pci_bus_id: "00000000:07:00.0", uuid: GPU-...}]
        gpu_probe: {present: true, error: ""}
        hca_count: 8
        fabricmanager: active
        modules: [nvidia_peermem]
        nic_mtu: {enp225s0f0: 9000}
        sysctl: {net.core.rmem_max: "268435456"}
checks:
  description: The readiness checks (only with O(expected)).
  returned: when expected is given
  type: list
  elements: dict
  sample: [{name: gpu_count, status: fail, expected: 8, actual: 7, detail: "nvidia-smi; a missing GPU is a failure"}]
failed_checks:
  description: Names of the checks with status fail.
  returned: when expected is given
  type: list
  elements: str
ready:
  description: No check failed.
  returned: when expected is given
  type: bool
report:
  description: The checks as text, one per line.
  returned: when expected is given
  type: str
failure_report:
  description: The failed checks only, as text joined with C(; ) (empty when ready).
  returned: when expected is given
  type: str
"""


WATCHED_MODULES = ("nvidia_peermem", "nv_peer_mem", "nvidia", "nvidia_uvm", "mlx5_core", "ib_core", "sunrpc")


def run(module: AnsibleModule, argv: list[str], timeout: int) -> tuple[int, str, str]:
    return module.run_command(["timeout", str(timeout), *argv])


def probe_gpus(module: AnsibleModule, facts: DgxFacts, timeout: int) -> None:
    smi = module.get_bin_path("nvidia-smi")
    if smi is None:
        facts.gpu_probe = ToolResult(present=False)
        return
    rc, out, err = run(module, [smi, f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader"], timeout)
    facts.gpus, facts.gpu_probe = read_gpus(rc, out, err)


def probe_hcas(module: AnsibleModule, facts: DgxFacts, timeout: int) -> None:
    ibstat = module.get_bin_path("ibstat")
    if ibstat is None:
        facts.hca_probe = ToolResult(present=False)
        return
    rc, out, err = run(module, [ibstat], timeout)
    facts.hcas, facts.hca_probe = read_hcas(rc, out, err)


def probe_fabricmanager(module: AnsibleModule, timeout: int) -> str:
    systemctl = module.get_bin_path("systemctl")
    if systemctl is None:
        return "absent"
    _rc, out, _err = run(module, [systemctl, "is-active", "nvidia-fabricmanager"], timeout)
    answer = out.strip().splitlines()
    # is-active prints active / inactive / failed / unknown ... and exits non-zero for all but active.
    return answer[0] if answer else "unknown"


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def gather(module: AnsibleModule) -> DgxFacts:
    timeout = module.params["command_timeout"]
    facts = DgxFacts()
    probe_gpus(module, facts, timeout)
    probe_hcas(module, facts, timeout)
    facts.fabricmanager = probe_fabricmanager(module, timeout)
    modules_text = read_text("/proc/modules")
    loaded = [line.split()[0] for line in (modules_text or "").splitlines() if line.split()]
    if not loaded:
        lsmod = module.get_bin_path("lsmod")
        if lsmod:
            _rc, out, _err = run(module, [lsmod], timeout)
            loaded = parse_lsmod(out)
    facts.modules = sorted(m for m in set(loaded) if m in WATCHED_MODULES)
    for nic in module.params["storage_nics"]:
        mtu = read_text(f"/sys/class/net/{nic}/mtu")
        facts.nic_mtu[nic] = int(mtu) if mtu and mtu.isdigit() else None
    for key in module.params["sysctl_keys"]:
        facts.sysctl[key] = read_text(os.path.join("/proc/sys", *key.split(".")))
    return facts


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            storage_nics=dict(type="list", elements="str", default=[]),
            sysctl_keys=dict(type="list", elements="str", default=[]),
            expected=dict(type="dict"),
            command_timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    facts = gather(module)
    result: dict = dict(changed=False, ansible_facts={"dgx": facts.as_dict()})
    expected = module.params["expected"]
    if expected is not None:
        missing = [k for k in ("gpus", "hcas", "driver_version") if k not in expected]
        if missing:
            module.fail_json(msg=f"expected is missing {missing}: give one dgx_models entry + driver_version")
        want = Expectations(
            gpus=int(expected["gpus"]), gpu_model=str(expected.get("gpu_model", "")), hcas=int(expected["hcas"]),
            hca_rate_gbps=int(expected.get("hca_rate_gbps", 0)), nvswitch=bool(expected.get("nvswitch", False)),
            driver_version=str(expected["driver_version"]),
            nic_mtu={str(k): int(v) for k, v in (expected.get("nic_mtu") or {}).items()},
            sysctl={str(k): normalize_sysctl(v) for k, v in (expected.get("sysctl") or {}).items()},
        )
        checks = evaluate(facts, want)
        result.update(checks=[c.as_dict() for c in checks], failed_checks=[c.name for c in failures(checks)],
                      ready=not failures(checks), report=format_checks(checks),
                      failure_report="; ".join(format_checks(failures(checks)).splitlines()))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
