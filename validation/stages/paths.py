"""What lies under the acceptance figures: path baselines, the array's own throughput and the utilisation of
the trainings, judged from a run directory (called by validation.verdict.evaluate).

Raw layout (besides the other stages' own, see validation/verdict.py)::

    raw/paths/storage-<node>/       iperf3 -R from the storage side to <node>, that node alone (meta.json, r<k>.json)
    raw/paths/storage-all-<node>/   the same with every DGX at once (the aggregate baseline is their sum)
    raw/paths/fabric-<a>-<b>/       the compute-fabric pair a -> b: iperf3 (lab: over cfab0) or ib_write_bw per
                                    HCA (<hca>-r1.txt)
    raw/telemetry/fio/<case>/r<k>.jsonl   the array's counters sampled during fio case <case>, sample k
    raw/telemetry/ddp/n<count>.jsonl      the same during the DDP case of <count> nodes (synthetic and real data)
    raw/ddp/n<count>/util-<node>.json     utilisation sampled on <node> during that DDP case

Everything expected but missing, failed or unparseable is a FAIL with its reason, or (where the issue allows a
flag) an INFO that says what is missing; never a silent PASS.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import array_telemetry, parse_fio, parse_iperf3, parse_perftest, parse_util
from ..checks import (
    FAIL,
    INFO,
    PASS,
    Check,
    _case_preamble,
    _load_meta,
    _perf_check,
    _sample_problems,
    finite,
    judge_guard,
    read_sample,
    repeats_problem,
    ring_pairs,
)
from ..thresholds import (
    Bound,
    ThresholdError,
    hcas_x_link_rate_GBps,
    node_bottleneck_link_MBps,
    server_nics_for,
)

STORAGE, STORAGE_ALL, FABRIC = "storage", "storage-all", "fabric"
# The layers of a path, from the wire up: the diagnosis names the lowest layer that failed.
LAYER_OF = {
    "path_storage_MBps": "network", "path_storage_aggregate_MBps": "network", "path_fabric_GBps": "network",
    "paths_sanity": "network",
    "fio_node_read_MBps": "protocol", "fio_aggregate_read_MBps": "protocol", "fio_sanity": "protocol",
    "nccl_pair_busbw_gbps": "protocol", "nccl_multi_node_busbw_gbps": "protocol",
    "nccl_single_node_busbw_gbps": "protocol", "nccl_sanity": "protocol",
    "fio_array_over_client": "array", "array_sanity": "array",
    "ddp_scaling_efficiency": "application", "ddp_real_over_synthetic": "application",
    "ddp_real_util_pct": "application", "ddp_sanity": "application",
}
LAYER_ORDER = ("network", "protocol", "array", "application")
LAYER_TEXT = {"network": "network path", "protocol": "protocol (NFS / collective)", "array": "storage array",
              "application": "application (training)"}


@dataclass(frozen=True)
class PathCase:
    case: str
    kind: str           # storage | storage-all | fabric
    nodes: tuple[str, ...]


def fabric_pairs(nodes: list[str]) -> list[tuple[str, str]]:
    """The compute-fabric pairs measured: the ring neighbours (as NCCL's pair cases), or the one pair of two nodes."""
    if len(nodes) == 2:
        return [(nodes[0], nodes[1])]
    return ring_pairs(nodes)


def expected_path_cases(nodes: list[str]) -> list[PathCase]:
    cases = [PathCase(f"storage-{n}", STORAGE, (n,)) for n in nodes]
    if len(nodes) > 1:
        cases += [PathCase(f"storage-all-{n}", STORAGE_ALL, (n,)) for n in nodes]
    cases += [PathCase(f"fabric-{a}-{b}", FABRIC, (a, b)) for a, b in fabric_pairs(nodes)]
    return cases


# ---------------------------------------------------------------------------------------------- baselines


@judge_guard("paths", lambda: ([],))
def judge_path_case(case_dir: Path, case: str, repeats: int | None = None) -> tuple[Check, list[float | None]]:
    """Sanity of one baseline case; returns (check, per-sample value): MB/s for a storage path, GB/s for a
    compute-fabric pair (iperf3's received throughput, or the sum over the HCAs of ib_write_bw's average)."""
    meta = _load_meta(case_dir)
    check, ok = _case_preamble("paths", case, meta, False)
    values: list[float | None] = []
    if not ok:
        return check, values
    assert meta is not None
    asked: dict[str, Any] = meta["asked"] if isinstance(meta.get("asked"), dict) else {}
    tool = meta.get("tool")
    fabric = meta.get("kind") == FABRIC
    if tool == "ib_write_bw":
        return _judge_ib(case_dir, check, meta, asked)
    if tool != "iperf3":
        check.status = FAIL
        check.reasons.append(f"meta.json names no known tool ({tool!r}; iperf3 or ib_write_bw)")
        return check, values
    early = repeats_problem(meta["samples"], repeats)
    if early:
        check.status = FAIL
        check.reasons.extend(early)
    for sample in meta["samples"]:
        problems, result = read_sample(case_dir, meta, sample, parse_iperf3.parse, (parse_iperf3.Iperf3ParseError,))
        tag = sample.get("file")
        value = None
        if result is not None:
            problems.extend(f"{tag}: {p}" for p in parse_iperf3.problems(result, asked))
            mbps = result.received_MBps
            value = None if mbps is None else (mbps / 1000 if fabric else mbps)
        if problems:
            check.status = FAIL
            check.reasons.extend(problems)
            value = None
        values.append(value)
    return check, values


def _judge_ib(case_dir: Path, check: Check, meta: dict[str, Any], asked: dict[str, Any]
              ) -> tuple[Check, list[float | None]]:
    devices = [str(d) for d in asked.get("devices") or []]
    if not devices:
        check.status = FAIL
        check.reasons.append("meta.json names no HCA: which links were asked for cannot be checked")
        return check, [None]
    total = 0.0
    problems: list[str] = []
    by_device = {str(s.get("device")): s for s in meta["samples"]}
    for dev in devices:
        sample = by_device.get(dev)
        if sample is None:
            problems.append(f"{dev}: not measured (no sample)")
            continue
        problems.extend(_sample_problems(meta, sample))
        path = case_dir / str(sample.get("file") or "")
        try:
            run = parse_perftest.parse(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            problems.append(f"{sample.get('file')}: raw output missing")
            continue
        except parse_perftest.PerftestParseError as exc:
            problems.append(f"{sample.get('file')}: unparseable: {exc}")
            continue
        problems.extend(f"{dev}: {p}" for p in parse_perftest.problems(run, {"device": dev}))
        total += run.average_gbps() or 0.0
    if problems:
        check.status = FAIL
        check.reasons.extend(problems)
        return check, [None]
    return check, [total / 8]


def measured_baselines(checks: list[Check]) -> dict[str, Any]:
    """The baselines of this run that passed their sanity, for the thresholds derived from them."""
    out: dict[str, Any] = {"storage": {}, "storage_aggregate": None, "fabric": {}}
    for c in checks:
        if c.kind != "performance" or c.value is None or c.name not in ("path_storage_MBps", "path_fabric_GBps",
                                                                          "path_storage_aggregate_MBps"):
            continue
        if c.name == "path_storage_MBps" and c.instance:
            out["storage"][c.instance] = c.value
        elif c.name == "path_fabric_GBps" and c.instance:
            out["fabric"][c.instance] = c.value
        elif c.name == "path_storage_aggregate_MBps":
            out["storage_aggregate"] = c.value
    return out


def judge_paths(ctx: dict[str, Any], paths_dir: Path, nodes: list[str], lab: bool, baseline: dict[str, float],
                repeats: int | None) -> tuple[list[Check], dict[str, Any]]:
    """Every baseline case of the run: sanity, then the metric (path_storage_MBps per node, the aggregate,
    path_fabric_GBps per pair); returns the checks and the plot series."""
    checks: list[Check] = []
    series: dict[str, Any] = {"storage_MBps": {}, "storage_aggregate_MBps": None, "fabric_GBps": {},
                              "nominal_storage_MBps": {}, "nominal_fabric_GBps": {}, "paths": {}}
    concurrent: dict[str, list[float | None]] = {}
    for pc in expected_path_cases(nodes):
        sanity, samples = judge_path_case(paths_dir / pc.case, pc.case, repeats)
        checks.append(sanity)
        meta = _load_meta(paths_dir / pc.case) or {}
        if pc.kind == STORAGE_ALL:
            concurrent[pc.nodes[0]] = samples if sanity.status == PASS else [None]
            continue
        if pc.kind == STORAGE:
            node = pc.nodes[0]
            perf = _perf_check(ctx, "path_storage_MBps", node, samples, sanity.status == PASS, lab, baseline, pc.case)
            series["storage_MBps"][node] = perf.value
            series["nominal_storage_MBps"][node] = _nominal_storage(ctx, node)
        else:
            pair = "+".join(pc.nodes)
            perf = _perf_check(ctx, "path_fabric_GBps", pair, samples, sanity.status == PASS, lab, baseline, pc.case)
            series["fabric_GBps"][pair] = perf.value
            series["nominal_fabric_GBps"][pair] = _nominal_fabric(ctx, list(pc.nodes), lab)
        series["paths"][pc.case] = str(meta.get("path") or pc.case)
        checks.append(perf)
    if len(nodes) > 1:
        counts = {len(v) for v in concurrent.values()}
        rounds = max(counts) if counts else 0
        sums: list[float | None] = []
        for k in range(rounds):
            parts = [v[k] if k < len(v) else None for v in concurrent.values()]
            sums.append(None if len(parts) < len(nodes) or any(p is None for p in parts)
                        else sum(p for p in parts if p is not None))
        ok = bool(sums) and any(s is not None for s in sums) and len(concurrent) == len(nodes)
        agg = _perf_check(ctx, "path_storage_aggregate_MBps", None, sums or [None], ok, lab, baseline,
                          "storage-all")
        if not ok:
            agg.reasons.append("every DGX's concurrent storage baseline must have run and parsed (storage-all-*)")
        checks.append(agg)
        series["storage_aggregate_MBps"] = agg.value
    return checks, series


def _nominal_storage(ctx: dict[str, Any], node: str) -> float | None:
    try:
        return node_bottleneck_link_MBps(ctx, node)[0]
    except ThresholdError:
        return None


def _nominal_fabric(ctx: dict[str, Any], nodes: list[str], lab: bool) -> float | None:
    if lab:
        return None  # the lab's cfab0 is a virtual cable: no line rate to compare with
    try:
        return hcas_x_link_rate_GBps(ctx, nodes)[0]
    except ThresholdError:
        return None


def storage_path_text(ctx: dict[str, Any], node: str) -> str:
    """'dgx01 -> powerscale01/storage0' (the PowerScale NIC the node mounts), or the node alone."""
    try:
        ends = ", ".join(f"{n}/{nic.get('name')}" for n, nic in server_nics_for(ctx, node))
    except ThresholdError:
        return f"{node} -> storage"
    return f"{node} -> {ends}"


# ---------------------------------------------------------------------------------------------- array telemetry


def telemetry_settings(ctx: dict[str, Any]) -> dict[str, Any]:
    return ctx.get("validation_telemetry") or {}


def _gap_bounds(gap: float) -> list[Bound]:
    source = "validation_telemetry.max_gap"
    return [Bound("floor", round(1 - gap, 6), source, f"array/client >= 1 - {gap:g}"),
            Bound("at_most", round(1 + gap, 6), source, f"array/client <= 1 + {gap:g}")]


def _fio_sample_bytes(path: Path) -> tuple[float | None, float | None, list[str]]:
    """(bytes the clients read, seconds of the read phase) of one fio sample."""
    try:
        result = parse_fio.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, parse_fio.FioParseError) as exc:
        return None, None, [f"{path.name}: {exc}"]
    moved = parse_fio.client_io_bytes(result)
    runtimes = [j.read.runtime_ms for j in result.clients if j.read and j.read.runtime_ms]
    if not moved or not runtimes:
        return None, None, [f"{path.name}: no per-client bytes or runtime"]
    return float(sum(moved.values())), max(runtimes) / 1000, []


def judge_fio_array(ctx: dict[str, Any], run_dir: Path, nodes: list[str], lab: bool,
                    fio_checks: list[Check]) -> tuple[list[Check], list[dict[str, Any]]]:
    """Per fio case: the bytes the array sent (its counters, during the read phase) against the bytes the clients
    read, for the sample the fio metric judged (its best). A gap beyond validation_telemetry.max_gap is a FAIL:
    a cache, a wrong mount, or a path around the measured link."""
    cfg = telemetry_settings(ctx)
    cases = [(f"node-{n}", n) for n in nodes] + [("aggregate", "aggregate")]
    if not cfg.get("enabled"):
        return [Check(name="array_sanity", stage="fio", kind="sanity", status=INFO, instance="fio", lab_standin=lab,
                      reasons=["array telemetry disabled (validation_telemetry.enabled: false): the array-side "
                               "figures are not measured"])], []
    gap = float(cfg.get("max_gap") or 0.25)
    best_sample = {c.case: _best_index(c.samples) for c in fio_checks
                   if c.kind == "performance" and c.name in ("fio_node_read_MBps", "fio_aggregate_read_MBps")}
    checks: list[Check] = []
    rows: list[dict[str, Any]] = []
    for case, instance in cases:
        check = Check(name="fio_array_over_client", stage="fio", kind="performance", status=PASS, instance=instance,
                      unit="ratio", case=case, lab_standin=lab, bounds=[b.to_dict() for b in _gap_bounds(gap)])
        checks.append(check)
        index = best_sample.get(case)
        if index is None:
            check.status = FAIL
            check.reasons.append("no valid fio sample to compare with (see the fio sanity check)")
            continue
        k = index + 1
        client_bytes, seconds, problems = _fio_sample_bytes(run_dir / "raw" / "fio" / case / f"r{k}.json")
        samples, _header, bad = array_telemetry.load_samples(run_dir / "raw" / "telemetry" / "fio" / case / f"r{k}.jsonl")
        array_bytes, missing = array_telemetry.bytes_moved(samples, array_telemetry.NET_OUT)
        ifs_bytes, _ = array_telemetry.bytes_moved(samples, array_telemetry.IFS_OUT)
        problems += bad + missing
        row: dict[str, Any] = {"case": case, "node": instance, "sample": k, "client_MBps": None, "array_MBps": None,
                               "array_ifs_MBps": None, "ratio": None}
        rows.append(row)
        if client_bytes is None or seconds is None or array_bytes is None or client_bytes <= 0:
            check.status = FAIL
            check.reasons.extend(problems or ["array or client bytes unknown"])
            continue
        ratio = array_bytes / client_bytes
        check.value = ratio
        check.samples = [ratio]
        row.update(client_MBps=client_bytes / seconds / 1e6, array_MBps=array_bytes / seconds / 1e6,
                   array_ifs_MBps=None if ifs_bytes is None else ifs_bytes / seconds / 1e6, ratio=ratio)
        if problems:
            check.reasons.extend(f"(telemetry) {p}" for p in problems)
        if not (1 - gap) <= ratio <= (1 + gap):
            check.status = FAIL
            side = "less" if ratio < 1 else "more"
            why = ("the clients read data the array did not send: a client cache, or a mount that is not the "
                   "measured path" if ratio < 1 else "the array sent more than the clients read: other traffic on "
                   "the array, or retransmissions on the path")
            check.reasons.append(f"the array sent {array_bytes / 1e6:.4g} MB while the clients read "
                                 f"{client_bytes / 1e6:.4g} MB (sample r{k}): {abs(1 - ratio) * 100:.0f}% {side}, "
                                 f"beyond the {gap * 100:g}% bound; {why}")
    return checks, rows


def _best_index(samples: list[float | None]) -> int | None:
    good = [(v, i) for i, v in enumerate(samples) if finite(v) is not None]
    return max(good)[1] if good else None


def record_bytes(image_size: int) -> int:
    """Bytes of one training record (runners/make_dataset.py: 1 label byte + 3 x S x S pixels)."""
    return 1 + 3 * image_size * image_size


def judge_ddp_array(ctx: dict[str, Any], run_dir: Path, counts: list[int], nodes: list[str], lab: bool
                    ) -> tuple[list[Check], list[dict[str, Any]]]:
    """Per DDP case: what the array sent during the case against what the real-data loaders consumed. Shown side
    by side; a gap is flagged (INFO with the reason), not failed: a dataset the page cache holds is legitimate."""
    cfg = telemetry_settings(ctx)
    if not cfg.get("enabled"):
        return [], []
    gap = float(cfg.get("max_gap") or 0.25)
    image = int((ctx.get("validation_ddp") or {}).get("image_size") or 0)
    checks: list[Check] = []
    rows: list[dict[str, Any]] = []
    for count in counts:
        case = f"n{count}"
        who = nodes[0] if count == 1 else "all nodes"
        check = Check(name="ddp_array_over_loader", stage="ddp", kind="performance", status=INFO,
                      instance=f"{count} node{'s' if count > 1 else ''}", unit="ratio", case=case, lab_standin=lab)
        checks.append(check)
        docs = _real_docs(run_dir / "raw" / "ddp" / case)
        consumed = sum(d.get("global_batch", 0) * (d.get("steps", 0) + d.get("warmup_steps", 0)) * record_bytes(image)
                       for d in docs if d.get("complete"))
        seconds = sum(float(d["wall_end"]) - float(d["wall_start"]) for d in docs
                      if finite(d.get("wall_start")) is not None and finite(d.get("wall_end")) is not None)
        samples, _h, bad = array_telemetry.load_samples(run_dir / "raw" / "telemetry" / "ddp" / f"{case}.jsonl")
        sent, missing = array_telemetry.bytes_moved(samples, array_telemetry.NET_OUT)
        row: dict[str, Any] = {"case": case, "node": who, "loader_MBps": None, "array_MBps": None, "ratio": None}
        rows.append(row)
        if not consumed or seconds <= 0 or sent is None:
            check.status = FAIL
            check.reasons.extend(bad + missing or ["no complete real-data training with its timing (wall_start, "
                                                   "wall_end) to compare with"])
            continue
        check.value = sent / consumed
        row.update(loader_MBps=consumed / seconds / 1e6, array_MBps=sent / seconds / 1e6, ratio=check.value)
        check.reasons.extend(f"(telemetry) {p}" for p in bad + missing)
        if not (1 - gap) <= check.value <= (1 + gap):
            check.reasons.append(f"flag: the array sent {sent / 1e6:.4g} MB while the real-data loaders read "
                                 f"{consumed / 1e6:.4g} MB ({check.value:.2f} x): "
                                 + ("the loaders read from a cache (the client's page cache holds the dataset)"
                                    if check.value < 1 else "other traffic on the array during the training"))
    return checks, rows


# ---------------------------------------------------------------------------------------------- host capacity


def _mode_docs(case_dir: Path, mode: str) -> list[dict[str, Any]]:
    meta = _load_meta(case_dir) or {}
    out = []
    for s in meta.get("samples") or []:
        if isinstance(s, dict) and s.get("mode") == mode:
            try:
                doc = json.loads((case_dir / str(s.get("file"))).read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            if isinstance(doc, dict):
                out.append(doc)
    return out


def _real_docs(case_dir: Path) -> list[dict[str, Any]]:
    return _mode_docs(case_dir, "real")


def judge_host_scaling(ctx: dict[str, Any], ddp_dir: Path, nodes: list[str], lab: bool
                       ) -> tuple[list[Check], float | None]:
    """What the machine gives N nodes training side by side: the same training without DDP on every node at once
    (mode bare of the all-node case) against one node alone (the 1-node case), validation_ddp.host_scaling.
    Returns the check and the host's efficiency (speedup / N), the ideal DDP scaling is judged against."""
    cfg = (ctx.get("validation_ddp") or {}).get("host_scaling") or {}
    if not cfg.get("enabled") or len(nodes) < 2:
        return [], None
    n = len(nodes)
    check = Check(name="ddp_host_speedup", stage="ddp", kind="performance", status=INFO, instance=f"{n} nodes",
                  unit="x", case=f"n{n}", lab_standin=lab)

    def best(count: int) -> float | None:
        values = [finite(d.get("samples_per_s")) for d in _mode_docs(ddp_dir / f"n{count}", "bare")
                  if d.get("complete") and d.get("ddp") is False]
        good = [v for v in values if v is not None and v > 0]
        return max(good) if good else None

    alone, together = best(1), best(n)
    check.samples = [together]
    if alone is None or together is None:
        check.status = FAIL
        check.reasons.append("the training without DDP (mode bare: validation_ddp.host_scaling) did not complete "
                             + ("on one node" if alone is None else f"on {n} nodes at once")
                             + ": what the host can give is unknown, so DDP scaling cannot be judged against it")
        return [check], None
    check.value = together / alone
    check.reasons.append(f"{n} nodes training side by side without DDP gave {check.value:.2f} x one node "
                         f"({together:.4g} against {alone:.4g} samples/s): the ideal for DDP on this machine")
    return [check], check.value / n


def apply_host_limit(checks: list[Check], host: list[Check], min_speedup: float) -> None:
    """A machine whose nodes side by side train no faster than one cannot show DDP scaling: its scaling check
    says so instead of passing (or failing on the host's account)."""
    if not host or host[0].value is None or host[0].value >= min_speedup:
        return
    for c in checks:
        if c.name == "ddp_scaling_efficiency" and c.value is not None:
            # the bound measured against the host is not judged; any other bound (a floor) still is
            others = [b for b in c.bounds if b["kind"] not in ("measured", "outlier") and c.value < b["limit"]]
            c.reasons = [r for r in c.reasons if " < measured " not in r]
            c.status = FAIL if others else INFO
            c.reasons.append(f"not judged against the host: the host cannot scale ({host[0].value:.2f} x with every "
                             f"node training at once without DDP, below validation_ddp.host_scaling.min_speedup "
                             f"{min_speedup:g})")


# ---------------------------------------------------------------------------------------------- utilisation


def judge_util(ctx: dict[str, Any], ddp_dir: Path, counts: list[int], nodes: list[str], lab: bool,
               baseline: dict[str, float]) -> tuple[list[Check], dict[str, Any]]:
    """Per DDP case and node: the mean utilisation during the real-data trainings (GPU from nvidia-smi; in the lab
    the CPU from /proc/stat, named as such), judged against its floor (acceptance_thresholds)."""
    checks: list[Check] = []
    series: dict[str, Any] = {"what": None, "nodes": {}}
    for count in counts:
        case = f"n{count}"
        windows = [(float(d["wall_start"]), float(d["wall_end"])) for d in _real_docs(ddp_dir / case)
                   if finite(d.get("wall_start")) is not None and finite(d.get("wall_end")) is not None]
        pyxis = (ctx.get("validation_ddp") or {}).get("runtime") == "pyxis"
        for node in nodes[:count]:
            label = f"{node} ({count} node{'s' if count > 1 else ''})"
            path = ddp_dir / case / f"util-{node}.json"
            what = "cpu" if lab else "gpu"
            metric = "ddp_real_util_pct"
            if pyxis and node != nodes[0]:
                checks.append(Check(name=metric, stage="ddp", kind="performance", status=INFO, instance=label,
                                    case=case, lab_standin=lab, reasons=[
                                        "not sampled: under pyxis one srun on the first node starts every node's "
                                        "ranks, so the sampler wraps the first node's launcher only (a gap, not a "
                                        "measurement)"]))
                continue
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                reason = "not sampled: no utilisation file" if isinstance(exc, OSError) else f"unreadable: {exc}"
                check = _perf_check(ctx, metric, label, [None], False, lab, baseline, case)
                check.reasons.insert(0, f"{path.name}: {reason}")
                checks.append(check)
                continue
            util, problems = parse_util.series_from_samples(doc if isinstance(doc, dict) else {})
            if util.what != what:
                problems.insert(0, f"sampled {util.what} utilisation, {what} is judged "
                                   f"({'the lab has no GPU' if lab else 'a DGX trains on its GPUs'})")
            series["what"] = util.what
            means = [m for m in (util.mean_between(a, b) for a, b in windows) if m is not None]
            value = sum(means) / len(means) if means else None
            check = _perf_check(ctx, metric, label, [value], value is not None and not problems, lab, baseline, case)
            if not windows:
                check.reasons.append("no real-data training recorded its time window (wall_start, wall_end)")
            elif value is None:
                check.reasons.append("no utilisation sample fell inside the real-data trainings")
            check.reasons.extend(problems)
            if util.what == "cpu":
                check.unit = "% CPU"
                check.reasons.append("lab stand-in: CPU utilisation of the VM (the lab has no GPU)")
            elif util.what == "gpu":
                check.unit = "% GPU"
            checks.append(check)
            start = min((t for t, _ in util.points), default=0.0)
            series["nodes"][label] = {"mean_real": value, "points": [[round(t - start, 3), round(v, 2)]
                                                                     for t, v in util.points],
                                      "windows": [[round(a - start, 3), round(b - start, 3)] for a, b in windows],
                                      "gpus": util.gpus, "peak_memory_mib": util.peak_memory_mib}
    return checks, series


# ---------------------------------------------------------------------------------------------- where is the limit


def _fraction(upper: float | None, lower: float | None) -> float | None:
    if upper is None or lower is None or lower <= 0 or not math.isfinite(upper):
        return None
    return round(upper / lower, 4)


def _value(checks: list[Check], name: str, instance: str | None) -> float | None:
    return next((c.value for c in checks if c.name == name and c.instance == instance and c.kind == "performance"),
                None)


def _layer(name: str, value: float | None, unit: str, below: float | None, status: str | None) -> dict[str, Any]:
    return {"layer": name, "value": value, "unit": unit, "fraction_of_below": _fraction(value, below),
            "status": status}


def _status(checks: list[Check], name: str, instance: str | None) -> str | None:
    return next((c.status for c in checks if c.name == name and c.instance == instance), None)


def where_is_the_limit(checks: list[Check], series: dict[str, Any], ctx: dict[str, Any],
                       nodes: list[str]) -> dict[str, Any]:
    """Per path, each layer as a fraction of the one below it (nominal link -> measured baseline -> fio / NCCL ->
    the training), and one diagnosis line per node (or for the cluster) naming the lowest layer that failed."""
    paths = series.get("paths") or {}
    ddp = series.get("ddp") or {}
    image = int((ctx.get("validation_ddp") or {}).get("image_size") or 0)
    rows: list[dict[str, Any]] = []
    for node in nodes:
        nominal = paths.get("nominal_storage_MBps", {}).get(node)
        base = _value(checks, "path_storage_MBps", node)
        fio = _value(checks, "fio_node_read_MBps", node)
        layers = [_layer("link (nominal)", nominal, "MB/s", None, None),
                  _layer("network (iperf3)", base, "MB/s", nominal, _status(checks, "path_storage_MBps", node)),
                  _layer("NFS read (fio)", fio, "MB/s", base, _status(checks, "fio_node_read_MBps", node))]
        array = next((r for r in series.get("array") or [] if r.get("node") == node), None)
        if array is not None:
            layers.append(_layer("array sent during that read (its own counters)", array.get("array_MBps"), "MB/s",
                                 array.get("client_MBps"), _status(checks, "fio_array_over_client", node)))
        if node == nodes[0] and ddp.get("real") and image:
            real = ddp["real"][0]
            consumed = real * record_bytes(image) / 1e6 if real else None
            layers.append(_layer("training reads (DDP real data, 1 node)", consumed, "MB/s", fio,
                                 _status(checks, "ddp_real_over_synthetic", "1 node")))
        rows.append({"path": storage_path_text(ctx, node), "kind": STORAGE, "nodes": [node], "layers": layers})
    for pair, value in (paths.get("fabric_GBps") or {}).items():
        a_b = pair.split("+")
        nominal = paths.get("nominal_fabric_GBps", {}).get(pair)
        busbw = _value(checks, "nccl_pair_busbw_gbps", pair) if len(nodes) > 2 else \
            _value(checks, "nccl_multi_node_busbw_gbps", None)
        metric = "nccl_pair_busbw_gbps" if len(nodes) > 2 else "nccl_multi_node_busbw_gbps"
        layers = [_layer("link (nominal)", nominal, "GB/s", None, None),
                  _layer("network (baseline)", value, "GB/s", nominal, _status(checks, "path_fabric_GBps", pair)),
                  _layer("all-reduce busbw (NCCL)", busbw, "GB/s", value,
                         _status(checks, metric, pair if len(nodes) > 2 else None))]
        eff = _value(checks, "ddp_scaling_efficiency", None)
        layers.append({"layer": "training scaling efficiency (DDP)", "value": eff, "unit": "ratio",
                       "fraction_of_below": None, "status": _status(checks, "ddp_scaling_efficiency", None)})
        rows.append({"path": f"{a_b[0]} -> {a_b[-1]} (compute fabric)", "kind": FABRIC, "nodes": a_b,
                     "layers": layers})
    return {"paths": rows, "diagnosis": diagnose(checks, nodes, ctx)}


def _touches(check: Check, node: str) -> bool:
    inst = check.instance or ""
    return inst == node or node in inst.split("+") or inst.startswith(f"{node} (") or check.case in (
        f"node-{node}", f"storage-{node}", f"storage-all-{node}", f"single-{node}")


def diagnose(checks: list[Check], nodes: list[str], ctx: dict[str, Any]) -> list[str]:
    """One line per node with a failure (and one for failures of the whole cluster): the lowest failing layer,
    the metric there, and what holds below it."""
    failed = [c for c in checks if c.status == FAIL]
    if not failed:
        return ["no limit reached: every measured layer is within its bounds"]
    lines = []
    claimed: set[int] = set()
    for node in nodes:
        mine = [c for c in failed if _touches(c, node)]
        if not mine:
            continue
        claimed.update(id(c) for c in mine)
        lines.append(_line(node, mine, ctx))
    rest = [c for c in failed if id(c) not in claimed]
    if rest:
        lines.append(_line("all nodes", rest, ctx))
    return lines


def _line(who: str, failed: list[Check], ctx: dict[str, Any]) -> str:
    def rank(c: Check) -> int:
        return LAYER_ORDER.index(LAYER_OF.get(c.name, "application"))

    lowest = min(failed, key=rank)
    layer = LAYER_OF.get(lowest.name, "application")
    where = storage_path_text(ctx, who) if layer == "network" and who != "all nodes" and \
        (lowest.name.startswith("path_storage") or (lowest.case or "").startswith("storage")) else \
        (lowest.instance or lowest.case or "")
    value = f" {lowest.value:.4g} {lowest.unit}" if lowest.value is not None else ""
    # each reason without its source (the report's tables hold those): "1212 MB/s < ceiling 4000 MB/s"
    reason = "; ".join(r.split(" (", 1)[0] for r in lowest.reasons[:2])[:240] or "failed"
    above = sorted({c.label for c in failed if c is not lowest})
    tail = f"; above it also failing: {', '.join(above[:6])}" if above else ""
    return f"{who}: the limit is the {LAYER_TEXT[layer]} ({where}): {lowest.label}{value}: {reason}{tail}"
