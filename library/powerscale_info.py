#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Ansible module: read-only facts about a PowerScale (OneFS) cluster through the Platform API."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: powerscale_info
short_description: Gather facts about a PowerScale (OneFS) cluster through the Platform API
description:
  - Reads the cluster identity and configuration (name, GUID, OneFS release, nodes), the PAPI version the
    cluster serves, access zones, NFS exports of one zone, directory quotas, network pools, subnets and
    interfaces. Changes nothing.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  gather_subset:
    description: What to read. C(cluster) is always read.
    type: list
    elements: str
    choices: [cluster, nodes, zones, exports, quotas, pools, subnets, interfaces]
    default: [cluster, nodes, zones, exports, quotas, pools]
  zone:
    description: Access zone whose exports are listed.
    type: str
    default: System
  subnets:
    description: Subnets to read with C(subnets), as C(groupnet.subnet) names.
    type: list
    elements: str
    default: [groupnet0.subnet0]
extends_documentation_fragment:
  - onefs_api
  - module_attributes.reads
  - onefs_api.reads
  - ansible.builtin.action_common_attributes
seealso:
  - module: powerscale_access
  - module: powerscale_nfs_export
  - module: powerscale_quota
  - module: powerscale_network_pool
"""

EXAMPLES = r"""
- name: Read the cluster's release and exports
  powerscale_info:
    api_host: 192.0.2.21
    api_user: svc-ansible
    api_password: "{{ powerscale_api_password }}"
    gather_subset: [cluster, exports]
  delegate_to: localhost
  register: onefs

- name: Show the release
  ansible.builtin.debug:
    msg: "OneFS {{ onefs.cluster.onefs_release }} on {{ onefs.cluster.name }}"
"""

RETURN = r"""
api_version:
  description: Highest Platform API version the cluster serves (C(GET /platform/latest)).
  returned: always
  type: int
  sample: 17
cluster:
  description: Identity and configuration.
  returned: always
  type: dict
  sample: {"name": "f800", "guid": "0007430...", "onefs_release": "9.5.0.0", "onefs_version": "Isilon OneFS v9.5.0.0",
           "devices": [{"lnn": 1, "devid": 1, "is_up": true}]}
nodes:
  description: Nodes (C(/platform/3/cluster/nodes)).
  returned: when nodes is in gather_subset
  type: list
  elements: dict
zones:
  description: Access zones.
  returned: when zones is in gather_subset
  type: list
  elements: dict
exports:
  description: NFS exports of O(zone).
  returned: when exports is in gather_subset
  type: list
  elements: dict
quotas:
  description: Quotas.
  returned: when quotas is in gather_subset
  type: list
  elements: dict
pools:
  description: Network pools of every subnet.
  returned: when pools is in gather_subset
  type: list
  elements: dict
subnets:
  description: The subnets named in O(subnets).
  returned: when subnets is in gather_subset
  type: list
  elements: dict
interfaces:
  description: Network interfaces of every node with their addresses.
  returned: when interfaces is in gather_subset
  type: list
  elements: dict
"""

from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.onefs import ONEFS_ARGUMENT_SPEC, OneFSClient, OneFSError, run_onefs_module  # noqa: E402

SUBSETS = ["cluster", "nodes", "zones", "exports", "quotas", "pools", "subnets", "interfaces"]


def argument_spec() -> dict[str, Any]:
    spec: dict[str, Any] = {
        "gather_subset": {"type": "list", "elements": "str", "choices": SUBSETS,
                          "default": ["cluster", "nodes", "zones", "exports", "quotas", "pools"]},
        "zone": {"type": "str", "default": "System"},
        "subnets": {"type": "list", "elements": "str", "default": ["groupnet0.subnet0"]},
    }
    spec.update(ONEFS_ARGUMENT_SPEC)
    return spec


def cluster_facts(config: dict[str, Any], identity: dict[str, Any]) -> dict[str, Any]:
    version = config.get("onefs_version") or {}
    release = str(version.get("release", "")).lstrip("v")
    return {
        "name": config.get("name") or identity.get("name"),
        "guid": config.get("guid"),
        "description": identity.get("description", ""),
        "onefs_release": release,
        "onefs_version": version.get("version"),
        "onefs_build": version.get("build"),
        "devices": [{"lnn": d.get("lnn"), "devid": d.get("devid"), "is_up": d.get("is_up")}
                    for d in config.get("devices", [])],
    }


def run(module: AnsibleModule, client: OneFSClient) -> dict[str, Any]:
    p = module.params
    subset = set(p["gather_subset"]) | {"cluster"}
    result: dict[str, Any] = {"changed": False, "api_version": client.api_version()}
    config = client.get(client.platform(1, "cluster/config")) or {}
    identity = client.get(client.platform(1, "cluster/identity")) or {}
    result["cluster"] = cluster_facts(config, identity)
    if "nodes" in subset:
        result["nodes"] = client.get_all(client.platform(3, "cluster/nodes", minimum=3), "nodes")
    if "zones" in subset:
        result["zones"] = client.get_all(client.platform(1, "zones"), "zones")
    if "exports" in subset:
        result["exports"] = client.get_all(client.platform(4, "protocols/nfs/exports", minimum=2), "exports",
                                           {"zone": p["zone"]})
    if "quotas" in subset:
        result["quotas"] = client.get_all(client.platform(1, "quota/quotas"), "quotas")
    if "pools" in subset:
        result["pools"] = client.get_all(client.platform(3, "network/pools", minimum=3), "pools")
    if "subnets" in subset:
        subnets = []
        for name in p["subnets"]:
            groupnet, _unused, subnet = name.partition(".")
            if not subnet:
                raise OneFSError(f"subnets: {name!r} is not of the form groupnet.subnet (e.g. groupnet0.subnet0)")
            data = client.get(client.platform(3, f"network/groupnets/{groupnet}/subnets/{subnet}", minimum=3),
                              ok_missing=True)
            subnets.extend((data or {}).get("subnets", []) or [{"id": name, "missing": True}])
        result["subnets"] = subnets
    if "interfaces" in subset:
        result["interfaces"] = client.get_all(client.platform(3, "network/interfaces", minimum=3), "interfaces")
    return result


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_onefs_module(module, lambda client: run(module, client))


if __name__ == "__main__":
    main()
