#!/usr/bin/python
"""Apply the storage-fabric plan to a Cumulus Linux 5.x switch through the NVUE REST API."""

from __future__ import annotations

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
  - >-
    The release is read from C(GET /nvue_v1/system) (and must match O(release) when that is given); the subtree is
    rendered in that release's key names (5.15 renamed C(mlag enable) to C(mlag state), C(qos roce enable) to
    C(qos roce state), C(interface ip address) to C(ipv4 address)) and breakout format (C(4x25G) up to 5.3, C(4x) and
    the speed on each lane from 5.4). Up to 5.8 an applied revision is not saved: the module saves it
    (C(PATCH /nvue_v1/revision/applied) with C(state save)) whenever the startup configuration lacks the subtree.
  - >-
    NVUE takeover: the first NVUE apply on a switch, or one after files were changed outside NVUE, stops at NVUE's
    "Are you sure?" prompt; confirming it rewrites C(/etc/network/interfaces) and C(frr.conf) from NVUE's model and
    drops configuration made by hand or by the files method. The module confirms only with O(takeover=true);
    otherwise the revision ends in C(ays_fail), nothing is applied and the task fails naming
    C(sn3700v_nvue_takeover).
  - VLAN keys are compared as sets of VLAN IDs (NVUE keeps C(10,20,30) or C(10-20) as typed).
  - TLS is verified by default; the password is never logged.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
options:
  api_host:
    description: Address of the switch's NVUE API.
    type: str
    required: true
    aliases: [host]
  api_port:
    description: HTTPS port of the NVUE API.
    type: int
    default: 8765
    aliases: [port]
  api_user:
    description: NVUE user.
    type: str
    default: cumulus
    aliases: [user]
  api_password:
    description: NVUE password.
    type: str
    required: true
    aliases: [password]
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
  timeout:
    description: Timeout of each HTTP request, in seconds.
    type: int
    default: 20
    aliases: [request_timeout]
  release:
    description: The Cumulus Linux release the inventory expects (C(sn3700v_cumulus_release)); empty to accept what
      the switch reports.
    type: str
  fec_by_speed:
    description: FEC (rs, baser, off) per forced speed in Gb/s (C(storage_fabric_port_fec)); a forced speed without
      one fails the task before anything is sent.
    type: dict
  backup_vrf:
    description: VRF of the MLAG backup IP (C(sn3700v_clag_backup_vrf)); empty for the default VRF.
    type: str
  takeover:
    description: Confirm NVUE's prompt on the first NVUE apply (it rewrites the ifupdown2 and FRR files from NVUE's
      model).
    type: bool
    default: false
  lane_speeds:
    description: From 5.4, set the breakout mode's speed (and its FEC) on each lane
      (C(storage_fabric_port_speed_managed)); false leaves the lanes to auto-negotiation.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details: Only GET requests are made in check mode.
  diff_mode:
    support: full
    details: The NVUE subtree the role owns, as applied before and as planned after (JSON).
  platform:
    support: full
    platforms: cumulus
    details: Cumulus Linux 5.x through the NVUE REST API, from the control node.
seealso:
  - module: cumulus_fabric_plan
  - module: cumulus_interfaces
  - module: cumulus_fabric_verify
  - name: Role sn3700v
    link: roles/sn3700v/README.md
    description: The storage-fabric role; C(storage_fabric_method) picks NVUE or the files method.
"""

EXAMPLES = r"""
- name: Apply the storage fabric through NVUE
  nvue_fabric:
    api_host: "{{ ansible_host }}"
    api_password: "{{ storage_fabric_password }}"
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
release:
  description: The Cumulus Linux release the switch reports.
  returned: when the switch answered
  type: str
  sample: 5.9.2
saved:
  description: Whether the applied configuration was saved to the startup configuration (releases up to 5.8).
  returned: always
  type: bool
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

import json  # noqa: E402
import ssl  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.cumulus_release import (  # noqa: E402
    NEWEST,
    OLDEST,
    Release,
    ReleaseError,
    known,
    nvue_api_default_listen,
    nvue_apply_is_saved,
    nvue_password_gate,
    parse_release,
    release_from_nvue_system,
)
from ansible.module_utils.nvue_client import (  # noqa: E402
    NvueClient,
    NvueError,
    NvuePrompt,
    NvueRejected,
    NvueUnreachable,
    decode_body,
)
from ansible.module_utils.nvue_fabric import (  # noqa: E402
    desired,
    differences,
    forced_speed_problems,
    normalise_vlans,
    operational_mismatches,
    projection,
)
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError  # noqa: E402
from ansible.module_utils.urls import ConnectionError as UrlsConnectionError  # noqa: E402
from ansible.module_utils.urls import Request, SSLValidationError  # noqa: E402


def _fetcher(module: AnsibleModule):
    params = module.params
    request = Request(
        url_username=params["api_user"],
        url_password=params["api_password"],
        force_basic_auth=True,
        validate_certs=params["validate_certs"],
        ca_path=params["ca_path"] or None,
        timeout=params["timeout"],
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )

    def fetch(method: str, url: str, body):
        data = None if body is None else json.dumps(body)
        try:
            response = request.open(method, url, data=data)
            status, raw = response.getcode(), response.read()
        except HTTPError as exc:
            status, raw = exc.code, exc.read() if exc.fp else b""
        except (URLError, OSError, UrlsConnectionError, SSLValidationError) as exc:
            reason = getattr(exc, "reason", exc)
            where = url.split("/nvue_v1")[0]
            if isinstance(exc, SSLValidationError) or isinstance(reason, ssl.SSLError):
                raise NvueUnreachable(
                    f"TLS verification of the NVUE API at {where} failed: {reason}. Fix: set storage_fabric_ca_path "
                    "(ca_path) to the CA bundle that signed the switch's certificate; turn "
                    "storage_fabric_validate_certs (validate_certs) off only deliberately") from exc
            raise NvueUnreachable(f"cannot reach the NVUE API at {where}: {reason}") from exc
        return status, decode_body(raw)

    return fetch


def argument_spec() -> dict[str, dict[str, Any]]:
    """The options; the connection ones use the names the OneFS and MLNX-OS modules use, the old names as aliases."""
    return {
        "api_host": {"type": "str", "required": True, "aliases": ["host"]},
        "api_port": {"type": "int", "default": 8765, "aliases": ["port"]},
        "api_user": {"type": "str", "default": "cumulus", "aliases": ["user"]},
        "api_password": {"type": "str", "required": True, "no_log": True, "aliases": ["password"]},
        "validate_certs": {"type": "bool", "default": True},
        "ca_path": {"type": "path"},
        "plan": {"type": "dict", "required": True},
        "apply_timeout": {"type": "int", "default": 180},
        "verify": {"type": "bool", "default": True},
        "require_link_up": {"type": "bool", "default": True},
        "verify_wait_seconds": {"type": "int", "default": 30},
        "timeout": {"type": "int", "default": 20, "aliases": ["request_timeout"]},
        "release": {"type": "str"},
        "fec_by_speed": {"type": "dict"},
        "backup_vrf": {"type": "str"},
        "takeover": {"type": "bool", "default": False},
        "lane_speeds": {"type": "bool", "default": True},
    }


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    host = params["api_host"]
    base = f"https://[{host}]:{params['api_port']}" if ":" in host else f"https://{host}:{params['api_port']}"
    client = NvueClient(base, _fetcher(module))
    plan = params["plan"]
    switch = plan.get("switch")
    result: dict = {"changed": False, "saved": False}
    expected: Release | None = None
    if params["release"]:
        try:
            expected = parse_release(params["release"])
        except ReleaseError as exc:
            module.fail_json(msg=f"{switch}: sn3700v_cumulus_release={params['release']!r}: {exc}. Fix: write the "
                             "switch's release as in /etc/lsb-release, e.g. 5.9.2. Nothing was changed on this switch.")
    try:
        release = _release(module, client, switch, expected)
        result["release"] = str(release)
        problems = forced_speed_problems(plan, params["fec_by_speed"], release, params["lane_speeds"])
        if problems:
            module.fail_json(msg=f"{switch}: nothing was changed on this switch:\n  " + "\n  ".join(problems), **result)
        want = desired(plan, release, params["fec_by_speed"], params["backup_vrf"] or None, params["lane_speeds"])
        result["desired"] = want
        applied = normalise_vlans(client.get("/", rev="applied", filled=False) or {})
        changes = differences(want, applied)
        unsaved = []
        if not nvue_apply_is_saved(release):
            unsaved = differences(want, normalise_vlans(client.get("/", rev="startup", filled=False) or {}))
        result["changes"] = changes
        result["unsaved"] = unsaved
        result["changed"] = bool(changes or unsaved)
        if module._diff:
            before = projection(want, applied)
            result["diff"] = {
                "before": json.dumps(before, indent=2, sort_keys=True) + "\n",
                "after": json.dumps(want, indent=2, sort_keys=True) + "\n",
                "before_header": f"{switch} NVUE applied (Cumulus Linux {release})",
                "after_header": f"{switch} storage fabric plan",
            }
        if module.check_mode and result["changed"]:
            module.exit_json(**result)  # only GETs were made; nothing to verify against yet
        if changes:
            revision = client.create_revision()
            result["revision"] = revision
            client.patch(revision, want)
            try:
                result["state"] = client.apply(revision, timeout=params["apply_timeout"], confirm=params["takeover"])
            except NvueRejected as exc:
                result["state"] = exc.state
                module.fail_json(**rejected(client, switch, exc, applied, result))
            remaining = differences(want, normalise_vlans(client.get("/", rev="applied", filled=False) or {}))
            if remaining:
                module.fail_json(msg=f"NVUE reports revision {revision} applied, but the applied configuration still "
                                 f"differs from the plan: {'; '.join(remaining[:20])}", **result)
        if (changes or unsaved) and not nvue_apply_is_saved(release):
            client.save()
            result["saved"] = True
            unsaved_now = differences(want, normalise_vlans(client.get("/", rev="startup", filled=False) or {}))
            if unsaved_now:
                module.fail_json(msg=f"{switch}: NVUE accepted the save, but the startup configuration still differs "
                                 f"from the plan (lost at reboot): {'; '.join(unsaved_now[:20])}", **result)
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
                module.fail_json(msg=f"the operational state of {switch} does not match the inventory "
                                 f"({len(mismatches)} mismatch(es)):\n  " + "\n  ".join(mismatches), **result)
    except NvuePrompt as exc:
        module.fail_json(msg=f"{switch}: sn3700v_nvue_takeover=False: {exc}. NVUE asks before its first apply on a "
                         "switch, after files were changed outside NVUE, and before disruptive changes; confirming "
                         "rewrites /etc/network/interfaces and /etc/frr/frr.conf from NVUE's model and drops what was "
                         "configured by hand or by the files method. Nothing was applied. Fix: if NVUE is to own this "
                         "switch's configuration, set sn3700v_nvue_takeover: true for it; otherwise use "
                         "storage_fabric_method: files", **result)
    except NvueUnreachable as exc:
        module.fail_json(msg=f"{switch}: {exc}.{_unreachable_hint(expected)} Nothing was changed on this switch.",
                         **result)
    except NvueError as exc:
        module.fail_json(msg=f"{switch}: {exc}{_status_hint(exc, expected)}", **result)
    module.exit_json(**result)


def rejected(client: NvueClient, switch: str, exc: NvueRejected, applied: dict, result: dict) -> dict:
    """The failure of a revision the switch refused: whether its applied configuration is still the one read before
    the run (read back), so that nothing is reported as applied that was not, and what to do."""
    try:
        now = normalise_vlans(client.get("/", rev="applied", filled=False) or {})
    except NvueError as read_exc:
        return {**result, "changed": True,
                "msg": f"{switch}: {exc}. The applied configuration could not be read back ({read_exc}): check "
                       "`nv config diff applied` and `nv config history` on the switch before running the fabric "
                       "stage again"}
    if now == applied:
        return {**result, "changed": False,
                "msg": f"{switch}: {exc}. Nothing was applied: the switch refused the revision as a whole and its "
                       "applied configuration is unchanged (read back). Fix what the switch names (the inventory's "
                       "storage_nics, storage_fabric.yml) and run the fabric stage again"}
    return {**result, "changed": True,
            "msg": f"{switch}: {exc}. The applied configuration changed nevertheless (read back: "
                   f"{'; '.join(differences(now, applied)[:20]) or 'outside the subtree the role owns'}): check "
                   "`nv config history` on the switch, fix what it names and run the fabric stage again"}


def _release(module: AnsibleModule, client: NvueClient, switch: str, expected: Release | None) -> Release:
    """The release the switch reports (GET /nvue_v1/system), checked against the inventory's."""
    system = client.get("/system") or {}
    try:
        release = release_from_nvue_system(system)
    except ReleaseError as exc:
        module.fail_json(msg=f"{switch}: {exc}. Nothing was changed on this switch.")
    if expected is not None and expected.line != release.line:
        module.fail_json(msg=f"{switch}: sn3700v_cumulus_release={str(expected)!r} but the switch runs Cumulus Linux "
                         f"{release}. Fix: set sn3700v_cumulus_release: {release} (or upgrade the switch). Nothing "
                         "was changed on this switch.", release=str(release))
    if not known(release):
        module.fail_json(msg=f"{switch}: Cumulus Linux {release} is outside the releases this role models "
                         f"({OLDEST[0]}.{OLDEST[1]}-{NEWEST[0]}.{NEWEST[1]}). Fix: check its NVUE changes against "
                         "module_utils/cumulus_release.py first. Nothing was changed on this switch.",
                         release=str(release))
    return release


def _unreachable_hint(expected: Release | None) -> str:
    if expected is not None and nvue_api_default_listen(expected) == "localhost":
        return (f" Cumulus Linux {expected} serves the NVUE API on localhost only until nginx's nvue.conf listens on "
                "the management address (see roles/sn3700v/README.md, switch prerequisites).")
    return ""


def _status_hint(exc: NvueError, expected: Release | None) -> str:
    if exc.status == 403 and (expected is None or nvue_password_gate(expected)):
        return (". From Cumulus Linux 5.6 the API answers 403 until the cumulus user's default password has been "
                "changed: change it on the switch (passwd) and put the new one in storage_fabric_password")
    return ""


if __name__ == "__main__":
    main()
