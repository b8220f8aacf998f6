"""Shared pytest setup: project paths, and our module_utils importable as ansible.module_utils.<name>."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import ansible.module_utils

ROOT = Path(__file__).resolve().parent.parent

# Modules import their shared code as `ansible.module_utils.<name>`, the way Ansible ships it to targets.
# Tests import the same names, so extend that package's search path with the project's module_utils/.
if str(ROOT / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(ROOT / "module_utils"))
# The project root first: tests/lab/ must not shadow the real `lab` package.
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))
if str(ROOT / "library") not in sys.path:
    sys.path.insert(0, str(ROOT / "library"))

os.environ.setdefault("ANSIBLE_CONFIG", str(ROOT / "ansible.cfg"))
# Every ansible-playbook a test starts caches facts in a directory of this test session, never in the
# project's .cache/facts: a test's stand-in facts for dgx01 must not leak into a real run, nor the reverse.
os.environ.setdefault("ANSIBLE_CACHE_PLUGIN_CONNECTION", tempfile.mkdtemp(prefix="pytest-facts-"))
