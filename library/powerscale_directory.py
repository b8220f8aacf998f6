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
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  path:
    description: Absolute path under /ifs.
    type: str
    required: true
  owner:
    description:
      - Owning user, by name (resolved by the access zone's providers) or by id (C(UID:0)).
      - OneFS answers with the persona it resolved; the module compares that answer, and fails when the cluster
        keeps a different persona than the one asked for.
    type: str
  group:
    description:
      - Owning group, by name or by id (C(GID:0)). On OneFS GID 0 is the group C(wheel); there is no group C(root).
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
  - module_attributes.changes
  - onefs_api.changes
  - ansible.builtin.action_common_attributes
notes:
  - "The API user needs ISI_PRIV_NS_IFS_ACCESS and ISI_PRIV_NS_TRAVERSE (RESTful Access to Namespace), and write
    permission on the parent directory or ISI_PRIV_IFS_RESTORE. A directory created through the namespace API
    belongs to the API user: giving it to another owner or group (O(owner), O(group)) needs root or
    ISI_PRIV_IFS_RESTORE."
attributes:
  diff_mode:
    details: Owner, group and mode before and after.
seealso:
  - module: powerscale_nfs_export
  - module: powerscale_quota
  - module: powerscale_info
"""

EXAMPLES = r"""
- name: Scratch directory, world-writable with the sticky bit
  powerscale_directory:
    api_host: 192.0.2.21
    api_user: svc-ansible
    api_password: "{{ powerscale_api_password }}"
    path: /ifs/data/scratch
    owner: root
    group: wheel
    mode: "1777"
  delegate_to: localhost
"""

RETURN = r"""
directory:
  description: Owner, group and mode after the run (the expected values in check mode).
  returned: always
  type: dict
  sample: {"path": "/ifs/data/scratch", "owner": "root", "group": "wheel", "mode": "1777"}
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


_ID = re.compile(r"^(UID|GID):\d+$", re.IGNORECASE)


def persona_matches(wanted: str, have: Any) -> bool:
    """An inventory persona (a name, or UID:n / GID:n) against OneFS's answer {"id", "name", "type"}."""
    if not isinstance(have, dict):
        return persona_name(have) == wanted
    if _ID.match(wanted):
        return str(have.get("id", "")).upper() == wanted.upper()
    return persona_name(have) == wanted


def persona_text(have: Any) -> str | None:
    """How an answer is shown: the name, with the id when OneFS gives both (root (UID:0))."""
    if isinstance(have, dict) and have.get("name") and have.get("id") and have["name"] != have["id"]:
        return f"{have['name']} ({have['id']})"
    return persona_name(have)


def run(module: AnsibleModule, client: OneFSClient) -> dict[str, Any]:
    p = module.params
    path = p["path"].rstrip("/")
    ns = namespace_path(path)
    mode = normal_mode(p["mode"])
    acl = client.get(ns, query={"acl": True}, ok_missing=True)
    want = {k: v for k, v in (("owner", p["owner"]), ("group", p["group"]), ("mode", mode)) if v is not None}
    after = {"path": path, **want}
    if acl is None:
        if module.check_mode:
            return {"changed": True, "created": True, "directory": after,
                    "diff": {"before": {"path": path, "state": "absent"}, "after": after}}
        client.put(ns, query={"recursive": "true" if p["recursive"] else None},
                   headers={"x-isi-ifs-target-type": "container", "x-isi-ifs-access-control": mode or "0755"})
        acl = client.get(ns, query={"acl": True}) or {}
        changes = differences(want, acl)
        if changes:
            _put_acl(client, ns, path, {**changes, **({"mode": mode} if mode else {})})
        return {"changed": True, "created": True, "directory": _settled(client, ns, path, want),
                "diff": {"before": {"path": path, "state": "absent"}, "after": after}}
    before = {"path": path, **{k: v for k, v in shown(acl).items() if k in want}}
    changes = differences(want, acl)
    if not changes:
        return {"changed": False, "created": False, "directory": {"path": path, **shown(acl)},
                "diff": {"before": before, "after": after}}
    if module.check_mode:
        return {"changed": True, "created": False, "directory": {"path": path, **shown(acl), **changes},
                "diff": {"before": before, "after": after}}
    # send the mode along with an owner change: authoritative 'mode' updates want the mode they keep
    _put_acl(client, ns, path, {**changes, **({"mode": mode} if mode else {})})
    return {"changed": True, "created": False, "directory": _settled(client, ns, path, want),
            "diff": {"before": before, "after": after}}


def shown(acl: dict[str, Any]) -> dict[str, Any]:
    return {"owner": persona_name(acl.get("owner")), "group": persona_name(acl.get("group")),
            "mode": normal_mode(acl.get("mode")) if acl.get("mode") else None}


def differences(want: dict[str, str], acl: dict[str, Any]) -> dict[str, str]:
    """The wanted values the cluster's answer does not hold (owner and group compared as OneFS resolved them)."""
    out = {}
    for key, value in want.items():
        if key == "mode":
            if (normal_mode(acl.get("mode")) if acl.get("mode") else None) != value:
                out[key] = value
        elif not persona_matches(value, acl.get(key)):
            out[key] = value
    return out


def _put_acl(client: OneFSClient, ns: str, path: str, values: dict[str, Any]) -> None:
    """Set owner, group and mode; a persona the cluster cannot resolve, or a missing privilege, is named."""
    try:
        client.put(ns, body=_acl_body(values), query={"acl": True})
    except OneFSError as exc:
        hint = {400: "Give owner and group as the cluster's providers name them (GID 0 is the group 'wheel'; "
                     "there is no group 'root') or by id (UID:n / GID:n).",
                403: "Giving a directory to another owner or group needs root or ISI_PRIV_IFS_RESTORE for the API "
                     "user (roles/powerscale/README.md)."}.get(exc.status or 0)
        if hint is None:
            raise
        wanted = ", ".join(f"{k} {v}" for k, v in values.items())
        raise OneFSError(f"{path}: setting {wanted} failed: {exc.message} {hint}", status=exc.status, code=exc.code,
                         method=exc.method, path=exc.path) from None


def _acl_body(values: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"authoritative": "mode", "action": "update"}
    for key, kind in (("owner", "user"), ("group", "group")):
        if key in values:
            value = values[key]
            body[key] = {"id": value.upper(), "type": kind} if _ID.match(value) else {"name": value, "type": kind}
    if "mode" in values:
        body["mode"] = values["mode"]
    return body


def _settled(client: OneFSClient, ns: str, path: str, want: dict[str, str]) -> dict[str, Any]:
    """Read the directory back and fail when the cluster holds another persona than the one asked for (a name it
    resolved to a different identity would otherwise be re-sent on every run)."""
    acl = client.get(ns, query={"acl": True}) or {}
    left = differences(want, acl)
    if left:
        now = {k: persona_text(acl.get(k)) if k != "mode" else acl.get(k) for k in left}
        raise OneFSError(f"{path}: the cluster keeps " + ", ".join(f"{k} {now[k]}" for k in left) + " after "
                         "setting " + ", ".join(f"{k} {v}" for k, v in left.items()) + ". Give the persona as "
                         "OneFS names it (GID 0 is the group 'wheel', not 'root') or by id (UID:n / GID:n).")
    return {"path": path, **shown(acl)}


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_onefs_module(module, lambda client: run(module, client))


if __name__ == "__main__":
    main()
