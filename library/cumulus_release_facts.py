#!/usr/bin/python
"""Documentation of cumulus_release_facts, which runs as an action plugin (plugins/action/cumulus_release_facts.py):
the switch needs no Python (Cumulus Linux 4.0-5.8 ship 3.7.3, which ansible-core 2.19 refuses)."""

DOCUMENTATION = r"""
---
module: cumulus_release_facts
short_description: The switch's Cumulus Linux release and its ports.conf breakout values, agentless
description:
  - Reads I(path) (C(/etc/lsb-release)) on the switch with C(cat) and, on the control node, the release model
    (C(module_utils/cumulus_release.py)) gives the release and, for each declared breakout, the C(ports.conf)
    value of that release (C(4x25G) up to 5.3; C(4x), with the speed set on each lane, from 5.4).
  - Fails, changing nothing, when the file is missing or not Cumulus Linux's, when the release is not one the
    model was checked against, or when it is not I(expected).
  - "Agentless: runs on the control node (action plugin) and sends the switch one plain shell command."
version_added: "0.2.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - module_attributes.reads
  - module_attributes.switch_shell
  - ansible.builtin.action_common_attributes
options:
  breakouts:
    description: "The plan's breakouts, parent port to mode (C({swp29: 4x25G}))."
    type: dict
    default: {}
  expected:
    description: "The release the inventory says the switch runs (C(sn3700v_cumulus_release)); empty to take the switch's."
    type: str
    default: ""
  path:
    description: The release file on the switch.
    type: str
    default: /etc/lsb-release
seealso:
  - module: cumulus_fabric_plan
  - module: cumulus_config_file
  - module: nvue_fabric
  - name: Role sn3700v
    link: roles/sn3700v/README.md
    description: The storage-fabric role.
"""

EXAMPLES = r"""
- name: The release and the breakout values for ports.conf
  cumulus_release_facts:
    breakouts: {swp29: 4x25G}
    expected: "4.2.1"
  register: release
"""

RETURN = r"""
release:
  description: The release, e.g. C(4.2.1).
  returned: success
  type: str
syntax:
  description: "C(speed) (N=4x25G) up to 5.3, C(lanes) (N=4x, speed per lane) from 5.4."
  returned: success
  type: str
ports_conf:
  description: 'The ports.conf value per port number (C({"49": "4x25G"})).'
  returned: success
  type: dict
lane_speeds:
  description: The speed each lane of a parent port needs on this release (null where the parent's value carries it).
  returned: success
  type: dict
"""
