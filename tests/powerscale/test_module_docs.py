"""Every powerscale_* module documents the shared connection options exactly as module_utils/onefs.py
defines them, and its documented options match its argument_spec (names, types, defaults, no_log)."""

from __future__ import annotations

import importlib

import pytest
import yaml
from ansible.module_utils.onefs import ONEFS_ARGUMENT_SPEC, ONEFS_DOC_OPTIONS

MODULES = ["powerscale_nfs_export", "powerscale_quota", "powerscale_directory", "powerscale_info",
           "powerscale_network_pool"]


@pytest.mark.parametrize("name", MODULES)
def test_documentation_matches_argument_spec(name):
    module = importlib.import_module(name)
    doc = yaml.safe_load(module.DOCUMENTATION)
    yaml.safe_load(module.EXAMPLES)
    yaml.safe_load(module.RETURN)
    shared = yaml.safe_load(ONEFS_DOC_OPTIONS)
    for key, spec in shared.items():
        assert doc["options"][key] == spec, f"{name}: option {key} drifted from ONEFS_DOC_OPTIONS"
    spec = module.argument_spec()
    assert set(doc["options"]) == set(spec), f"{name}: documented and accepted options differ"
    for key, opt in spec.items():
        documented = doc["options"][key]
        assert documented.get("type", "str") == opt.get("type", "str"), (name, key)
        if "default" in opt and opt["default"] is not None:
            assert documented.get("default") == opt["default"], (name, key)
    assert spec["api_password"]["no_log"] is True
    assert ONEFS_ARGUMENT_SPEC["validate_certs"]["default"] is True
