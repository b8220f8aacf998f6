# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Documentation fragment: the OneFS Platform API connection options of every powerscale_* module.

The connection options, the note that it runs on the control node and the C(platform) attribute of every
powerscale_* module live here. A module takes it with ``extends_documentation_fragment: [onefs_api]``; ansible.cfg names plugins/doc_fragments
as ``doc_fragment_plugins`` so that ansible-doc and every Ansible run find it. The options themselves are accepted
through ONEFS_ARGUMENT_SPEC in module_utils/onefs.py; tests/powerscale/test_module_docs.py keeps the two in step.
"""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  api_host:
    description: Address or name of the cluster's Platform API (any node, or the SmartConnect service IP).
    type: str
    required: true
  api_port:
    description: HTTPS port of the Platform API.
    type: int
    default: 8080
  api_user:
    description: OneFS user with the RBAC privileges the module needs (for example ISI_PRIV_NFS, ISI_PRIV_QUOTA).
    type: str
    required: true
  api_password:
    description: Password of O(api_user). Never logged or returned.
    type: str
    required: true
  validate_certs:
    description:
      - Verify the cluster's TLS certificate. Turning this off is an explicit, visible choice;
        prefer O(ca_path).
    type: bool
    default: true
  ca_path:
    description: PEM bundle of the CA that signs the cluster's certificate (default is the system store).
    type: path
  timeout:
    description: Seconds to wait for one HTTP request.
    type: int
    default: 30
    aliases: [api_timeout]
  api_retries:
    description: Retries after an HTTP 5xx answer or a connection error (never after a 4xx).
    type: int
    default: 4
  api_retry_backoff:
    description: First pause between retries in seconds; it doubles on each retry (at most 30 s).
    type: float
    default: 1.0
notes:
  - "Runs on the control node (C(delegate_to: localhost)); it needs only the Python standard library."
seealso:
  - name: Role powerscale
    link: roles/powerscale/README.md
    description: The PowerScale role and its inventory variables.
attributes:
  platform:
    support: full
    platforms: onefs
    details: The OneFS Platform API (/platform and /namespace), from the control node.
"""

    # The modules that change the cluster (directory, export, pool, quota); each adds its own diff details.
    # (with module_attributes.changes, which says the support levels)
    CHANGES = r"""
attributes:
  check_mode:
    details: Nothing that changes the cluster is sent in check mode.
"""

    # The read-only modules (access, info).
    # (with module_attributes.reads)
    READS = r"""
attributes:
  check_mode:
    details: Read-only (GET requests and the session login and logout).
"""
