#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Ansible module: one NFS export on a PowerScale (OneFS) cluster, through the Platform API."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: powerscale_nfs_export
short_description: Manage one NFS export on a PowerScale (OneFS) cluster through the Platform API
description:
  - Creates, updates or deletes the NFS export of one path in one access zone
    (C(/platform/4/protocols/nfs/exports?zone=...)).
  - Only the options given are managed; an option left out is neither compared nor sent.
  - Client lists and security flavors are compared as sets, so reordering them changes nothing.
  - An update sends only the fields that differ. In check mode nothing that changes the cluster is sent
    (the session login and logout are the only POST/DELETE requests).
  - The export of a path is found by its path and zone. If more than one export serves exactly that path in
    the zone, the module fails and names them instead of guessing.
  - Supports C(--diff) with the managed fields before and after.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  path:
    description: Directory under /ifs that the export serves. It must exist (see powerscale_directory).
    type: str
    required: true
  zone:
    description: Access zone of the export.
    type: str
    default: System
  state:
    description: C(present) creates or updates the export, C(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  clients:
    description: Hosts (IP, CIDR, name or @netgroup) allowed to mount; an empty list means every client.
    type: list
    elements: str
  root_clients:
    description: Hosts whose root user is not mapped (no root squash for them).
    type: list
    elements: str
  read_only_clients:
    description: Hosts that get read-only access.
    type: list
    elements: str
  read_write_clients:
    description: Hosts that get read-write access even on a read-only export.
    type: list
    elements: str
  map_root:
    description: How the root user of a client is mapped. The default OneFS behaviour is root squash to nobody.
    type: dict
    suboptions:
      enabled:
        description: Map root (true) or let root through unmapped (false).
        type: bool
        default: true
      user:
        description: User that root is mapped to.
        type: str
        default: nobody
      primary_group:
        description: Primary group of the mapped user (optional).
        type: str
  map_non_root:
    description: How non-root users are mapped (all squash when enabled).
    type: dict
    suboptions:
      enabled:
        description: Map every non-root user.
        type: bool
        default: false
      user:
        description: User they are mapped to.
        type: str
        default: nobody
      primary_group:
        description: Primary group of the mapped user (optional).
        type: str
  security_flavors:
    description: Allowed security flavors.
    type: list
    elements: str
    choices: [unix, krb5, krb5i, krb5p]
  all_dirs:
    description: Allow clients to mount any subdirectory of the path.
    type: bool
  read_only:
    description: Export read-only.
    type: bool
  description:
    description: Free text; the powerscale role puts its managed-by marker here.
    type: str
  require_marker:
    description:
      - With O(state=absent), delete the export only if its description contains this text, and fail
        otherwise. Protects exports this project did not create. With O(client_lists_mode=remove) the same
        guard applies before a client is removed.
    type: str
  client_lists_mode:
    description:
      - C(replace) makes each client list given exactly that list (the deploy).
      - C(add) only adds the given clients to each list given, and C(remove) only removes them (a day 2
        scale-out or scale-in, docs/scale-out.md). A client already there, or one not there, changes nothing;
        the other clients and every other field of the export are neither compared nor sent, and the export must
        exist already (a scale flow never creates one).
    type: str
    choices: [replace, add, remove]
    default: replace
extends_documentation_fragment:
  - onefs_api
  - module_attributes.changes
  - onefs_api.changes
  - ansible.builtin.action_common_attributes
notes:
  - Check mode and diff mode are supported.
attributes:
  diff_mode:
    details: The managed export fields before and after.
seealso:
  - module: powerscale_directory
  - module: powerscale_quota
  - module: powerscale_info
  - module: dgx_nfs_plan
"""

EXAMPLES = r"""
- name: Export the training data to two DGX nodes, root squashed
  powerscale_nfs_export:
    api_host: 192.0.2.21
    api_user: svc-ansible
    api_password: "{{ powerscale_api_password }}"
    ca_path: /etc/pki/onefs-ca.pem
    path: /ifs/data/training
    zone: System
    clients: [198.51.100.11, 198.51.100.12]
    map_root: {enabled: true, user: nobody}
    security_flavors: [unix]
    description: "Training datasets [managed-by:powerscale-dgx-ra]"
  delegate_to: localhost

- name: Remove an export this project created earlier
  powerscale_nfs_export:
    api_host: 192.0.2.21
    api_user: svc-ansible
    api_password: "{{ powerscale_api_password }}"
    path: /ifs/data/old
    state: absent
    require_marker: "[managed-by:powerscale-dgx-ra]"
  delegate_to: localhost
"""

RETURN = r"""
export:
  description: The export as the cluster reports it after the run (empty when absent; in check mode the
    expected state).
  returned: always
  type: dict
  sample: {"id": 3, "paths": ["/ifs/data/training"], "zone": "System", "clients": ["198.51.100.11"]}
id:
  description: Numeric id of the export (null when absent or not created yet in check mode).
  returned: always
  type: int
  sample: 3
sent:
  description: The fields sent (or, in check mode, that would be sent) to create or update the export.
  returned: always
  type: dict
  sample: {"clients": ["198.51.100.11", "198.51.100.12"]}
diff:
  description: The managed fields before and after.
  returned: always
  type: dict
api_calls:
  description: Method, path and HTTP status of every request made (no bodies, no credentials).
  returned: always
  type: list
  elements: list
"""

from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.onefs import (  # noqa: E402
    ONEFS_ARGUMENT_SPEC,
    OneFSClient,
    OneFSError,
    persona_name,
    run_onefs_module,
    sorted_unique,
)
from ansible.module_utils.scale_plan import list_plan  # noqa: E402

CLIENT_LISTS = ("clients", "root_clients", "read_only_clients", "read_write_clients")
SET_FIELDS = (*CLIENT_LISTS, "security_flavors")
PLAIN_FIELDS = ("all_dirs", "read_only", "description")
MAPPING_FIELDS = ("map_root", "map_non_root")


def _mapping_spec(enabled_default: bool) -> dict[str, Any]:
    return {
        "type": "dict",
        "options": {
            "enabled": {"type": "bool", "default": enabled_default},
            "user": {"type": "str", "default": "nobody"},
            "primary_group": {"type": "str"},
        },
    }


def argument_spec() -> dict[str, Any]:
    spec: dict[str, Any] = {
        "path": {"type": "str", "required": True},
        "zone": {"type": "str", "default": "System"},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "map_root": _mapping_spec(True),
        "map_non_root": _mapping_spec(False),
        "security_flavors": {"type": "list", "elements": "str", "choices": ["unix", "krb5", "krb5i", "krb5p"]},
        "all_dirs": {"type": "bool"},
        "read_only": {"type": "bool"},
        "description": {"type": "str"},
        "require_marker": {"type": "str"},
        "client_lists_mode": {"type": "str", "choices": ["replace", "add", "remove"], "default": "replace"},
    }
    for name in CLIENT_LISTS:
        spec[name] = {"type": "list", "elements": "str"}
    spec.update(ONEFS_ARGUMENT_SPEC)
    return spec


def normalize_mapping(value: Any) -> dict[str, Any]:
    """A OneFS mapping (or a module mapping option) as {'enabled', 'user', 'primary_group'} for comparison."""
    value = value or {}
    enabled = bool(value.get("enabled", False))
    if not enabled:
        return {"enabled": False}
    return {"enabled": True, "user": persona_name(value.get("user")) or "nobody",
            "primary_group": persona_name(value.get("primary_group")) or None}


def normalize_export(export: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    """The managed fields of an export in comparable form (sets sorted, personas as names)."""
    out: dict[str, Any] = {}
    for name in fields:
        if name in SET_FIELDS:
            out[name] = sorted_unique(export.get(name))
        elif name in MAPPING_FIELDS:
            out[name] = normalize_mapping(export.get(name))
        else:
            out[name] = export.get(name)
    return out


def desired_fields(params: dict[str, Any]) -> dict[str, Any]:
    """The managed fields the task asks for, in comparable form."""
    want: dict[str, Any] = {}
    for name in SET_FIELDS:
        if params.get(name) is not None:
            want[name] = sorted_unique(params[name])
    for name in MAPPING_FIELDS:
        if params.get(name) is not None:
            want[name] = normalize_mapping(params[name])
    for name in PLAIN_FIELDS:
        if params.get(name) is not None:
            want[name] = params[name]
    return want


def papi_value(name: str, params: dict[str, Any]) -> Any:
    """The request-body form of one field."""
    value = params[name]
    if name in SET_FIELDS:
        seen: list[str] = []
        for v in value:
            v = str(v).strip()
            if v not in seen:
                seen.append(v)
        return seen
    if name in MAPPING_FIELDS:
        body: dict[str, Any] = {"enabled": bool(value.get("enabled"))}
        if value.get("enabled"):
            body["user"] = {"id": f"USER:{value.get('user') or 'nobody'}"}
            if value.get("primary_group"):
                body["primary_group"] = {"id": f"GROUP:{value['primary_group']}"}
        return body
    return value


def scale_fields(current: dict[str, Any], params: dict[str, Any], mode: str) -> dict[str, Any]:
    """The client lists given, grown by (client_lists_mode add) or rid of (remove) their clients, in comparable
    form; every other field is left out, so it is neither compared nor sent."""
    return {name: sorted_unique(list_plan(sorted_unique(current.get(name)), sorted_unique(params[name]),
                                          mode).after)
            for name in CLIENT_LISTS if params.get(name) is not None}


def find_exports(client: OneFSClient, base: str, path: str, zone: str) -> list[dict[str, Any]]:
    wanted = path.rstrip("/")
    exports = client.get_all(base, "exports", {"zone": zone})
    for e in exports:
        paths = e.get("paths")
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise OneFSError(f"export {e.get('id')!r} in zone {zone}: the cluster answered paths {paths!r}, expected a "
                             "list of /ifs paths; this module will not guess which export serves " + wanted)
    return [e for e in exports if [p.rstrip("/") for p in e["paths"]] == [wanted]]


def run(module: AnsibleModule, client: OneFSClient) -> dict[str, Any]:
    p = module.params
    path, zone = p["path"].rstrip("/"), p["zone"]
    if not path.startswith("/ifs"):
        raise OneFSError(f"path {p['path']!r} is not under /ifs: OneFS exports only /ifs paths")
    base = client.platform(4, "protocols/nfs/exports", minimum=2)
    matches = find_exports(client, base, path, zone)
    if len(matches) > 1:
        ids = ", ".join(str(e["id"]) for e in matches)
        raise OneFSError(f"{len(matches)} exports serve {path} in zone {zone} (ids {ids}); this module manages "
                         "one export per path and will not guess which. Merge them on the cluster "
                         "(isi nfs exports list --zone) and run again.")
    current = matches[0] if matches else None
    want = desired_fields(p)
    mode = p.get("client_lists_mode") or "replace"
    if p["state"] == "present" and mode != "replace":
        if current is None:
            raise OneFSError(f"no export serves {path} in zone {zone}: client_lists_mode={mode} "
                             "changes the clients of an export the site already has and never creates one. Deploy "
                             "the site's exports first (site.yml --tags storage), then run the scale flow.")
        marker = p.get("require_marker")
        if mode == "remove" and marker and marker not in (current.get("description") or ""):
            raise OneFSError(f"export {current['id']} of {path} in zone {zone} does not carry the marker {marker!r} "
                             "in its description: this project did not create it, so no client is removed from it.")
        want = scale_fields(current, p, mode)
        # the request body of a changed list is the list after the change, in the cluster's order
        p = {**p, **{name: list_plan(current.get(name) or [], p[name], mode).after
                     for name in want}}
    fields = sorted(want)

    if p["state"] == "absent":
        if current is None:
            return {"changed": False, "export": {}, "id": None, "sent": {}, "diff": {"before": {}, "after": {}}}
        marker = p.get("require_marker")
        if marker and marker not in (current.get("description") or ""):
            raise OneFSError(f"export {current['id']} of {path} in zone {zone} does not carry the marker "
                             f"{marker!r} in its description: this project did not create it, so it is not "
                             "deleted. Remove it by hand if it really must go.")
        before = normalize_export(current, sorted(set(fields) | {"clients", "description"}))
        if not module.check_mode:
            client.delete(f"{base}/{current['id']}", query={"zone": zone})
        return {"changed": True, "export": {}, "id": current["id"], "sent": {},
                "diff": {"before": {"path": path, "zone": zone, **before}, "after": {}}}

    if current is None:
        body = {name: papi_value(name, p) for name in fields}
        body["paths"] = [path]
        after = {"path": path, "zone": zone, **want}
        if module.check_mode:
            return {"changed": True, "export": {"paths": [path], "zone": zone, **body}, "id": None,
                    "sent": body, "diff": {"before": {}, "after": after}}
        created = client.post(base, body, query={"zone": zone}) or {}
        eid = created.get("id")
        export = (client.get(f"{base}/{eid}", query={"zone": zone}) or {}).get("exports", [{}])[0]
        return {"changed": True, "export": export, "id": eid, "sent": body,
                "diff": {"before": {}, "after": after}}

    have = normalize_export(current, fields)
    changed_fields = [name for name in fields if have.get(name) != want[name]]
    before = {"path": path, "zone": zone, **have}
    after = {"path": path, "zone": zone, **want}
    if not changed_fields:
        return {"changed": False, "export": current, "id": current["id"], "sent": {},
                "diff": {"before": before, "after": after}}
    body = {name: papi_value(name, p) for name in changed_fields}
    if module.check_mode:
        expected = dict(current)
        expected.update(body)
        return {"changed": True, "export": expected, "id": current["id"], "sent": body,
                "diff": {"before": before, "after": after}}
    client.put(f"{base}/{current['id']}", body, query={"zone": zone})
    export = (client.get(f"{base}/{current['id']}", query={"zone": zone}) or {}).get("exports", [{}])[0]
    return {"changed": True, "export": export, "id": current["id"], "sent": body,
            "diff": {"before": before, "after": after}}


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_onefs_module(module, lambda client: run(module, client))


if __name__ == "__main__":
    main()
