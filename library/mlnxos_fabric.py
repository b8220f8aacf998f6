#!/usr/bin/python
# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Declarative configuration of an MLNX-OS InfiniBand switch (QM8700) through its JSON API or SSH CLI."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mlnxos_fabric
short_description: Declarative configuration of an NVIDIA MLNX-OS InfiniBand switch (QM8700)
description:
  - Brings an MLNX-OS switch to a declared state, idempotently, over the MLNX-OS JSON API
    (C(POST /admin/launch?script=rh&template=login&action=login) with C(f_user_id)/C(f_password), then
    C(POST /admin/launch?script=json) with a JSON list of commands, checking each command's status), or over the
    SSH CLI (C(enable), C(configure terminal), errors are lines starting with C(%)).
  - Reads the live state first (C(show version), C(show running-config) - the home of admin state, configured
    speeds, descriptions, splits, SM node priorities and remote syslog servers -, C(show system profile),
    C(show ib sm), C(show interfaces ib), C(show ib partition), C(show ntp configured), then
    C(show ib smnode HOST sm-priority|sm-running|ha-role|ha-state)) and sends only the difference, interface
    settings inside C(interface ib P) ... C(exit). When every change came back OK, C(configuration write) is sent
    in a request of its own.
  - A declared split (C(module-type qsfp-split-2)) needs the C(split-ready) system profile; without it the task
    fails before any command is sent, naming the prerequisite.
  - Covers the hostname, the subnet manager (enabled, priority), HDR port speeds, splits, descriptions and admin
    state, partitions (pkey, IPoIB, IB MTU from the IPoIB MTU), NTP and remote syslog servers.
  - Never removes what the input does not declare; undeclared ports and partitions are untouched, undeclared NTP
    and syslog servers are kept (and reported as C(unmanaged)) unless I(purge=true).
  - The whole input is checked before the switch is contacted; every problem is reported at once.
  - In check mode only C(show) commands are sent; the diff shows what would change.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  hostname:
    description: Switch hostname. Left as is when omitted.
    type: str
  sm:
    description: The switch's subnet manager. Left as is when omitted.
    type: dict
    suboptions:
      enabled:
        description: Run the SM (C(ib sm)).
        type: bool
        default: true
      priority:
        description: SM priority 0-15 (C(ib sm sm-priority N); the running configuration stores it as
          C(ib smnode HOST sm-priority N)); the highest enabled SM of the subnet is elected master.
        type: int
      role:
        description: The designed role (C(master) or C(standby)); used by M(mlnxos_facts) to verify the election.
          C(none) (with O(sm.enabled=false)) runs no SM on this switch.
        type: str
        choices: [master, standby, none]
  ports:
    description: Ports to manage; other ports are not touched.
    type: list
    elements: dict
    suboptions:
      range:
        description: C(1/N), C(1/N-1/M) or a comma-separated list of those (QM8700 ports 1/1 to 1/40).
        type: str
        required: true
      speed:
        description: The one speed to enable (C(interface ib P speed SPEED force)). C(hdr) is 200 Gb/s, or
          100 Gb/s (HDR100) on a split port; C(hdr100) is accepted for a split port and sent as C(hdr).
        type: str
        choices: [sdr, qdr, fdr, edr, hdr, hdr100]
        default: hdr
      split:
        description: C(none) for one 4X port, C(2) to split it into 1/N/1 and 1/N/2 (module-type qsfp-split-2).
        type: str
        choices: ["none", "2"]
        default: "none"
      description:
        description: Port description (64 characters at most, no double quotes).
        type: str
      enabled:
        description: Administrative state of the port(s).
        type: bool
        default: true
  partitions:
    description: Partitions to manage; others are untouched (reported as C(unmanaged)). A partition's pkey is
      never changed automatically.
    type: list
    elements: dict
    suboptions:
      name:
        description: Partition name; C(Default) has pkey 0x7fff.
        type: str
        required: true
      pkey:
        description: Partition key, hex string C(0x0001)-C(0x7fff).
        type: str
        required: true
      ipoib:
        description: Enable IPoIB on the partition.
        type: bool
        default: false
      ipoib_mtu:
        description: IPoIB MTU (252, 508, 1020, 2044 or 4092); the partition's IB MTU is set to this plus 4 bytes.
        type: int
  ntp_servers:
    description: NTP servers (IP addresses); NTP is enabled when the list is not empty.
    type: list
    elements: str
  syslog_servers:
    description: Remote syslog servers (IP addresses).
    type: list
    elements: str
  sm_peers:
    description:
      - Every switch of the subnet as C([name, role, priority]) (this one included). When given, the pair-wide
        rules are checked with the input - exactly one C(master), and no standby priority at or above the
        master's (the election would make that standby master).
    type: list
    elements: raw
  purge:
    description: Remove NTP and syslog servers that are not declared.
    type: bool
    default: false
  only_add_ports:
    description:
      - A day 2 scale-out (docs/scale-out.md, playbooks/scale_out.yml) - send the difference only when it does no
        more than add ports (C(interface ib) blocks without C(shutdown) or C(no) of a setting), and fail before
        sending anything otherwise, naming each command that would change the running fabric.
    type: bool
    default: false
  check_only:
    description: Only check the input and return it normalized; the switch is not contacted.
    type: bool
    default: false
    aliases: [validate_only]
  input_names:
    description: Names under which the caller knows the top-level options (for example C(ports) as C(qm8700_ports)), used
      in error messages so that they name the variable to fix.
    type: dict
    default: {}
extends_documentation_fragment:
  - mlnxos_api
  - module_attributes.changes
  - ansible.builtin.action_common_attributes
notes:
  - Runs on the control node (C(connection=local)); the switch needs no Python.
  - Requires C(paramiko) for the CLI transport.
seealso:
  - module: mlnxos_facts
  - name: Role qm8700
    link: roles/qm8700/README.md
    description: The InfiniBand fabric role and its inventory variables.
"""

EXAMPLES = r"""
- name: Configure the QM8700 pair
  mlnxos_fabric:
    api_host: "{{ qm8700_api_host }}"
    api_port: 443
    api_user: admin
    api_password: "{{ qm8700_api_password }}"
    ca_path: /etc/pki/site-ca.pem
    hostname: "{{ inventory_hostname }}"
    sm: {enabled: true, priority: 15, role: master}
    ports:
      - {range: "1/1-1/16", speed: hdr, split: "none", description: DGX A100 compute HCAs}
    partitions:
      - {name: Default, pkey: "0x7fff", ipoib: true, ipoib_mtu: 4092}
    ntp_servers: [192.0.2.123]
    syslog_servers: [192.0.2.124]

- name: Preview only
  mlnxos_fabric:
    api_host: 192.0.2.41
    api_user: admin
    api_password: "{{ qm8700_api_password }}"
    sm: {enabled: true, priority: 14}
  check_mode: true
  diff: true
"""

RETURN = r"""
changed:
  description: Whether configuration commands were sent (or would be, in check mode).
  returned: always
  type: bool
commands:
  description: The configuration commands sent (in check mode, those that would be sent), without C(configuration write).
  returned: always
  type: list
  elements: str
  sample: ["ib sm sm-priority 15", "ib sm", "interface ib 1/1", "speed hdr force", "exit"]
saved:
  description: Whether C(configuration write) was run.
  returned: always
  type: bool
transport:
  description: The transport actually used (C(json api) or C(ssh cli)).
  returned: when the switch was contacted
  type: str
unmanaged:
  description: Settings found on the switch that the input does not declare and that were left alone.
  returned: always
  type: dict
  sample: {partitions: [storage], ntp_servers: [192.0.2.200], sm_nodes: [old-hostname]}
desired:
  description: The checked, normalized input.
  returned: always
  type: dict
applied:
  description: When a configuration command fails, the commands before it that are still in the running
    configuration (unsaved) because undoing them failed or could not be verified; empty when the running
    configuration reads back as before the run.
  returned: on a rejected configuration command
  type: list
  elements: str
undone:
  description: When a configuration command fails, the commands the switch had accepted before it, which were
    undone (their inverses sent, the running configuration read back as before the run).
  returned: on a rejected configuration command that was undone
  type: list
  elements: str
undo:
  description: The inverse commands computed for the accepted commands, when undoing them did not restore the
    running configuration.
  returned: on a rejected configuration command that could not be undone
  type: list
  elements: str
diff:
  description: Before and after of the managed settings, one per line.
  returned: when diff mode is on
  type: dict
"""

from dataclasses import asdict  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.mlnxos_client import (  # noqa: E402
    CONNECTION_ARGUMENT_SPEC,
    MlnxosCommandError,
    MlnxosError,
    switch_from_params,
    switch_label,
)
from ansible.module_utils.mlnxos_fabric import (  # noqa: E402
    ParseError,
    check_desired,
    check_sm_pair,
    inventory_problems,
    peers_from_param,
    plan,
    read_live_state,
    render_state,
    undo_commands,
)
from ansible.module_utils.scale_plan import ib_commands_problems  # noqa: E402


def argument_spec() -> dict:
    spec = dict(CONNECTION_ARGUMENT_SPEC)
    spec.update(
        hostname={"type": "str"},
        sm={"type": "dict"},
        ports={"type": "list", "elements": "dict"},
        partitions={"type": "list", "elements": "dict"},
        ntp_servers={"type": "list", "elements": "str"},
        syslog_servers={"type": "list", "elements": "str"},
        sm_peers={"type": "list", "elements": "raw"},
        purge={"type": "bool", "default": False},
        check_only={"type": "bool", "default": False, "aliases": ["validate_only"]},
        only_add_ports={"type": "bool", "default": False},
        input_names={"type": "dict", "default": {}},
    )
    return spec


def refused(switch, params: dict, desired, live, todo, exc: MlnxosCommandError, result: dict) -> dict:
    """The failure of a plan the switch refused part-way: the commands it accepted before are undone (their
    inverses, from the state read before the run), the running configuration is read back and compared with it,
    and only what is still changed is reported as applied. Nothing is saved either way."""
    label = switch_label(params)
    applied = todo.commands[:exc.index]
    undo = undo_commands(applied, live)
    fix = "Fix what the switch names and run the fabric stage again"
    commands = (["exit"] if undo.left_in_interface and switch.transport_name == "ssh cli" else []) + undo.commands
    problem = ""
    try:
        if commands:
            switch.run(commands)
        back = plan(desired, read_live_state(switch.run)).before
    except (MlnxosError, ParseError) as undo_exc:
        problem = f"undoing them failed ({undo_exc})"
    else:
        if undo.not_undoable:
            problem = f"{len(undo.not_undoable)} of them have no inverse ({'; '.join(undo.not_undoable)})"
        elif back != todo.before:
            problem = "the running configuration does not read back as before the run"
    if not problem:
        done = (f"The {len(applied)} command(s) it accepted before were undone and the" if applied else
                "Nothing was applied: the")
        return {**result, "changed": False, "applied": [], "undone": applied,
                "msg": f"{label}: {exc}. {done} running configuration reads back as before the run; nothing was "
                       "saved. " + fix}
    return {**result, "changed": True, "applied": applied, "undo": undo.commands,
            "msg": f"{label}: {exc}. It had accepted {len(applied)} command(s) before ({'; '.join(applied)}), and "
                   f"{problem}: they are in the running configuration, not saved (no configuration write). Reload "
                   f"the switch to return to its saved configuration, or run the fabric stage again once fixed"}


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    desired, _unused = check_desired(params)
    rendered = [f"{p.variable} = {p.value!r}: {p.problem}. Fix: {p.fix}"
                for p in inventory_problems(switch_label(params), params, params["input_names"])]
    if params["sm_peers"] is not None:
        rendered.extend(check_sm_pair(peers_from_param(params["sm_peers"])))
    if not params["api_password"]:
        label = params["input_names"].get("api_password", "api_password")
        rendered.append(f"{label} is empty: the switch would refuse the login. Fix: give the password (vault or "
                        "environment)")
    if rendered:
        module.fail_json(msg=f"{switch_label(params)}: invalid input, nothing was sent to the switch: "
                         + "; ".join(rendered),
                         errors=rendered, changed=False)
    result = {"changed": False, "commands": [], "saved": False, "unmanaged": {}, "desired": asdict(desired)}
    if params["check_only"]:
        module.exit_json(**result)

    switch = switch_from_params(params)
    try:
        live = read_live_state(switch.run)
        todo = plan(desired, live)
        result["transport"] = switch.transport_name
        result["unmanaged"] = todo.unmanaged
        if todo.problems:
            module.fail_json(msg=f"{switch_label(params)}: the switch cannot take the declared state, nothing "
                             "was changed: "
                             + "; ".join(todo.problems), problems=todo.problems, **result)
        if params["only_add_ports"]:
            grow = ib_commands_problems(switch_label(params), todo.commands)
            if grow:
                module.fail_json(msg=f"{switch_label(params)}: a scale flow only adds ports, and this would change "
                                 "more, so nothing was sent:\n  " + "\n  ".join(grow), problems=grow,
                                 would_send=todo.commands, **result)
        result["commands"] = todo.commands
        result["changed"] = bool(todo.commands)
        if module._diff:
            result["diff"] = {"before": render_state(todo.before), "after": render_state(todo.after),
                              "before_header": f"{switch_label(params)} (running)",
                              "after_header": f"{switch_label(params)} (declared)"}
        if todo.commands and not module.check_mode:
            # Whether the switch stops a JSON batch at its first failing command is not documented: every result
            # is checked, and `configuration write` goes in its own request once every change came back OK.
            try:
                switch.run(todo.commands)
            except MlnxosCommandError as exc:
                module.fail_json(**refused(switch, params, desired, live, todo, exc, result))
            switch.run(["configuration write"])
            result["saved"] = True
    except (MlnxosError, ParseError) as exc:
        module.fail_json(msg=f"{switch_label(params)}: {exc}", **result)
    finally:
        for warning in switch.warnings:
            module.warn(warning)
        switch.close()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
