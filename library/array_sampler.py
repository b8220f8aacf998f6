#!/usr/bin/python
"""Documentation of array_sampler, which runs as an action plugin (plugins/action/array_sampler.py): the sampler
is a process on the control node, and the API password must reach it on a pipe, not as a module argument that
Ansible writes down."""

DOCUMENTATION = r"""
---
module: array_sampler
short_description: Start or stop the OneFS statistics sampler on the control node around a measurement
description:
  - I(state=started) starts C(python -m validation.array_telemetry sample) detached on the control node; it reads
    the cluster's own counters through the OneFS statistics API every I(interval) seconds into I(out) (one JSON
    line per answer or error) until I(stop_file) exists or I(max_s) passed. Returns its C(pid).
  - The API password reaches the sampler as the first line of its stdin. It is never a module argument written to
    an async job file, an environment variable or a command line.
  - I(state=stopped) writes I(stop_file) and waits up to I(wait_s) for the sampler to take its last reading and
    end; fails, naming the pid and the stop file, when it does not.
  - In check mode nothing is measured, so nothing is sampled (skipped).
version_added: "0.3.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: none
    details: Skipped in check mode (the action plugin returns skipped); nothing is measured, so nothing is sampled.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
    details: Runs on the control node (action plugin), where the sampler process runs; it touches no target.
options:
  state:
    description: Start a sampler, or stop the one I(pid) names.
    type: str
    choices: [started, stopped]
    default: started
  pid:
    description: The sampler's pid, from the C(started) task's result (I(state=stopped)).
    type: int
  out:
    description: The JSON-lines file the sampler writes (its log goes beside it, C(.log)).
    type: path
  stop_file:
    description: The file whose appearance ends the sampler; it removes it when it ends.
    type: path
    required: true
  python:
    description: The Python that runs the sampler (C(ansible_playbook_python) when empty).
    type: str
  project_dir:
    description: The directory holding the C(validation) package (the bundle's root when empty).
    type: path
  interval:
    description: Seconds between readings.
    type: float
  max_s:
    description: The sampler ends by itself after this many seconds.
    type: float
  api_host:
    description: The OneFS API address.
    type: str
  api_port:
    description: The OneFS API port.
    type: int
  api_user:
    description: The OneFS API user.
    type: str
  api_password:
    description: The OneFS API password; give the task C(no_log).
    type: str
  ca_path:
    description: The CA bundle that verifies the API's certificate (empty for the system's).
    type: str
  validate_certs:
    description: 1 to verify the API's certificate (the default), 0 not to.
    type: int
  wait_s:
    description: How long I(state=stopped) waits for the sampler to end.
    type: float
    default: 60
seealso:
  - module: powerscale_info
"""

EXAMPLES = r"""
- name: Sample the array during a measurement
  array_sampler:
    out: /results/run/raw/telemetry/fio/node-dgx01/r1.jsonl
    stop_file: /results/run/raw/telemetry/fio/node-dgx01/r1.stop
    interval: 1
    max_s: 3600
    api_host: 192.0.2.10
    api_user: ansible
    api_password: "{{ powerscale_api_password }}"
  no_log: true
  register: sampler

- name: Stop it
  array_sampler:
    state: stopped
    pid: "{{ sampler.pid }}"
    stop_file: /results/run/raw/telemetry/fio/node-dgx01/r1.stop
"""

RETURN = r"""
pid:
  description: The sampler's process id on the control node.
  returned: success
  type: int
waited_s:
  description: Seconds I(state=stopped) waited for the sampler to end.
  returned: when state is stopped
  type: float
"""
