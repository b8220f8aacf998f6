"""Modules that share connection options document them once, in a doc fragment under plugins/doc_fragments/
(onefs_api for the powerscale_* modules, mlnxos_api for the mlnxos_* modules), and each module's documentation
(its own options plus the fragment's) matches the argument_spec it accepts: names, types, elements, required,
defaults, choices, suboptions. ansible-doc, run the way an engineer runs it, must resolve the fragment through
ansible.cfg. Secrets are no_log, and TLS (and SSH host keys) are verified unless the inventory opts out.
The three API families (OneFS, MLNX-OS, NVUE) name their connection options alike; older names stay as aliases."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.mlnxos_client import CONNECTION_ARGUMENT_SPEC as MLNXOS_SPEC
from ansible.module_utils.onefs import ONEFS_ARGUMENT_SPEC

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Family:
    fragment: str
    spec: dict[str, dict[str, Any]]
    modules: tuple[str, ...]
    secret: str                    # the option that must be no_log
    verified: tuple[str, ...]      # options that must default to true (TLS, SSH host keys)


FAMILIES = (
    Family("onefs_api", ONEFS_ARGUMENT_SPEC,
           ("powerscale_nfs_export", "powerscale_quota", "powerscale_directory", "powerscale_info",
            "powerscale_network_pool", "powerscale_access"), "api_password", ("validate_certs",)),
    Family("mlnxos_api", MLNXOS_SPEC, ("mlnxos_fabric", "mlnxos_facts"), "api_password",
           ("validate_certs", "ssh_host_key_checking")),
)
MODULES = [pytest.param(f, m, id=m) for f in FAMILIES for m in f.modules]


def _fragment_options(fragment: str) -> dict[str, Any]:
    return _fragment_doc(fragment)["options"]


def _fragment_doc(fragment: str) -> dict[str, Any]:
    path = ROOT / "plugins" / "doc_fragments" / f"{fragment}.py"
    spec = importlib.util.spec_from_file_location(f"doc_fragment_{fragment}", path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    fragment = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fragment)
    return yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION)


def _spec_mismatches(where: str, documented: dict[str, Any], accepted: dict[str, Any]) -> list[str]:
    """Every difference between documented options and an argument_spec, recursing into suboptions."""
    problems = []
    if set(documented) != set(accepted):
        problems.append(f"{where}: documented {sorted(documented)} but accepts {sorted(accepted)}")
    for key in sorted(set(documented) & set(accepted)):
        doc, arg = documented[key], accepted[key]
        for field, fallback in (("type", "str"), ("elements", None), ("default", None), ("choices", None),
                                ("required", False), ("aliases", None)):
            if doc.get(field, fallback) != arg.get(field, fallback):
                problems.append(f"{where}.{key}: {field} documented {doc.get(field, fallback)!r}, "
                                f"accepted {arg.get(field, fallback)!r}")
        if "options" in arg:
            problems += _spec_mismatches(f"{where}.{key}", doc.get("suboptions", {}), arg["options"])
    return problems


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.fragment)
def test_fragment_documents_the_shared_argument_spec(family):
    fragment = _fragment_options(family.fragment)
    assert _spec_mismatches(family.fragment, fragment, family.spec) == []
    assert family.spec[family.secret]["no_log"] is True
    for key in family.verified:
        assert family.spec[key]["default"] is True and fragment[key]["default"] is True, key


@pytest.mark.parametrize(("family", "name"), MODULES)
def test_module_uses_the_fragment_and_matches_its_argument_spec(family, name):
    module = importlib.import_module(name)
    doc = yaml.safe_load(module.DOCUMENTATION)
    yaml.safe_load(module.EXAMPLES)
    yaml.safe_load(module.RETURN)
    fragment = _fragment_options(family.fragment)
    assert family.fragment in doc.get("extends_documentation_fragment", []), f"{name} does not extend {family.fragment}"
    redefined = sorted(set(doc["options"]) & set(fragment))
    assert redefined == [], f"{name} redefines the fragment's options {redefined}"
    spec = module.argument_spec()
    assert _spec_mismatches(name, {**fragment, **doc["options"]}, spec) == []
    assert spec[family.secret]["no_log"] is True
    for key in family.verified:
        assert spec[key]["default"] is True, (name, key)


@pytest.mark.parametrize(("family", "name"), MODULES)
def test_ansible_doc_resolves_the_fragment(family, name):
    proc = subprocess.run([str(VENV_BIN / "ansible-doc"), "-M", "library", "-j", name],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)[name]["doc"]
    options = doc["options"]
    fragment = _fragment_options(family.fragment)
    for key, documented in fragment.items():
        assert options.get(key) == documented, f"ansible-doc {name}: option {key} is not the fragment's"
    whole = _fragment_doc(family.fragment)
    for key, documented in (whole.get("attributes") or {}).items():
        # the fragment's entry, as it wrote it (ansible.builtin.action_common_attributes adds the description)
        shown = {k: v for k, v in (doc["attributes"].get(key) or {}).items() if k in documented}
        assert shown == documented, f"ansible-doc {name}: attribute {key} is not the fragment's"
    for note in whole.get("notes") or []:
        assert doc["notes"].count(note) == 1, f"ansible-doc {name}: the fragment's note {note!r} is not there once"
    module_options = yaml.safe_load(importlib.import_module(name).DOCUMENTATION)["options"]
    assert set(options) == set(fragment) | set(module_options)


# One connection vocabulary for the three API families; the names each used before are aliases.
CONNECTION_OPTIONS = ("api_host", "api_port", "api_user", "api_password", "validate_certs", "ca_path", "timeout")
FORMER_NAMES = {
    "onefs": {"api_timeout": "timeout"},
    "mlnxos": {"username": "api_user", "password": "api_password"},
    "nvue": {"host": "api_host", "port": "api_port", "user": "api_user", "password": "api_password",
             "request_timeout": "timeout"},
}


def _connection_specs() -> dict[str, dict[str, dict[str, Any]]]:
    return {"onefs": ONEFS_ARGUMENT_SPEC, "mlnxos": MLNXOS_SPEC,
            "nvue": importlib.import_module("nvue_fabric").argument_spec()}


@pytest.mark.parametrize("family", sorted(FORMER_NAMES))
def test_api_families_share_the_connection_vocabulary(family):
    spec = _connection_specs()[family]
    assert [name for name in CONNECTION_OPTIONS if name not in spec] == [], f"{family} lacks connection options"
    assert spec["api_password"]["no_log"] is True and spec["validate_certs"]["default"] is True
    assert spec["timeout"]["type"] == "int"


@pytest.mark.parametrize("family", sorted(FORMER_NAMES))
def test_former_option_names_still_work(family):
    """A task written with the old names (a site's own playbook) gets the same values under the new ones."""
    spec = _connection_specs()[family]
    old = {former: 7 if spec[new]["type"] == "int" else f"value of {former}"
           for former, new in FORMER_NAMES[family].items()}
    required = {name: "x" for name, option in spec.items() if option.get("required") and name not in
                FORMER_NAMES[family].values()}
    if family == "nvue":
        required["plan"] = {}
    result = ArgumentSpecValidator(spec).validate({**required, **old})
    assert result.error_messages == []
    for former, new in FORMER_NAMES[family].items():
        assert result.validated_parameters[new] == old[former], (family, former, new)


def test_nvue_fabric_documents_its_argument_spec():
    """nvue_fabric has no fragment (one module in its family): its own documentation matches its spec."""
    module = importlib.import_module("nvue_fabric")
    assert _spec_mismatches("nvue_fabric", yaml.safe_load(module.DOCUMENTATION)["options"], module.argument_spec()) == []
