"""Fixtures for the validation tests: a production-sized run directory assembled from the raw fixtures."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from validation.context import context_from_inventory
from validation.verdict import ring_pairs

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parent / "fixtures"
NODES = ["dgx01", "dgx02", "dgx03", "dgx04"]
ADDR = {n: f"198.51.100.1{i}" for i, n in enumerate(NODES, start=1)}


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
# What the fio runner recorded as asked for the captured fio fixtures (their "global options"): the captures
# ran a plain sequential read of /tmp/fiox/d2 with psync, buffered, whole file set.
FIO_ASKED = {"rw": "read", "profile": {"bs": "1M", "direct": 0, "runtime": 0}}


def ddp_doc(mode: str, world: int, samples_per_s: float, steps: int = 50) -> str:
    step = 256 * world / samples_per_s
    return json.dumps({"mode": mode, "model": "resnet50", "backend": "nccl", "device": "cuda", "world_size": world,
                       "nodes": NODES[: world // 8], "batch_size_per_rank": 256, "global_batch": 256 * world,
                       "steps": steps, "warmup_steps": 10, "complete": True, "errors": [],
                       "step_times_s": [step] * steps, "rank_mean_step_s": [step] * world,
                       "samples_per_s": samples_per_s,
                       "dataset": DDP_DATASET if mode == "real" else None})


DDP_DATASET = "/mnt/training/.validation-dataset"


def nccl_command(min_bytes: int, max_bytes: int, gpus: int) -> list[str]:
    """The command the NCCL runner records for a case whose fixture swept min_bytes..max_bytes by x2."""
    return ["mpirun", "-np", "16", "/opt/nccl-tests/build/all_reduce_perf", "-b", str(min_bytes), "-e", str(max_bytes),
            "-f", "2", "-g", str(gpus), "-c", "1", "-n", "20", "-w", "5"]


def repeated(text: str, ext: str, n: int = REPEATS) -> dict[str, str]:
    return {f"r{k}.{ext}": text for k in range(1, n + 1)}


def fio_node_meta(node: str) -> dict:
    """meta.json of a healthy per-node fio case (what the runner records as asked)."""
    return dict(FIO_ASKED, expected_clients={f"{ADDR[node]}:8765": node}, directories={node: "/tmp/fiox/d2"})


def build_production_run(run: Path) -> None:
    """A complete, passing production run: 4 DGX A100, nccl + fio + ddp, validation_repeats samples each."""
    for n in NODES:
        write_case(run, "sysinfo", n, {"topo.txt": fixture_text("topo/dgx_a100_topo_m.txt"),
                                       "ibstat.txt": fixture_text("topo/dgx_a100_ibstat.txt")}, {"nodes": [n]})
    single = fixture_text("nccl/single_node_dgx_a100.log")
    for n in NODES:
        text = _rename_hosts(single, [n] * 8)
        write_case(run, "nccl", f"single-{n}", repeated(text, "log"),
                   {"nodes": [n], "expected_ranks": 8, "engine": "direct", "command": nccl_command(8, 8589934592, 8)})
    four = _rename_hosts(fixture_text("nccl/four_nodes_old_error_column.log"), NODES)
    write_case(run, "nccl", "all", repeated(four, "log"), {"nodes": NODES, "expected_ranks": 32, "engine": "mpirun",
                                                          "command": nccl_command(8, 8589934592, 1)})
    two = fixture_text("nccl/two_nodes_mpirun_tag_output.log")
    for a, b in ring_pairs(NODES):
        text = _rename_hosts(two, [a, b]).replace("dgx01:", f"{a}:").replace("dgx02:", f"{b}:")
        write_case(run, "nccl", f"pair-{a}-{b}", repeated(text, "log"),
                   {"nodes": [a, b], "expected_ranks": 16, "command": nccl_command(33554432, 8589934592, 1)})
    agg = fixture_text("fio/client_server_4dgx_production.json")
    write_case(run, "fio", "aggregate", repeated(agg, "json"),
               dict(FIO_ASKED, expected_clients={f"{ADDR[n]}:8765": n for n in NODES},
                    directories={n: "/tmp/fiox/d2" for n in NODES}))
    one = fixture_text("fio/client_server_1dgx_production.json")
    for n in NODES:
        text = one.replace(ADDR["dgx01"], ADDR[n])
        write_case(run, "fio", f"node-{n}", repeated(text, "json"),
                   dict(FIO_ASKED, expected_clients={f"{ADDR[n]}:8765": n}, directories={n: "/tmp/fiox/d2"}))
    for count, syn, real in ((1, 16500.0, 16210.0), (4, 63800.0, 62950.0)):
        world = 8 * count
        files = {f"{m}-r{k}.json": ddp_doc(m, world, v) for m, v in (("synthetic", syn), ("real", real))
                 for k in range(1, REPEATS + 1)}
        samples = [{"file": f, "rc": 0, "timed_out": False, "mode": f.split("-")[0]} for f in files]
        write_case(run, "ddp", f"n{count}", files,
                   {"nodes": NODES[:count], "expected_world_size": world, "training": {"dataset": DDP_DATASET}},
                   samples=samples)


@pytest.fixture
def production_ctx() -> dict:
    return context_from_inventory(ROOT / "inventories" / "production")


@pytest.fixture
def lab_ctx() -> dict:
    return context_from_inventory(ROOT / "inventories" / "lab")


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
