"""``python -m validation run | deploy | evaluate | report | parse | latest | scale-baseline | context``.

- ``run``: run the validation stage (playbooks/validate.yml) through ansible-runner, printing the stage, case k
  of N, elapsed and remaining time, and each stage's wall time at the end; then where the report is. The run's
  ansible-runner artifacts are kept (without secrets) in ``<run dir>/ansible-runner/``.
- ``deploy``: the same for the whole site.yml (every stage, then the validation).
- ``evaluate RUN_DIR``: re-judge stored raw results, optionally with other thresholds; exit 1 on FAIL.
- ``report RUN_DIR``: judge and write report.json, junit.xml, metrics.prom, summary.md and report.html (from
  the bundled template, or ``--template`` a site's); exit 1 on FAIL, 2 when the handover data (RUN_DIR/
  handover.json, the role's validate_report_handover) or the template is wrong.
- ``parse nccl-tests|fio|topo|ibstat FILE``: print the parsed JSON; exit 2 when FILE cannot be parsed,
  1 when it parsed but is incomplete (a truncated nccl-tests log, fio JSON without results).
- ``latest``: print the newest run directory, its verdict and its report.html.
- ``scale-baseline RESULTS --nodes A,B``: print the newest run directory of exactly those nodes, the earlier run
  a scale-out's report compares with (docs/scale-out.md); exit 1 naming what to do when there is none.
- ``context``: build a run's context.json from an inventory, read by Ansible's own inventory and variable managers
  (templating, host_vars, ``-e``), as the role's prepare entry point sees it.
- ``rounds --nodes A,B,C``: the pair cases' rounds of disjoint pairs (validation/localise.py) as JSON, ``nccl``
  (ring pairs from 3 nodes) and ``paths`` (the one pair of two nodes too); the validate role launches by them.
- ``site generate --dgx N [--f800 M] --out DIR``: write a site inventory for N DGX and M F800 nodes and the
  switches they need (validation/sitegen.py, docs/scale.md); exit 2 when the pattern cannot hold the sizes.
- ``cabling plan | parse | check``: the cable plan of an inventory, a dump's links, and the check of a plan against
  dumps (validation/cabling/cli.py; docs/cabling.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from ansible.errors import AnsibleError

from . import handover, localise, parse_fio, parse_nccl, parse_sysinfo, playbook_run, report, scaling, sitegen
from .cabling import cli as cabling_cli
from .checks import ring_pairs
from .context import context_from_inventory, with_overrides
from .progress import planned_cases
from .site import Site, SiteError
from .thresholds import ThresholdError, check_entry
from .verdict import FAIL, evaluate

ROOT = Path(__file__).resolve().parent.parent


def default_results_dir() -> Path:
    return Path(os.environ.get("VALIDATION_RESULTS_DIR") or ROOT / "results")


def _print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


def cmd_parse(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        _print_json({"errors": [f"cannot read {path}: {exc.strerror}"]})
        return 2
    try:
        if args.kind == "nccl-tests":
            runs = parse_nccl.parse(text)
            docs = [r.to_dict() for r in runs]
            _print_json(docs[0] if len(docs) == 1 else docs)
            return 0 if all(r.complete for r in runs) else 1
        if args.kind == "fio":
            result = parse_fio.parse(text)
            _print_json(result.to_dict())
            return 0 if (result.jobs or result.clients) else 1
        if args.kind == "topo":
            _print_json(parse_sysinfo.parse_topo(text).to_dict())
            return 0
        ports = parse_sysinfo.parse_ibstat(text)
        _print_json([{**vars(p), "active": p.active} for p in ports])
        return 0
    except (parse_nccl.NcclParseError, parse_fio.FioParseError, parse_sysinfo.SysinfoParseError) as exc:
        _print_json({"errors": [f"{path}: {exc}"]})
        return 2


def _load_context(run_dir: Path, inventory: str | None, extra_vars: list[str] | None = None) -> dict[str, Any]:
    if inventory:
        try:
            return context_from_inventory(inventory, extra_vars=extra_vars or ())
        except (AnsibleError, ValueError) as exc:
            raise SystemExit(f"--inventory {inventory}: {exc}") from None
    path = run_dir / "context.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: give --inventory DIR to judge this run against an inventory")
    return json.loads(path.read_text(encoding="utf-8"))


def _apply_cli_thresholds(ctx: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    thresholds = None
    extra: dict[str, Any] = {}
    if args.thresholds:
        doc = yaml.safe_load(Path(args.thresholds).read_text(encoding="utf-8")) or {}
        thresholds = doc.get("acceptance_thresholds", doc if isinstance(doc, list) else None)
        for key in ("acceptance_outlier_max_behind_pct", "acceptance_baseline"):
            if isinstance(doc, dict) and key in doc:
                extra[key] = doc[key]
        if thresholds is None:
            raise SystemExit(f"{args.thresholds}: no acceptance_thresholds list")
    new = with_overrides(ctx, thresholds, extra)
    for item in args.set or []:
        # metric.floor=VALUE : replace or add the floor of a metric (quick "what if" re-judging)
        try:
            lhs, value = item.split("=", 1)
            metric, key = lhs.rsplit(".", 1)
            number = float(value)
        except ValueError:
            raise SystemExit(f"--set {item!r}: expected METRIC.floor=NUMBER or METRIC.fraction=NUMBER") from None
        entries = [dict(e) for e in new.get("acceptance_thresholds") or []]
        match = [e for e in entries if e.get("metric") == metric]
        if not match:
            entries.append({"metric": metric, "source": f"command line --set {item}"})
            match = [entries[-1]]
        for e in match:
            if key == "floor":
                e["floor"] = number
            elif key == "fraction" and isinstance(e.get("ceiling"), dict):
                e["ceiling"] = {**e["ceiling"], "fraction": number}
            else:
                raise SystemExit(f"--set {item!r}: {metric} has no {key} to set")
            e["source"] = f"{e.get('source', '')} [overridden: --set {item}]".strip()
        new["acceptance_thresholds"] = entries
    for i, entry in enumerate(new.get("acceptance_thresholds") or []):
        try:
            check_entry(entry, i)
        except ThresholdError as exc:
            raise SystemExit(str(exc)) from None
    return new


def _environment(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "environment.json"
    if path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            return {"error": "environment.json is unreadable"}
    return {}


def _print_verdict(doc: dict[str, Any]) -> None:
    v = doc["verdict"]
    for c in v["checks"]:
        value = "-" if c["value"] is None else f"{c['value']:.4g} {c['unit']}"
        reason = ("  <- " + "; ".join(c["reasons"])) if c["status"] == FAIL else ""
        print(f"{c['status']:4}  {c['kind']:11}  {c['label']:48}  {value}{reason}")
    print(f"VERDICT: {v['status']}" + (f"  failed: {', '.join(v['failed'])}" if v["failed"] else ""))


def cmd_evaluate(args: argparse.Namespace, write: bool) -> int:
    run_dir = Path(args.run_dir).resolve()
    if not (run_dir / "raw").is_dir():
        raise SystemExit(f"{run_dir}: not a validation run directory (no raw/)")
    ctx = _apply_cli_thresholds(_load_context(run_dir, getattr(args, "inventory", None),
                                              getattr(args, "extra_vars", None)), args)
    try:
        site = Site.from_context(ctx)
    except SiteError as exc:
        raise SystemExit(f"{run_dir}: {exc}") from None
    verdict = evaluate(run_dir, site)
    try:
        handover_data = handover.load_handover(run_dir / "handover.json")
    except handover.HandoverError as exc:
        print(f"report not written: {exc}", file=sys.stderr)
        return 2
    doc = report.build_report(run_dir, site, verdict, _environment(run_dir), handover_data)
    out_dir = Path(args.out).resolve() if getattr(args, "out", None) else run_dir
    if write or getattr(args, "out", None):
        out_dir.mkdir(parents=True, exist_ok=True)
        template = Path(args.template) if getattr(args, "template", None) else None
        try:
            files = report.write_all(out_dir, doc, template)
        except handover.HandoverError as exc:
            print(f"report.html not written ({out_dir}: report.json, junit.xml, metrics.prom and summary.md "
                  f"were): {exc}", file=sys.stderr)
            return 2
        if args.json:
            _print_json({"status": verdict.status, "failed": verdict.failed,
                         "files": {k: str(v) for k, v in files.items()}})
        else:
            _print_verdict(doc)
            print(f"report: {files['html']}")
    elif args.json:
        _print_json(doc)
    else:
        _print_verdict(doc)
    return 1 if verdict.status == FAIL else 0


def find_latest(results: Path) -> Path | None:
    runs = sorted(p for p in results.glob("*") if p.is_dir() and (p / "raw").is_dir())
    return runs[-1] if runs else None


def cmd_latest(args: argparse.Namespace) -> int:
    results = Path(args.results) if args.results else default_results_dir()
    run = find_latest(results)
    if run is None:
        print(f"no validation run under {results}", file=sys.stderr)
        return 1
    report_json = run / "report.json"
    status = "no report yet"
    if report_json.is_file():
        status = json.loads(report_json.read_text(encoding="utf-8"))["verdict"]["status"]
    print(f"{run}\nverdict: {status}\nreport: {run / 'report.html'}")
    return 0


def cmd_scale_baseline(args: argparse.Namespace) -> int:
    try:
        print(scaling.find_before(Path(args.results), [n for n in args.nodes.split(",") if n], args.run))
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    nodes = args.nodes.split(",") if args.nodes else None
    ctx = context_from_inventory(args.inventory, nodes, args.extra_vars or ())
    text = json.dumps(ctx, indent=2, default=sorted) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _context_plan(path: Path) -> tuple[str, ...] | None:
    """The cases of the run's own context.json (what the playbook resolved, -e and --limit included)."""
    try:
        return planned_cases(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def cmd_playbook(args: argparse.Namespace, playbook: Path) -> int:
    """Run a playbook through ansible-runner (validation/playbook_run.py) into a run directory of its own."""
    results = Path(args.results).resolve() if args.results else default_results_dir()
    run_id = args.run_id or datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = results / run_id
    planned: tuple[str, ...] = ()
    if args.command == "run":  # deploy: no case count until the validation stage writes its context.json
        try:
            planned = planned_cases(context_from_inventory(args.inventory,
                                                           extra_vars=playbook_run.extra_var_args(args.ansible_args)))
        except (OSError, yaml.YAMLError, AnsibleError, AttributeError, TypeError, ValueError) as exc:
            print(f"case count unknown until the run writes its context.json ({args.inventory}: {exc})")
    ours = json.dumps({"validate_report_run_id": run_id, "validation_results_dir": str(results)})
    launch = playbook_run.Launch(playbook=playbook, inventory=args.inventory,
                                 args=(*args.ansible_args, "-e", ours), artifacts=run_dir / "ansible-runner",
                                 show_ansible=args.ansible_output)
    rc = playbook_run.run(launch, planned, lambda: _context_plan(run_dir / "context.json"))
    html = run_dir / "report.html"
    print(f"report: {html}" if html.is_file() else f"no report in {run_dir} (the validation stage did not write one)")
    return rc


def cmd_rounds(args: argparse.Namespace) -> int:
    nodes = [n for n in args.nodes.split(",") if n]
    if len(nodes) != len(set(nodes)):
        print(f"rounds: --nodes {args.nodes}: a node is named twice", file=sys.stderr)
        return 2
    _print_json({"nccl": localise.pair_rounds(ring_pairs(nodes)),
                 "paths": localise.pair_rounds(localise.ring_edges(nodes))})
    return 0


def cmd_site(args: argparse.Namespace) -> int:
    f800 = args.f800 if args.f800 is not None else sitegen.default_f800(args.dgx)
    try:
        site = sitegen.generate(args.dgx, f800)
    except sitegen.LayoutError as exc:
        print(f"site generate: {exc}", file=sys.stderr)
        return 2
    out = sitegen.write(site, Path(args.out))
    _print_json({"out": str(out), **sitegen.summary(site)})
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m validation", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for name, helptext in (("run", "run the validation stage through Ansible, then print the report path"),
                           ("deploy", "run the whole site.yml (every stage, then validation) the same way")):
        sp = sub.add_parser(name, help=helptext, allow_abbrev=False,
                            epilog="Any other argument goes to ansible-playbook (e.g. -e KEY=VALUE, --limit, --tags).")
        sp.add_argument("-i", "--inventory", default=str(ROOT / "inventories" / "lab"))
        sp.add_argument("--results", help="results directory (default: results/ of the project)")
        sp.add_argument("--run-id", help="name of the run directory (default: the UTC time, 20261121T083000Z)")
        sp.add_argument("--ansible-output", action="store_true",
                        help="print Ansible's own output too (it is kept in <run dir>/ansible-runner/stdout)")
    for name, helptext in (("evaluate", "re-judge a run directory (optionally with other thresholds)"),
                           ("report", "judge a run directory and write its report files")):
        sp = sub.add_parser(name, help=helptext)
        sp.add_argument("run_dir")
        sp.add_argument("--thresholds", help="YAML with acceptance_thresholds (and optional outlier/baseline keys)")
        sp.add_argument("--set", action="append", metavar="METRIC.floor=N",
                        help="override one bound, e.g. fio_node_read_MBps.floor=1e9 (repeatable)")
        sp.add_argument("--inventory", help="judge against this inventory instead of the run's context.json")
        sp.add_argument("-e", "--extra-vars", action="append", metavar="VARS",
                        help="with --inventory: extra vars on top of it, as ansible-playbook -e takes them (repeatable)")
        sp.add_argument("--out", help="write the report files into this directory")
        sp.add_argument("--template", help="report.html from this template directory (holding report.html.j2) "
                        "or template file instead of the bundled one (validation/templates/)")
        sp.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parse = sub.add_parser("parse", help="parse one raw output file and print JSON")
    parse.add_argument("kind", choices=["nccl-tests", "fio", "topo", "ibstat"])
    parse.add_argument("file")
    latest = sub.add_parser("latest", help="print the newest run directory and its report")
    latest.add_argument("--results", help="results directory (default: results/ of the project)")
    base = sub.add_parser("scale-baseline", help="print the newest run directory of exactly these nodes (the "
                          "earlier run a scale-out's report compares with)")
    base.add_argument("results", help="results directory")
    base.add_argument("--nodes", required=True, help="comma-separated DGX hosts of the old node set")
    base.add_argument("--run", help="check this run directory instead of finding the newest")
    ctx = sub.add_parser("context", help="build context.json from an inventory")
    ctx.add_argument("--inventory", required=True)
    ctx.add_argument("--nodes", help="comma-separated DGX hosts (default: all in the inventory)")
    ctx.add_argument("-e", "--extra-vars", action="append", metavar="VARS",
                     help="extra vars on top of the inventory, as ansible-playbook -e takes them (repeatable)")
    ctx.add_argument("--out")
    rounds = sub.add_parser("rounds", help="the pair cases' rounds of disjoint pairs, as JSON")
    rounds.add_argument("--nodes", required=True, help="the DGX nodes under test, in order, comma-separated")
    site = sub.add_parser("site", help="site inventories: generate one for N DGX and M F800 nodes")
    site_sub = site.add_subparsers(dest="site_command", required=True)
    gen = site_sub.add_parser("generate", help="write hosts.yml and group_vars/all for a site of this size")
    gen.add_argument("--dgx", type=int, required=True, help="DGX A100 nodes")
    gen.add_argument("--f800", type=int, help="F800 nodes (default: one per DGX, as the reference sizes 8 A100 per "
                     "F800 node, in chassis of 4, at most 252)")
    gen.add_argument("--out", required=True, help="the site's inventory directory (layered after inventories/common)")
    cabling_cli.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command in ("run", "deploy"):
        args.ansible_args = rest[1:] if rest[:1] == ["--"] else rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "parse":
        return cmd_parse(args)
    if args.command == "evaluate":
        return cmd_evaluate(args, write=False)
    if args.command == "report":
        return cmd_evaluate(args, write=True)
    if args.command == "scale-baseline":
        return cmd_scale_baseline(args)
    if args.command == "latest":
        return cmd_latest(args)
    if args.command == "context":
        return cmd_context(args)
    if args.command == "rounds":
        return cmd_rounds(args)
    if args.command == "site":
        return cmd_site(args)
    if args.command == "cabling":
        return cabling_cli.run(args)
    return cmd_playbook(args, ROOT / ("site.yml" if args.command == "deploy" else "playbooks/validate.yml"))
