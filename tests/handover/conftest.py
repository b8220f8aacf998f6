"""Handover checks (testinfra) against the live DGX nodes of any inventory.

    pytest tests/handover --hosts=ansible://dgx --ansible-inventory=inventories/<site>

`--hosts` and `--ansible-inventory` are pytest-testinfra's own options; this conftest reads them, loads the
inventory with Ansible (templated variables, vault through ANSIBLE_VAULT_PASSWORD_FILE) and connects to each
matching host with testinfra's SSH backend. Without `--hosts` (the plain `pytest` of CI) nothing here is
collected, and the run's summary says so: these checks need live nodes, they are not unit tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from handover_inventory import USAGE, NodeSpec, hosts_option  # noqa: E402


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.resolve() != HERE and HERE in collection_path.resolve().parents and not hosts_option(config):
        config.stash.setdefault(_NOT_COLLECTED, True)
        return True
    return None


_NOT_COLLECTED = pytest.StashKey[bool]()


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if config.stash.get(_NOT_COLLECTED, False):
        terminalreporter.write_line(f"tests/handover: not collected (they check live nodes; no --hosts given). "
                                    f"Acceptance testers run: {USAGE}")


@pytest.fixture(scope="session")
def testinfra_hosts():
    """testinfra Host objects, one per DGX, created on first use."""
    import testinfra

    cache: dict[str, object] = {}

    def get(node: NodeSpec):
        if node.name not in cache:
            url, kwargs = node.connection_url()
            cache[node.name] = testinfra.get_host(url, **kwargs)
        return cache[node.name]

    return get
