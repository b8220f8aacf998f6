#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Ansible module: one directory quota (SmartQuotas) on a PowerScale (OneFS) cluster."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: powerscale_quota
short_description: Manage one directory quota (SmartQuotas) on a PowerScale cluster through the Platform API
description:
  - Creates, updates or deletes the directory quota of one path (C(/platform/1/quota/quotas)).
  - Thresholds are in bytes. A threshold given as null is not set (and is removed if the quota has it).
  - The soft threshold needs a grace period (O(thresholds.soft_grace)); thresholds are ordered advisory <= soft <=
    hard, each pair (the inventory rule of module_utils/powerscale_inventory.py, threshold_order_violations).
    Violations are reported before anything is sent.
  - The quota is found by path, type C(directory) and O(include_snapshots). Check mode sends nothing that
    changes the cluster; diff mode shows the thresholds before and after.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  path:
    description: Directory under /ifs that the quota governs. It must exist.
    type: str
    required: true
  state:
    description: C(present) creates or updates the quota, C(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  include_snapshots:
    description: Whether snapshot data counts against the quota (part of the quota's identity).
    type: bool
    default: false
  container:
    description: SMB clients see the hard threshold as the share size.
    type: bool
    default: false
  thresholds:
    description: Thresholds in bytes and the soft grace period in seconds.
    type: dict
    default: {}
    suboptions:
      hard:
        description: Writes fail above this many bytes. Every threshold is at least 1 (the API's minimum); null
          (omitted) means no threshold.
        type: int
      soft:
        description: Writes fail after O(thresholds.soft_grace) seconds above this many bytes.
        type: int
      soft_grace:
        description: Grace period of the soft threshold, in seconds.
        type: int
      advisory:
        description: Notification only.
        type: int
extends_documentation_fragment:
  - onefs_api
  - module_attributes.changes
  - onefs_api.changes
  - ansible.builtin.action_common_attributes
notes:
  - Check mode and diff mode are supported.
attributes:
  diff_mode:
    details: The thresholds before and after.
seealso:
  - module: powerscale_directory
  - module: powerscale_nfs_export
  - module: powerscale_info
"""

EXAMPLES = r"""
- name: 100 TiB hard, 90 TiB soft (7 days grace), 80 TiB advisory on the scratch directory
  powerscale_quota:
    api_host: 192.0.2.21
    api_user: svc-ansible
    api_password: "{{ powerscale_api_password }}"
    path: /ifs/data/scratch
    thresholds:
      hard: 109951162777600
      soft: 98956046499840
      soft_grace: 604800
      advisory: 87960930222080
  delegate_to: localhost
"""

RETURN = r"""
quota:
  description: The quota as the cluster reports it after the run (empty when absent).
  returned: always
  type: dict
  sample: {"id": "igSJAAEAAAAAAAAAAAAAQH0RAAAAAAAA", "path": "/ifs/data/scratch", "type": "directory"}
id:
  description: Id of the quota (null when absent or not created yet in check mode).
  returned: always
  type: str
sent:
  description: The fields sent (or that would be sent) to create or update the quota.
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
from ansible.module_utils.onefs import ONEFS_ARGUMENT_SPEC, OneFSClient, OneFSError, run_onefs_module  # noqa: E402
from ansible.module_utils.powerscale_inventory import threshold_order_violations  # noqa: E402

THRESHOLDS = ("hard", "soft", "advisory", "soft_grace")


def argument_spec() -> dict[str, Any]:
    spec: dict[str, Any] = {
        "path": {"type": "str", "required": True},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "include_snapshots": {"type": "bool", "default": False},
        "container": {"type": "bool", "default": False},
        "thresholds": {"type": "dict", "default": {}, "options": {
            "hard": {"type": "int"}, "soft": {"type": "int"}, "soft_grace": {"type": "int"},
            "advisory": {"type": "int"}}},
    }
    spec.update(ONEFS_ARGUMENT_SPEC)
    return spec


def desired_thresholds(given: dict[str, Any] | None, path: str) -> dict[str, Any]:
    """Validated thresholds; soft_grace only matters with a soft threshold."""
    t = {name: (given or {}).get(name) for name in THRESHOLDS}
    for name in THRESHOLDS:
        if t[name] is not None and t[name] < 1:
            raise OneFSError(f"quota {path}: thresholds.{name}={t[name]} is below the API's minimum of 1; give bytes "
                             "(seconds for soft_grace) >= 1, or null for no threshold")
    if t["soft"] is None:
        t["soft_grace"] = None
    elif not t["soft_grace"]:
        raise OneFSError(f"quota {path}: thresholds.soft={t['soft']} needs thresholds.soft_grace (seconds), "
                         "for example 604800 for 7 days")
    violations = threshold_order_violations(t)
    if violations:
        low, low_value, high, high_value = violations[0]
        raise OneFSError(f"quota {path}: thresholds.{low}={low_value} is above thresholds.{high}={high_value}; "
                         f"lower {low} or raise {high} (advisory <= soft <= hard)")
    return t


def current_thresholds(quota: dict[str, Any]) -> dict[str, Any]:
    thresholds = quota.get("thresholds") or {}
    if not isinstance(thresholds, dict):
        raise OneFSError(f"quota {quota.get('id')!r} of {quota.get('path')!r}: the cluster answered thresholds "
                         f"{thresholds!r}, expected an object of hard, soft, advisory and soft_grace")
    t = {name: thresholds.get(name) for name in THRESHOLDS}
    if t["soft"] is None:
        t["soft_grace"] = None
    return t


def find_quota(client: OneFSClient, base: str, path: str, include_snapshots: bool) -> list[dict[str, Any]]:
    return [q for q in client.get_all(base, "quotas", {"path": path, "type": "directory"})
            if q.get("path", "").rstrip("/") == path and q.get("type") == "directory"
            and bool(q.get("include_snapshots")) == include_snapshots]


def run(module: AnsibleModule, client: OneFSClient) -> dict[str, Any]:
    p = module.params
    path = p["path"].rstrip("/")
    if not path.startswith("/ifs/"):
        raise OneFSError(f"quota path {p['path']!r} is not a directory under /ifs")
    want = desired_thresholds(p["thresholds"], path)
    base = client.platform(1, "quota/quotas")
    matches = find_quota(client, base, path, p["include_snapshots"])
    current = matches[0] if matches else None
    if p["state"] == "absent":
        if current is None:
            return {"changed": False, "quota": {}, "id": None, "sent": {}, "diff": {"before": {}, "after": {}}}
        if not module.check_mode:
            client.delete(f"{base}/{current['id']}")
        return {"changed": True, "quota": {}, "id": current["id"], "sent": {},
                "diff": {"before": {"path": path, "thresholds": current_thresholds(current)}, "after": {}}}
    after = {"path": path, "container": p["container"], "thresholds": want}
    if current is None:
        body = {"path": path, "type": "directory", "include_snapshots": p["include_snapshots"],
                "container": p["container"], "thresholds": want,
                "enforced": any(want[n] is not None for n in ("hard", "soft", "advisory"))}
        if module.check_mode:
            return {"changed": True, "quota": body, "id": None, "sent": body, "diff": {"before": {}, "after": after}}
        qid = (client.post(base, body) or {}).get("id")
        quota = (client.get(f"{base}/{qid}") or {}).get("quotas", [{}])[0]
        return {"changed": True, "quota": quota, "id": qid, "sent": body, "diff": {"before": {}, "after": after}}
    have = current_thresholds(current)
    before = {"path": path, "container": bool(current.get("container")), "thresholds": have}
    body: dict[str, Any] = {}
    if have != want:
        # thresholds is one PAPI field: send it whole, so no stale sub-value survives on any OneFS release
        body["thresholds"] = want
        body["enforced"] = any(want[n] is not None for n in ("hard", "soft", "advisory"))
    if bool(current.get("container")) != p["container"]:
        body["container"] = p["container"]
    if not body:
        return {"changed": False, "quota": current, "id": current["id"], "sent": {},
                "diff": {"before": before, "after": after}}
    if module.check_mode:
        return {"changed": True, "quota": {**current, **body}, "id": current["id"], "sent": body,
                "diff": {"before": before, "after": after}}
    client.put(f"{base}/{current['id']}", body)
    quota = (client.get(f"{base}/{current['id']}") or {}).get("quotas", [{}])[0]
    return {"changed": True, "quota": quota, "id": current["id"], "sent": body,
            "diff": {"before": before, "after": after}}


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_onefs_module(module, lambda client: run(module, client))


if __name__ == "__main__":
    main()
