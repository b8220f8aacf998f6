"""fio JSON (real fio 3.33 output: json, json+, client/server, errors) and node facts parsers."""

from __future__ import annotations

import pytest
from conftest import fixture_text

from validation import parse_fio, parse_sysinfo


def test_client_server_with_all_clients_aggregate():
    r = parse_fio.parse(fixture_text("fio/client_server_2clients.json"))
    assert r.fio_version == "fio-3.33" and not r.errors and not r.jobs
    assert [parse_fio.client_key(c) for c in r.clients] == ["127.0.0.1:18765", "127.0.0.1:18766"]
    assert r.aggregate is not None and r.aggregate.name == "All clients"
    assert parse_fio.total_bw(r) == r.aggregate.read.bw_bytes == 3627506162


def test_missing_client_has_no_aggregate_and_one_client():
    r = parse_fio.parse(fixture_text("fio/client_server_missing_client.json"))
    assert r.aggregate is None and len(r.clients) == 1
    assert set(parse_fio.client_bw(r)) == {"127.0.0.1:18765"}


def test_error_text_before_json_and_job_error():
    r = parse_fio.parse(fixture_text("fio/job_error.json"))
    assert r.jobs[0].error == 2
    assert any("No such file or directory" in e for e in r.errors)
    assert any("ended with error 2" in e for e in r.errors)


def test_json_plus_and_mixed_directions():
    plus = parse_fio.parse(fixture_text("fio/single_read_jsonplus.json"))
    assert plus.jobs[0].read.bw_bytes > 0 and plus.jobs[0].read.clat_ns_p99 > 0
    mixed = parse_fio.parse(fixture_text("fio/single_randrw.json"))
    job = mixed.jobs[0]
    assert job.read.iops > 0 and job.write.iops > 0 and job.error == 0


@pytest.mark.parametrize("text", ["", "fio: failed to connect\n", '{"something": 1}\n', '{"jobs": [ {"jobname": '])
def test_unparseable_fio(text):
    with pytest.raises(parse_fio.FioParseError):
        parse_fio.parse(text)


def test_topology_of_a_dgx_a100():
    topo = parse_sysinfo.parse_topo(fixture_text("topo/dgx_a100_topo_m.txt"))
    assert len(topo.gpus) == 8 and topo.nvlink_all_pairs()
    assert topo.nics["NIC0"] == "mlx5_0" and topo.nearest_nics("GPU4") == ["mlx5_6", "mlx5_7"]
    assert topo.numa_affinity["GPU2"] == "1"


def test_ibstat_healthy_and_degraded():
    ok = parse_sysinfo.parse_ibstat(fixture_text("topo/dgx_a100_ibstat.txt"))
    assert len(ok) == 12 and parse_sysinfo.ib_port_problems(ok, 8, 200) == []
    bad = parse_sysinfo.parse_ibstat(fixture_text("topo/dgx_a100_ibstat_degraded.txt"))
    problems = parse_sysinfo.ib_port_problems(bad, 8, 200)
    assert problems[0].startswith("6 compute HCA ports Active")
    assert any("mlx5_9" in p and "Polling" in p for p in problems)


def test_sysinfo_garbage():
    with pytest.raises(parse_sysinfo.SysinfoParseError):
        parse_sysinfo.parse_topo("No devices were found\n")
    with pytest.raises(parse_sysinfo.SysinfoParseError):
        parse_sysinfo.parse_ibstat("ibpanic: [1] main: stat of IB device 'mlx5_0' failed\n")
