#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Ansible module: a front-end IP pool with its SmartConnect zone on a PowerScale (OneFS) cluster."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: powerscale_network_pool
short_description: Manage a front-end IP address pool and its SmartConnect zone on a PowerScale cluster
description:
  - Creates or updates one pool of a subnet
    (C(/platform/3/network/groupnets/<groupnet>/subnets/<subnet>/pools/<name>)) - access zone, IP ranges,
    member interfaces, allocation method, SmartConnect zone name and connect policy.
  - Ranges and interfaces are compared as sets. Only differing fields are sent. Never deletes a pool.
  - Check mode sends nothing that changes the cluster; diff mode shows the managed fields before and after.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  groupnet:
    description: Groupnet of the subnet.
    type: str
    default: groupnet0
  subnet:
    description: Subnet that holds the pool.
    type: str
    required: true
  name:
    description: Pool name, unique in the subnet.
    type: str
    required: true
  access_zone:
    description: Access zone the pool's addresses serve.
    type: str
  alloc_method:
    description: C(static) (one address per interface, kept) or C(dynamic) (IP failover between nodes, NFSv3).
    type: str
    choices: [static, dynamic]
  ranges:
    description: Address ranges of the pool.
    type: list
    elements: dict
    suboptions:
      low:
        description: First address.
        type: str
        required: true
      high:
        description: Last address.
        type: str
        required: true
  ifaces:
    description: Member interfaces.
    type: list
    elements: dict
    suboptions:
      iface:
        description: Interface name, for example C(40gige-1).
        type: str
        required: true
      lnn:
        description: Logical node number.
        type: int
        required: true
  ifaces_mode:
    description:
      - C(replace) makes the member interfaces exactly O(ifaces) (the deploy).
      - C(add) only adds O(ifaces) to the pool's members and C(remove) only removes them (a day 2 scale-out or
        scale-in of F800 nodes, docs/scale-out.md); the other members and every other field of the pool are
        neither compared nor sent, and the pool must exist already.
    type: str
    choices: [replace, add, remove]
    default: replace
  sc_dns_zone:
    description: SmartConnect zone name (the name clients mount); empty for none.
    type: str
  sc_subnet:
    description:
      - Name of the subnet whose SmartConnect service (service address) answers the DNS queries for O(sc_dns_zone).
        Without it no SmartConnect service resolves the zone name, and mounts by that name fail.
    type: str
  sc_connect_policy:
    description: SmartConnect client balancing policy.
    type: str
    choices: [round_robin, conn_count, throughput, cpu_usage]
  description:
    description: Free text.
    type: str
extends_documentation_fragment:
  - onefs_api
  - module_attributes.changes
  - onefs_api.changes
  - ansible.builtin.action_common_attributes
notes:
  - The API user needs ISI_PRIV_NETWORK (read-write). O(alloc_method=dynamic) and a second pool in a subnet need
    the SmartConnect Advanced licence; the role checks both before it sends anything.
attributes:
  diff_mode:
    details: The managed pool fields before and after.
seealso:
  - module: powerscale_info
  - module: powerscale_access
"""

EXAMPLES = r"""
- name: SmartConnect pool for the DGX nodes
  powerscale_network_pool:
    api_host: 192.0.2.21
    api_user: svc-ansible
    api_password: "{{ powerscale_api_password }}"
    subnet: subnet0
    name: pool-dl
    access_zone: System
    alloc_method: static
    ranges: [{low: 198.51.100.21, high: 198.51.100.24}]
    ifaces: [{iface: 40gige-1, lnn: 1}, {iface: 40gige-1, lnn: 2}]
    sc_dns_zone: dl.storage.example.com
    sc_subnet: subnet0
    sc_connect_policy: round_robin
  delegate_to: localhost
"""

RETURN = r"""
pool:
  description: The pool after the run (the expected pool in check mode).
  returned: always
  type: dict
sent:
  description: Fields sent (or that would be sent).
  returned: always
  type: dict
api_calls:
  description: Method, path and HTTP status of every request made (no bodies, no credentials).
  returned: always
  type: list
  elements: list
"""

from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.onefs import ONEFS_ARGUMENT_SPEC, OneFSClient, OneFSError, run_onefs_module  # noqa: E402
from ansible.module_utils.scale_plan import list_plan  # noqa: E402

SCALARS = ("access_zone", "alloc_method", "sc_dns_zone", "sc_subnet", "sc_connect_policy", "description")


def argument_spec() -> dict[str, Any]:
    spec: dict[str, Any] = {
        "groupnet": {"type": "str", "default": "groupnet0"},
        "subnet": {"type": "str", "required": True},
        "name": {"type": "str", "required": True},
        "access_zone": {"type": "str"},
        "alloc_method": {"type": "str", "choices": ["static", "dynamic"]},
        "ranges": {"type": "list", "elements": "dict", "options": {
            "low": {"type": "str", "required": True}, "high": {"type": "str", "required": True}}},
        "ifaces": {"type": "list", "elements": "dict", "options": {
            "iface": {"type": "str", "required": True}, "lnn": {"type": "int", "required": True}}},
        "sc_dns_zone": {"type": "str"},
        "sc_subnet": {"type": "str"},
        "sc_connect_policy": {"type": "str", "choices": ["round_robin", "conn_count", "throughput", "cpu_usage"]},
        "description": {"type": "str"},
        "ifaces_mode": {"type": "str", "choices": ["replace", "add", "remove"], "default": "replace"},
    }
    spec.update(ONEFS_ARGUMENT_SPEC)
    return spec


def comparable(name: str, value: Any) -> Any:
    if name == "ranges":
        return sorted((r["low"], r["high"]) for r in value or [])
    if name == "ifaces":
        return sorted((int(i["lnn"]), i["iface"]) for i in value or [])
    return value or ("" if name in ("sc_dns_zone", "sc_subnet", "description") else value)


def run(module: AnsibleModule, client: OneFSClient) -> dict[str, Any]:
    p = module.params
    subnet_path = client.platform(3, f"network/groupnets/{p['groupnet']}/subnets/{p['subnet']}", minimum=3)
    pools_path = f"{subnet_path}/pools"
    current = (client.get(f"{pools_path}/{p['name']}", ok_missing=True) or {}).get("pools", [None])[0]
    fields = [n for n in (*SCALARS, "ranges", "ifaces") if p.get(n) is not None]
    mode = p.get("ifaces_mode") or "replace"
    if mode != "replace":
        if current is None:
            raise OneFSError(f"pool {p['groupnet']}.{p['subnet']}.{p['name']} does not exist: ifaces_mode="
                             f"{mode} changes the members of a pool the site already has and never "
                             "creates one. Deploy the pool first (site.yml --tags storage), then run the scale flow.")
        members = [(int(i["lnn"]), i["iface"]) for i in current.get("ifaces") or []]
        plan = list_plan(members, [(int(i["lnn"]), i["iface"]) for i in p["ifaces"] or []], mode)
        p = {**p, "ifaces": [{"iface": iface, "lnn": lnn} for lnn, iface in plan.after]}
        fields = ["ifaces"]
    want = {n: comparable(n, p[n]) for n in fields}
    body_of = {n: ([{"low": r["low"], "high": r["high"]} for r in p[n]] if n == "ranges" else
                   [{"iface": i["iface"], "lnn": i["lnn"]} for i in p[n]] if n == "ifaces" else p[n])
               for n in fields}
    after = {"name": p["name"], **{n: body_of[n] for n in fields}}
    if current is None:
        body = {"name": p["name"], **body_of}
        if module.check_mode:
            return {"changed": True, "pool": body, "sent": body, "diff": {"before": {}, "after": after}}
        client.post(pools_path, body)
        pool = (client.get(f"{pools_path}/{p['name']}") or {}).get("pools", [{}])[0]
        return {"changed": True, "pool": pool, "sent": body, "diff": {"before": {}, "after": after}}
    changed = [n for n in fields if comparable(n, current.get(n)) != want[n]]
    before = {"name": p["name"], **{n: current.get(n) for n in fields}}
    if not changed:
        return {"changed": False, "pool": current, "sent": {}, "diff": {"before": before, "after": after}}
    body = {n: body_of[n] for n in changed}
    if module.check_mode:
        return {"changed": True, "pool": {**current, **body}, "sent": body, "diff": {"before": before, "after": after}}
    client.put(f"{pools_path}/{p['name']}", body)
    pool = (client.get(f"{pools_path}/{p['name']}") or {}).get("pools", [{}])[0]
    return {"changed": True, "pool": pool, "sent": body, "diff": {"before": before, "after": after}}


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_onefs_module(module, lambda client: run(module, client))


if __name__ == "__main__":
    main()
