#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Ansible module: check, before any change, that the API user's privileges and the cluster's licences allow the run."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: powerscale_access
short_description: Check the API user's OneFS privileges and the cluster's licences before any change
description:
  - Reads the API user's access token (C(GET /platform/1/auth/id)), the licences
    (C(GET /platform/5/license/licenses)) and, for a managed pool, the pools of its subnet, and fails naming each
    privilege or licence the run lacks and the feature that needs it. Changes nothing.
  - The privileges are those of the RBAC role in roles/powerscale/README.md (module_utils/onefs_access.py).
version_added: "0.2.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  exports:
    description: The run creates or updates NFS exports (needs ISI_PRIV_NFS read-write).
    type: bool
    default: true
  quotas:
    description: The run creates or updates directory quotas (needs ISI_PRIV_QUOTA read-write).
    type: bool
    default: true
  directories:
    description: The run creates export directories through the namespace API.
    type: bool
    default: true
  directory_owners:
    description: The run gives directories an owner or group (needs ISI_PRIV_IFS_RESTORE).
    type: bool
    default: true
  pool:
    description: The SmartConnect pool, when the run manages one; omit it otherwise.
    type: dict
    suboptions:
      groupnet:
        description: Groupnet of the subnet.
        type: str
        default: groupnet0
      subnet:
        description: Subnet of the pool.
        type: str
        required: true
      name:
        description: Pool name.
        type: str
        required: true
      alloc_method:
        description: C(dynamic) needs the SmartConnect Advanced licence.
        type: str
        choices: [static, dynamic]
        default: static
extends_documentation_fragment:
  - onefs_api
  - module_attributes.reads
  - onefs_api.reads
  - ansible.builtin.action_common_attributes
notes:
  - Check mode changes nothing either; the module only reads.
seealso:
  - module: powerscale_info
  - module: powerscale_network_pool
  - module: powerscale_nfs_export
"""

EXAMPLES = r"""
- name: Privileges and licences before any change
  powerscale_access:
    api_host: 192.0.2.21
    api_user: svc-ansible
    api_password: "{{ powerscale_api_password }}"
    pool: {subnet: subnet0, name: pool-dl, alloc_method: dynamic}
  delegate_to: localhost
"""

RETURN = r"""
user:
  description: The user the cluster authenticated (its access token's UID name).
  returned: always
  type: str
privileges:
  description: Privileges of the API user, id -> C(r) (read-only) or C(w) (read-write).
  returned: always
  type: dict
licences:
  description: Licence name -> status, when the user may read them.
  returned: always
  type: dict
missing:
  description: One sentence per missing privilege or licence (empty when the run may go on).
  returned: always
  type: list
  elements: str
"""

from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.onefs import ONEFS_ARGUMENT_SPEC, OneFSClient, OneFSError, run_onefs_module  # noqa: E402
from ansible.module_utils.onefs_access import (  # noqa: E402
    Plan,
    active_licences,
    held_privileges,
    missing_licences,
    missing_privileges,
    token_user,
)


def argument_spec() -> dict[str, Any]:
    spec: dict[str, Any] = {
        "exports": {"type": "bool", "default": True},
        "quotas": {"type": "bool", "default": True},
        "directories": {"type": "bool", "default": True},
        "directory_owners": {"type": "bool", "default": True},
        "pool": {"type": "dict", "options": {
            "groupnet": {"type": "str", "default": "groupnet0"},
            "subnet": {"type": "str", "required": True},
            "name": {"type": "str", "required": True},
            "alloc_method": {"type": "str", "choices": ["static", "dynamic"], "default": "static"}}},
    }
    spec.update(ONEFS_ARGUMENT_SPEC)
    return spec


def plan_of(params: dict[str, Any]) -> Plan:
    pool = params.get("pool")
    return Plan(exports=params["exports"], quotas=params["quotas"], directories=params["directories"],
                directory_owners=params["directory_owners"], pool=pool is not None,
                pool_dynamic=bool(pool) and pool["alloc_method"] == "dynamic")


def run(module: AnsibleModule, client: OneFSClient) -> dict[str, Any]:
    p = module.params
    plan = plan_of(p)
    auth_id = client.get("/platform/1/auth/id") or {}
    user = token_user(auth_id)
    held = held_privileges(auth_id)
    missing = missing_privileges(plan, held)
    licences: dict[str, str] = {}
    if not missing:  # the user may read licences and pools: a 403 here would be a cluster the rule does not know
        licences = active_licences(client.get(client.platform(5, "license/licenses", minimum=5)) or {})
        others: list[str] = []
        if p["pool"]:
            pool = p["pool"]
            path = client.platform(3, f"network/groupnets/{pool['groupnet']}/subnets/{pool['subnet']}/pools",
                                   minimum=3)
            others = [str(x.get("name")) for x in client.get_all(path, "pools") if x.get("name") != pool["name"]]
        missing = missing_licences(plan, others, licences)
    result = {"changed": False, "user": user, "privileges": held, "licences": licences, "missing": missing}
    if missing:
        raise OneFSError(f"the storage stage stops before any change: API user {user!r} on {client.conn.base_url} "
                         "needs " + "; ".join(missing) + ". Add the privileges to the API user's RBAC role "
                         "(roles/powerscale/README.md lists it) or activate the licence, then run again.")
    return result


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_onefs_module(module, lambda client: run(module, client))


if __name__ == "__main__":
    main()
