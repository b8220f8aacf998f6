#!/usr/bin/python
"""Documentation of runners_install, which runs as an action plugin (plugins/action/runners_install.py): it sends the
run's runners' archive on one shell command's stdin and the node unpacks it."""

DOCUMENTATION = r"""
---
module: runners_install
short_description: Install a validation run's runner scripts on a node, in one command
description:
  - Reads O(src) on the control node (a tar of plain top-level files, the run's C(validation/runners/*.py)) and
    sends it on the stdin of one shell command on the node, which makes O(dest), unpacks the archive there (owned
    by the connecting user) and leaves every file mode C(0755). No module and no Python start on the node.
  - An archive that holds anything but plain top-level files is refused before anything is sent.
  - Never reports a change, as the runners are the run's own tooling, not cluster state.
version_added: "0.4.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: none
    details: The validation stage measures nothing in check mode and never calls it there.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
    details: The node needs a POSIX shell, C(mkdir), C(tar) and C(chmod).
options:
  src:
    description: The run's runners' archive on the control node.
    type: path
    required: true
  dest:
    description: The runners' directory on the node.
    type: path
    required: true
seealso:
  - module: ansible.builtin.unarchive
  - module: raw_outputs
  - name: Validation stage
    link: README.md
    description: The validation stage, its run directory and its runners.
"""

EXAMPLES = r"""
- name: Validate | install the runners
  runners_install:
    src: "{{ validate_run.dir }}/runners.tar"
    dest: /var/tmp/validation/runners
"""

RETURN = r"""
dest:
  description: The runners' directory on the node.
  type: str
  returned: success
files:
  description: The names of the installed runners.
  type: list
  elements: str
  returned: success
bytes:
  description: The size of the archive sent.
  type: int
  returned: success
"""
