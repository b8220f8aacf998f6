#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Ansible module: check a day 2 scale request (the nodes to add or remove) against the inventory."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: scale_request
short_description: Check the nodes of a scale-out or scale-in against the inventory, before anything changes
description:
  - Splits the nodes named by C(scale_out_nodes) or C(scale_in_nodes) into DGX and PowerScale nodes and the DGX
    nodes that stay as they are, and fails with one line per problem (host | variable | value | problem | fix)
    when a name is not a host of group dgx or powerscale, is named twice, or when every DGX is named.
  - "Pure computation on the control node (C(delegate_to: localhost)); it reads and changes nothing."
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  nodes:
    description: The nodes of the request, a list or a comma-separated string.
    type: raw
    required: true
  variable:
    description: The variable that named them, for the messages.
    type: str
    default: scale_out_nodes
  groups:
    description: The inventory's groups (C(groups)).
    type: dict
    required: true
extends_documentation_fragment:
  - module_attributes.reads
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Pure computation; runs the same in check mode.
  platform:
    platforms: posix
seealso:
  - module: dgx_in_use
"""

EXAMPLES = r"""
- name: Check the request
  scale_request:
    nodes: "{{ scale_out_nodes }}"
    variable: scale_out_nodes
    groups: "{{ groups }}"
  delegate_to: localhost
  register: request
"""

RETURN = r"""
dgx:
  description: The DGX nodes of the request, in inventory order.
  returned: success
  type: list
  elements: str
powerscale:
  description: The PowerScale (F800) nodes of the request, in inventory order.
  returned: success
  type: list
  elements: str
staying:
  description: The DGX nodes the request leaves as they are.
  returned: success
  type: list
  elements: str
pattern:
  description: A host pattern of the request's DGX nodes (for the plays that run only on them).
  returned: success
  type: str
"""

from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.scale_plan import node_request_problems  # noqa: E402


def names_of(value: Any) -> list[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(n).strip() for n in items if str(n).strip()]


def main() -> None:
    module = AnsibleModule(argument_spec={
        "nodes": {"type": "raw", "required": True},
        "variable": {"type": "str", "default": "scale_out_nodes"},
        "groups": {"type": "dict", "required": True},
    }, supports_check_mode=True)
    p = module.params
    names = names_of(p["nodes"])
    groups = {k: list(v or []) for k, v in p["groups"].items()}
    problems = node_request_problems(names, p["variable"], groups)
    if problems:
        module.fail_json(msg=f"{p['variable']}: the request cannot run, nothing was changed:\n  "
                         + "\n  ".join(problems), problems=problems)
    dgx = [h for h in groups.get("dgx") or [] if h in names]
    module.exit_json(changed=False, dgx=dgx, powerscale=[h for h in groups.get("powerscale") or [] if h in names],
                     staying=[h for h in groups.get("dgx") or [] if h not in names], pattern=",".join(dgx))


if __name__ == "__main__":
    main()
