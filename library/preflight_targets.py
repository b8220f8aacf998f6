#!/usr/bin/python
"""Documentation of preflight_targets, which runs as an action plugin (plugins/action/preflight_targets.py) on the
control node: it judges the probe each target answered and evaluates module_utils/preflight_targets.py."""

DOCUMENTATION = r"""
---
module: preflight_targets
short_description: Judge every target's probe (Python, OS release, kernel) against the site's requirements
description:
  - Runs once, on the control node, after a C(raw) probe ran on each Linux target of the play. Reads each host's
    registered probe result and its requirements from C(hostvars) (DGX nodes - C(dgx_supported_os),
    C(dgx_min_kernel), C(dgx_min_python); other groups - C(preflight_target_os[group]) and C(preflight_min_python))
    and evaluates module_utils/preflight_targets.py.
  - A host whose probe did not run, failed or could not be parsed is an error row naming the reason.
  - A host whose probe was skipped (OneFS nodes, reached only through the Platform API) is listed as not probed.
  - Never fails by itself, and never changes anything; the role (roles/preflight) prints the table and fails on
    error rows.
version_added: "0.4.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: It only reads the probe results already registered.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
    details: Runs on the control node (action plugin); the probe itself is an C(ansible.builtin.raw) task.
options:
  hosts:
    description: The hosts to judge (the play's hosts).
    type: list
    elements: str
    default: []
  probe_var:
    description: The name of the variable each host registered its probe result in.
    type: str
    default: preflight_probe
seealso:
  - module: preflight_inventory
  - module: ansible.builtin.raw
"""

EXAMPLES = r"""
- name: Judge every target's probe
  preflight_targets:
    hosts: "{{ ansible_play_hosts_all }}"
    probe_var: preflight_probe
  register: preflight_targets_result
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
rows:
  description: One row per problem found (host, variable, value, problem, fix, severity).
  returned: always
  type: list
  elements: dict
error_count:
  description: The rows of severity C(error).
  returned: always
  type: int
  sample: 0
warning_count:
  description: The other rows (warnings).
  returned: always
  type: int
  sample: 0
table:
  description: The rows rendered as one text table, then what each target answered and the hosts not probed.
  returned: always
  type: str
checked:
  description: The hosts whose probe was judged.
  returned: always
  type: list
  elements: str
  sample: [dgx01, sn3700v-a]
skipped:
  description: The hosts whose probe was skipped (not probed).
  returned: always
  type: list
  elements: str
  sample: [powerscale01]
"""
