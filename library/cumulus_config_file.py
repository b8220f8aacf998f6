#!/usr/bin/python
"""Documentation of cumulus_config_file, which runs as an action plugin (plugins/action/cumulus_config_file.py):
the switch needs no Python (Cumulus Linux 4.0-5.8 ship 3.7.3, which ansible-core 2.19 refuses)."""

DOCUMENTATION = r"""
---
module: cumulus_config_file
short_description: Keep the role's part of a Cumulus configuration file (a marked block, or KEY=VALUE lines), agentless
description:
  - Reads I(path) on the switch with C(cat) and edits it on the control node, keeping every other line verbatim.
  - With I(block), the lines between C(BEGIN) and C(END) markers (I(marker)) are replaced, or appended at the end
    (the layout of ansible.builtin.blockinfile, so a file it wrote is recognised). With I(lines), each key's
    C(KEY=VALUE) line is set where it is (later duplicates dropped), a missing one appended (C(/etc/cumulus/ports.conf)).
  - When the file changes, a candidate is written next to it with the live file's mode and owner, checked with
    I(validate) on the switch (C(%s) = the candidate, e.g. C(vtysh --dryrun --inputfile %s)), the live file is
    backed up, and the candidate is renamed over it in one step. A rejected candidate is removed and the switch's
    own text is the failure message.
  - Fails when I(path) does not exist (the package that owns it is missing); never creates it.
  - "Agentless: runs on the control node (action plugin) and sends the switch plain shell commands."
version_added: "0.2.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - module_attributes.changes
  - module_attributes.switch_shell
  - ansible.builtin.action_common_attributes
options:
  path:
    description: The file on the switch.
    type: str
    required: true
  block:
    description: The block's text (mutually exclusive with I(lines)).
    type: str
  marker:
    description: Marker line template, C({mark}) standing for BEGIN/END.
    type: str
    default: "! {mark} sn3700v storage fabric (managed by Ansible role sn3700v)"
  lines:
    description: KEY=VALUE settings, a mapping of key to value (mutually exclusive with I(block)).
    type: dict
  validate:
    description: Command that checks a candidate, C(%s) standing for its path; empty for none.
    type: str
    default: ""
  backup:
    description: Keep a timestamped copy of the previous file.
    type: bool
    default: true
seealso:
  - module: cumulus_interfaces
  - module: cumulus_release_facts
  - module: cumulus_fabric_verify
  - name: Role sn3700v
    link: roles/sn3700v/README.md
    description: The storage-fabric role; its files method writes these files.
"""

EXAMPLES = r"""
- name: The storage-fabric block of frr.conf, checked by FRR first
  cumulus_config_file:
    path: /etc/frr/frr.conf
    block: "{{ lookup('ansible.builtin.template', 'frr.block.j2') }}"
    validate: vtysh --dryrun --inputfile %s

- name: Breakouts in ports.conf
  cumulus_config_file:
    path: /etc/cumulus/ports.conf
    lines: {"49": "4x25G"}
"""

RETURN = r"""
backup_file:
  description: The copy of the previous file, when one was made.
  returned: changed and backup
  type: str
"""
