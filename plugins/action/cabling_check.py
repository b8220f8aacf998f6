"""Action plugin cabling_check: judge the site's cable plan against the dumps the cabling role read (documentation:
library/cabling_check.py). Runs on the control node; reads and changes nothing on any target."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

ROOT = Path(__file__).resolve().parents[2]


def _this_checkouts_validation() -> None:
    """The `validation` package of the checkout this plugin belongs to (an editable install elsewhere, or another
    worktree first on the path, must not answer for it)."""
    package = ROOT / "validation"
    loaded = sys.modules.get("validation")
    if loaded is not None and Path(str(getattr(loaded, "__file__", ""))).resolve().parent == package:
        return
    for name in [n for n in sys.modules if n == "validation" or n.startswith("validation.")]:
        del sys.modules[name]
    spec = importlib.util.spec_from_file_location("validation", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the validation package from {package}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["validation"] = module
    spec.loader.exec_module(module)


# The judge lives in the bundle's `validation` package, which the built collection does not carry: there the plugin
# imports (ansible-doc, ansible-test) and its run fails, naming why (VALIDATION_MISSING).
VALIDATION_MISSING = ""
try:
    _this_checkouts_validation()
    from validation.cabling import check, dumps, plan
    from validation.cabling.model import CablingError, Link
except (ImportError, OSError) as _exc:
    VALIDATION_MISSING = f"the cabling judge needs the bundle's validation package, next to its plugins: {_exc}"

STATUS_ORDER = {s: i for i, s in enumerate(("MISWIRED", "MISSING", "DEGRADED", "UNEXPECTED", "OK"))}


def iplink_macs(text: str, where: str) -> dict[str, str]:
    """`ip -j link show` (iproute2): each interface's MAC, {ifname: address}; loopback and MAC-less ones left out."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CablingError(f"{where}: not ip -j link JSON ({exc})") from None
    if not isinstance(data, list):
        raise CablingError(f"{where}: ip -j link printed {type(data).__name__}, not a list of interfaces")
    return {str(i["ifname"]): str(i["address"]) for i in data if isinstance(i, dict) and i.get("ifname")
            and i.get("address") and i.get("link_type", "ether") == "ether" and i["address"] != "00:00:00:00:00:00"}


def table(report: check.Report) -> list[str]:
    """One line per cable that is not OK (or accepted), then the summary: what the run prints when it stops."""
    rows = sorted((v for v in report.entries if v.status != check.OK or v.accepted),
                  key=lambda v: (STATUS_ORDER.get(v.status, 9), str(v.a)))
    lines = [f"{'status':10} | {'end a':28} | {'end b':28} | what is seen (evidence)"]
    for v in rows:
        note = f" [accepted: {v.accepted}]" if v.accepted else ""
        evidence = f" ({', '.join(v.evidence)})" if v.evidence else ""
        lines.append(f"{v.status:10} | {v.a!s:28} | {v.b!s:28} | {v.reason}{evidence}{note}")
    s = report.summary()
    lines.append(f"{s['cables']} cables: {s['OK']} OK, {s['MISWIRED']} MISWIRED, {s['MISSING']} MISSING, "
                 f"{s['DEGRADED']} DEGRADED; {s['UNEXPECTED']} UNEXPECTED; {s['accepted']} accepted")
    lines += [f"warning: {w}" for w in s["warnings"]]
    return lines


class ActionModule(ActionBase):
    _supports_check_mode = True
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        if VALIDATION_MISSING:
            return dict(result, failed=True, msg=VALIDATION_MISSING)
        args = self._task.args
        task_vars = task_vars or {}
        try:
            view = self._view(task_vars)
            cables = plan.design(view)
            given, host_macs, ib_read = self._collected(args, task_vars)
            skip_compute = not args.get("compute_read", ib_read)
            if skip_compute:
                cables = [c for c in cables if not c.width]
            links: list[Link] = []
            errors: list[str] = []
            for dump in given:
                where = f"{dump.get('node')}: {dump.get('command')}"
                text = str(dump.get("text", ""))
                if int(dump.get("rc", 0) or 0) != 0:   # a read that failed is a FAIL with its reason, never an OK
                    errors.append(f"{where} failed (rc {dump.get('rc')}): "
                                  f"{(str(dump.get('stderr') or '') or text).strip()[:300]}")
                    continue
                if not text.strip() and str(dump.get("empty_ok", "")).lower() in ("true", "1", "yes"):
                    continue
                try:
                    if dump.get("format") == "iplink":
                        host_macs.setdefault(str(dump.get("node")), {}).update(iplink_macs(text, where))
                        continue
                    links += dumps.parse(text, dump.get("format") or None, where, dump.get("node"))[1]
                except CablingError as exc:
                    errors.append(str(exc))
            macs = {(str(h).lower().split(".", maxsplit=1)[0], str(i).lower()): str(m)
                    for h, nics in host_macs.items() for i, m in (nics or {}).items() if m}
            accepted = check.accepted_from_data(args.get("accepted") or [], "cabling_accepted_deviations")
        except (CablingError, ValueError) as exc:
            result.update(failed=True, msg=f"cabling: {exc}")
            return result
        report = check.check(cables, links, accepted, macs)
        doc = report.to_dict()
        doc["summary"]["errors"] = errors
        doc["summary"]["enforced"] = str(args.get("enforced", True)).lower() in ("true", "1", "yes")
        doc["summary"]["passed"] = passed = report.passed and not errors
        if skip_compute:
            doc["summary"]["warnings"].append("the compute fabric was not read, its cables are not judged: "
                                              + str(args.get("compute_reason") or "no DGX read it (a model without "
                                                    "compute HCAs, or no compute_fabric_cables)"))
        out = args.get("report_path")
        if out:
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        lines = [f"ERROR      | {e}" for e in errors] + table(report)
        result.update(changed=False, passed=passed, summary=doc["summary"], table=lines,
                      cables=doc["cables"] if args.get("return_cables", False) else [])
        return result

    def _collected(self, args: Any, task_vars: dict[str, Any]) -> tuple[list[dict[str, Any]],
                                                                        dict[str, dict[str, str]], bool]:
        """The dumps and MACs given as arguments, else those the read tasks recorded on every host."""
        if args.get("dumps") is not None:
            return list(args["dumps"]), dict(args.get("host_macs") or {}), bool(args.get("compute_read", True))
        hostvars = task_vars.get("hostvars", {})
        given: list[dict[str, Any]] = []
        macs: dict[str, dict[str, str]] = {}
        ib_read = False
        for host in task_vars.get("groups", {}).get("all", []):
            known = hostvars.get(host, {})
            for nic in self._templar.template(known.get("storage_nics") or []):   # MACs the inventory gives
                if isinstance(nic, dict) and nic.get("mac") and nic.get("name"):
                    macs.setdefault(host, {})[str(nic["name"])] = str(nic["mac"])
            given += [dict(d) for d in self._templar.template(known.get("cabling_dumps") or [])]
            if known.get("cabling_macs"):
                macs[host] = dict(self._templar.template(known["cabling_macs"]))
            ib_read = ib_read or bool(known.get("cabling_ib_read"))
        return given, macs, ib_read

    def _view(self, task_vars: dict[str, Any]) -> plan.SiteView:
        groups = task_vars.get("groups", {})
        hostvars = task_vars.get("hostvars", {})
        view_groups = {g: list(groups.get(g, [])) for g in ("dgx", "powerscale", "sn3700v", "qm8700")}
        values: dict[str, dict[str, Any]] = {}
        for hosts in view_groups.values():
            for host in hosts:
                known = hostvars.get(host, {})
                values[host] = {}
                for name in plan.PLAN_VARS:
                    if name in known:
                        values[host][name] = self._templar.template(known[name])
        return plan.SiteView(json.loads(json.dumps(view_groups)), json.loads(json.dumps(values, default=str)))
