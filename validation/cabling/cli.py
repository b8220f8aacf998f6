"""``python -m validation cabling plan | parse | check`` (the output contract: issue #37, docs/cabling.md).

- ``plan -i inventories/common -i inventories/<site>``: the design as a YAML list, one cable a line;
- ``parse [--format F] [--local NAME] FILE``: ``{"format": F, "links": [...]}``; exit 2 when FILE cannot be read;
- ``check --plan PLAN.yml --observed [NODE=]FILE ...``: one JSON entry per cable and a summary; exit 0 only when
  every cable is OK (or an accepted deviation), 1 when one is not, 2 when an input cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from . import check as check_mod
from . import dumps, plan
from .model import CablingError, Link


def _print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _print_list_doc(head: dict[str, Any], key: str, items: list[dict[str, Any]], tail: dict[str, Any]) -> None:
    """A JSON object with one list entry a line (a large fabric has ten thousand; json's indent is slow)."""
    out = sys.stdout
    out.write("{\n")
    for name, value in head.items():
        out.write(f"  {json.dumps(name)}: {json.dumps(value)},\n")
    out.write(f"  {json.dumps(key)}: [")
    out.write(",".join("\n    " + json.dumps(item) for item in items))
    out.write("\n  ]" if items else "]")
    for name, value in tail.items():
        out.write(f",\n  {json.dumps(name)}: {json.dumps(value)}")
    out.write("\n}\n")


def add_parser(sub: Any) -> None:
    cab = sub.add_parser("cabling", help="the cabling plan from an inventory, dumps parsed, and the check")
    cmds = cab.add_subparsers(dest="cabling_command", required=True)
    p = cmds.add_parser("plan", help="print the site's cable plan (YAML, one cable a line)")
    p.add_argument("-i", "--inventory", action="append", required=True,
                   help="an inventory source, as ansible-playbook takes it (repeat: -i inventories/common -i SITE)")
    p.add_argument("-e", "--extra-vars", action="append", metavar="VARS", help="extra vars (repeatable)")
    p = cmds.add_parser("parse", help="print the links of one dump (lldpctl -f json, net show lldp json, "
                                      "ibnetdiscover, iblinkinfo; plain or .gz) as JSON")
    p.add_argument("--format", choices=dumps.FORMATS, help="the dump's format (detected when not given)")
    p.add_argument("--local", help="the host an LLDP dump comes from (a dump does not name its own host)")
    p.add_argument("file")
    p = cmds.add_parser("check", help="judge every cable of a plan against dumps; exit 0 only when all are OK")
    p.add_argument("--plan", required=True, help="the plan, as `cabling plan` prints it")
    p.add_argument("--observed", action="append", required=True, metavar="[NODE=]FILE",
                   help="a dump; NODE names the host an LLDP dump comes from (repeatable)")
    p.add_argument("--accepted", help="YAML list of accepted deviations {node, port, status, reason} "
                                      "(cabling_accepted_deviations)")
    p.add_argument("--host-macs", help="YAML {host: {interface: MAC}}: names a neighbour that LLDP shows by MAC "
                                       "(and the MAC evidence of ends that send no LLDP)")


def _observed(arg: str) -> tuple[str | None, Path]:
    node, sep, rest = arg.partition("=")
    if sep and node and "/" not in node and rest:
        return node, Path(rest)
    return None, Path(arg)


def _host_macs(path: str | None) -> dict[tuple[str, str], str]:
    if not path:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise CablingError(f"{path}: cannot read host MACs: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise CablingError(f"{path}: host MACs are {{host: {{interface: MAC}}}}")
    return {(str(h).lower().split(".")[0], str(i).lower()): str(m) for h, nics in data.items()
            for i, m in nics.items()}


def run(args: argparse.Namespace) -> int:
    try:
        if args.cabling_command == "plan":
            cables = plan.design(plan.load_view(args.inventory, args.extra_vars or ()))
            sys.stdout.write(plan.to_yaml(cables))
            return 0
        if args.cabling_command == "parse":
            fmt, parsed = dumps.parse_file(Path(args.file), args.format, args.local)
            _print_list_doc({"format": fmt}, "links", [link.to_dict() for link in parsed], {})
            return 0
        cables = plan.read_plan(Path(args.plan))
        links: list[Link] = []
        for arg in args.observed:
            node, path = _observed(arg)
            links += dumps.parse_file(path, None, node)[1]
        accepted: list[check_mod.Accepted] = []
        if args.accepted:
            try:
                data = yaml.safe_load(Path(args.accepted).read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError) as exc:
                raise CablingError(f"{args.accepted}: cannot read: {exc}") from None
            accepted = check_mod.accepted_from_data(data, args.accepted)
        report = check_mod.check(cables, links, accepted, _host_macs(args.host_macs))
        _print_list_doc({}, "cables", [v.to_dict() for v in report.entries], {"summary": report.summary()})
        return 0 if report.passed else 1
    except CablingError as exc:
        _print_json({"errors": [str(exc)]})
        return 2
    except ValueError as exc:   # an inventory that cannot be templated (AnsibleInventory names host and variable)
        _print_json({"errors": [str(exc)]})
        return 2
