#!/usr/bin/python
"""Check a Cumulus/ifupdown2 switch's live state against the storage-fabric plan."""

from __future__ import annotations

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.cumulus_live import compare

DOCUMENTATION = r"""
---
module: cumulus_fabric_verify
short_description: Verify the live bridge, ports, MTU and CLAG state of an SN3700V against the storage-fabric plan
description:
  - Reads the kernel's view of the switch, not its configuration files, with C(ip -d -j link show),
    C(ip -j addr show dev lo), C(bridge -j vlan show) and, when the plan has a CLAG peerlink, C(clagctl -j).
  - Checks that the bridge exists and is VLAN-aware; that every fabric port exists, is a member of the bridge,
    has the plan's MTU, is up and has its storage VLAN as untagged PVID (and nothing else); that uplinks carry every
    storage VLAN; that the peerlink bond has its members and the CLAG peer is alive in the expected role; that the
    loopback address is on lo.
  - Retries for up to I(wait_seconds) (links and CLAG take a moment after C(ifreload -a)), then fails with every
    mismatch, each naming the interface, what was expected and what the switch reports.
  - Read-only; runs in check mode too.
version_added: "0.1.0"
author: powerscale-dgx-ra
options:
  plan:
    description: The plan returned by M(cumulus_fabric_plan).
    type: dict
    required: true
  require_link_up:
    description: Whether every fabric port must be up (a powered-off host makes this fail, on purpose).
    type: bool
    default: true
  wait_seconds:
    description: How long to keep retrying before reporting the mismatches.
    type: int
    default: 30
  repair_command:
    description:
      - Command that re-applies the configuration files (C(ifreload -a)) when the live state differs although the
        files are right (a reload that failed earlier, a change made by hand with C(ip link)). Run once, then the
        state is checked again; the task then reports changed. In check mode it is not run and the task reports
        changed with the mismatches it would repair. Empty to only report.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Verify the live state
  cumulus_fabric_verify:
    plan: "{{ sn3700v_plan }}"
    wait_seconds: 60
"""

RETURN = r"""
mismatches:
  description: Differences between the plan and the live state (empty on success).
  returned: always
  type: list
  elements: str
checked:
  description: Interfaces that were checked.
  returned: always
  type: list
  elements: str
repaired:
  description: Mismatches that the repair command fixed (empty when none was needed).
  returned: always
  type: list
  elements: str
"""


def _json(module: AnsibleModule, args: list[str], required: bool = True):
    rc, out, err = module.run_command(args)
    if rc != 0:
        if not required:
            return None
        module.fail_json(msg=f"{' '.join(args)} failed (rc={rc}): {err.strip() or out.strip()}", rc=rc)
    try:
        return json.loads(out or "null")
    except ValueError as exc:
        module.fail_json(msg=f"{' '.join(args)} printed no JSON ({exc}): {out[:500]}")
    return None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "plan": {"type": "dict", "required": True},
            "require_link_up": {"type": "bool", "default": True},
            "wait_seconds": {"type": "int", "default": 30},
            "repair_command": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    plan = module.params["plan"]
    repair = module.params["repair_command"]
    # With a repair at hand, do not wait long for a state that a reload would fix anyway.
    first_wait = min(module.params["wait_seconds"], 10) if repair else module.params["wait_seconds"]
    mismatches = _mismatches(module, plan, first_wait)
    repaired: list[str] = []
    if mismatches and repair and module.check_mode:
        module.exit_json(changed=True, mismatches=mismatches, repaired=[],
                         msg=f"would run `{repair}` to repair: " + "; ".join(mismatches))
    if mismatches and repair:
        rc, out, err = module.run_command(repair, use_unsafe_shell=False)
        if rc != 0:
            module.fail_json(msg=f"the live state differed ({'; '.join(mismatches)}) and `{repair}` failed (rc={rc}): "
                             f"{(err or out).strip()}", mismatches=mismatches)
        repaired = mismatches
        mismatches = _mismatches(module, plan, module.params["wait_seconds"])
    checked = [p["name"] for p in plan.get("ports", [])] + [u["name"] for u in plan.get("uplinks", [])]
    if mismatches:
        module.fail_json(
            msg=f"the live state of {plan.get('switch')} does not match the inventory ({len(mismatches)} "
            "mismatch(es)):\n  " + "\n  ".join(mismatches),
            mismatches=mismatches,
            checked=checked,
            repaired=repaired,
        )
    module.exit_json(changed=bool(repaired), mismatches=[], checked=checked, repaired=repaired)


def _mismatches(module: AnsibleModule, plan: dict, wait_seconds: int) -> list[str]:
    deadline = time.monotonic() + max(0, wait_seconds)
    while True:
        ip_link = _json(module, ["ip", "-d", "-j", "link", "show"])
        bridge_vlan = _json(module, ["bridge", "-j", "vlan", "show"])
        lo_addr = _json(module, ["ip", "-j", "addr", "show", "dev", "lo"])
        clag = None
        if plan.get("peerlink"):
            clagctl = module.get_bin_path("clagctl")
            if clagctl is None:
                module.fail_json(msg="the plan has a CLAG peerlink but clagctl is not installed on this switch")
            clag = _json(module, [clagctl, "-j"], required=False)
        mismatches = compare(plan, ip_link, bridge_vlan, lo_addr, clag, module.params["require_link_up"])
        if not mismatches or time.monotonic() >= deadline:
            return mismatches
        time.sleep(2)


if __name__ == "__main__":
    main()
