#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Ansible module: a directory under /ifs with its owner, group and mode, through the OneFS namespace API."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: powerscale_directory
short_description: Ensure a directory under /ifs exists with an owner, group and mode (OneFS namespace API)
description:
  - Creates the directory (and missing parents) with C(PUT /namespace/ifs/...) and sets owner, group and POSIX
    mode with C(PUT /namespace/ifs/...?acl) (authoritative C(mode)).
  - Never deletes anything. Check mode sends nothing that changes the cluster; diff mode shows owner, group
    and mode before and after.
version_added: "0.1.0"
author: powerscale-dgx-ra
options:
  path:
    description: Absolute path under /ifs.
    type: str
    required: true
  owner:
    description: Owning user (name known to the access zone's providers).
    type: str
  group:
    description: Owning group.
    type: str
  mode:
    description: POSIX mode as an octal string, for example C("0755") or C("1777").
    type: str
  recursive:
    description: Create missing parent directories.
    type: bool
    default: true
extends_documentation_fragment:
  - onefs_api
notes:
  - "Runs on the control node (C(delegate_to: localhost)); it needs only the Python standard library."
  - The API user needs ISI_PRIV_NS_TRAVERSE and write access to the parent directory.
"""

EXAMPLES = r"""
- name: Scratch directory, world-writable with the sticky bit
  powerscale_directory:
    api_host: 192.0.2.20
    api_user: svc-ansible
    api_password: "{{ powerscale_api_password }}"
    path: /ifs/data/scratch
    owner: root
    group: root
    mode: "1777"
  delegate_to: localhost
"""

RETURN = r"""
directory:
  description: Owner, group and mode after the run (the expected values in check mode).
  returned: always
  type: dict
  sample: {"path": "/ifs/data/scratch", "owner": "root", "group": "root", "mode": "1777"}
created:
  description: Whether the directory was (or in check mode would be) created.
  returned: always
  type: bool
api_calls:
  description: Method, path and HTTP status of every request made (no bodies, no credentials).
  returned: always
  type: list
  elements: list
"""

import re  # noqa: E402
from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.onefs import (  # noqa: E402
    ONEFS_ARGUMENT_SPEC,
    OneFSClient,
    OneFSError,
    namespace_path,
    persona_name,
    run_onefs_module,
)


def argument_spec() -> dict[str, Any]:
    spec: dict[str, Any] = {
        "path": {"type": "str", "required": True},
        "owner": {"type": "str"},
        "group": {"type": "str"},
        "mode": {"type": "str"},
        "recursive": {"type": "bool", "default": True},
    }
    spec.update(ONEFS_ARGUMENT_SPEC)
    return spec


def normal_mode(mode: str | None) -> str | None:
    if mode is None:
        return None
    text = str(mode).strip()
    if not re.fullmatch(r"0?[0-7]{3,4}", text):
        raise OneFSError(f"mode {mode!r} is not an octal mode such as '0755' or '1777' (quote it in YAML)")
    return f"{int(text, 8):04o}"


def run(module: AnsibleModule, client: OneFSClient) -> dict[str, Any]:
    p = module.params
    path = p["path"].rstrip("/")
    ns = namespace_path(path)
    mode = normal_mode(p["mode"])
    acl = client.get(ns, query={"acl": True}, ok_missing=True)
    want = {k: v for k, v in (("owner", p["owner"]), ("group", p["group"]), ("mode", mode)) if v is not None}
    if acl is None:
        after = {"path": path, **want}
        if module.check_mode:
            return {"changed": True, "created": True, "directory": after,
                    "diff": {"before": {"path": path, "state": "absent"}, "after": after}}
        client.put(ns, query={"recursive": "true" if p["recursive"] else None},
                   headers={"x-isi-ifs-target-type": "container", "x-isi-ifs-access-control": mode or "0755"})
        if want:
            client.put(ns, body=_acl_body(want), query={"acl": True})
        return {"changed": True, "created": True, "directory": _state(client, ns, path),
                "diff": {"before": {"path": path, "state": "absent"}, "after": after}}
    have = {"owner": persona_name(acl.get("owner")), "group": persona_name(acl.get("group")),
            "mode": normal_mode(acl.get("mode")) if acl.get("mode") else None}
    before = {"path": path, **{k: have[k] for k in want}}
    changes = {k: v for k, v in want.items() if have.get(k) != v}
    after = {"path": path, **want}
    if not changes:
        return {"changed": False, "created": False, "directory": {"path": path, **have},
                "diff": {"before": before, "after": after}}
    if module.check_mode:
        return {"changed": True, "created": False, "directory": {"path": path, **have, **changes},
                "diff": {"before": before, "after": after}}
    # send the mode along with an owner change: authoritative 'mode' updates want the mode they keep
    client.put(ns, body=_acl_body({**changes, **({"mode": mode} if mode else {})}), query={"acl": True})
    return {"changed": True, "created": False, "directory": _state(client, ns, path),
            "diff": {"before": before, "after": after}}


def _acl_body(values: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"authoritative": "mode", "action": "update"}
    if "owner" in values:
        body["owner"] = {"name": values["owner"], "type": "user"}
    if "group" in values:
        body["group"] = {"name": values["group"], "type": "group"}
    if "mode" in values:
        body["mode"] = values["mode"]
    return body


def _state(client: OneFSClient, ns: str, path: str) -> dict[str, Any]:
    acl = client.get(ns, query={"acl": True}) or {}
    return {"path": path, "owner": persona_name(acl.get("owner")), "group": persona_name(acl.get("group")),
            "mode": acl.get("mode")}


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_onefs_module(module, lambda client: run(module, client))


if __name__ == "__main__":
    main()
