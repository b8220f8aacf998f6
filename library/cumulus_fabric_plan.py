#!/usr/bin/python
"""Derive one SN3700V switch's desired storage-fabric state from the inventory."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cumulus_fabric_plan
short_description: Derive an SN3700V switch's storage-fabric plan from the inventory and refuse bad input
description:
  - Turns the cabling recorded in the inventory (every C(storage_nics) entry of a dgx/powerscale host names its
    switch and switch port) plus the C(storage_fabric_*) group_vars into the desired state of one switch
    (fabric ports with description, MTU, speed and access VLAN; the VLAN-aware bridge and its VLANs; the
    CLAG/MLAG peerlink; uplinks; breakouts; RoCE).
  - Checks every value on the way (port names, MTU range, duplicate VLANs, addresses outside the storage
    subnets, ports used twice, CLAG settings) and fails with one line per problem naming the host, the
    variable, the value and the fix, before anything is changed.
  - "Pure computation: it reads and changes nothing, so it runs the same in check mode. Run it on the control
    node (C(delegate_to: localhost))."
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  switch:
    description: Inventory name of the switch to plan (the C(switch) value of the cables that land on it).
    type: str
    required: true
  method:
    description: Configuration method the plan is for (RoCE is refused with C(files)).
    type: str
    choices: [files, nvue]
    default: files
  nics_by_host:
    description: Map of host name to its C(storage_nics) list (name, address, speed_gbps, mtu, switch, switch_port).
    type: dict
    required: true
  port_mtu:
    description: MTU of every fabric port, uplink and peerlink (552..9216).
    type: raw
    required: true
  vlans:
    description: Storage VLANs, a list of C({id, name, subnet}).
    type: list
    elements: raw
    required: true
  bridge:
    description: The VLAN-aware bridge, C({name, vlan_aware, pvid}).
    type: dict
    required: true
  clag:
    description: CLAG/MLAG settings, C({enabled, peerlink {bond, members, vlan}, sys_mac}).
    type: dict
    default: {}
  clag_role:
    description: This switch's CLAG role.
    type: str
    default: standalone
  clag_priority:
    description: CLAG priority (lower becomes primary).
    type: raw
  clag_backup_ip:
    description: The peer's address for the CLAG backup link.
    type: str
  loopback:
    description: Loopback address/prefix of the switch, or empty for none.
    type: str
  uplinks:
    description: Uplink ports, a list of C({name, speed, description}).
    type: list
    elements: raw
    default: []
  roce:
    description: RoCE QoS, C({enabled, mode}).
    type: dict
    default: {}
  breakouts:
    description: Port breakouts, a map of parent port to mode (C(4x25G)).
    type: dict
    default: {}
  speeds_gbps:
    description: Port speeds the fabric may set.
    type: list
    elements: int
    default: []
  port_speed_managed:
    description: Whether fabric ports get an explicit speed (false for virtual NICs, which have none to set).
    type: bool
    default: true
  port_fec:
    description:
      - FEC mode (rs, baser, off) per forced port speed in Gb/s (storage_fabric_port_fec). A port or uplink whose
        speed the plan forces without a valid mode for it is a problem (cumulus_release.fec_for_forced_speed).
    type: dict
    default: {}
  scale_hosts:
    description:
      - A day 2 scale flow (docs/scale-out.md) - the hosts being added (O(scale_mode=add)) or removed
        (O(scale_mode=remove)). The plan is derived with and without their cables; any difference between the two
        other than the ports of these hosts (an existing port, a VLAN, an uplink, the peerlink) fails, naming it,
        so that the flow touches nothing else. With C(remove) the plan returned is the one without them.
    type: list
    elements: str
    default: []
  scale_mode:
    description: Whether O(scale_hosts) are being added or removed.
    type: str
    choices: [add, remove]
    default: add
extends_documentation_fragment:
  - module_attributes.reads
  - module_attributes.computation
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Pure computation on the control node; it reads and changes nothing, so check mode runs it unchanged.
seealso:
  - module: cumulus_interfaces
  - module: nvue_fabric
  - module: cumulus_fabric_verify
  - name: Role sn3700v
    link: roles/sn3700v/README.md
    description: The storage-fabric role and the inventory variables the plan is derived from.
"""

EXAMPLES = r"""
- name: Derive the desired state of this switch
  cumulus_fabric_plan:
    switch: "{{ inventory_hostname }}"
    method: "{{ storage_fabric_method }}"
    nics_by_host: "{{ dict(hosts | zip(hosts | map('extract', hostvars) | map(attribute='storage_nics', default=[]))) }}"
    port_mtu: "{{ storage_fabric_port_mtu }}"
    vlans: "{{ storage_fabric_vlans }}"
    bridge: "{{ storage_fabric_bridge }}"
  vars:
    hosts: "{{ groups['dgx'] + groups['powerscale'] }}"
  delegate_to: localhost
  register: plan
"""

RETURN = r"""
plan:
  description: The switch's desired state.
  returned: success
  type: dict
  contains:
    ports:
      description: Fabric ports, each with name, description, mtu, access_vlan, speed_gbps, host and nic.
      type: list
      elements: dict
    bridge:
      description: Bridge name.
      type: str
    vids:
      description: Storage VLAN IDs carried by the bridge.
      type: list
      elements: int
    peerlink:
      description: The CLAG peerlink (bond, members, vlan, sys_mac, priority, backup_ip, role, mtu), or null.
      type: dict
    owned_interfaces:
      description: Every interface whose configuration the role owns on this switch.
      type: list
      elements: str
scale_ports:
  description: With O(scale_hosts), the ports of those hosts on this switch that the flow adds or removes.
  returned: success
  type: list
  elements: dict
problems:
  description: Every problem found, one line each (the module fails when there is one).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.cumulus_fabric import derive_plan  # noqa: E402
from ansible.module_utils.scale_plan import switch_plan_growth  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "switch": {"type": "str", "required": True},
            "method": {"type": "str", "choices": ["files", "nvue"], "default": "files"},
            "nics_by_host": {"type": "dict", "required": True},
            "port_mtu": {"type": "raw", "required": True},
            "vlans": {"type": "list", "elements": "raw", "required": True},
            "bridge": {"type": "dict", "required": True},
            "clag": {"type": "dict", "default": {}},
            "clag_role": {"type": "str", "default": "standalone"},
            "clag_priority": {"type": "raw"},
            "clag_backup_ip": {"type": "str"},
            "loopback": {"type": "str"},
            "uplinks": {"type": "list", "elements": "raw", "default": []},
            "roce": {"type": "dict", "default": {}},
            "breakouts": {"type": "dict", "default": {}},
            "speeds_gbps": {"type": "list", "elements": "int", "default": []},
            "port_speed_managed": {"type": "bool", "default": True},
            "port_fec": {"type": "dict", "default": {}},
            "scale_hosts": {"type": "list", "elements": "str", "default": []},
            "scale_mode": {"type": "str", "choices": ["add", "remove"], "default": "add"},
        },
        supports_check_mode=True,
    )
    params = dict(module.params)
    switch = params.pop("switch")
    scale_hosts = params.pop("scale_hosts")
    scale_mode = params.pop("scale_mode")
    plan, problems = derive_plan(switch, params)
    lines = [p.line() for p in problems]
    if problems:
        module.fail_json(
            msg=f"{switch}: the inventory cannot be applied to this switch ({len(problems)} problem(s)), nothing was "
            "changed:\n  " + "\n  ".join(lines),
            problems=lines,
        )
    result = plan.as_dict()
    scale_ports: list[dict] = []
    if scale_hosts:
        missing = [h for h in scale_hosts if h not in params["nics_by_host"]]
        without = {h: nics for h, nics in params["nics_by_host"].items() if h not in scale_hosts}
        smaller = derive_plan(switch, {**params, "nics_by_host": without})[0]
        scale_ports, growth = switch_plan_growth(switch, smaller.as_dict(), result, scale_hosts)
        growth += [f"{switch} | scale_hosts | {h} | is not a host cabled in this inventory (no storage_nics) | "
                   "keep the node in hosts.yml until the scale flow has run" for h in missing]
        if growth:
            module.fail_json(msg=f"{switch}: the scale flow would change more than the ports of "
                             f"{', '.join(scale_hosts)}, nothing was changed:\n  " + "\n  ".join(growth),
                             problems=growth)
        if scale_mode == "remove":
            result = smaller.as_dict()
    module.exit_json(changed=False, plan=result, scale_ports=scale_ports, problems=lines)


if __name__ == "__main__":
    main()
