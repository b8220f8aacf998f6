#!/usr/bin/python
"""Install the role's ifupdown2 stanzas into /etc/network/interfaces, keeping everything else."""

from __future__ import annotations

import glob
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.cumulus_ifupdown import (
    check,
    foreign_definitions,
    merge,
    sourced_patterns,
    unknown_options,
)

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
  - Checks the new file with a structural Python check (and the role's own stanzas for option names ifupdown2
    does not know, which its syntax check lets through), then with ifupdown2's own parser on a temporary copy
    (I(validate), default C(ifup -a -s -i %s)), and only then moves it into place atomically. The check's own
    text is returned when it rejects the file.
  - Supports check mode and diff mode. It does not reload anything; notify a handler that runs C(ifreload -a).
version_added: "0.1.0"
author: powerscale-dgx-ra
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


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


def _included_conflicts(path: str, text: str, owned: list[str]) -> list[str]:
    base = os.path.dirname(path)
    conflicts = []
    for pattern in sourced_patterns(text):
        full = pattern if os.path.isabs(pattern) else os.path.join(base, pattern)
        for included in sorted(glob.glob(full)):
            if os.path.isfile(included) and os.path.realpath(included) != os.path.realpath(path):
                for name in foreign_definitions(_read(included), owned):
                    conflicts.append(f"{included} defines iface {name}")
    return conflicts


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "default": "/etc/network/interfaces"},
            "stanzas": {"type": "str", "required": True},
            "owned": {"type": "list", "elements": "str", "default": []},
            "validate": {"type": "str", "default": "ifup -a -s -i %s"},
            "backup": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    path = module.params["path"]
    current = _read(path)
    result = merge(current, module.params["stanzas"], module.params["owned"])
    owned = sorted(set(module.params["owned"]))

    conflicts = _included_conflicts(path, result.text, owned)
    if conflicts:
        module.fail_json(
            msg="interfaces owned by the storage fabric are also defined in files the role does not own: "
            + "; ".join(conflicts)
            + ". Nothing was changed. Fix: remove those stanzas from the included file (or the port from the "
            "inventory) so that one owner remains.",
            conflicts=conflicts,
        )
    problems = unknown_options(module.params["stanzas"]) + check(result.text)
    if problems:
        module.fail_json(msg="the rendered interfaces file is not sound, nothing was changed: " + "; ".join(problems),
                         problems=problems)

    changed = result.text != current
    response = {"changed": changed, "adopted": result.adopted, "carried": result.carried}
    if module._diff:
        response["diff"] = {"before": current, "after": result.text, "before_header": path, "after_header": path}
    if not changed or module.check_mode:
        module.exit_json(**response)

    directory = os.path.dirname(path) or "."
    fd, candidate = tempfile.mkstemp(prefix=".interfaces.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(result.text)
        if module.params["validate"]:
            command = module.params["validate"]
            if "%s" not in command:
                module.fail_json(msg=f"validate must contain %s for the candidate file, got {command!r}")
            rc, out, err = module.run_command(command.replace("%s", candidate), use_unsafe_shell=False)
            if rc != 0:
                text = (err or out).strip()
                module.fail_json(
                    msg=f"ifupdown2 rejected the new interfaces file (rc={rc}), nothing was changed: {text}",
                    rc=rc, stdout=out, stderr=err,
                )
        if module.params["backup"] and os.path.exists(path):
            response["backup_file"] = module.backup_local(path)
        if os.path.exists(path):
            st = os.stat(path)
            os.chmod(candidate, st.st_mode & 0o7777)
        else:
            os.chmod(candidate, 0o644)
        module.atomic_move(candidate, path)
        candidate = ""
    finally:
        if candidate and os.path.exists(candidate):
            os.unlink(candidate)
    module.exit_json(**response)


if __name__ == "__main__":
    main()
