"""The fabric sanity of the NCCL stage: per DGX, every HCA of its model Active at the fabric rate (ibstat) and every
GPU pair on NVLink (nvidia-smi topo -m), from the files validation/runners/sysinfo.py collected
(validation/parse_sysinfo.py)."""

from __future__ import annotations

from pathlib import Path

from ..checks import (
    FAIL,
    Check,
    _case_preamble,
    _load_meta,
    _sample_problems,
)
from ..site import Site


def judge_sysinfo(sys_dir: Path, site: Site) -> list[Check]:
    """Per node: every HCA of the model Active at the fabric rate (ibstat), every GPU pair on NVLink (topo -m)."""
    from ..parse_sysinfo import SysinfoParseError, ib_port_problems, parse_ibstat, parse_topo

    out = []
    for n in site.nodes:
        case_dir = sys_dir / n
        meta = _load_meta(case_dir)
        check, ok = _case_preamble("fabric", n, meta, False)
        check.name, check.stage = "fabric_sanity", "nccl"
        out.append(check)
        if not ok:
            continue
        assert meta is not None
        model = site.model_of(n)
        problems = [p for s in meta["samples"] for p in _sample_problems(meta, s)]
        try:
            ports = parse_ibstat((case_dir / "ibstat.txt").read_text(encoding="utf-8", errors="replace"))
            problems += ib_port_problems(ports, int(model.hcas or 0),
                                         int(model.hca_rate_gbps or site.ib_rate_gbps or 0),
                                         list(model.compute_hcas))
        except (OSError, SysinfoParseError) as exc:
            problems.append(f"ibstat: {exc}")
        try:
            topo = parse_topo((case_dir / "topo.txt").read_text(encoding="utf-8", errors="replace"))
            if len(topo.gpus) != int(model.gpus or 0):
                problems.append(f"nvidia-smi topo -m shows {len(topo.gpus)} GPUs, {model.gpus} expected")
            if model.nvswitch and not topo.nvlink_all_pairs():
                problems.append("not every GPU pair is connected through NVLink (NVSwitch expected)")
        except (OSError, SysinfoParseError) as exc:
            problems.append(f"topo: {exc}")
        if problems:
            check.status = FAIL
            check.reasons.extend(problems)
    return out
