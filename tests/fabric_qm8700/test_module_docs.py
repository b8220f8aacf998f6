"""The mlnxos_* modules document the switch connection options once, in the doc fragment
plugins/doc_fragments/mlnxos_api.py, and each module's documentation (its own options plus the fragment's)
matches the argument_spec it accepts: names, types, elements, required, defaults, choices, suboptions.
ansible-doc, run the way an engineer runs it, must resolve the fragment through ansible.cfg."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.module_utils.mlnxos_client import CONNECTION_ARGUMENT_SPEC

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
FRAGMENT = "mlnxos_api"
MODULES = ["mlnxos_fabric", "mlnxos_facts"]


def _fragment_options() -> dict[str, Any]:
    path = ROOT / "plugins" / "doc_fragments" / f"{FRAGMENT}.py"
    spec = importlib.util.spec_from_file_location(f"doc_fragment_{FRAGMENT}", path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    fragment = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fragment)
    return yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION)["options"]


def _spec_mismatches(where: str, documented: dict[str, Any], accepted: dict[str, Any]) -> list[str]:
    """Every difference between documented options and an argument_spec, recursing into suboptions."""
    problems = []
    if set(documented) != set(accepted):
        problems.append(f"{where}: documented {sorted(documented)} but accepts {sorted(accepted)}")
    for key in sorted(set(documented) & set(accepted)):
        doc, arg = documented[key], accepted[key]
        for field, fallback in (("type", "str"), ("elements", None), ("default", None), ("choices", None),
                                ("required", False)):
            if doc.get(field, fallback) != arg.get(field, fallback):
                problems.append(f"{where}.{key}: {field} documented {doc.get(field, fallback)!r}, "
                                f"accepted {arg.get(field, fallback)!r}")
        if "options" in arg:
            problems += _spec_mismatches(f"{where}.{key}", doc.get("suboptions", {}), arg["options"])
    return problems


def test_fragment_documents_the_shared_argument_spec():
    fragment = _fragment_options()
    assert _spec_mismatches(FRAGMENT, fragment, CONNECTION_ARGUMENT_SPEC) == []
    assert CONNECTION_ARGUMENT_SPEC["password"]["no_log"] is True
    # TLS and SSH host keys are verified unless the inventory explicitly opts out.
    for key in ("validate_certs", "ssh_host_key_checking"):
        assert CONNECTION_ARGUMENT_SPEC[key]["default"] is True
        assert fragment[key]["default"] is True


@pytest.mark.parametrize("name", MODULES)
def test_module_uses_the_fragment_and_matches_its_argument_spec(name):
    module = importlib.import_module(name)
    doc = yaml.safe_load(module.DOCUMENTATION)
    yaml.safe_load(module.EXAMPLES)
    yaml.safe_load(module.RETURN)
    fragment = _fragment_options()
    assert FRAGMENT in doc.get("extends_documentation_fragment", []), f"{name} does not extend {FRAGMENT}"
    redefined = sorted(set(doc["options"]) & set(fragment))
    assert redefined == [], f"{name} redefines the fragment's options {redefined}"
    spec = module.argument_spec()
    assert _spec_mismatches(name, {**fragment, **doc["options"]}, spec) == []
    assert spec["password"]["no_log"] is True
    assert spec["validate_certs"]["default"] is True
    assert spec["ssh_host_key_checking"]["default"] is True


@pytest.mark.parametrize("name", MODULES)
def test_ansible_doc_resolves_the_fragment(name):
    proc = subprocess.run([str(VENV_BIN / "ansible-doc"), "-M", "library", "-j", name],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    options = json.loads(proc.stdout)[name]["doc"]["options"]
    fragment = _fragment_options()
    for key, documented in fragment.items():
        assert options.get(key) == documented, f"ansible-doc {name}: option {key} is not the fragment's"
    module_options = yaml.safe_load(importlib.import_module(name).DOCUMENTATION)["options"]
    assert set(options) == set(fragment) | set(module_options)
