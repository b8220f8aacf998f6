#!/usr/bin/python
"""Documentation of preflight_inventory, which runs as an action plugin (plugins/action/preflight_inventory.py) on
the control node: it reads every host's variables through hostvars and evaluates module_utils/preflight_rules.py."""

DOCUMENTATION = r"""
---
module: preflight_inventory
short_description: Check the whole inventory against the preflight rules, on the control node, before any change
description:
  - Reads, through C(hostvars), every variable the stages consume for every host of the groups C(dgx),
    C(powerscale), C(sn3700v) and C(qm8700), and the group-level (C(all)) view; each variable is resolved on its own,
    so a template that fails becomes a row of the table naming the host, the variable and the reason.
  - Evaluates the preflight rules (module_utils/preflight_rules.py, the variable types in module_utils/preflight_schema.py)
    and returns one row per problem (host, variable, value, problem, fix) and the rendered table.
  - Checks where each secret comes from (clear text in the inventory, an empty value, a lookup that fails) without
    ever returning its value.
  - Never fails by itself, and never changes anything; the role (roles/preflight) prints the table and fails on
    error rows.
version_added: "0.4.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: It only reads the inventory.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
    details: Runs on the control node (action plugin); it touches no target.
options:
  offline:
    description:
      - Judge the inventory alone; secrets are checked for clear text but not looked up (no vault, no lookup).
    type: bool
    default: true
  settings:
    description: The role's own knobs (roles/preflight/defaults/main.yml), as integers.
    type: dict
    default: {}
    suboptions:
      l2_overhead_bytes:
        description: Bytes of layer-2 overhead between an MTU and the frame size the switches must carry.
        type: int
        default: 18
      sizing_gpus_per_f800_node:
        description: DGX GPUs one F800 node is sized for (the sizing rule).
        type: int
        default: 8
  rules:
    description:
      - Evaluate only these rules, by name (a role's own input check, roles/preflight/tasks/rules.yml); an unknown
        name fails the task, naming it. Left out, every rule.
    type: list
    elements: str
  variables:
    description:
      - Keep only the rows about these variables (indices written as C([]), so C(storage_nics[0].name) is
        C(storage_nics[].name); a name ending in C(.*) takes every part of it). Left out, every row.
    type: list
    elements: str
  host:
    description: Keep only the rows about this host or about a group. Left out, every host.
    type: str
seealso:
  - module: preflight_targets
  - name: Preflight
    link: docs/components.md
    description: The preflight stage, its rules and where each one lives.
"""

EXAMPLES = r"""
- name: Evaluate every preflight rule against every host's variables
  preflight_inventory:
    offline: true
    settings:
      l2_overhead_bytes: 18
      sizing_gpus_per_f800_node: 8
  register: preflight_inventory_result
  run_once: true
  delegate_to: localhost

- name: A role's own input check, for one host
  preflight_inventory:
    rules: [schema, node_model]
    variables: [dgx_model, dgx_models, dgx_models.*]
    host: "{{ inventory_hostname }}"
  delegate_to: localhost
"""

RETURN = r"""
rows:
  description: One row per problem found.
  returned: always
  type: list
  elements: dict
  sample:
    - host: dgx01
      variable: dgx_model
      value: (not set)
      problem: is required by the dgx stage and not set
      fix: set dgx_model, or give -i inventories/common before the site (meanings - inventories/common,
        inventories/production)
      severity: error
error_count:
  description: The rows of severity C(error).
  returned: always
  type: int
  sample: 0
warning_count:
  description: The other rows (warnings).
  returned: always
  type: int
  sample: 1
table:
  description: The rows rendered as one text table (host | variable | value | problem | fix).
  returned: always
  type: str
hosts:
  description: The number of hosts whose variables were read.
  returned: always
  type: int
  sample: 4
rules:
  description: The number of rules evaluated.
  returned: always
  type: int
  sample: 40
"""
