#!/usr/bin/python
"""Ansible module dgx_sysctl: a DGX's kernel tuning (one sysctl.d file and the live values) in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dgx_sysctl
short_description: Set sysctl keys in a sysctl.d file and in the running kernel, in one module call
description:
  - Writes every key of O(settings) into O(file) (C(key=value), the keys' other lines dropped, every other line
    kept) and sets each key whose live value (C(/proc/sys)) differs, in one module call instead of one call per
    key (ansible.posix.sysctl with a loop costs one remote Python start per key).
  - Values compare as whitespace-separated fields, as the kernel prints them (C(4096 87380 134217728) equals the
    tab-separated C(net.ipv4.tcp_rmem)).
  - A key the running kernel does not have (e.g. C(sunrpc.*) before the sunrpc module is loaded) fails the task,
    naming the key, before anything is written.
  - After a write, every key is read back; a value the kernel did not take (clamped or refused) fails the task.
  - With O(modules), it first reads whether each kernel module is loaded and persistent with its options (as
    community.general.modprobe with C(persistent=present) writes them). When one is not, it changes nothing and
    returns it in RV(modules_pending); load it (community.general.modprobe), then call this module again. A
    converged node costs one call, where a modprobe task before it would cost two.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  settings:
    description: The keys (dotted names, e.g. C(net.core.rmem_max)) and their values.
    type: dict
    required: true
  file:
    description: The sysctl.d file that holds the settings at boot (created with mode 0644 if absent).
    type: path
    required: true
  modules:
    description:
      - Kernel modules the keys need (e.g. C(sunrpc) for C(sunrpc.*)), each with the options it must load with
        (C(key=value) separated by spaces, empty for none).
    type: dict
    default: {}
extends_documentation_fragment:
  - module_attributes.changes
  - module_attributes.dgx_host
  - ansible.builtin.action_common_attributes
seealso:
  - module: ansible.posix.sysctl
  - module: dgx_facts
  - name: Role dgx_host
    link: roles/dgx_host/README.md
    description: The DGX host role and its sysctl tuning.
"""

EXAMPLES = r"""
- name: NFS-over-TCP tuning
  dgx_sysctl:
    file: /etc/sysctl.d/90-dgx-nfs-tuning.conf
    settings:
      net.core.rmem_max: 268435456
      net.ipv4.tcp_rmem: "4096 87380 134217728"
"""

RETURN = r"""
file_changed:
  description: Whether the file was (or, in check mode, would be) rewritten.
  type: bool
  returned: always
live_changed:
  description: The keys set in the running kernel, each with C(before) and C(after).
  type: dict
  returned: always
modules_pending:
  description: The modules of O(modules) that are not loaded and persistent with their options, each with why.
    When it is not empty, nothing was read or changed.
  type: dict
  returned: always
  sample: {sunrpc: ["sunrpc is not loaded"]}
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.dgx_sysctl import live_drift, module_pending, plan, proc_path  # noqa: E402


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _read_live(module: AnsibleModule, keys: list[str]) -> dict[str, str]:
    live, missing = {}, []
    for key in keys:
        try:
            path = proc_path(key)
        except ValueError as exc:
            module.fail_json(msg=f"{module.params['file']}: {exc}")
        if not os.path.exists(path):
            missing.append(key)
            continue
        live[key] = _read(path)
    if missing:
        module.fail_json(
            msg=f"the running kernel has no {', '.join(missing)} ({', '.join(proc_path(k) for k in missing)} "
            "absent): load the kernel module that provides it first (e.g. sunrpc for sunrpc.*) or remove the "
            "key from dgx_sysctl",
            missing=missing,
        )
    return live


def _texts(directory: str) -> dict[str, str]:
    """The files of a directory (path -> text); a missing directory has none."""
    if not os.path.isdir(directory):
        return {}
    paths = (os.path.join(directory, name) for name in sorted(os.listdir(directory)))
    return {p: _read(p) for p in paths if os.path.isfile(p)}


def _modules_pending(modules: dict[str, str]) -> dict[str, list[str]]:
    if not modules:
        return {}
    load_d, modprobe_d = _texts("/etc/modules-load.d"), _texts("/etc/modprobe.d")
    pending = {name: module_pending(name, str(params or ""), os.path.isdir(f"/sys/module/{name}"), load_d, modprobe_d)
               for name, params in modules.items()}
    return {name: why for name, why in pending.items() if why}


def _write_file(module: AnsibleModule, path: str, text: str) -> None:
    tmp = f"{path}.dgx_sysctl.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)
    module.atomic_move(tmp, path)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "required": True},
            "file": {"type": "path", "required": True},
            "modules": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    settings = {str(k): v for k, v in module.params["settings"].items()}
    path = module.params["file"]
    pending = _modules_pending({str(k): v for k, v in module.params["modules"].items()})
    if pending:
        module.exit_json(changed=False, file_changed=False, live_changed={}, modules_pending=pending)
    existing = _read(path) if os.path.exists(path) else None
    live = _read_live(module, list(settings))
    todo = plan(existing, live, settings)
    result = {
        "changed": todo.changed,
        "file_changed": todo.file_text is not None,
        "live_changed": {k: {"before": b, "after": a} for k, (b, a) in todo.live.items()},
        "modules_pending": {},
        "diff": [
            {"before_header": path, "after_header": path, "before": existing or "", "after": todo.file_text
             if todo.file_text is not None else existing or ""},
            {"before_header": "live kernel", "after_header": "live kernel",
             "before": "".join(f"{k} = {b}\n" for k, (b, _unused) in todo.live.items()),
             "after": "".join(f"{k} = {a}\n" for k, (_unused, a) in todo.live.items())},
        ],
    }
    if module.check_mode or not todo.changed:
        module.exit_json(**result)
    if todo.file_text is not None:
        _write_file(module, path, todo.file_text)
    for key, (_unused, wanted) in todo.live.items():
        rc, _unused, err = module.run_command(["sysctl", "-w", f"{key}={wanted}"])
        if rc != 0:
            module.fail_json(msg=f"sysctl -w {key}={wanted} failed (rc {rc}): {err.strip()}", **result)
    refused = live_drift(_read_live(module, list(todo.live)), {k: settings[k] for k in todo.live})
    if refused:
        module.fail_json(
            msg="the kernel did not take "
            + ", ".join(f"{k}={a} (reads {b})" for k, (b, a) in refused.items())
            + ": check the value against the kernel's limits",
            **result,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
