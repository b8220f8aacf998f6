#!/usr/bin/python
"""Documentation of cumulus_fabric_verify, which runs as an action plugin (plugins/action/cumulus_fabric_verify.py):
the switch needs no Python; its commands' JSON is parsed on the control node."""

DOCUMENTATION = r"""
---
module: cumulus_fabric_verify
short_description: Verify the live bridge, ports, MTU and CLAG state of an SN3700V against the storage-fabric plan
description:
  - Reads the kernel's view of the switch, not its configuration files, with C(ip -d -j link show),
    C(ip -j addr show dev lo), C(bridge -j vlan show) and, when the plan has a CLAG peerlink, C(clagctl -j).
  - Checks that the bridge exists and is VLAN-aware; that every fabric port exists, is a member of the bridge,
    has the plan's MTU, is up and has its storage VLAN as untagged PVID (and nothing else); that uplinks carry every
    storage VLAN; that the peerlink bond has its members and the CLAG peer is alive in the expected role; that the
    loopback address is on lo.
  - Retries for up to I(wait_seconds) (links and CLAG take a moment after C(ifreload -a)), then fails with every
    mismatch, each naming the interface, what was expected and what the switch reports.
  - "Agentless: runs on the control node (action plugin); the commands run on the switch as plain shell
    commands and their JSON is parsed here. A command that fails or prints anything but JSON fails the task
    (fail closed); C(clagctl -j) failing is reported as clagd not running."
  - When the plan has a peerlink, the CLAG backup link must be active too (C(backupActive) in C(clagctl -j)).
  - Read-only; runs in check mode too.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  plan:
    description: The plan returned by M(cumulus_fabric_plan).
    type: dict
    required: true
  require_link_up:
    description: Whether every fabric port must be up (a powered-off host makes this fail, on purpose).
    type: bool
    default: true
  wait_seconds:
    description: How long to keep retrying before reporting the mismatches.
    type: int
    default: 30
  repair_command:
    description:
      - Command that re-applies the configuration files (C(ifreload -a)) when the live state differs although the
        files are right (a reload that failed earlier, a change made by hand with C(ip link)). Run once, then the
        state is checked again; the task then reports changed. In check mode it is not run and the task reports
        changed with the mismatches it would repair. Empty to only report.
    type: str
    default: ""
extends_documentation_fragment:
  - module_attributes.switch_shell
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: 'Read-only, except O(repair_command): in check mode that is not run and the task reports changed with the mismatches
      it would repair.'
  diff_mode:
    support: partial
    details: 'A diff only when O(repair_command) is set and the live state differs: the mismatches it repairs.'
seealso:
  - module: cumulus_fabric_plan
  - module: cumulus_interfaces
  - name: Role sn3700v
    link: roles/sn3700v/README.md
    description: The storage-fabric role that runs this check after its files method.
"""

EXAMPLES = r"""
- name: Verify the live state
  cumulus_fabric_verify:
    plan: "{{ sn3700v_plan }}"
    wait_seconds: 60
"""

RETURN = r"""
mismatches:
  description: Differences between the plan and the live state (empty on success).
  returned: always
  type: list
  elements: str
checked:
  description: Interfaces that were checked.
  returned: always
  type: list
  elements: str
repaired:
  description: Mismatches that the repair command fixed (empty when none was needed).
  returned: always
  type: list
  elements: str
"""
