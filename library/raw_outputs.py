#!/usr/bin/python
"""Documentation of raw_outputs, which runs as an action plugin (plugins/action/raw_outputs.py): it reads the node's
archive from one shell command's stdout and unpacks it on the control node."""

DOCUMENTATION = r"""
---
module: raw_outputs
short_description: Bring a validation stage's raw outputs from a node into the run directory, in one command
description:
  - Runs C(PYTHON RUNNERS/common.py pack-base64 SRC ARCROOT [PART=ROOT ...]) on the node (one shell command, no
    module), which prints every file under O(src) (but C(*.tmp), C(*.part)) as one base64 tar, each file as
    C(ARCROOT/<path under src>), or C(ROOT/<rest>) when its first path part is rerouted.
  - On the control node it decodes the archive and unpacks it under O(dest) - regular files and directories only,
    every name inside O(dest); an archive with an absolute name, a C(..) that climbs out, a link or a device fails
    the task before anything is written.
  - The raw outputs are measurements, never secrets; they are not returned, only their count.
version_added: "0.4.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: It only reads the node and writes into this run's own directory on the control node.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
    details: The node needs the runners' directory (validation/runners) and a Python 3.8 or later.
options:
  src:
    description: The stage's working directory on the node.
    type: path
    required: true
  runners:
    description: The runners' directory on the node (it holds common.py).
    type: path
    required: true
  python:
    description: The node's Python (C(ansible_python.executable)).
    type: str
    required: true
  arcroot:
    description: The first path part of every file under O(dest) (the stage, e.g. C(fio)).
    type: str
    required: true
  reroute:
    description: C(PART=ROOT) items; a file whose first path part is PART goes to C(ROOT/<rest>) instead.
    type: list
    elements: str
    default: []
  dest:
    description: The run directory's C(raw/) on the control node.
    type: path
    required: true
  remove:
    description:
      - A directory on the node to remove once the archive is packed, in the same command (the stage's cleanup);
        its path must hold a C(validation) part. Nothing is printed, and the task fails naming the reason, when
        it cannot be removed.
    type: path
    default: ""
seealso:
  - module: ansible.builtin.fetch
  - name: Validation stage
    link: README.md
    description: The validation stage, its run directory and its raw outputs.
"""

EXAMPLES = r"""
- name: Raw outputs | bring them into the run directory
  raw_outputs:
    src: /var/tmp/validation/run/fio
    runners: /var/tmp/validation/runners
    python: "{{ ansible_python.executable }}"
    arcroot: fio
    dest: "{{ hostvars['localhost'].validate_report_run_dir }}/raw"
"""

RETURN = r"""
files:
  description: The count of files unpacked.
  type: int
  returned: success
bytes:
  description: The size of the archive.
  type: int
  returned: success
"""
