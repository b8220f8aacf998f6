"""Issue #17: path baselines, the array's own counters, the utilisation of the trainings and 'where is the limit',
from real-format outputs (tests/fixtures/paths/real, tests/fixtures/onefs/real) to the verdict. A baseline or a
telemetry sample that is missing, failed or unparseable is a FAIL (or, where only a flag is asked, an INFO that
says what is missing), never a silent PASS."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPEATS, ROOT, iperf3_doc, stats_jsonl

from validation import array_telemetry, parse_iperf3, parse_perftest, parse_util
from validation.asked import compare
from validation.stages.paths import judge_path_case
from validation.verdict import FAIL, INFO, PASS, evaluate

REAL = ROOT / "tests" / "fixtures" / "paths" / "real"
ONEFS_REAL = ROOT / "tests" / "fixtures" / "onefs" / "real"


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------- parsers


def test_iperf3_real_capture_parses_and_is_judged_against_what_was_asked():
    r = parse_iperf3.parse(real("iperf3-tcp-1stream-3.9-cloudpilot.json"))
    assert r.version == "iperf 3.9" and r.protocol == "TCP" and r.num_streams == 1 and r.reverse is False
    assert r.received_bytes == 59506816 and r.received_bps == pytest.approx(46234426.367386788)
    assert r.received_MBps == pytest.approx(5.779, rel=1e-3) and r.retransmits == 1033 and r.error is None
    done = parse_iperf3.done(r)
    assert done == {"protocol": "TCP", "streams": 1, "seconds": 10.0, "reverse": False, "server": ["168.1.194.92"],
                    "client": "iperf3-clients-9j5nd", "received_s": pytest.approx(10.296538)}
    asked = {"server": "168.1.194.92", "streams": 1, "seconds": 10, "reverse": False, "protocol": "TCP",
             "client": "iperf3-clients-9j5nd"}
    assert parse_iperf3.problems(r) == [] and compare("iperf3", asked, done) == []
    wrong = compare("iperf3", {"server": "198.51.100.21", "streams": 4, "seconds": 30, "reverse": True,
                               "protocol": "TCP", "client": "dgx01"}, done)
    assert any(p.startswith("streams: asked 4, done 1") for p in wrong)
    assert any(p.startswith("reverse: asked True, done False") for p in wrong)
    assert any(p.startswith("received_s: asked 30, done 10.3: under 90% of what was asked") for p in wrong)
    assert any(p.startswith("server: asked 198.51.100.21, done [168.1.194.92]; missing 198.51.100.21") for p in wrong)
    assert any(p.startswith("client: asked dgx01, done iperf3-clients-9j5nd") for p in wrong)


def test_iperf3_error_and_cut_off_captures_are_problems():
    err = parse_iperf3.parse(real("iperf3-error-control-socket-3.6-cloudpilot.json"))  # CRLF line ends, as captured
    assert err.error == "error - control socket has closed unexpectedly" and err.received_bps is None
    assert any("control socket has closed" in p for p in parse_iperf3.problems(err))
    cut = parse_iperf3.parse(real("iperf3-no-result-3.9-cloudpilot.json"))
    assert cut.error is None and any("did not finish" in p for p in parse_iperf3.problems(cut))
    for text in ("", "iperf3: error - unable to connect to server", "[1, 2]", '{"end": {}}'):
        with pytest.raises(parse_iperf3.Iperf3ParseError):
            parse_iperf3.parse(text)


def test_ib_write_bw_real_report_parses():
    run = parse_perftest.parse(real("ib_write_bw-gbits-perftest-273.txt"))
    assert run.test == "RDMA_Write Post List BW Test" and run.device == "ib0" and run.unit == "Gb/sec"
    assert run.settings["Link type"] == "Ethernet" and run.complete
    assert [(r.size, r.iterations, r.average) for r in run.rows] == [(8, 224958464, 0.48)]
    assert run.average_gbps() == pytest.approx(0.48) and parse_perftest.problems(run) == []
    assert parse_perftest.done(run) == {"device": "ib0"} and compare("ib_write_bw", {"device": "ib0"}, {"device": "ib0"}) == []
    assert compare("ib_write_bw", {"device": "mlx5_0"}, parse_perftest.done(run)) == [
        "device: asked mlx5_0, done ib0 (the banner's 'Device : NAME')"]
    cut = parse_perftest.parse("".join(real("ib_write_bw-gbits-perftest-273.txt").splitlines(True)[:-1]))
    assert any("not closed" in p for p in parse_perftest.problems(cut))
    mb = parse_perftest.parse(real("ib_write_bw-gbits-perftest-273.txt").replace("[Gb/sec]", "[MB/sec]"))
    assert mb.average_gbps() is None and any("--report_gbits" in p for p in parse_perftest.problems(mb))
    with pytest.raises(parse_perftest.PerftestParseError):
        parse_perftest.parse("Couldn't connect to 203.0.113.12:18515\n")


def test_nvidia_smi_and_proc_stat_real_captures():
    gpus = parse_util.parse_nvidia_smi(real("nvidia-smi-query-gpu-4gpu.csv"))
    assert [(g.index, g.util_pct, g.memory_used_mib) for g in gpus] == [
        (0, 87.0, 2679.0), (1, 0.0, 5.0), (2, 0.0, 74709.0), (3, 0.0, 1759.0)]
    na = parse_util.parse_nvidia_smi("index, utilization.gpu [%], memory.used [MiB]\n0, [N/A], [N/A]\n")
    assert na[0].util_pct is None
    with pytest.raises(parse_util.UtilParseError, match="does not name the fields"):
        parse_util.parse_nvidia_smi("index, name\n0, A100\n")
    with pytest.raises(parse_util.UtilParseError):
        parse_util.parse_nvidia_smi("NVIDIA-SMI has failed because it couldn't communicate with the driver")
    first = parse_util.parse_proc_stat_cpu(real("proc-stat-dev-machine.txt"))
    assert len(first) >= 8
    later = tuple(v + (100 if i == 0 else 0) + (100 if i == 3 else 0) for i, v in enumerate(first))
    assert parse_util.cpu_busy_pct(first, later) == pytest.approx(50.0)
    with pytest.raises(parse_util.UtilParseError):
        parse_util.parse_proc_stat_cpu("intr 1 2 3\n")


def test_utilisation_series_and_its_problems():
    t = 1000.0
    samples = [{"t": t + i, "text": f"cpu {100 * i} 0 0 {100 * i} 0 0 0 0 0 0\n"} for i in range(5)]
    series, problems = parse_util.series_from_samples({"what": "cpu", "samples": samples})
    assert problems == [] and series.mean_between(t, t + 10) == pytest.approx(50.0)
    bad, problems = parse_util.series_from_samples({"what": "gpu", "samples": [{"t": 1, "text": "garbage"}],
                                                    "errors": ["sampling stopped at 5: nvidia-smi exited 9"]})
    assert bad.points == [] and len(problems) == 2


def test_statistics_real_answer_and_the_bytes_it_adds_up_to():
    stats, problems = array_telemetry.parse_current(
        json.loads((ONEFS_REAL / "statistics-current-csm-metrics-powerscale.json").read_text()))
    assert problems == [] and len(stats) == 8 and {s.devid for s in stats} == {0}
    assert next(s for s in stats if s.key == "cluster.disk.bytes.in.rate").value == pytest.approx(14950.40)
    _broken, problems = array_telemetry.parse_current({"stats": [
        {"key": "node.net.ext.bytes.out.rate", "devid": 1, "time": 5, "value": None, "error": "Node 1 is down",
         "error_code": 7}, {"key": "x", "devid": 1, "time": 5, "value": "fast"}]})
    assert any("Node 1 is down" in p for p in problems) and any("not a number" in p for p in problems)
    key = array_telemetry.NET_OUT
    seen = [[array_telemetry.Stat(key, dev, t, v) for dev in (1, 2)] for t, v in
            ((10, 999.0), (10, 999.0), (11, 100.0), (13, 50.0))]   # a repeated collection counts once
    assert array_telemetry.bytes_moved(seen, key) == (2 * (100.0 * 1 + 50.0 * 2), [])
    none, why = array_telemetry.bytes_moved(seen[:2], key)
    assert none is None and "one collection time only" in why[0]


def test_sampler_records_answers_and_errors_until_the_stop_file(tmp_path):
    out, stop = tmp_path / "s.jsonl", tmp_path / "s.stop"
    calls = []

    def get(path, query):
        calls.append(query)
        if len(calls) == 2:
            raise OSError("connection reset")
        if len(calls) == 3:
            stop.write_text("")
        return {"stats": [{"key": array_telemetry.NET_OUT, "devid": 1, "time": len(calls), "value": 10.0}]}

    n = array_telemetry.sample(get, out, stop, 0.0, 60, sleep=lambda s: None)
    assert n == 4 and not stop.exists() and calls[0] == {"keys": ",".join(array_telemetry.KEYS), "devid": "all"}
    samples, header, problems = array_telemetry.load_samples(out)
    assert header["sampler"] == "array_telemetry" and len(samples) == 3
    assert problems == ["request at " + str(json.loads(out.read_text().splitlines()[2])["t"]) + ": OSError: "
                        "connection reset"]
    missing, _h, problems = array_telemetry.load_samples(tmp_path / "none.jsonl")
    assert missing == [] and problems[0].startswith("not sampled")


def test_sampler_without_a_password_records_why(tmp_path, monkeypatch):
    monkeypatch.delenv("POWERSCALE_API_PASSWORD", raising=False)
    out = tmp_path / "x.jsonl"
    assert array_telemetry.main(["sample", "--out", str(out), "--stop-file", str(tmp_path / "x.stop"),
                                 "--api-host", "127.0.0.1", "--api-user", "u"]) == 0
    _s, _h, problems = array_telemetry.load_samples(out)
    assert any("POWERSCALE_API_PASSWORD" in p for p in problems)


# ---------------------------------------------------------------------------------------------- the verdict


def _ctx(run: Path) -> dict:
    return json.loads((run / "context.json").read_text())


def _check(v, name: str, instance=None):
    return next(c for c in v.checks if c.name == name and c.instance == instance)


def test_production_run_with_baselines_telemetry_and_utilisation_passes(production_run):
    v = evaluate(production_run, _ctx(production_run))
    assert v.status == PASS, v.failed
    base = _check(v, "path_storage_MBps", "dgx01")
    assert base.value == pytest.approx(4850.0) and base.status == PASS
    assert [b["kind"] for b in base.bounds] == ["ceiling", "outlier"]
    fio = _check(v, "fio_node_read_MBps", "dgx01")
    assert any(b["kind"] == "measured" and b["limit"] == pytest.approx(0.8 * 4850.0) for b in fio.bounds)
    fabric = _check(v, "path_fabric_GBps", "dgx01+dgx02")
    assert fabric.value == pytest.approx(8 * 196.0 / 8)
    assert _check(v, "path_storage_aggregate_MBps").value == pytest.approx(4 * 4850.0 * 0.98)
    array = _check(v, "fio_array_over_client", "dgx01")
    assert array.value == pytest.approx(1.02) and array.status == PASS
    util = _check(v, "ddp_real_util_pct", "dgx03 (4 nodes)")
    assert util.value == pytest.approx(95.0) and util.unit == "% GPU" and util.status == PASS
    assert _check(v, "ddp_array_over_loader", "1 node").status == INFO
    assert v.limits["diagnosis"] == ["no limit reached: every measured layer is within its bounds"]
    storage = next(p for p in v.limits["paths"] if p["nodes"] == ["dgx01"])
    assert storage["path"] == "dgx01 -> f800-1/40gige-1"
    assert [layer["layer"] for layer in storage["layers"]][:3] == ["link (nominal)", "network (iperf3)",
                                                                  "NFS read (fio)"]
    assert storage["layers"][1]["fraction_of_below"] == pytest.approx(4850 / 5000, rel=1e-3)
    assert storage["layers"][2]["fraction_of_below"] == pytest.approx(4712 / 4850, rel=1e-3)


def test_a_limited_storage_link_fails_that_node_only_and_the_diagnosis_names_the_network_path(
        production_run, replace_case):
    """The acceptance case of #17 on the production fixture: one DGX's storage link carries a quarter of the
    others' (as tc would make it); its baseline and its fio read fail, the others pass, and the diagnosis names
    that node and the network path."""
    meta = json.loads((production_run / "raw" / "paths" / "storage-dgx02" / "meta.json").read_text())
    meta.pop("samples")
    replace_case(production_run, "paths", "storage-dgx02",
                 {f"r{k}.json": iperf3_doc("198.51.100.32", 8, True, 4850.0 / 4, client="dgx02") for k in range(1, REPEATS + 1)},
                 meta)
    fio_dir = production_run / "raw" / "fio" / "node-dgx02"
    for f in fio_dir.glob("r*.json"):
        f.write_text(f.read_text().replace("4712000000", "1178000000"))
    v = evaluate(production_run, _ctx(production_run))
    assert v.status == FAIL
    assert {f for f in v.failed} == {"path_storage_MBps[dgx02]", "fio_node_read_MBps[dgx02]"}, v.failed
    line = next(d for d in v.limits["diagnosis"] if d.startswith("dgx02"))
    assert "network path" in line and "dgx02 -> f800-2/40gige-2" in line and "path_storage_MBps[dgx02]" in line
    assert len(v.limits["diagnosis"]) == 1


def test_a_missing_baseline_fails_it_and_every_threshold_measured_against_it(production_run):
    shutil.rmtree(production_run / "raw" / "paths" / "storage-dgx03")
    v = evaluate(production_run, _ctx(production_run))
    assert v.status == FAIL
    sanity = next(c for c in v.checks if c.name == "paths_sanity" and c.instance == "storage-dgx03")
    assert sanity.status == FAIL and "not measured" in sanity.reasons[0]
    fio = _check(v, "fio_node_read_MBps", "dgx03")
    assert fio.status == FAIL and "storage path baseline of dgx03 was not measured" in fio.reasons[0]
    assert _check(v, "fio_node_read_MBps", "dgx01").status == PASS


@pytest.mark.parametrize("name, replace", [
    ("error", lambda: real("iperf3-error-control-socket-3.6-cloudpilot.json")),
    ("cut off", lambda: real("iperf3-no-result-3.9-cloudpilot.json")),
    ("not json", lambda: "iperf3: error - unable to connect to server: Connection refused\n"),
])
def test_a_failed_or_unparseable_baseline_sample_is_a_fail(production_run, name, replace):
    case = production_run / "raw" / "paths" / "storage-dgx04"
    (case / "r1.json").write_text(replace())
    check, values = judge_path_case(case, "storage-dgx04", REPEATS)
    assert check.status == FAIL and values[0] is None and check.reasons
    v = evaluate(production_run, _ctx(production_run))
    assert "paths_sanity[storage-dgx04]" in v.failed and "path_storage_MBps[dgx04]" in v.failed


def test_array_gap_and_missing_telemetry_are_fails(production_run):
    tele = production_run / "raw" / "telemetry" / "fio"
    moved = 282720000012
    for k in range(1, REPEATS + 1):
        (tele / "node-dgx01" / f"r{k}.jsonl").write_text(stats_jsonl(moved * 0.4))
    shutil.rmtree(tele / "node-dgx04")
    v = evaluate(production_run, _ctx(production_run))
    gap = _check(v, "fio_array_over_client", "dgx01")
    assert gap.status == FAIL and gap.value == pytest.approx(0.4) and "client cache" in gap.reasons[-1]
    missing = _check(v, "fio_array_over_client", "dgx04")
    assert missing.status == FAIL and missing.value is None and any("not sampled" in r for r in missing.reasons)
    assert _check(v, "fio_array_over_client", "dgx02").status == PASS
    assert any(d.startswith("dgx01: the limit is the storage array") for d in v.limits["diagnosis"])


def test_utilisation_missing_or_below_its_floor_fails(production_run):
    ddp = production_run / "raw" / "ddp"
    (ddp / "n4" / "util-dgx02.json").unlink()
    doc = json.loads((ddp / "n4" / "util-dgx03.json").read_text())
    for s in doc["samples"]:
        s["text"] = s["text"].replace(" 95 %", " 60 %")
    (ddp / "n4" / "util-dgx03.json").write_text(json.dumps(doc))
    v = evaluate(production_run, _ctx(production_run))
    gone = _check(v, "ddp_real_util_pct", "dgx02 (4 nodes)")
    assert gone.status == FAIL and "not sampled" in gone.reasons[0]
    low = _check(v, "ddp_real_util_pct", "dgx03 (4 nodes)")
    assert low.status == FAIL and low.value == pytest.approx(60.0) and "94" in low.reasons[0]
    assert _check(v, "ddp_real_util_pct", "dgx01 (4 nodes)").status == PASS


def test_lab_utilisation_is_the_cpu_and_says_so(production_run):
    ctx = _ctx(production_run)
    ddp = production_run / "raw" / "ddp" / "n1"
    doc = json.loads((ddp / "util-dgx01.json").read_text())
    doc["what"] = "cpu"
    for i, s in enumerate(doc["samples"]):
        s["text"] = f"cpu  {70 * i} 0 {10 * i} {20 * i} 0 0 0 0 0 0\n"
    (ddp / "util-dgx01.json").write_text(json.dumps(doc))
    v = evaluate(production_run, ctx)
    check = _check(v, "ddp_real_util_pct", "dgx01 (1 node)")
    assert check.status == FAIL and any("gpu is judged" in r for r in check.reasons)
    assert check.unit == "% CPU" and any("lab stand-in: CPU" in r for r in check.reasons)


# ---------------------------------------------------------------------------------------------- host capacity


def _with_host_scaling(run: Path, alone: float | None, together: float | None) -> dict:
    """The production run with the training without DDP (mode bare) at 1 node and at 4, and the lab's rule."""
    for count, value in ((1, alone), (4, together)):
        if value is None:
            continue
        case = run / "raw" / "ddp" / f"n{count}"
        meta = json.loads((case / "meta.json").read_text())
        world = 8 * count
        doc = {"mode": "bare", "world_size": world, "complete": True, "ddp": False, "samples_per_s": value,
               "rank_samples_per_s": [value / world] * world, "step_times_s": [0.1] * 50}
        for k in range(1, REPEATS + 1):  # the runner asks every mode validation_repeats times
            (case / f"bare-r{k}.json").write_text(json.dumps(doc))
            meta["samples"].append({"file": f"bare-r{k}.json", "mode": "bare", "rc": 0, "timed_out": False})
        meta["asked"]["modes"].append("bare")
        (case / "meta.json").write_text(json.dumps(meta))
    ctx = _ctx(run)
    ctx["validation_ddp"] = dict(ctx["validation_ddp"], host_scaling={"enabled": True, "min_speedup": 1.2})
    for t in ctx["acceptance_thresholds"]:
        if t["metric"] == "ddp_scaling_efficiency":
            t["measured"] = {"derive": "host_scaling", "fraction": 0.7}
    return ctx


def test_ddp_scaling_is_judged_against_what_the_host_gives(production_run):
    ctx = _with_host_scaling(production_run, 2000.0, 7200.0)      # the host gives 3.6 x for 4 nodes
    v = evaluate(production_run, ctx)
    host = _check(v, "ddp_host_speedup", "4 nodes")
    assert host.status == INFO and host.value == pytest.approx(3.6) and "ideal for DDP" in host.reasons[0]
    eff = _check(v, "ddp_scaling_efficiency")
    assert eff.status == PASS and any(b["kind"] == "measured" and b["limit"] == pytest.approx(0.7 * 0.9)
                                      for b in eff.bounds)
    # DDP that does not scale where the host could is a FAIL
    ctx = _with_host_scaling(production_run, 2000.0, 8000.0)
    for t in ctx["acceptance_thresholds"]:
        if t["metric"] == "ddp_scaling_efficiency":
            t["measured"]["fraction"] = 1.0
            t.pop("floor", None)
    assert _check(evaluate(production_run, ctx), "ddp_scaling_efficiency").status == FAIL


def test_a_host_that_cannot_scale_says_so_instead_of_passing(production_run):
    ctx = _with_host_scaling(production_run, 2000.0, 2100.0)
    v = evaluate(production_run, ctx)
    eff = _check(v, "ddp_scaling_efficiency")
    assert eff.status == INFO and any("host cannot scale (1.05 x" in r for r in eff.reasons)
    # a bound of its own (a floor) is still judged: an impossible one fails whatever the host
    for t in ctx["acceptance_thresholds"]:
        if t["metric"] == "ddp_scaling_efficiency":
            t["floor"] = 1000
    eff = _check(evaluate(production_run, ctx), "ddp_scaling_efficiency")
    assert eff.status == FAIL and any("< floor 1000" in r for r in eff.reasons)
    assert not any(" < measured " in r for r in eff.reasons)


def test_an_unmeasured_host_capacity_fails_the_scaling_it_would_judge(production_run):
    v = evaluate(production_run, _with_host_scaling(production_run, 2000.0, None))
    host = _check(v, "ddp_host_speedup", "4 nodes")
    assert host.status == FAIL and "did not complete on 4 nodes at once" in host.reasons[0]
    eff = _check(v, "ddp_scaling_efficiency")
    assert eff.status == FAIL and "host's capacity" in eff.reasons[0]
