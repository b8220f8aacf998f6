#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Live state of an MLNX-OS InfiniBand switch (QM8700), and its check against a declared state."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mlnxos_facts
short_description: Read and verify the live state of an NVIDIA MLNX-OS InfiniBand switch (QM8700)
description:
  - Reads the live state over the MLNX-OS JSON API or the SSH CLI (C(show version), C(show running-config),
    C(show system profile), C(show ib sm), C(show interfaces ib), C(show ib partition), C(show ntp configured),
    C(show ib smnode HOST sm-priority|sm-running|ha-role|ha-state)) and returns it parsed. Sends no
    configuration command.
  - With I(verify), checks the live state against a declared state (the options of M(mlnxos_fabric)); every
    declared setting in place, ports that have a link running at the declared speed and line rate, and the
    subnet manager in its designed state (C(show ib smnode HOST sm-running) and C(ha-role) report master or standby). The mismatches are returned;
    an output that cannot be parsed fails the task.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  verify:
    description:
      - Declared state to check the live state against; same keys as the options of M(mlnxos_fabric)
        (C(hostname), C(sm) with C(role), C(ports), C(partitions), C(ntp_servers), C(syslog_servers)).
    type: dict
extends_documentation_fragment:
  - mlnxos_api
  - module_attributes.reads
  - ansible.builtin.action_common_attributes
seealso:
  - module: mlnxos_fabric
  - name: Role qm8700
    link: roles/qm8700/README.md
    description: The InfiniBand fabric role.
"""

EXAMPLES = r"""
- name: Read the live state and check it against the inventory
  mlnxos_facts:
    api_host: "{{ qm8700_api_host }}"
    api_user: admin
    api_password: "{{ qm8700_api_password }}"
    verify:
      sm: {enabled: true, priority: 15, role: master}
      ports:
        - {range: "1/1-1/16", speed: hdr, split: "none", description: DGX A100 compute HCAs}
  register: qm8700_live

- name: Fail on any mismatch
  ansible.builtin.assert:
    that: qm8700_live.mismatches | length == 0
    fail_msg: "{{ qm8700_live.mismatches }}"
"""

RETURN = r"""
facts:
  description: The parsed live state.
  returned: always
  type: dict
  contains:
    hostname:
      description: Switch hostname.
      type: str
    version:
      description: MLNX-OS release.
      type: str
    sm_enabled:
      description: Whether the SM is enabled.
      type: bool
    sm_priority:
      description: Configured SM priority.
      type: int
    sm_state:
      description: The SM node's HA role (C(show ib smnode HOST ha-role)) when its SM runs, else C(disabled)
        or C(not running).
      type: str
    sm_running:
      description: C(show ib smnode HOST sm-running).
      type: bool
    sm_ha_role:
      description: C(show ib smnode HOST ha-role).
      type: str
    sm_ha_state:
      description: C(show ib smnode HOST ha-state).
      type: str
    sm_node_priorities:
      description: Every C(ib smnode NAME sm-priority N) of the running configuration (a renamed switch keeps
        its old node's entry).
      type: dict
    system_profile:
      description: C(show system profile) (C(split-ready) is needed for splits).
      type: str
    ports:
      description: Per port - admin state, configured speeds, description, module type (from the running
        configuration), link and active speed (from C(show interfaces ib)).
      type: dict
    partitions:
      description: Per partition - pkey, IPoIB, IB MTU.
      type: dict
    ntp_servers:
      description: Configured NTP servers.
      type: list
    syslog_servers:
      description: Configured remote syslog servers.
      type: list
mismatches:
  description: With I(verify), every difference between the declared and the live state (empty when it matches).
  returned: always
  type: list
  elements: str
ports_up:
  description: With I(verify), the declared ports that have a link.
  returned: always
  type: list
  elements: str
transport:
  description: The transport actually used.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.mlnxos_client import (  # noqa: E402
    CONNECTION_ARGUMENT_SPEC,
    MlnxosError,
    switch_from_params,
    switch_label,
)
from ansible.module_utils.mlnxos_fabric import (  # noqa: E402
    ParseError,
    check_desired,
    read_live_state,
    verify,
)


def argument_spec() -> dict:
    spec = dict(CONNECTION_ARGUMENT_SPEC)
    spec["verify"] = {"type": "dict"}
    return spec


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    desired = None
    expected_sm = None
    if params["verify"] is not None:
        desired, errors = check_desired(params["verify"])
        if errors:
            module.fail_json(msg="invalid verify input: " + "; ".join(e.render() for e in errors))
        expected_sm = (params["verify"].get("sm") or {}).get("role")
    switch = switch_from_params(params)
    try:
        live = read_live_state(switch.run)
    except (MlnxosError, ParseError) as exc:
        module.fail_json(msg=f"{switch_label(params)}: {exc}")
    finally:
        for warning in switch.warnings:
            module.warn(warning)
        switch.close()
    result = {"changed": False, "facts": live.to_facts(), "transport": switch.transport_name,
              "mismatches": [], "ports_up": []}
    if desired is not None:
        result["mismatches"] = verify(desired, live, expected_sm)
        declared = [p.name for cage in desired.cages for p in cage.ports]
        result["ports_up"] = [n for n in declared if n in live.ports and live.ports[n].oper_up]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
