#!/usr/bin/python
"""Ansible module dgx_nfs_plan: check the NFS client inventory and compute what one DGX mounts."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dgx_nfs_plan
short_description: Check the DGX NFS mount inventory and compute each DGX's mounts
description:
  - Checks every C(nfs_mounts) entry (typed options, known extra options, hard mounts for training data,
    exports that exist in C(powerscale_exports)) and the server selection of C(nfs_server_mode).
  - Chooses the NFS server of one DGX by mode, C(smartconnect) (the SmartConnect zone name), C(static)
    (the PowerScale node and storage NIC of C(nfs_server_map)) or C(round_robin) (the DGX nodes spread in
    inventory order over every PowerScale storage NIC address).
  - Renders the mount options in a stable order, so that /etc/fstab and /proc/mounts can be compared.
  - Changes nothing anywhere; run it on the controller (delegated to localhost) before any change.
    Every defect is reported at once as host / variable / value / problem / fix.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  host:
    description: Inventory name of the DGX the plan is for.
    type: str
    required: true
  dgx_hosts:
    description: Every host of the C(dgx) group, in inventory order (round robin spreads them in this order).
    type: list
    elements: str
    required: true
  nfs_server_mode:
    description: How the DGX nodes reach the PowerScale.
    type: str
    required: true
    choices: [smartconnect, static, round_robin]
  nfs_server_map:
    description: For C(static), per DGX C({node, nic}) naming a PowerScale host and one of its storage NICs.
    type: dict
    default: {}
  powerscale_nodes:
    description: The PowerScale hosts in inventory order, mapped to their C(storage_nics) lists.
    type: dict
    default: {}
  powerscale_smartconnect:
    description: The SmartConnect settings of storage.yml (C(enabled), C(zone)).
    type: dict
    default: {}
  nfs_mounts:
    description: The typed mount entries of nfs_client.yml.
    type: list
    elements: raw
    required: true
  powerscale_exports:
    description: The exports of exports.yml; mounts must name one of them. Empty list skips that cross-check.
    type: list
    elements: dict
    default: []
extends_documentation_fragment:
  - module_attributes.reads
  - module_attributes.computation
  - ansible.builtin.action_common_attributes
notes:
  - Pure computation; safe in check mode. Shared code is in module_utils/dgx_nfs.py.
seealso:
  - module: dgx_nfs_live
  - module: powerscale_nfs_export
  - module: host_state
  - name: Role dgx_nfs
    link: roles/dgx_nfs/README.md
    description: The DGX NFS client role and its inventory variables.
"""

EXAMPLES = r"""
- name: Plan the NFS mounts of this DGX
  dgx_nfs_plan:
    host: "{{ inventory_hostname }}"
    dgx_hosts: "{{ groups['dgx'] }}"
    nfs_server_mode: "{{ nfs_server_mode }}"
    nfs_server_map: "{{ nfs_server_map }}"
    powerscale_nodes: "{{ dict(groups['powerscale'] | zip(groups['powerscale'] | map('extract', hostvars, 'storage_nics'))) }}"
    nfs_mounts: "{{ nfs_mounts }}"
  delegate_to: localhost
  register: dgx_nfs_plan
"""

RETURN = r"""
server:
  description: The server this DGX mounts from and why.
  returned: success
  type: dict
  sample: {server: 198.51.100.21, node: f800-1, nic: 40gige-1, reason: "static map: f800-1 40gige-1"}
mounts:
  description: One entry per share, ready for ansible.posix.mount and dgx_nfs_live.
  returned: success
  type: list
  elements: dict
  sample:
    - src: "198.51.100.21:/ifs/data/training"
      path: /mnt/training
      fstype: nfs
      opts: "vers=3,proto=tcp,nconnect=8,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noatime,_netdev"
      purpose: training
      fsc: false
fsc_needed:
  description: Whether any mount asks for FS-Cache (then cachefilesd must run).
  returned: success
  type: bool
problems:
  description: Every defect found (host, variable, value, problem, fix); the module fails when not empty.
  returned: failure
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.dgx_nfs import desired_mount, export_purposes, inventory_problems, select_server  # noqa: E402
from ansible.module_utils.inventory_problem import render_table  # noqa: E402


def build_plan(params: dict) -> tuple[dict, list[dict]]:
    """The plan for one DGX and the list of problems (each a dict with the host)."""
    host = params["host"]
    problems = inventory_problems(host, params["nfs_mounts"], export_purposes(params.get("powerscale_exports")) or None)
    nodes = [(str(name), list(nics or [])) for name, nics in (params.get("powerscale_nodes") or {}).items()]
    choice, server_problems = select_server(params["nfs_server_mode"], host, params["dgx_hosts"],
                                            params.get("nfs_server_map"), nodes,
                                            params.get("powerscale_smartconnect"))
    problems.extend(server_problems)
    rows = [p.as_dict() for p in problems]
    if rows or choice is None:
        return {}, rows
    mounts = []
    for entry in params["nfs_mounts"]:
        wanted = desired_mount(entry, choice.server)
        mounts.append({"src": wanted.src, "path": wanted.path, "fstype": wanted.fstype, "opts": wanted.opts,
                       "purpose": wanted.purpose, "fsc": bool(entry.get("fsc", False))})
    plan = {
        "server": {"server": choice.server, "node": choice.node, "nic": choice.nic, "reason": choice.reason},
        "mounts": mounts,
        "fsc_needed": any(m["fsc"] for m in mounts),
    }
    return plan, rows


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", required=True),
            dgx_hosts=dict(type="list", elements="str", required=True),
            nfs_server_mode=dict(type="str", required=True, choices=["smartconnect", "static", "round_robin"]),
            nfs_server_map=dict(type="dict", default={}),
            powerscale_nodes=dict(type="dict", default={}),
            powerscale_smartconnect=dict(type="dict", default={}),
            nfs_mounts=dict(type="list", elements="raw", required=True),
            powerscale_exports=dict(type="list", elements="dict", default=[]),
        ),
        supports_check_mode=True,
    )
    plan, rows = build_plan(module.params)
    if rows:
        module.fail_json(msg="NFS client inventory is invalid; nothing was changed:\n"
                         + render_table(rows, "dgx_nfs (mounts)"),
                         problems=rows)
    module.exit_json(changed=False, **plan)


if __name__ == "__main__":
    main()
