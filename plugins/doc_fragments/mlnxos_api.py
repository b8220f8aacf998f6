# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Documentation fragment: the switch connection options of the mlnxos_* modules (QM8700, MLNX-OS).

A module takes it with ``extends_documentation_fragment: [mlnxos_api]``; ansible.cfg names plugins/doc_fragments
as ``doc_fragment_plugins`` so that ansible-doc and every Ansible run find it. The options themselves are
accepted through CONNECTION_ARGUMENT_SPEC in module_utils/mlnxos_client.py;
tests/fabric_qm8700/test_module_docs.py keeps the two in step.
"""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  api_host:
    description: Management address of the switch.
    type: str
    required: true
  api_port:
    description: HTTPS port of the JSON API.
    type: int
    default: 443
  ssh_port:
    description: SSH port of the CLI (used with I(transport=cli) or I(cli_fallback=true)).
    type: int
    default: 22
  api_user:
    description: Management user.
    type: str
    required: true
    aliases: [username]
  api_password:
    description: Password of I(api_user). Never logged, never returned.
    type: str
    required: true
    aliases: [password]
  transport:
    description: C(json) for the MLNX-OS JSON API over HTTPS, C(cli) for the SSH CLI.
    type: str
    choices: [json, cli]
    default: json
  cli_fallback:
    description:
      - With I(transport=json), use the SSH CLI when the JSON API cannot be reached at all (connection refused,
        timeout). A refused login or a failed TLS verification never falls back.
    type: bool
    default: false
  validate_certs:
    description: Verify the switch's TLS certificate. Turn off only for a switch whose certificate cannot be fixed.
    type: bool
    default: true
  ca_path:
    description: PEM file of the CA that signed the switch's certificate (in addition to the system CAs).
    type: path
  timeout:
    description: Seconds to wait for the switch per request.
    type: int
    default: 30
  ssh_host_key_checking:
    description: Refuse an SSH host key that is not in the known hosts (system and I(ssh_known_hosts)).
    type: bool
    default: true
  ssh_known_hosts:
    description: known_hosts file for I(ssh_host_key_checking).
    type: path
  name:
    description: Name of the switch in messages (for example its inventory name); the address when omitted.
    type: str
attributes:
  platform:
    support: full
    platforms: mlnxos
    details: MLNX-OS, from the control node (JSON API or CLI over SSH); the switch needs no Python.
"""
