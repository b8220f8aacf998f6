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

from validation import sitegen
from validation.localise import Outcome, ring_edges

LABEL = "validation model engine (tests/scale/model_engine.py): a MODEL of the cluster, not a measurement"
BUSBW_GBPS = 190.0        # NCCL ring bus bandwidth of a healthy DGX A100 group (8 HDR HCAs), GB/s
FIO_NODE_MBPS = 4700.0    # one DGX reading over one 40 GbE F800 port, MB/s
F800_NODE_MBPS = 4800.0   # what one F800 node serves, MB/s
SLOW = 0.5                # a slow node or link runs at half its rate
FIO_ENGINE = "fio-client/server"  # the engine validation/runners/fio_runner.py records


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
    """meta.json as the runners write it (validation/runners/common.py init_meta; the asked values in extra's
    ``asked``, from tests/validation/conftest.py's *_asked, named as validation/asked.yml names them)."""
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
    """The NCCL stage's all-node case and ring pairs (cases and meta.json as nccl_runner writes them: mpirun, one
    GPU per process, the 32 MiB..8 GiB sweep the log prints)."""
    from tests.validation import conftest as fx

    nodes = model.nodes
    cases = [("all", list(nodes), "all")] + [(f"pair-{a}-{b}", [a, b], "pair") for a, b in ring_edges(nodes)
                                             if len(nodes) > 2]
    for case, members, kind in cases:
        outcome = model.busbw(members)
        text = _nccl_log(members, outcome.value, outcome.error)
        files = {f"r{k}.log": text for k in range(1, repeats + 1)}
        asked = fx.nccl_asked(members, 33554432, 8589934592, 1, 8 * len(members), "mpirun", repeats)
        _write_case(run, "nccl", case, files, _meta("nccl", case, members, list(files), kind=kind, engine="mpirun",
                                                  command=nccl_command(8 * len(members)), asked=asked))


def context_from_site(site: sitegen.Site, base: dict[str, Any]) -> dict[str, Any]:
    """context.json for a generated site (validation/sitegen.py) without Ansible: the production sample's context
    (base, context_from_inventory of inventories/production: thresholds, stage settings, models) with the site's
    nodes, DGX and PowerScale hosts and NFS map; labelled a model."""
    ctx = json.loads(json.dumps(base))
    groups = site.files["hosts.yml"]["all"]["children"]
    dgx_vars = groups["dgx"]["vars"]
    ctx["model_engine"] = LABEL
    ctx["nodes"] = list(site.layout.dgx)
    ctx["dgx"] = {n: {**dgx_vars, **{k: v for k, v in h.items() if k != "ansible_host"}}
                  for n, h in groups["dgx"]["hosts"].items()}
    ctx["powerscale"] = {n: {k: v for k, v in h.items() if k != "ansible_host"}
                         for n, h in groups["powerscale"]["hosts"].items()}
    ctx["nfs_server_map"] = site.files["group_vars/all/nfs_client.yml"]["nfs_server_map"]
    ctx["powerscale_smartconnect"] = site.files["group_vars/all/storage.yml"]["powerscale_smartconnect"]
    ctx["site"] = f"model-{len(site.layout.dgx)}"
    return ctx


def _address(ctx: dict[str, Any], node: str) -> str:
    return str(ctx["dgx"][node]["storage_nics"][0]["address"]).split("/")[0]


def _server(ctx: dict[str, Any], node: str) -> str:
    target = ctx["nfs_server_map"][node]
    nics = ctx["powerscale"][target["node"]]["storage_nics"]
    return str(next(n for n in nics if n["name"] == target["nic"])["address"]).split("/")[0]


def _labelled_json(text: str) -> str:
    """A JSON output (after any leading text lines) with the model's label as its first key."""
    start = text.index("{")
    doc = json.loads(text[start:])
    return text[:start] + json.dumps({"model_engine": LABEL, **doc}, indent=1)


def _fio_aggregate(one: str, four: str, addresses: Sequence[str]) -> str:
    """fio client/server output of len(addresses) clients, from the real 4-client capture: each client's entry
    is the capture's first client re-aimed, the All clients entry the capture's, scaled to the client count."""
    start = four.index("{")
    prefix = [ln for ln in four[:start].splitlines() if ln.startswith("<198.51.100.11>")]
    doc = json.loads(four[start:])
    clients = [c for c in doc["client_stats"] if c.get("jobname") != "All clients"]
    total = next(c for c in doc["client_stats"] if c.get("jobname") == "All clients")
    template = clients[0]
    scale = len(addresses) / len(clients)
    entries = [dict(template, hostname=a) for a in addresses]
    total = json.loads(json.dumps(total))
    for key in ("io_bytes", "bw_bytes", "bw", "iops", "io_kbytes"):
        if key in total.get("read", {}):
            total["read"][key] = type(total["read"][key])(total["read"][key] * scale)
    total["hostname"] = addresses[-1]
    doc["client_stats"] = [*entries, total]
    lines = [ln.replace("198.51.100.11", a) for a in addresses for ln in prefix]
    return "\n".join(lines) + "\n" + json.dumps({"model_engine": LABEL, **doc}, indent=1)


def write_full_run(run: Path, model: ModelCluster, ctx: dict[str, Any]) -> Path:
    """Every stage of a run for the model's nodes (sysinfo, nccl, fio, ddp, paths and the array telemetry), the
    outputs re-aimed from the real captures of tests/validation/fixtures (as the 4-node production fixture run
    of tests/validation/conftest.py), the NCCL figures from the model. Every file labelled a model."""
    from tests.validation import conftest as fx

    nodes = model.nodes
    repeats = int(ctx.get("validation_repeats") or 1)
    run.mkdir(parents=True, exist_ok=True)
    topo, ibstat = fx.fixture_text("topo/dgx_a100_topo_m.txt"), fx.fixture_text("topo/dgx_a100_ibstat.txt")
    single = fx.fixture_text("nccl/single_node_dgx_a100.log")
    for n in nodes:
        _write_case(run, "sysinfo", n, {"topo.txt": topo, "ibstat.txt": ibstat},
                    _meta("sysinfo", n, [n], ["topo.txt", "ibstat.txt"]))
        text = f"# MODEL ENGINE: {LABEL}\n" + fx._rename_hosts(single, [n] * 8)
        files = {f"r{k}.log": text for k in range(1, repeats + 1)}
        _write_case(run, "nccl", f"single-{n}", files,
                    _meta("nccl", f"single-{n}", [n], list(files), engine="direct",
                          command=fx.nccl_command(8, 8589934592, 8),
                          asked=fx.nccl_asked([n], 8, 8589934592, 8, 8, "direct", repeats)))
    write_nccl(run, model, repeats)
    # the captures read time-based (time_based_read), as the runner asks: runtime and time_based in the options
    one = fx.time_based_read(fx.fixture_text("fio/client_server_1dgx_production.json"))
    four = fx.time_based_read(fx.fixture_text("fio/client_server_4dgx_production.json"))
    addresses = {n: _address(ctx, n) for n in nodes}
    agg = _fio_aggregate(one, four, list(addresses.values()))
    files = {f"r{k}.json": agg for k in range(1, repeats + 1)}
    _write_case(run, "fio", "aggregate", files, _meta("fio", "aggregate", nodes, list(files), engine=FIO_ENGINE,
                                                      asked=fx.fio_asked(nodes, repeats, addresses)))
    moved_one = sum(fx.parse_fio.client_io_bytes(fx.parse_fio.parse(one)).values())
    for n, a in addresses.items():
        text = _labelled_json(one.replace("198.51.100.11", a))
        files = {f"r{k}.json": text for k in range(1, repeats + 1)}
        _write_case(run, "fio", f"node-{n}", files, _meta("fio", f"node-{n}", [n], list(files), engine=FIO_ENGINE,
                                                          asked=fx.fio_asked([n], repeats, addresses)))
        telemetry = run / "raw" / "telemetry" / "fio" / f"node-{n}"
        telemetry.mkdir(parents=True, exist_ok=True)
        for k in range(1, repeats + 1):
            (telemetry / f"r{k}.jsonl").write_text(fx.stats_jsonl(moved_one * 1.02), encoding="utf-8")
    telemetry = run / "raw" / "telemetry" / "fio" / "aggregate"
    telemetry.mkdir(parents=True, exist_ok=True)
    for k in range(1, repeats + 1):
        (telemetry / f"r{k}.jsonl").write_text(fx.stats_jsonl(moved_one * len(nodes) * 1.02), encoding="utf-8")
    _write_ddp(run, nodes, repeats, fx)
    _write_paths(run, model, ctx, repeats, fx)
    (run / "context.json").write_text(json.dumps(ctx), encoding="utf-8")
    (run / "MODEL_ENGINE").write_text(LABEL + "\n", encoding="utf-8")
    return run


def _write_ddp(run: Path, nodes: Sequence[str], repeats: int, fx: Any) -> None:
    for count in sorted({1, len(nodes)}):
        world = 8 * count
        rate = 16500.0 * count * (0.97 if count > 1 else 1.0)
        windows: list[tuple[float, float]] = []
        files: dict[str, str] = {}
        for i, (mode, value) in enumerate((("synthetic", rate), ("real", rate * 0.985))):
            for k in range(1, repeats + 1):
                doc = json.loads(fx.ddp_doc(mode, world, value, wall_start=1.8e9 + (i * repeats + k) * 20))
                doc["nodes"] = list(nodes[:count])
                files[f"{mode}-r{k}.json"] = json.dumps({"model_engine": LABEL, **doc})
                if mode == "real":
                    windows.append((doc["wall_start"], doc["wall_end"]))
        meta = _meta("ddp", f"n{count}", nodes[:count], list(files), engine="srun/pyxis",
                     asked=fx.ddp_asked(list(nodes[:count]), repeats))
        meta["samples"] = [{"file": f, "rc": 0, "timed_out": False, "mode": f.split("-")[0]} for f in files]
        _write_case(run, "ddp", f"n{count}", files, meta)
        case_dir = run / "raw" / "ddp" / f"n{count}"
        for n in nodes[:count]:
            (case_dir / f"util-{n}.json").write_text(fx.util_doc(n, windows), encoding="utf-8")
        loaders = repeats * 256 * world * 60 * (1 + 3 * 224 * 224)
        telemetry = run / "raw" / "telemetry" / "ddp"
        telemetry.mkdir(parents=True, exist_ok=True)
        (telemetry / f"n{count}.jsonl").write_text(fx.stats_jsonl(loaders * 1.01), encoding="utf-8")


def _write_paths(run: Path, model: ModelCluster, ctx: dict[str, Any], repeats: int, fx: Any) -> None:
    for n in model.nodes:
        server = _server(ctx, n)
        for case, mbps in ((f"storage-{n}", fx.STORAGE_MBPS), (f"storage-all-{n}", fx.STORAGE_MBPS * 0.98)):
            text = _labelled_json(fx.iperf3_doc(server, 8, True, mbps, client=n))
            files = {f"r{k}.json": text for k in range(1, repeats + 1)}
            _write_case(run, "paths", case, files, _meta(
                "paths", case, [n], list(files), kind="storage-all" if "all" in case else "storage", tool="iperf3",
                engine="iperf3", path=f"{n} -> {server}", asked=fx.iperf3_asked(server, n, repeats)))
    hcas = fx.HCAS
    for a, b in ring_edges(model.nodes):
        rate = fx.FABRIC_GBITS * model.link_rate(a, b) / BUSBW_GBPS * min(model.node_rate(a), model.node_rate(b)) \
            / BUSBW_GBPS
        files = {f"{dev}-r1.txt": f"# MODEL ENGINE: {LABEL}\n" + fx.ib_write_bw_text(dev, rate) for dev in hcas}
        meta = _meta("paths", f"fabric-{a}-{b}", [a, b], list(files), kind="fabric", tool="ib_write_bw",
                     engine="perftest", path=f"{a} -> {b}", asked=fx.ib_write_bw_asked([a, b], hcas))
        meta["samples"] = [{"file": f"{dev}-r1.txt", "device": dev, "rc": 0, "timed_out": False, "duration_s": 10.0}
                           for dev in hcas]
        _write_case(run, "paths", f"fabric-{a}-{b}", files, meta)


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
