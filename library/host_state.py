#!/usr/bin/python
"""Ansible module host_state: read a host's packages, services and files once, and say what differs."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.host_state import (
    FileWant,
    ServiceWant,
    file_drift,
    missing_packages,
    parse_image_inspect,
    read_dpkg_status,
    see_file,
    service_drift,
)

DOCUMENTATION = r"""
---
module: host_state
short_description: Read whether packages, services and files are as a role declares them, in one module call
description:
  - Reads the dpkg status of O(packages), C(systemctl is-enabled) and C(is-active) of O(services), and the
    type, content (SHA-1), owner, group and mode of O(files), in one remote module call, and returns what
    differs. It changes nothing.
  - A role runs its M(ansible.builtin.apt), M(ansible.builtin.service), M(ansible.builtin.file) and
    M(ansible.builtin.copy) tasks only for what this module reports as different, so a converged node costs one
    call instead of one per task (a remote call costs 1.5-2 s on a slow host).
  - Every doubtful case counts as different (a package name with a version pin or pattern, a dpkg status
    other than installed, a unit state other than C(enabled)/C(active)), so the real module judges it.
version_added: "0.1.0"
author: powerscale-dgx-ra
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
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
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


def _systemctl(module: AnsibleModule, verb: str, unit: str) -> str:
    _rc, out, err = module.run_command(["systemctl", verb, unit])
    return out.strip() or err.strip()


def _docker_images(module: AnsibleModule, names: list[str]) -> tuple[list[dict] | None, str]:
    if not names:
        return [], ""
    docker = module.get_bin_path("docker")
    if docker is None:
        return None, "the docker CLI is not installed"
    rc, out, err = module.run_command([docker, "image", "inspect", *names])
    return parse_image_inspect(rc, out, err)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "packages": {"type": "list", "elements": "str", "default": []},
            "services": {"type": "list", "elements": "dict", "default": [], "options": {
                "name": {"type": "str", "required": True},
                "enabled": {"type": "bool", "default": True},
                "started": {"type": "bool", "default": True}}},
            "files": {"type": "list", "elements": "dict", "default": [], "options": {
                "path": {"type": "path", "required": True},
                "state": {"type": "str", "choices": ["file", "directory"], "default": "file"},
                "sha1": {"type": "str"},
                "owner": {"type": "str"},
                "group": {"type": "str"},
                "mode": {"type": "str"}}},
            "docker_images": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    packages = module.params["packages"]
    missing = missing_packages(packages, read_dpkg_status(module.run_command, packages,
                                                          lambda msg: module.fail_json(msg=msg)))
    services = {}
    for svc in module.params["services"]:
        want = ServiceWant(svc["name"], svc["enabled"], svc["started"])
        drift = service_drift(want, _systemctl(module, "is-enabled", want.name),
                              _systemctl(module, "is-active", want.name))
        if drift:
            services[want.name] = drift
    files = {}
    for spec in module.params["files"]:
        want = FileWant(**spec)
        drift = file_drift(want, see_file(want.path, want.sha1 is not None))
        if drift:
            files[want.path] = drift
    images, unread = _docker_images(module, module.params["docker_images"])
    module.exit_json(changed=False, packages_missing=missing, services_drift=services, files_drift=files,
                     docker_images=images, docker_images_unread=unread, in_sync=not (missing or services or files))


if __name__ == "__main__":
    main()
