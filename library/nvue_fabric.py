#!/usr/bin/python
"""Apply the storage-fabric plan to a Cumulus Linux 5.x switch through the NVUE REST API."""

from __future__ import annotations

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.nvue_client import NvueClient, NvueError, NvueUnreachable
from ansible.module_utils.nvue_fabric import desired, differences, operational_mismatches, projection
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
from ansible.module_utils.urls import Request

DOCUMENTATION = r"""
---
module: nvue_fabric
short_description: Configure an SN3700V storage-fabric switch through the Cumulus Linux 5.x NVUE REST API
description:
  - Turns the plan from M(cumulus_fabric_plan) into the NVUE subtree the role owns (fabric ports with description,
    MTU, speed and access VLAN; uplinks; the VLAN-aware bridge domain and its VLANs; the MLAG peerlink and
    C(mlag) settings; the loopback address; breakouts; RoCE QoS when enabled) and compares it with the applied
    configuration (C(GET /nvue_v1/?rev=applied&filled=false)). NVUE settings outside that subtree are not touched.
  - Nothing to change reports C(changed=false) and creates no revision.
  - >-
    Otherwise one revision per run (C(POST /nvue_v1/revision)), one root C(PATCH /nvue_v1/?rev=ID) of the subtree,
    then apply (C(PATCH /nvue_v1/revision/ID) with C({"state": "apply", "auto-prompt": {"ays": "ays_yes"}})) and a
    bounded wait until the revision is C(applied). A revision that ends C(invalid), C(apply_fail), C(ays_fail) and
    the like fails the task with the switch's own issue text; so does any HTTP error.
  - After applying (or when nothing changed) the operational state is checked (C(GET /nvue_v1/interface),
    C(GET /nvue_v1/mlag)), that is MTU, bridge membership and access VLAN, link up, MLAG peer alive.
  - In check mode only GET requests are made; the diff shows what would change, and when nothing would change the
    operational state is verified as in a normal run.
  - TLS is verified by default; the password is never logged.
version_added: "0.1.0"
author: powerscale-dgx-ra
options:
  host:
    description: Address of the switch's NVUE API.
    type: str
    required: true
  port:
    description: HTTPS port of the NVUE API.
    type: int
    default: 8765
  user:
    description: NVUE user.
    type: str
    default: cumulus
  password:
    description: NVUE password.
    type: str
    required: true
    no_log: true
  validate_certs:
    description: Verify the switch's TLS certificate.
    type: bool
    default: true
  ca_path:
    description: CA bundle to verify the switch's certificate with (the system store when empty).
    type: path
  plan:
    description: The plan returned by M(cumulus_fabric_plan).
    type: dict
    required: true
  apply_timeout:
    description: Seconds to wait for the revision to reach C(applied).
    type: int
    default: 180
  verify:
    description: Check the operational state after applying.
    type: bool
    default: true
  require_link_up:
    description: Whether every fabric port must be operationally up.
    type: bool
    default: true
  verify_wait_seconds:
    description: How long to keep re-reading the operational state before reporting mismatches.
    type: int
    default: 30
  request_timeout:
    description: Timeout of each HTTP request, in seconds.
    type: int
    default: 20
"""

EXAMPLES = r"""
- name: Apply the storage fabric through NVUE
  nvue_fabric:
    host: "{{ ansible_host }}"
    password: "{{ storage_fabric_password }}"
    plan: "{{ sn3700v_plan }}"
  delegate_to: localhost
"""

RETURN = r"""
revision:
  description: The NVUE revision that was applied (absent when nothing changed or in check mode).
  returned: changed and not check mode
  type: str
  sample: changeset/cumulus/2026-11-21_08.30.01_ABCD
state:
  description: Final state of that revision.
  returned: changed and not check mode
  type: str
  sample: applied
changes:
  description: Paths of the NVUE tree that differed from the plan before this run (what was, or would be, set).
  returned: always
  type: list
  elements: str
desired:
  description: The NVUE subtree the role owns on this switch.
  returned: always
  type: dict
"""


def _fetcher(module: AnsibleModule):
    params = module.params
    request = Request(
        url_username=params["user"],
        url_password=params["password"],
        force_basic_auth=True,
        validate_certs=params["validate_certs"],
        ca_path=params["ca_path"] or None,
        timeout=params["request_timeout"],
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )

    def fetch(method: str, url: str, body):
        data = None if body is None else json.dumps(body)
        try:
            response = request.open(method, url, data=data)
            status, raw = response.getcode(), response.read()
        except HTTPError as exc:
            status, raw = exc.code, exc.read() if exc.fp else b""
        except (URLError, OSError, UrlsConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise NvueUnreachable(f"cannot reach the NVUE API at {url.split('/nvue_v1')[0]}: {reason}") from exc
        text = to_text(raw or b"")
        try:
            parsed = json.loads(text) if text.strip() else {}
        except ValueError:
            parsed = text
        return status, parsed

    return fetch


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "port": {"type": "int", "default": 8765},
            "user": {"type": "str", "default": "cumulus"},
            "password": {"type": "str", "required": True, "no_log": True},
            "validate_certs": {"type": "bool", "default": True},
            "ca_path": {"type": "path"},
            "plan": {"type": "dict", "required": True},
            "apply_timeout": {"type": "int", "default": 180},
            "verify": {"type": "bool", "default": True},
            "require_link_up": {"type": "bool", "default": True},
            "verify_wait_seconds": {"type": "int", "default": 30},
            "request_timeout": {"type": "int", "default": 20},
        },
        supports_check_mode=True,
    )
    params = module.params
    host = params["host"]
    base = f"https://[{host}]:{params['port']}" if ":" in host else f"https://{host}:{params['port']}"
    client = NvueClient(base, _fetcher(module))
    plan = params["plan"]
    want = desired(plan)
    result: dict = {"changed": False, "desired": want}
    try:
        applied = client.get("/", rev="applied", filled=False) or {}
        changes = differences(want, applied)
        result["changes"] = changes
        result["changed"] = bool(changes)
        if module._diff:
            before = projection(want, applied)
            result["diff"] = {
                "before": json.dumps(before, indent=2, sort_keys=True) + "\n",
                "after": json.dumps(want, indent=2, sort_keys=True) + "\n",
                "before_header": f"{plan.get('switch')} NVUE applied",
                "after_header": f"{plan.get('switch')} storage fabric plan",
            }
        if module.check_mode and changes:
            module.exit_json(**result)  # only GETs were made; nothing to verify against yet
        if changes:
            revision = client.create_revision()
            result["revision"] = revision
            client.patch(revision, want)
            result["state"] = client.apply(revision, timeout=params["apply_timeout"])
            remaining = differences(want, client.get("/", rev="applied", filled=False) or {})
            if remaining:
                module.fail_json(msg=f"NVUE reports revision {revision} applied, but the applied configuration still "
                                 f"differs from the plan: {'; '.join(remaining[:20])}", **result)
        if params["verify"]:
            deadline = time.monotonic() + max(0, params["verify_wait_seconds"])
            while True:
                interfaces = client.get("/interface") or {}
                mlag = client.get("/mlag") if plan.get("peerlink") else None
                mismatches = operational_mismatches(plan, interfaces, mlag, params["require_link_up"])
                if not mismatches or time.monotonic() >= deadline:
                    break
                time.sleep(2)
            result["mismatches"] = mismatches
            if mismatches:
                module.fail_json(msg=f"the operational state of {plan.get('switch')} does not match the inventory "
                                 f"({len(mismatches)} mismatch(es)):\n  " + "\n  ".join(mismatches), **result)
    except NvueUnreachable as exc:
        module.fail_json(msg=f"{plan.get('switch')}: {exc}. Nothing was changed on this switch.", **result)
    except NvueError as exc:
        module.fail_json(msg=f"{plan.get('switch')}: {exc}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
