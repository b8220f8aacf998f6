#!/usr/bin/python
"""Documentation of dgx_facts, an action plugin (plugins/action/dgx_facts.py): gather DGX readiness facts and check
them as data against the inventory, agentless (one shell command on the node, parsed on the control node)."""

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
author: powerscale-dgx-ra authors (!UNKNOWN)
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
extends_documentation_fragment:
  - module_attributes.reads
  - module_attributes.dgx_host
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  facts:
    support: full
notes:
  - Read-only; identical in check mode. An action plugin, one shell command over the task's connection runs every
    probe (no Python is started on the node); the probe, its parsing and the evaluation live in
    module_utils/dgx_readiness.py (C(probe_script), C(facts_from_probe), C(readiness_result)).
  - The node needs a POSIX shell and coreutils (C(mktemp), C(base64), C(timeout)), as DGX OS has.
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
