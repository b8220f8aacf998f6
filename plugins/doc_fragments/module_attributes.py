# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""Documentation fragment: the C(attributes) that several modules of this bundle state alike.

A module names the variants it shares, for example ``extends_documentation_fragment: [module_attributes.changes,
module_attributes.switch_shell]``, and states under its own C(attributes:) only what is its own (a C(details) line
is merged into the fragment's entry by Ansible, attribute by attribute). The connection families keep theirs in
their own fragments: mlnxos_api (platform), onefs_api (platform, and the check and diff modes of its .changes and
.reads variants). tests/test_repo.py reads every module's attributes as ansible-doc resolves them.
Every module also names ``ansible.builtin.action_common_attributes``, last: Ansible's description of each attribute
(ansible-test validate-modules requires one). Last, because where two fragments state the same key the one merged
first wins.
"""


class ModuleDocFragment:
    # A module that changes its target and shows a diff of what it changes.
    CHANGES = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
"""

    # A module that only reads (facts, plans, input checks): nothing to diff.
    READS = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

    # The sn3700v files method's agentless modules (action plugins).
    SWITCH_SHELL = r"""
attributes:
  platform:
    support: full
    platforms: cumulus
    details: 'Agentless: runs on the control node (action plugin) and sends the switch plain shell commands over its SSH
      connection.'
"""

    # Plan modules: pure computation on their arguments, wherever the task runs.
    COMPUTATION = r"""
attributes:
  platform:
    support: full
    platforms: all
    details: Pure computation on the module's arguments; it reads nothing from the host it runs on and changes
      nothing there.
"""

    # Modules that run on the DGX node.
    DGX_HOST = r"""
attributes:
  platform:
    support: full
    platforms: posix
    details: The DGX OS (Ubuntu) host itself.
"""
