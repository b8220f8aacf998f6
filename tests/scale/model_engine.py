"""A MODEL of a DGX cluster, for the tests and benchmarks/scale_bench.py only: it measures nothing.

``ModelCluster`` answers each launch (a round of groups of nodes, validation.localise.Launcher) from per-node and
per-link bandwidths with one fault injected: a slow node, a slow link between two ring neighbours, or a dead
compute HCA (every launch with that node fails, as NCCL does when a listed HCA is down). An NCCL ring's bus
bandwidth is the slowest node or ring link of the group; fio's per-node figure is the slowest of the node's
storage NIC and its share of the array.

``write_run`` writes a whole run directory (raw/<stage>/<case>/ with meta.json, context.json) for N nodes in the
formats the verdict reads, from the same model. Every file it writes says it is a model: meta.json and the JSON
outputs carry ``"model_engine"``, the nccl-tests logs a ``# MODEL ENGINE`` first line, context.json a
``model_engine`` key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from validation.localise import Outcome, ring_edges

LABEL = "validation model engine (tests/scale/model_engine.py): a MODEL of the cluster, not a measurement"
BUSBW_GBPS = 190.0        # NCCL ring bus bandwidth of a healthy DGX A100 group (8 HDR HCAs), GB/s
FIO_NODE_MBPS = 4700.0    # one DGX reading over one 40 GbE F800 port, MB/s
F800_NODE_MBPS = 4800.0   # what one F800 node serves, MB/s
SLOW = 0.5                # a slow node or link runs at half its rate


@dataclass
class ModelCluster:
    """nodes in ring order; fault: (kind, where) with kind slow_node | slow_link | dead_hca | none."""

    nodes: list[str]
    f800: int = 4
    fault: tuple[str, tuple[str, ...]] = ("none", ())
    launches: list[list[tuple[str, ...]]] = field(default_factory=list)

    def node_rate(self, node: str) -> float:
        kind, where = self.fault
        return BUSBW_GBPS * (SLOW if kind == "slow_node" and node in where else 1.0)

    def link_rate(self, a: str, b: str) -> float:
        kind, where = self.fault
        return BUSBW_GBPS * (SLOW if kind == "slow_link" and {a, b} == set(where) else 1.0)

    def busbw(self, group: Sequence[str]) -> Outcome:
        kind, where = self.fault
        if kind == "dead_hca" and where[0] in group:
            return Outcome(tuple(group), None, f"{where[0]}: {where[1]} port down (NET/IB: no active port)")
        if len(group) < 2:
            return Outcome(tuple(group), None, "a multi-node all-reduce needs two nodes")
        rate = min(self.node_rate(n) for n in group)
        rate = min([rate, *(self.link_rate(a, b) for a, b in ring_edges(list(group)))])
        return Outcome(tuple(group), round(rate, 2))

    def launch(self, groups: Sequence[Sequence[str]]) -> list[Outcome]:
        """One round: the groups at once (disjoint, as the caller promises; checked)."""
        members = [n for g in groups for n in g]
        if len(members) != len(set(members)):
            raise ValueError(f"a round's groups share a node: {groups}")
        self.launches.append([tuple(g) for g in groups])
        return [self.busbw(g) for g in groups]

    def fio_node_mbps(self, node: str, clients: int) -> float:
        kind, where = self.fault
        share = F800_NODE_MBPS * self.f800 / max(clients, 1)
        nic = FIO_NODE_MBPS * (SLOW if kind == "slow_node" and node in where else 1.0)
        return min(nic, share)


# ----------------------------------------------------------------------------------------- run directories


def _nccl_log(nodes: Sequence[str], busbw: float | None, error: str = "") -> str:
    """An all_reduce_perf log in nccl-tests 2.x's layout (tests/validation/fixtures/nccl), 8 ranks per node."""
    lines = [f"# MODEL ENGINE: {LABEL}",
             "# nThread 1 nGpus 1 minBytes 33554432 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
             "validation: 1 ", "#", "# Using devices"]
    for r in range(8 * len(nodes)):
        lines.append(f"#  Rank {r:2d} Pid {40000 + r:6d} on {nodes[r // 8]:>10} device  {r % 8} [0000:07:00] "
                     "NVIDIA A100-SXM4-40GB")
    lines += ["#", "#                                                       out-of-place                       "
              "in-place          ",
              "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   "
              "busbw  error",
              "#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
              "(GB/s)       "]
    if busbw is None:
        lines.append(f"{nodes[0]}: Test NCCL failure common.cu:1005 'unhandled system error' ({error})")
        return "\n".join(lines) + "\n"
    ranks = 8 * len(nodes)
    factor = 2 * (ranks - 1) / ranks
    size = 33554432
    while size <= 8589934592:
        bw = busbw * min(1.0, 0.55 + size / 8589934592)
        alg = bw / factor
        t = size / (alg * 1e3)
        lines.append(f"{size:12d} {size // 4:13d}     float     sum {t:8.1f} {alg:7.2f} {bw:7.2f}  0e+00 "
                     f"{t:8.1f} {alg:7.2f} {bw:7.2f}  0e+00")
        size *= 2
    avg = busbw * 0.78
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {avg:.3f} ", "#"]
    return "\n".join(lines) + "\n"


def _meta(stage: str, case: str, nodes: Sequence[str], files: Sequence[str], **extra: Any) -> dict[str, Any]:
    return {"model_engine": LABEL, "stage": stage, "case": case, "nodes": list(nodes),
            "samples": [{"file": f, "rc": 0, "timed_out": False, "duration_s": 30.0} for f in files], **extra}


def _write_case(run: Path, stage: str, case: str, files: dict[str, str], meta: dict[str, Any]) -> None:
    d = run / "raw" / stage / case
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text, encoding="utf-8")
    (d / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def nccl_command(ranks: int) -> list[str]:
    return ["mpirun", "-np", str(ranks), "/opt/nccl-tests/build/all_reduce_perf", "-b", "33554432", "-e",
            "8589934592", "-f", "2", "-g", "1", "-c", "1", "-n", "20", "-w", "5"]


def write_nccl(run: Path, model: ModelCluster, repeats: int = 3) -> None:
    """The NCCL stage's all-node case and ring pairs (cases and meta.json as nccl_runner writes them)."""
    nodes = model.nodes
    cases = [("all", list(nodes), "all")] + [(f"pair-{a}-{b}", [a, b], "pair") for a, b in ring_edges(nodes)
                                             if len(nodes) > 2]
    for case, members, kind in cases:
        outcome = model.busbw(members)
        text = _nccl_log(members, outcome.value, outcome.error)
        files = {f"r{k}.log": text for k in range(1, repeats + 1)}
        _write_case(run, "nccl", case, files, _meta("nccl", case, members, list(files), kind=kind,
                                                  expected_ranks=8 * len(members), engine="mpirun",
                                                  command=nccl_command(8 * len(members))))


def context(model: ModelCluster, base: dict[str, Any]) -> dict[str, Any]:
    """A run's context.json for the model's nodes, from a real site's context (base: context_from_inventory of a
    generated site, or the production sample's with its DGX entry repeated)."""
    ctx = json.loads(json.dumps(base))
    ctx["model_engine"] = LABEL
    dgx = ctx.get("dgx") or {}
    template = next(iter(dgx.values()), {})
    ctx["dgx"] = {n: dgx.get(n, template) for n in model.nodes}
    if "nodes" in ctx:
        ctx["nodes"] = list(model.nodes)
    return ctx


def write_run(run: Path, model: ModelCluster, base_context: dict[str, Any], repeats: int = 3) -> Path:
    """A run directory of the model's size: context.json and the NCCL stage, every file labelled a model."""
    run.mkdir(parents=True, exist_ok=True)
    write_nccl(run, model, repeats)
    (run / "context.json").write_text(json.dumps(context(model, base_context)), encoding="utf-8")
    (run / "MODEL_ENGINE").write_text(LABEL + "\n", encoding="utf-8")
    return run


def rounds_needed(n: int) -> int:
    """ceil(log2 n) + 2, the localisation bound the tests hold the model to."""
    return math.ceil(math.log2(n)) + 2
