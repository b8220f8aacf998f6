"""Fixtures for the validation tests: a production-sized run directory assembled from the raw fixtures."""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from validation import parse_fio
from validation.context import context_from_inventory
from validation.verdict import ring_pairs

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parent / "fixtures"
NODES = ["dgx01", "dgx02", "dgx03", "dgx04"]
ADDR = {n: f"198.51.100.1{i}" for i, n in enumerate(NODES, start=1)}


def play_on_this_machine(tmp_path: Path, play: list[dict]) -> list[dict]:
    """A play run by ansible-playbook against this machine as the node (connection local, this Python), with the
    project's ansible.cfg: its tasks as the json callback reports them."""
    book = tmp_path / f"play-{len(list(tmp_path.glob('play-*.yml')))}.yml"
    book.write_text(json.dumps(play))
    env = {**os.environ, "ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(book)],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=120, check=False)
    return [{"rc": proc.returncode, **task} for task in json.loads(proc.stdout)["plays"][0]["tasks"]]


def fixture_text(rel: str) -> str:
    return (FIX / rel).read_text(encoding="utf-8")


def _rename_hosts(text: str, hosts: list[str]) -> str:
    """Point a fixture's rank lines at other hosts (8 ranks per host, in order)."""
    def repl(m: re.Match[str]) -> str:
        rank = int(m.group(1))
        return m.group(0).replace(m.group(2), f"{hosts[rank // 8]:>10}")
    return re.sub(r"#  Rank\s+(\d+) Group\s+\d+ Pid\s+\d+ on(\s+\S+)", repl, text)


def write_case(run: Path, stage: str, case: str, files: dict[str, str], meta: dict, samples=None) -> Path:
    d = run / "raw" / stage / case
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text, encoding="utf-8")
    meta = dict(meta, stage=stage, case=case)
    meta["samples"] = samples if samples is not None else [
        {"file": name, "rc": 0, "timed_out": False, "duration_s": 30.0} for name in files]
    (d / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return d


REPEATS = 5  # inventories/production validation_repeats: every case holds that many samples
FIO_RUNTIME_S = 60  # inventories/common validation_fio.runtime_s: a time-based read of 60 s


def fio_asked(nodes: list[str], repeats: int = REPEATS, addresses: dict[str, str] | None = None) -> dict:
    """What the fio runner records as asked (meta.json asked) for the fio fixtures: a sequential read of
    /tmp/fiox/d2, 8 jobs of 32M with libaio at iodepth 16, direct, time-based for 60 s: the production site's
    validation_fio (inventories/common) as the fixtures' text before their JSON says fio started it
    (time_based_read writes those options into the JSON's "global options"; read.runtime: 60000 ms). addresses:
    each node's storage address its fio client listens on (default: the fixtures' ADDR)."""
    addr = addresses if addresses is not None else ADDR
    return {"rw": "read", "bs": "1M", "size": "32M", "numjobs": 8, "iodepth": 16, "ioengine": "libaio", "direct": 1,
            "runtime": FIO_RUNTIME_S, "time_based": 1, "directories": {n: "/tmp/fiox/d2" for n in nodes},
            "clients": {f"{addr[n]}:8765": n for n in nodes}, "read_bytes": 8 * 32 * 1024 * 1024,
            "drop_client_caches": True, "repeats": repeats, "nodes": list(nodes)}


def fio_meta(nodes: list[str], repeats: int = REPEATS) -> dict:
    """meta.json of a healthy fio read case of these nodes (what the runner records)."""
    return {"nodes": list(nodes), "engine": "fio-client/server", "asked": fio_asked(nodes, repeats)}


def time_based_read(text: str, runtime_s: int = FIO_RUNTIME_S) -> str:
    """A fio fixture as fio prints a time-based read of the production job: runtime and time_based in its "global
    options", and the job the site asks (8 jobs, libaio, iodepth 16, direct) as its leading text says it ran."""
    start = 0 if text.startswith("{") else text.index("\n{") + 1
    doc = json.loads(text[start:])
    doc["global options"].update(runtime=str(runtime_s), time_based="1", numjobs="8", iodepth="16",
                                 ioengine="libaio", direct="1")
    return text[:start] + json.dumps(doc, indent=2) + "\n"


def nccl_asked(nodes: list[str], min_bytes: int, max_bytes: int, gpus: int, ranks: int, engine: str,
               repeats: int = REPEATS) -> dict:
    """What the NCCL runner records as asked (meta.json asked) for a case whose fixture swept min..max by x2 with
    `gpus` GPUs per process (nGpus), 5 warm-up and 20 timed iterations."""
    sizes, size = 0, min_bytes
    while size <= max_bytes:
        sizes, size = sizes + 1, size * 2
    return {"test": "all_reduce_perf", "nthread": 1, "ngpus": gpus, "min_bytes": min_bytes, "max_bytes": max_bytes,
            "step": 2, "warmup_iters": 5, "iters": 20, "sizes": sizes, "ranks": ranks, "nodes": list(nodes),
            "engine": engine, "standin": False, "repeats": repeats}


def nccl_meta(nodes: list[str], min_bytes: int, max_bytes: int, gpus: int, engine: str = "mpirun",
              repeats: int = REPEATS) -> dict:
    """meta.json of a healthy NCCL case: its nodes, engine, command line and asked values (8 ranks per DGX)."""
    return {"nodes": list(nodes), "engine": engine, "command": nccl_command(min_bytes, max_bytes, gpus),
            "asked": nccl_asked(nodes, min_bytes, max_bytes, gpus, 8 * len(nodes), engine, repeats)}


def ddp_asked(nodes: list[str], repeats: int = REPEATS, modes: tuple[str, ...] = ("synthetic", "real")) -> dict:
    """What the DDP runner records as asked (meta.json asked) for the trainings ddp_doc writes."""
    return {"model": "resnet50", "steps": 50, "warmup_steps": 10, "batch_size_per_rank": 256, "image_size": 224,
            "world_size": 8 * len(nodes), "nodes": list(nodes), "backend": "nccl", "device": "cuda",
            "modes": list(modes), "repeats": repeats, "dataset": DDP_DATASET, "engine": "pyxis"}


def ddp_doc(mode: str, world: int, samples_per_s: float, steps: int = 50, wall_start: float = 1.8e9) -> str:
    step = 256 * world / samples_per_s
    return json.dumps({"mode": mode, "model": "resnet50", "backend": "nccl", "device": "cuda", "world_size": world,
                       "nodes": NODES[: world // 8], "batch_size_per_rank": 256, "global_batch": 256 * world,
                       "steps": steps, "warmup_steps": 10, "image_size": 224, "complete": True, "errors": [],
                       "step_times_s": [step] * steps, "rank_mean_step_s": [step] * world,
                       "samples_per_s": samples_per_s, "wall_start": wall_start,
                       "wall_end": wall_start + step * (steps + 10),
                       "dataset": DDP_DATASET if mode == "real" else None})


REAL = ROOT / "tests" / "fixtures" / "paths" / "real"


def iperf3_doc(server: str, streams: int, reverse: bool, mbps: float, seconds: int = 10, client: str = "dgx01"
               ) -> str:
    """The real iperf3 -J capture (tests/fixtures/paths/real) re-aimed: another server, stream count, direction,
    throughput and client host (its uname in system_info), as a production storage or fabric path would print it."""
    doc = json.loads((REAL / "iperf3-tcp-1stream-3.9-cloudpilot.json").read_text(encoding="utf-8"))
    start = doc["start"]
    start["system_info"] = start["system_info"].replace("iperf3-clients-9j5nd", client)
    start["connected"] = [dict(start["connected"][0], socket=5 + i, remote_host=server, remote_port=5201)
                          for i in range(streams)]
    start["test_start"].update(num_streams=streams, reverse=int(reverse), duration=seconds)
    bps = mbps * 8e6
    for key in ("sum_sent", "sum_received"):
        doc["end"][key].update(seconds=float(seconds), end=float(seconds), bytes=int(mbps * 1e6 * seconds),
                               bits_per_second=bps)
    return json.dumps(doc, indent="\t")


def ib_write_bw_text(device: str, gbps: float) -> str:
    """The real ib_write_bw report (perftest #273) for another HCA and average bandwidth."""
    text = (REAL / "ib_write_bw-gbits-perftest-273.txt").read_text(encoding="utf-8")
    text = text.replace("Device         : ib0", f"Device         : {device}").replace("Post List ", "")
    return re.sub(r"(?m)^ 8          224958464        0.00               0.48",
                  f" 65536      224958464        0.00               {gbps:.2f}", text)


def stats_jsonl(bytes_sent: float, seconds: int = 60, t0: float = 1.8e9) -> str:
    """A sampler's file (validation.array_telemetry) during a phase in which the array sent bytes_sent: one
    statistics/current answer per second, in the real answer's layout (tests/fixtures/onefs/real)."""
    rate = bytes_sent / seconds
    lines = [json.dumps({"sampler": "array_telemetry", "path": "/platform/1/statistics/current", "interval_s": 1})]
    for i in range(seconds + 2):
        value = rate if 1 <= i <= seconds else 0.0
        stats = [{"devid": dev, "error": None, "error_code": None, "key": key, "time": int(t0) + i,
                  "value": value / 4 if key.endswith("out.rate") else 0.0}
                 for dev in (1, 2, 3, 4) for key in ("node.net.ext.bytes.out.rate", "node.ifs.bytes.out.rate")]
        lines.append(json.dumps({"t": t0 + i + 0.3, "answer": {"stats": stats}}))
    return "\n".join(lines) + "\n"


def util_doc(node: str, windows: list[tuple[float, float]], pct: float = 95.0) -> str:
    """util_sampler.py's file of a DGX whose 8 GPUs ran at pct during the given windows (nvidia-smi's CSV)."""
    start, end = min(a for a, _ in windows) - 3, max(b for _, b in windows) + 3
    samples, t = [], start
    while t <= end:
        busy = any(a <= t <= b for a, b in windows)
        rows = "".join(f"{i}, {int(pct) if busy else 0} %, {30000 if busy else 5} MiB\n" for i in range(8))
        samples.append({"t": t, "text": "index, utilization.gpu [%], memory.used [MiB]\n" + rows})
        t += 1.0
    return json.dumps({"what": "gpu", "node": node, "interval_s": 1.0, "samples": samples, "errors": []})


DDP_DATASET = "/mnt/training/.validation-dataset"


def nccl_command(min_bytes: int, max_bytes: int, gpus: int) -> list[str]:
    """The command the NCCL runner records for a case whose fixture swept min_bytes..max_bytes by x2."""
    return ["mpirun", "-np", "16", "/opt/nccl-tests/build/all_reduce_perf", "-b", str(min_bytes), "-e", str(max_bytes),
            "-f", "2", "-g", str(gpus), "-c", "1", "-n", "20", "-w", "5"]


def repeated(text: str, ext: str, n: int = REPEATS) -> dict[str, str]:
    return {f"r{k}.{ext}": text for k in range(1, n + 1)}


def fio_node_meta(node: str) -> dict:
    """meta.json of a healthy per-node fio case (what the runner records as asked)."""
    return fio_meta([node])


def build_production_run(run: Path) -> None:
    """A complete, passing production run: 4 DGX A100, nccl + fio + ddp, validation_repeats samples each."""
    for n in NODES:
        write_case(run, "sysinfo", n, {"topo.txt": fixture_text("topo/dgx_a100_topo_m.txt"),
                                       "ibstat.txt": fixture_text("topo/dgx_a100_ibstat.txt")}, {"nodes": [n]})
    single = fixture_text("nccl/single_node_dgx_a100.log")
    for n in NODES:
        text = _rename_hosts(single, [n] * 8)
        write_case(run, "nccl", f"single-{n}", repeated(text, "log"), nccl_meta([n], 8, 8589934592, 8, "direct"))
    four = _rename_hosts(fixture_text("nccl/four_nodes_old_error_column.log"), NODES)
    write_case(run, "nccl", "all", repeated(four, "log"), nccl_meta(NODES, 8, 8589934592, 1))
    two = fixture_text("nccl/two_nodes_mpirun_tag_output.log")
    for a, b in ring_pairs(NODES):
        text = _rename_hosts(two, [a, b]).replace("dgx01:", f"{a}:").replace("dgx02:", f"{b}:")
        write_case(run, "nccl", f"pair-{a}-{b}", repeated(text, "log"), nccl_meta([a, b], 33554432, 8589934592, 1))
    agg = time_based_read(fixture_text("fio/client_server_4dgx_production.json"))
    write_case(run, "fio", "aggregate", repeated(agg, "json"), fio_meta(NODES))
    one = time_based_read(fixture_text("fio/client_server_1dgx_production.json"))
    for n in NODES:
        text = one.replace(ADDR["dgx01"], ADDR[n])
        write_case(run, "fio", f"node-{n}", repeated(text, "json"), fio_node_meta(n))
    for count, syn, real in ((1, 16500.0, 16210.0), (4, 63800.0, 62950.0)):
        world = 8 * count
        windows: list[tuple[float, float]] = []
        files = {}
        for i, (m, v) in enumerate((("synthetic", syn), ("real", real))):
            for k in range(1, REPEATS + 1):
                doc = ddp_doc(m, world, v, wall_start=1.8e9 + (i * REPEATS + k) * 20)
                files[f"{m}-r{k}.json"] = doc
                if m == "real":
                    d = json.loads(doc)
                    windows.append((d["wall_start"], d["wall_end"]))
        samples = [{"file": f, "rc": 0, "timed_out": False, "mode": f.split("-")[0]} for f in files]
        case_dir = write_case(run, "ddp", f"n{count}", files,
                              {"nodes": NODES[:count], "engine": "srun/pyxis", "asked": ddp_asked(NODES[:count])},
                              samples=samples)
        for n in NODES[:count]:
            (case_dir / f"util-{n}.json").write_text(util_doc(n, windows), encoding="utf-8")
        loaders = REPEATS * 256 * world * 60 * (1 + 3 * 224 * 224)
        telemetry = run / "raw" / "telemetry" / "ddp"
        telemetry.mkdir(parents=True, exist_ok=True)
        (telemetry / f"n{count}.jsonl").write_text(stats_jsonl(loaders * 1.01), encoding="utf-8")
    build_production_paths(run)


STORAGE_MBPS = 4850.0     # iperf3 -R with 8 streams on a 40 GbE path: 0.97 of its line rate
FABRIC_GBITS = 196.0      # ib_write_bw per HDR HCA (200 Gb/s)


HCAS = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]  # a DGX A100's compute HCAs


def iperf3_asked(server: str, client: str, repeats: int = REPEATS) -> dict:
    """What the paths runner records as asked (meta.json asked) for a storage path whose iperf3_doc is
    iperf3_doc(server, 8, True, ..., client=client): 8 streams, 10 s, reverse, TCP."""
    return {"server": server, "port": 5201, "streams": 8, "seconds": 10, "reverse": True, "protocol": "TCP",
            "repeats": repeats, "client": client, "nodes": [client]}


def ib_write_bw_asked(nodes: list[str], devices: list[str]) -> dict:
    """What the paths runner records as asked (meta.json asked) for a fabric pair: one report per HCA."""
    return {"server": "203.0.113.1", "devices": list(devices), "seconds": 10, "port_base": 18515, "repeats": 1,
            "nodes": list(nodes)}


def build_production_paths(run: Path) -> None:
    """The path baselines and the array telemetry of a passing production run."""
    server = {"dgx01": "198.51.100.21", "dgx02": "198.51.100.32", "dgx03": "198.51.100.23", "dgx04": "198.51.100.34"}
    for n in NODES:
        for case, mbps in ((f"storage-{n}", STORAGE_MBPS), (f"storage-all-{n}", STORAGE_MBPS * 0.98)):
            write_case(run, "paths", case, repeated(iperf3_doc(server[n], 8, True, mbps, client=n), "json"),
                       {"kind": "storage-all" if "all" in case else "storage", "nodes": [n], "tool": "iperf3",
                        "path": f"{n} -> {server[n]}", "asked": iperf3_asked(server[n], n)})
    for a, b in ring_pairs(NODES):
        files = {f"{dev}-r1.txt": ib_write_bw_text(dev, FABRIC_GBITS) for dev in HCAS}
        samples = [{"file": f"{dev}-r1.txt", "device": dev, "rc": 0, "timed_out": False, "duration_s": 10.0}
                   for dev in HCAS]
        write_case(run, "paths", f"fabric-{a}-{b}", files,
                   {"kind": "fabric", "nodes": [a, b], "tool": "ib_write_bw", "path": f"{a} -> {b}",
                    "asked": ib_write_bw_asked([a, b], HCAS)}, samples=samples)
    one = fixture_text("fio/client_server_1dgx_production.json")
    agg = fixture_text("fio/client_server_4dgx_production.json")
    for case, text in [(f"node-{n}", one) for n in NODES] + [("aggregate", agg)]:
        moved = sum(parse_fio.client_io_bytes(parse_fio.parse(text)).values())
        telemetry = run / "raw" / "telemetry" / "fio" / case
        telemetry.mkdir(parents=True, exist_ok=True)
        for k in range(1, REPEATS + 1):
            (telemetry / f"r{k}.jsonl").write_text(stats_jsonl(moved * 1.02), encoding="utf-8")


@functools.cache
def _site_context(site: str) -> dict:
    """A site's context, read once per session (Ansible's managers read the inventory); each test gets a copy."""
    return context_from_inventory(ROOT / "inventories" / site)


@pytest.fixture
def production_ctx() -> dict:
    return copy.deepcopy(_site_context("production"))


@pytest.fixture
def lab_ctx() -> dict:
    return copy.deepcopy(_site_context("lab"))


@pytest.fixture
def production_run(tmp_path: Path, production_ctx: dict) -> Path:
    run = tmp_path / "20261121T080000Z"
    build_production_run(run)
    (run / "context.json").write_text(json.dumps(production_ctx), encoding="utf-8")
    return run


@pytest.fixture
def replace_case() -> Callable[..., Path]:
    def _replace(run: Path, stage: str, case: str, files: dict[str, str], meta: dict, samples=None) -> Path:
        shutil.rmtree(run / "raw" / stage / case, ignore_errors=True)
        return write_case(run, stage, case, files, meta, samples)
    return _replace


def report_schema_errors(doc: object) -> list[str]:
    """Every way doc breaks validation/schema/report.schema.json (empty: it is a valid report.json)."""
    import jsonschema

    from validation.report import schema

    validator = jsonschema.Draft202012Validator(schema())
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(doc)]


@pytest.fixture(autouse=True)
def every_report_json_follows_the_schema(request: pytest.FixtureRequest):
    """Each report.json a test of this directory writes under its tmp_path must validate against the schema."""
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is None:
        return
    for path in sorted(tmp.rglob("report.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        errors = report_schema_errors(doc)
        assert errors == [], f"{path} does not follow report.schema.json: {errors[:5]}"


# Recorded lab runs: the raw outputs of real lab validation runs (the TCG VMs, their stand-ins labelled in every
# file they wrote), kept byte for byte with their context (tests/fixtures/lab/runs/SOURCES).
LAB_RUNS = ROOT / "tests" / "fixtures" / "lab" / "runs"


def lab_run_copy(run_id: str, dest: Path) -> Path:
    """A writable copy of a recorded lab run at dest/<run_id> (the verdict reads its run directory's name). A
    scale-out's run names the run before it by its path on the machine it ran on (validate_scale_before); the copy
    names dest/<that run's id> instead, so nothing outside dest is ever read."""
    run = dest / run_id
    shutil.copytree(LAB_RUNS / run_id, run)
    ctx = lab_run_ctx(run)
    if ctx.get("validate_scale_before"):
        ctx["validate_scale_before"] = str(dest / Path(ctx["validate_scale_before"]).name)
        (run / "context.json").write_text(json.dumps(ctx))
    return run


def lab_run_ctx(run: Path) -> dict:
    """The context the run was launched with (context.json, written by the validate role's prepare step)."""
    return json.loads((run / "context.json").read_text())
