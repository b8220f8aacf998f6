"""metrics.prom: the run's verdict and figures in the Prometheus text exposition format, for node_exporter's
textfile collector (copy the file into its --collector.textfile.directory).

One gauge family per judged metric, in base units (nccl-tests' GB/s is 1e9 B/s, fio's MB/s as judged 1e6 B/s),
one sample per instance labelled node (the DGX, the pair or "all"), stage and verdict; a metric without a
value (it failed to run or parse) is NaN with verdict FAIL. Sanity checks are one family (1 = PASS), and the
run's verdict and the bundle that wrote it one sample each. No sample carries a timestamp (the textfile
collector refuses them).
"""

from __future__ import annotations

import math
import re
from typing import Any

from .metrics import load as metric_defs
from .verdict import PASS

PREFIX = "dgx_validation"
# A metric's unit (validation/metrics.yml) -> (the unit's token at the end of the metric's own name, the
# Prometheus base-unit suffix, the factor to base units).
UNITS = {
    "GB/s": ("gbps", "bytes_per_second", 1e9),
    "MB/s": ("mbps", "bytes_per_second", 1e6),
    "samples/s": ("", "samples_per_second", 1.0),
    "ratio": ("", "ratio", 1.0),
    "%": ("pct", "ratio", 0.01),
}
NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def family_name(metric: str, unit: str) -> tuple[str, float]:
    """(Prometheus name, factor to base units) of a judged metric: lower snake case, base-unit suffix."""
    token, suffix, factor = UNITS.get(unit, ("", "", 1.0))
    base = metric.lower()
    if token and base.endswith("_" + token):
        base = base[: -len(token) - 1]
    name = re.sub(r"[^a-z0-9_]+", "_", f"{PREFIX}_{base}{'_' + suffix if suffix else ''}").strip("_")
    return re.sub(r"_+", "_", name), factor


def _label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _sample(name: str, labels: dict[str, Any], value: float | None) -> str:
    inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
    return f"{name}{{{inner}}} {_number(value)}"


def _family(name: str, help_text: str, samples: list[str]) -> list[str]:
    if not NAME_RE.fullmatch(name):  # the names are built here: a bad one is this module's bug
        raise ValueError(f"not a Prometheus metric name: {name!r}")
    return [f"# HELP {name} {_help(help_text)}", f"# TYPE {name} gauge", *samples]


def textfile(report: dict[str, Any]) -> str:
    v = report["verdict"]
    run = {"run": report["run"], "site": report["site"] or ""}
    lines = _family(f"{PREFIX}_run_passed", "Verdict of the validation run: 1 PASS, 0 FAIL.",
                    [_sample(f"{PREFIX}_run_passed", {**run, "verdict": v["status"]}, float(v["status"] == PASS))])
    b = report["bundle"]
    lines += _family(f"{PREFIX}_run_info", "The bundle that judged the run (version, git commit, report schema).",
                     [_sample(f"{PREFIX}_run_info", {**run, "bundle": b["name"], "version": b["version"],
                                                      "commit": b["commit"],
                                                      "schema_version": report["schema_version"]}, 1.0)])
    lines += _family(f"{PREFIX}_checks", "Checks of the run by verdict (PASS, FAIL, INFO).",
                     [_sample(f"{PREFIX}_checks", {**run, "verdict": k}, float(n))
                      for k, n in sorted(report["counts"].items())])
    sanity = [c for c in v["checks"] if c["kind"] == "sanity"]
    if sanity:
        lines += _family(f"{PREFIX}_sanity_passed",
                         "Did the case run correctly (1 PASS, 0 FAIL or not run; verdict says which).",
                         [_sample(f"{PREFIX}_sanity_passed", {**run, "check": c["name"], "case": c["instance"] or "",
                                                              "stage": c["stage"], "verdict": c["status"]},
                                  float(c["status"] == PASS)) for c in sanity])
    families: dict[str, tuple[str, list[str]]] = {}
    for c in v["checks"]:
        if c["kind"] != "performance":
            continue
        unit = metric_defs()[c["name"]].unit if c["name"] in metric_defs() else c["unit"]
        name, factor = family_name(c["name"], unit)
        value = None if c["value"] is None else c["value"] * factor
        help_text = f"{c['name']} (best of the samples; {unit or 'no unit'} x {factor:g} in base units)."
        families.setdefault(name, (help_text, []))[1].append(
            _sample(name, {**run, "node": c["instance"] or "all", "stage": c["stage"], "verdict": c["status"]}, value))
    for name, (help_text, samples) in families.items():
        lines += _family(name, help_text, samples)
    return "\n".join(lines) + "\n"
