#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Ansible module powerscale_inventory_check: check PowerScale's exports, quotas and SmartConnect inventory."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: powerscale_inventory_check
short_description: Check the PowerScale exports, quotas and SmartConnect inventory before any request
description:
  - Checks the inventory's C(powerscale_exports), C(powerscale_quotas) and C(powerscale_smartconnect) with
    PowerScale's inventory rules, their one home (module_utils/powerscale_inventory.py, which preflight calls
    too).
  - C(exports) - each export once, on a path under C(/ifs/); C(mode) a quoted octal string, C(map_root) a user,
    security flavors OneFS knows, client lists of single clients, booleans; no C(group root) (GID 0 is the group
    C(wheel) on OneFS).
  - C(exposure) - a client that is every host (C(*), C(0.0.0.0/0), C(::/0)) needs C(open_to_all_clients true),
    C(map_root root) needs C(no_root_squash true), and an export may not end up with no client at all (none
    listed and no DGX storage address to derive C(clients []) from).
  - C(quotas) - each quota on a path under C(/ifs/) inside an export, type C(directory), thresholds integers
    >= 1 (or null / absent), ordered advisory <= soft <= hard (each pair), and C(soft_grace_s) with a soft
    threshold.
  - C(smartconnect) - when enabled, the pool is complete (subnet, pool, zone, ip_ranges, interfaces, a
    connect policy OneFS knows), its ranges are well formed and disjoint and the service address is not in one.
  - Contacts nothing and changes nothing. Fails naming host, variable, value, problem and fix for every error at
    once; warnings are returned as Ansible warnings.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  host:
    description: The name the rows carry (the inventory host the check runs for).
    type: str
    required: true
  exports:
    description: The value of C(powerscale_exports) (exports.yml), unconverted. Omitted, nothing is checked
      against it (and the quota paths are not checked against the exports).
    type: raw
  quotas:
    description: The value of C(powerscale_quotas) (exports.yml), unconverted.
    type: raw
  smartconnect:
    description: The value of C(powerscale_smartconnect) (storage.yml), unconverted.
    type: raw
  dgx_storage_addresses:
    description: The storage addresses of the C(dgx) hosts, which an export with C(clients []) gets. Omitted,
      the rule that an export must end up with a client is skipped.
    type: list
    elements: str
  parts:
    description: Which rules to run.
    type: list
    elements: str
    choices: [exports, exposure, quotas, smartconnect]
    default: [exports, exposure, quotas, smartconnect]
extends_documentation_fragment:
  - module_attributes.reads
  - ansible.builtin.action_common_attributes
attributes:
  platform:
    support: full
    platforms: posix
    details: Runs on the control node (delegate_to localhost); sends nothing to the cluster.
notes:
  - Pure computation; safe in check mode. The rules are in module_utils/powerscale_inventory.py.
seealso:
  - module: powerscale_nfs_export
  - module: powerscale_quota
  - module: powerscale_network_pool
  - name: Role powerscale
    link: roles/powerscale/README.md
    description: The PowerScale role and its inventory variables.
"""

EXAMPLES = r"""
- name: Check | quota thresholds
  powerscale_inventory_check:
    host: "{{ inventory_hostname }}"
    exports: "{{ powerscale_exports }}"
    quotas: "{{ powerscale_quotas }}"
    parts: [quotas]
  run_once: true
  delegate_to: localhost

- name: Check the whole PowerScale inventory
  powerscale_inventory_check:
    host: "{{ inventory_hostname }}"
    exports: "{{ powerscale_exports }}"
    quotas: "{{ powerscale_quotas }}"
    smartconnect: "{{ powerscale_smartconnect }}"
    dgx_storage_addresses: >-
      {{ groups['dgx'] | map('extract', hostvars, 'storage_nics') | flatten | map(attribute='address') | list }}
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
parts:
  description: The rules that ran.
  returned: always
  type: list
  elements: str
  sample: [exports, exposure, quotas, smartconnect]
problems:
  description: Every error found (host, variable, value, problem, fix, severity); the module fails when not empty.
  returned: failure
  type: list
  elements: dict
  sample:
    - host: powerscale01
      variable: powerscale_quotas[0].thresholds.soft
      value: "999999999999"
      problem: "must not exceed hard (268435456) on quota /ifs/data/scratch: OneFS gives an advisory notice below
        the soft limit and the soft limit below the hard one"
      fix: order them advisory <= soft <= hard
      severity: error
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.inventory_problem import ERROR, render_table  # noqa: E402
from ansible.module_utils.powerscale_inventory import PARTS, inventory_problems  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", required=True),
            exports=dict(type="raw"),
            quotas=dict(type="raw"),
            smartconnect=dict(type="raw"),
            dgx_storage_addresses=dict(type="list", elements="str"),
            parts=dict(type="list", elements="str", choices=list(PARTS), default=list(PARTS)),
        ),
        supports_check_mode=True,
    )
    p = module.params
    problems = inventory_problems(p["host"], p["exports"], p["quotas"], p["smartconnect"],
                                  p["dgx_storage_addresses"], p["parts"])
    errors = [row.as_dict() for row in problems if row.severity == ERROR]
    if errors:
        module.fail_json(msg="PowerScale inventory is invalid; nothing was sent:\n"
                         + render_table(errors, "powerscale (" + ", ".join(p["parts"]) + ")"),
                         problems=errors, parts=p["parts"])
    for row in problems:
        module.warn(row.line())
    module.exit_json(changed=False, parts=p["parts"])


if __name__ == "__main__":
    main()
