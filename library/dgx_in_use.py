#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Ansible module: whether a DGX is in use - its NFS mounts, the processes using them, its running containers."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dgx_in_use
short_description: Read on a live DGX whether it is in use before a scale flow adds or removes it
description:
  - Reads C(/proc/self/mountinfo) for the mount points given (which are mounted, with their mount ID and
    device), then every process of C(/proc) for a working directory, root, open file or mapped file on one of
    those devices (what C(fuser -m) reports, across mount namespaces, so a container's bind mount counts too),
    then the running containers of every engine installed (C(docker ps -q), C(podman ps -q)).
  - Fails closed - a process table that cannot be read (not root), or an engine that is installed but does not
    answer, fails the module - a node whose use cannot be checked is not touched by a scale flow.
  - Reads only; it changes nothing, so it runs the same in check mode.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  mount_points:
    description: Mount points of the exports (nfs_mounts[].mount_point).
    type: list
    elements: str
    required: true
  mounted_is_use:
    description:
      - Whether a mounted export alone counts as in use. True for a scale-out (a new node that already mounts the
        exports is already part of a site); false for a scale-in, which unmounts idle mounts itself.
    type: bool
    default: true
extends_documentation_fragment:
  - module_attributes.reads
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Reads only; runs the same in check mode.
  platform:
    platforms: posix
seealso:
  - name: docs/scale-out.md
    description: The day 2 scale flows that call it.
    link: docs/scale-out.md
"""

EXAMPLES = r"""
- name: Refuse a node that is still in use
  dgx_in_use:
    mount_points: "{{ nfs_mounts | map(attribute='mount_point') | list }}"
    mounted_is_use: false
  register: probe
  failed_when: probe.in_use
"""

RETURN = r"""
mounted:
  description: The mount points given that are mounted, each with mount_id, device (major:minor) and fstype.
  returned: always
  type: list
  elements: dict
busy:
  description: Processes using a mounted one (pid, comm, mount_point).
  returned: always
  type: list
  elements: dict
containers:
  description: Running container IDs (engine:id).
  returned: always
  type: list
  elements: str
in_use:
  description: Whether anything above counts as in use (see O(mounted_is_use)).
  returned: always
  type: bool
problems:
  description: Why it is in use, one line each (host | variable | value | problem).
  returned: always
  type: list
  elements: str
"""

import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.scale_plan import in_use_problems  # noqa: E402

ENGINES = ("docker", "podman")


def unescape(field: str) -> str:
    """A mountinfo path field: spaces, tabs, newlines and backslashes are octal escapes (proc(5))."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[dict[str, Any]]:
    """proc(5) mountinfo lines: mount ID, parent ID, major:minor, root, mount point, options, optional fields,
    a separator, the filesystem type, the source and the super options."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields or len(fields) < 7:
            continue
        sep = fields.index("-")
        if sep + 1 >= len(fields):
            continue
        mounts.append({"mount_id": int(fields[0]), "device": fields[2], "mount_point": unescape(fields[4]),
                       "fstype": fields[sep + 1], "source": unescape(fields[sep + 2]) if sep + 2 < len(fields) else ""})
    return mounts


def mounted_points(mountinfo: str, mount_points: list[str]) -> list[dict[str, Any]]:
    """The last (topmost) mount of each mount point given."""
    wanted = {p.rstrip("/") or "/" for p in mount_points}
    found: dict[str, dict[str, Any]] = {}
    for m in parse_mountinfo(mountinfo):
        if m["mount_point"] in wanted:
            found[m["mount_point"]] = m
    return [found[p] for p in sorted(found)]


def _dev(st: os.stat_result) -> str:
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def busy_processes(mounted: list[dict[str, Any]], proc: str = "/proc",
                   pids: list[str] | None = None) -> list[dict[str, Any]]:
    """Processes (every one of ``proc``, or ``pids``) whose cwd, root, executable, open files or mappings lie on one
    of the mounted devices. A process whose files cannot be read raises PermissionError (fail closed)."""
    by_dev = {m["device"]: m["mount_point"] for m in mounted}
    if not by_dev:
        return []
    me = str(os.getpid())
    busy = []
    candidates = pids if pids is not None else [p for p in os.listdir(proc) if p.isdigit() and p != me]
    for pid in sorted(candidates, key=int):
        base = os.path.join(proc, pid)
        try:
            devs = set()
            for link in ("cwd", "root", "exe"):
                try:
                    devs.add(_dev(os.stat(os.path.join(base, link))))
                except FileNotFoundError:
                    continue
            for fd in os.listdir(os.path.join(base, "fd")):
                try:
                    devs.add(_dev(os.stat(os.path.join(base, "fd", fd))))
                except (FileNotFoundError, OSError):
                    continue  # closed meanwhile, or a socket/pipe without a file system to stat
            with open(os.path.join(base, "maps"), encoding="utf-8", errors="replace") as maps:
                for line in maps:
                    parts = line.split()
                    if len(parts) >= 4 and ":" in parts[3]:
                        major, minor = parts[3].split(":")
                        devs.add(f"{int(major, 16)}:{int(minor, 16)}")
            with open(os.path.join(base, "comm"), encoding="utf-8", errors="replace") as f:
                comm = f.read().strip()
        except FileNotFoundError:
            continue  # the process ended while it was read
        except PermissionError as exc:
            raise PermissionError(f"cannot read {exc.filename}: run the probe as root (ansible_user root, or "
                                  "ansible_become), a process whose files cannot be read might be using the "
                                  "mounts") from exc
        for dev in sorted(devs & by_dev.keys()):
            busy.append({"pid": int(pid), "comm": comm, "mount_point": by_dev[dev]})
    return busy


def running_containers(which: Any = shutil.which, run: Any = subprocess.run) -> list[str]:
    """Running container IDs of every engine installed; an installed engine that does not answer raises."""
    out = []
    for engine in ENGINES:
        path = which(engine)
        if not path:
            continue
        done = run([path, "ps", "-q", "--no-trunc"], capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{engine} ps -q failed (rc {done.returncode}): {(done.stderr or '').strip()[:300]}; "
                               f"start the engine (systemctl start {engine}) so that its containers can be listed")
        out += [f"{engine}:{line.strip()}" for line in done.stdout.splitlines() if line.strip()]
    return out


def main() -> None:
    module = AnsibleModule(argument_spec={
        "mount_points": {"type": "list", "elements": "str", "required": True},
        "mounted_is_use": {"type": "bool", "default": True},
    }, supports_check_mode=True)
    node = os.uname().nodename
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            mounted = mounted_points(f.read(), module.params["mount_points"])
        probe = {"mounted": [m["mount_point"] for m in mounted], "busy": busy_processes(mounted),
                 "containers": running_containers()}
    except (OSError, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
        module.fail_json(msg=f"{node}: whether the node is in use cannot be checked ({exc}); it is left alone")
    judged = dict(probe) if module.params["mounted_is_use"] else {**probe, "mounted": []}
    problems = in_use_problems(node, judged)
    module.exit_json(changed=False, mounted=mounted, busy=probe["busy"], containers=probe["containers"],
                     in_use=bool(problems), problems=problems)


if __name__ == "__main__":
    main()
