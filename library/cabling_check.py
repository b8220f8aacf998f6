#!/usr/bin/python
"""Documentation of cabling_check, which runs as an action plugin (plugins/action/cabling_check.py): it judges on
the control node what the cabling role read from the switches and hosts; nothing runs on a target."""

DOCUMENTATION = r"""
---
module: cabling_check
short_description: Judge the site's cable plan against LLDP, forwarding-table and InfiniBand dumps
description:
  - Builds the cable plan from the inventory (validation/cabling/plan.py, from storage_nics, the CLAG peerlink, the
    uplinks and compute_fabric_cables) and judges every cable against the dumps given (validation/cabling/check.py)
    as OK, MISWIRED (naming where each end really goes), MISSING or DEGRADED (width or speed below the design),
    and observed links the plan does not have as UNEXPECTED.
  - "A dump that failed (rc not 0) or cannot be parsed fails the task naming the host and the command: never an OK."
  - Deviations listed in I(accepted) keep their status, are marked accepted and do not fail the check.
version_added: "0.4.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reads dumps already taken and judges them; changes nothing anywhere, in check mode or not.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
    details: Runs on the control node; the dumps were read from the nodes before.
options:
  dumps:
    description: "What the role read, each with node, command, format, text, rc and stderr; format is lldp, fdb,
      iplink, ibnetdiscover or iblinkinfo (detected when empty); node names the host a dump comes from."
    type: list
    elements: dict
    required: true
  host_macs:
    description: "The hosts' interface MACs, host -> interface -> MAC, to name a neighbour shown by MAC and the MACs a
      switch learned."
    type: dict
    default: {}
  accepted:
    description: "The site's accepted deviations (cabling_accepted_deviations): node, port, status, reason."
    type: list
    elements: dict
    default: []
  compute_read:
    description: Whether the compute fabric was read; when false its cables are left out of the plan and a
      warning says why (I(compute_reason)).
    type: bool
    default: true
  compute_reason:
    description: Why the compute fabric was not read.
    type: str
    default: ""
  report_path:
    description: Where to write the report as JSON on the control node (the validation stage's run directory).
    type: path
  enforced:
    description: Whether the site enforces the check (cabling_enforce); recorded in the report, whose checks of a
      check that is not enforced are INFO, not FAIL.
    type: bool
    default: true
  return_cables:
    description: Return every cable's verdict in C(cables) (the summary and the table are always returned).
    type: bool
    default: false
seealso:
  - module: ansible.builtin.raw
  - name: Cabling
    link: docs/cabling.md
    description: The cabling stage, the plan, the check and python -m validation cabling.
"""

EXAMPLES = r"""
- name: Judge the cabling
  cabling_check:
    dumps: "{{ cabling_dumps }}"
    host_macs: "{{ cabling_host_macs }}"
    accepted: "{{ cabling_accepted_deviations }}"
  register: cabling_result
"""

RETURN = r"""
passed:
  description: True when every cable is OK or an accepted deviation.
  type: bool
  returned: success
summary:
  description: Counts per status, accepted, outside the design, internal links, warnings.
  type: dict
  returned: success
table:
  description: One line per cable that is not OK (status, both designed ends, what is seen and the evidence),
    then the summary line and the warnings.
  type: list
  elements: str
  returned: success
cables:
  description: Every cable's verdict (with I(return_cables)).
  type: list
  elements: dict
  returned: success
"""
