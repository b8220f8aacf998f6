"""One description per variable: each role's meta/argument_specs.yml and preflight's schema agree.

The argument spec is the source of a variable's type, choices, required-ness and default; preflight's schema
(module_utils/preflight_schema.py) adds ranges and patterns the argument spec cannot say. For every variable
both describe, down to the nested options of a dict or a list of dicts, this test proves they agree:

- the Ansible type is the one the schema's spec checks (table TYPES);
- the choices are the same set;
- what a role requires, preflight requires (it would otherwise pass an inventory the role refuses);
- an argument-spec default equals the role's defaults/main.yml value (Ansible does not apply argument-spec
  defaults: defaults/main.yml is what the role runs with; a templated default is described in words).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.module_utils import preflight_schema as schema

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILES = sorted(ROOT.glob("roles/*/meta/argument_specs.yml"))

# Schema spec class -> the argument-spec types that describe the same values. Enum and OneOf carry no single
# type (their choices, or any of their options, decide); Any_ takes anything.
TYPES: dict[type, set[str]] = {
    schema.Bool: {"bool"},
    schema.Int: {"int"},
    schema.Number: {"float", "int"},
    schema.Str: {"str", "path"},
    schema.IP: {"str"},
    schema.Interface: {"str"},
    schema.Network: {"str"},
    schema.HostOrIP: {"str"},
    schema.Version: {"str"},
    schema.AbsPath: {"str", "path"},
    schema.ListOf: {"list"},
    schema.Dict: {"dict"},
    schema.MapOf: {"dict"},
}


def role_options() -> list[tuple[str, str, dict[str, Any]]]:
    """(role:entry point, variable, its argument spec) for every top-level option of every role."""
    out = []
    for path in SPEC_FILES:
        role = path.parents[1].name
        for entry, body in (yaml.safe_load(path.read_text())["argument_specs"] or {}).items():
            out += [(f"{role}:{entry}", name, opt) for name, opt in (body.get("options") or {}).items()]
    return out


def disagreements(path: str, spec: schema.Spec, opt: dict[str, Any]) -> list[str]:
    """Where the argument spec `opt` of `path` says something else than the schema's `spec`."""
    kind = opt.get("type", "str")
    out = []
    if isinstance(spec, schema.Enum):
        if {str(c) for c in spec.choices} != {str(c) for c in opt.get("choices") or []}:
            out.append(f"{path}: choices {opt.get('choices')} in the argument spec, {list(spec.choices)} in the schema")
        return out
    if opt.get("choices"):
        out.append(f"{path}: the argument spec restricts it to {opt['choices']}, the schema does not")
    allowed = TYPES.get(type(spec))
    if allowed is not None and kind not in allowed and kind != "raw":
        out.append(f"{path}: type {kind} in the argument spec, {type(spec).__name__} ({sorted(allowed)}) in the schema")
    sub_options = opt.get("options") or {}
    fields: dict[str, schema.Field] = {}
    if isinstance(spec, schema.Dict):
        fields = dict(spec.fields)
    elif isinstance(spec, schema.ListOf) and isinstance(spec.item, schema.Dict):
        fields = dict(spec.item.fields)
        if opt.get("elements") not in (None, "dict"):
            out.append(f"{path}: elements {opt.get('elements')} in the argument spec, dicts in the schema")
    for name in sorted(set(sub_options) & set(fields)):
        out += disagreements(f"{path}.{name}", fields[name].spec, sub_options[name])
        if sub_options[name].get("required") and not fields[name].required:
            out.append(f"{path}.{name}: required by the argument spec, optional in the schema")
    return out


def role_defaults(role: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for path in [ROOT / "roles" / role / "defaults" / "main.yml", *sorted(ROOT.glob(f"roles/{role}/defaults/main/*.yml"))]:
        if path.is_file():
            values.update(yaml.safe_load(path.read_text()) or {})
    return values


def test_the_argument_specs_and_the_schema_describe_shared_variables_alike():
    variables = {v.name: v for v in schema.VARIABLES}
    shared = [(where, name, opt) for where, name, opt in role_options() if name in variables]
    assert len({name for _, name, _ in shared}) >= 60, "the roles and preflight share most variables"
    problems = []
    for where, name, opt in shared:
        problems += [f"{where} {line}" for line in disagreements(name, variables[name].spec, opt)]
        if opt.get("required") and not variables[name].required:
            problems.append(f"{where} {name}: required by the role, optional in preflight's schema")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("spec_file", SPEC_FILES, ids=lambda p: p.parents[1].name)
def test_an_argument_spec_default_is_the_value_the_role_runs_with(spec_file):
    role = spec_file.parents[1].name
    defaults = role_defaults(role)
    entries = yaml.safe_load(spec_file.read_text())["argument_specs"]
    wrong = [f"{name}: argument spec {opt['default']!r}, defaults/main.yml {defaults[name]!r}"
             for body in entries.values() for name, opt in (body.get("options") or {}).items()
             if "default" in opt and name in defaults and opt["default"] != defaults[name]
             and "{{" not in str(defaults[name])]
    assert not wrong, f"roles/{role}: " + "; ".join(wrong)


def test_the_agreement_check_sees_a_disagreement():
    """The check itself fails on each kind of drift (a check that cannot fail proves nothing)."""
    enum = schema.Enum(choices=("files", "nvue"))
    assert disagreements("m", enum, {"type": "str", "choices": ["files"]})
    assert disagreements("p", schema.Int(1, 65535), {"type": "str"})
    nested = schema.ListOf(item=schema.Dict(fields={"id": schema.Field(schema.Int(1, 4094), required=False)}))
    assert disagreements("v", nested, {"type": "list", "elements": "dict", "options": {"id": {"type": "str"}}})
    assert disagreements("v", nested, {"type": "list", "elements": "dict",
                                       "options": {"id": {"type": "int", "required": True}}})
    assert not disagreements("v", nested, {"type": "list", "elements": "dict", "options": {"id": {"type": "int"}}})
