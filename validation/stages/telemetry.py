"""The array's own throughput beside the client's: the OneFS statistics sampled during every fio read and every
real-data training (raw/telemetry/), judged against validation_telemetry.max_gap (called by validation.verdict).

Raw layout::

    raw/telemetry/fio/<case>/r<k>.jsonl   the array's counters sampled during fio case <case>, sample k
    raw/telemetry/ddp/n<count>.jsonl      the same during the DDP case of <count> nodes (synthetic and real data)

Everything expected but missing, failed or unparseable is a FAIL with its reason, or an INFO that says what is
missing; never a silent PASS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import array_telemetry, parse_fio
from ..checks import (
    FAIL,
    INFO,
    PASS,
    Check,
    finite,
)
from ..site import Site
from ..thresholds import (
    Bound,
)
from .utilisation import real_docs

# ---------------------------------------------------------------------------------------------- array telemetry


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


def judge_fio_array(site: Site, run_dir: Path, fio_checks: list[Check]) -> tuple[list[Check], list[dict[str, Any]]]:
    """Per fio case: the bytes the array sent (its counters, during the read phase) against the bytes the clients
    read, for the sample the fio metric judged (its best). A gap beyond validation_telemetry.max_gap is a FAIL:
    a cache, a wrong mount, or a path around the measured link."""
    lab = site.lab
    cases = [(f"node-{n}", n) for n in site.nodes] + [("aggregate", "aggregate")]
    if not site.settings.telemetry_enabled:
        return [Check(name="array_sanity", stage="fio", kind="sanity", status=INFO, instance="fio", lab_standin=lab,
                      reasons=["array telemetry disabled (validation_telemetry.enabled: false): the array-side "
                               "figures are not measured"])], []
    gap = site.settings.telemetry_max_gap
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


def judge_ddp_array(site: Site, run_dir: Path, counts: list[int]) -> tuple[list[Check], list[dict[str, Any]]]:
    """Per DDP case: what the array sent during the case against what the real-data loaders consumed. Shown side
    by side; a gap is flagged (INFO with the reason), not failed: a dataset the page cache holds is legitimate."""
    if not site.settings.telemetry_enabled:
        return [], []
    nodes, lab = site.nodes, site.lab
    gap = site.settings.telemetry_max_gap
    image = site.settings.ddp_image_size
    checks: list[Check] = []
    rows: list[dict[str, Any]] = []
    for count in counts:
        case = f"n{count}"
        who = nodes[0] if count == 1 else "all nodes"
        check = Check(name="ddp_array_over_loader", stage="ddp", kind="performance", status=INFO,
                      instance=f"{count} node{'s' if count > 1 else ''}", unit="ratio", case=case, lab_standin=lab)
        checks.append(check)
        docs = real_docs(run_dir / "raw" / "ddp" / case)
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
