#!/usr/bin/python
"""Documentation of cumulus_interfaces, which runs as an action plugin (plugins/action/cumulus_interfaces.py).

The switch needs no Python: Cumulus Linux 4.0-5.8 ship Python 3.7, which ansible-core 2.19 refuses. The plugin
reads and writes the switch's files with plain shell commands and merges, checks and diffs on the control node,
as ansible-core's own action-backed modules (template, assemble) keep their documentation in a module file.
"""

DOCUMENTATION = r"""
---
module: cumulus_interfaces
short_description: Manage the storage-fabric region of an ifupdown2 interfaces file on a Cumulus/ifupdown2 switch
description:
  - Replaces the region between the role's BEGIN/END markers in I(path) with I(stanzas) and keeps every other
    line of the file verbatim (management interface eth0/mgmt, foreign stanzas, C(source) lines, comments).
  - A stanza for an owned interface found outside the region (for example the default C(iface lo inet loopback))
    is adopted into the region; options the role does not set are carried over, never dropped.
  - "Refuses to run when a file included with C(source) (interfaces.d) defines an interface the role owns: that
    file is not ours to edit, and two owners would fight."
  - "Agentless: runs on the control node (action plugin) and sends the switch plain shell commands (C(cat),
    C(mktemp), C(base64 -d), C(mv)), so the switch needs no Python (Cumulus Linux 4.0-5.8 ship 3.7.3, which
    ansible-core 2.19 refuses)."
  - Checks the new file with a structural check on the control node (and the role's own stanzas for option names
    ifupdown2 does not know, which its syntax check lets through), then writes a candidate next to the live file
    (same mode and owner), runs ifupdown2's own parser on it on the switch (I(validate), default
    C(ifup -a -s -i %s)), and only then renames it over the live file in one step. The checker's own text is
    returned when it rejects the file, and the candidate is removed.
  - Supports check mode and diff mode. It does not reload anything; notify a handler that runs C(ifreload -a).
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - module_attributes.changes
  - module_attributes.switch_shell
  - ansible.builtin.action_common_attributes
options:
  path:
    description: The interfaces file.
    type: path
    default: /etc/network/interfaces
  stanzas:
    description: The role's stanzas (C(auto)/C(iface) blocks), rendered from the inventory.
    type: str
    required: true
  owned:
    description: Interfaces the role owns (their stanzas are adopted when found outside the region).
    type: list
    elements: str
    default: []
  validate:
    description:
      - Command that checks a candidate file, C(%s) standing for its path; empty to skip (tests only).
    type: str
    default: ifup -a -s -i %s
  backup:
    description: Keep a timestamped copy of the previous file.
    type: bool
    default: true
seealso:
  - module: cumulus_fabric_plan
  - module: cumulus_config_file
  - module: cumulus_fabric_verify
  - module: nvue_fabric
  - name: Role sn3700v
    link: roles/sn3700v/README.md
    description: The storage-fabric role (the files method).
"""

EXAMPLES = r"""
- name: Install the storage-fabric stanzas
  cumulus_interfaces:
    stanzas: "{{ lookup('ansible.builtin.template', 'interfaces.managed.j2') }}"
    owned: "{{ sn3700v_plan.owned_interfaces }}"
  notify: Reload ifupdown2 interfaces
"""

RETURN = r"""
adopted:
  description: Owned interfaces whose stanza was found outside the managed region and taken over.
  returned: always
  type: list
  elements: str
carried:
  description: Options carried over from adopted stanzas, by interface.
  returned: always
  type: dict
backup_file:
  description: The copy of the previous file, when one was made.
  returned: changed and backup
  type: str
"""
