#!/usr/bin/python
"""Documentation of host_state, an action plugin (plugins/action/host_state.py): read a host's packages, services,
files and docker images in one shell command, and say what differs."""

DOCUMENTATION = r"""
---
module: host_state
short_description: Read whether packages, services and files are as a role declares them, in one shell command
description:
  - Reads the dpkg status of O(packages), C(systemctl is-enabled) and C(is-active) of O(services), and the
    type, content (SHA-1), owner, group and mode of O(files), and what C(docker image inspect) says of
    O(docker_images), in one shell command over the task's connection (an action plugin, no Python starts on the
    host; the answer is judged on the control node, module_utils/host_state.py), and returns what differs. It
    changes nothing. The host needs a POSIX shell and coreutils (mktemp, base64, timeout, stat, sha1sum).
  - A role runs its M(ansible.builtin.apt), M(ansible.builtin.service), M(ansible.builtin.file) and
    M(ansible.builtin.copy) tasks only for what this module reports as different, so a converged node costs one
    call instead of one per task (a remote call costs 1.5-2 s on a slow host).
  - Every doubtful case counts as different (a package name with a version pin or pattern, a dpkg status
    other than installed, a unit state other than C(enabled)/C(active)), so the real module judges it.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  packages:
    description: Debian package names that must be installed (as M(ansible.builtin.apt) C(state=present)).
    type: list
    elements: str
    default: []
  services:
    description: systemd units, each with whether it must be enabled and running.
    type: list
    elements: dict
    default: []
    suboptions:
      name: {description: The unit., type: str, required: true}
      enabled: {description: Must be enabled at boot., type: bool, default: true}
      started: {description: Must be running., type: bool, default: true}
  files:
    description: Paths that must be a file (content given by O(files[].sha1)) or a directory.
    type: list
    elements: dict
    default: []
    suboptions:
      path: {description: The path on the host., type: path, required: true}
      state: {description: What the path must be., type: str, choices: [file, directory], default: file}
      sha1: {description: SHA-1 of the file's content (not compared when absent)., type: str}
      owner: {description: Owner name., type: str}
      group: {description: Group name., type: str}
      mode: {description: Octal mode as a string (C("0644"))., type: str}
  docker_images:
    description:
      - Image names (C(repository:tag)) to read with C(docker image inspect), in the same call.
      - They are read only where the docker CLI is installed; RV(docker_images) is then null and
        RV(docker_images_unread) says why, and the role reads them with M(community.docker.docker_image_info)
        after installing docker.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - module_attributes.reads
  - ansible.builtin.action_common_attributes
attributes:
  platform:
    support: full
    platforms: posix
    details: A Debian/Ubuntu host (dpkg, systemd).
seealso:
  - module: ansible.builtin.apt
  - module: ansible.builtin.service
  - module: ansible.builtin.copy
  - module: dgx_nfs_plan
  - module: dgx_ngc_plan
  - module: community.docker.docker_image_info
"""

EXAMPLES = r"""
- name: Read what the docker role declares
  host_state:
    packages: [docker.io, python3-requests]
    services: [{name: docker}]
    files:
      - {path: /etc/docker/certs.d/mirror:5000, state: directory, owner: root, group: root, mode: "0755"}
      - {path: /etc/docker/certs.d/mirror:5000/ca.crt, sha1: "{{ lookup('file', ca, rstrip=false) | hash('sha1') }}",
         owner: root, group: root, mode: "0644"}
  register: state
- name: Install the packages only when some are missing
  ansible.builtin.apt:
    name: [docker.io, python3-requests]
  when: state.packages_missing | length > 0
"""

RETURN = r"""
packages_missing:
  description: The packages of O(packages) that are not installed (or carry a pin), in the order given.
  type: list
  elements: str
  returned: always
services_drift:
  description: Each unit that differs, with the reasons.
  type: dict
  returned: always
files_drift:
  description: Each path that differs, with the reasons.
  type: dict
  returned: always
docker_images:
  description:
    - The images of O(docker_images) that exist, as the Engine API inspects them (the same objects as
      M(community.docker.docker_image_info) returns in C(images)); null when they could not be read.
  type: list
  elements: dict
  returned: always
docker_images_unread:
  description: Why O(docker_images) could not be read (empty when they were, or none were asked for).
  type: str
  returned: always
in_sync:
  description: Nothing differs.
  type: bool
  returned: always
"""
