"""GET /platform/1/statistics/current and /keys of the OneFS API simulator (lab/onefs_sim/stats.py): the layout of
a real answer (tests/fixtures/onefs/real/statistics-current-csm-metrics-powerscale.json), rates from real kernel
counters, RBAC (ISI_PRIV_STATISTICS), and the validation's sampler (validation/array_telemetry.py) against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ansible.module_utils.onefs import OneFSClient, OneFSConnection, OneFSError

from lab.onefs_sim.stats import COUNTER_OF, Statistics, kernel_counters, parse_nfsd_io, parse_proc_net_dev
from validation import array_telemetry

from .conftest import API_PASSWORD, API_USER, ROOT, make_sim

REAL = ROOT / "tests" / "fixtures"
# The layout of /proc/net/rpc/nfsd (the kernel's fs/nfsd/stats.c: "io <bytes-read> <bytes-written>"); the numbers
# are made up, the line names and their order are the kernel's.
NFSD = ("rc 0 12 3401\nfh 0 0 0 0 0\nio 1073741824 52428800\nth 8 0 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 "
        "0.000 0.000\nra 32 0 0 0 0 0 0 0 0 0 0 0\nnet 3413 0 3413 5\nrpc 3413 0 0 0 0\n")


def client(pki, port: int) -> OneFSClient:
    return OneFSClient(OneFSConnection(host="127.0.0.1", port=port, user=API_USER, password=API_PASSWORD,
                                       ca_path=str(pki.ca), retries=0), sleep=lambda s: None)


class Counters:
    """Counters that grow by a known amount at each reading (what the kernel's would do under a read)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> dict[str, float]:
        self.n += 1
        return {"net_tx_bytes": 5e6 * self.n, "net_rx_bytes": 1e5 * self.n, "nfsd_read_bytes": 4.5e6 * self.n,
                "nfsd_write_bytes": 0.0}


def test_kernel_counter_files_as_the_simulator_reads_them(tmp_path):
    nics = parse_proc_net_dev((REAL / "paths" / "real" / "proc-net-dev-dev-machine.txt").read_text())
    assert "lo" not in nics and all(isinstance(rx, int) and isinstance(tx, int) for rx, tx in nics.values())
    assert parse_nfsd_io(NFSD) == (1073741824, 52428800) and parse_nfsd_io("rc 0 0 0\n") is None
    net = tmp_path / "dev"
    net.write_text("Inter-|   Receive\n face |bytes\n    lo: 10 1 0 0 0 0 0 0 10 1 0 0 0 0 0 0\n"
                   "storage0: 700 5 0 0 0 0 0 0 900 6 0 0 0 0 0 0\n  mgmt0: 50 1 0 0 0 0 0 0 60 1 0 0 0 0 0 0\n")
    nfsd = tmp_path / "nfsd"
    assert kernel_counters(net, nfsd) == {"net_rx_bytes": 700.0, "net_tx_bytes": 900.0}  # nfsd not running
    nfsd.write_text(NFSD)
    assert kernel_counters(net, nfsd)["nfsd_read_bytes"] == 1073741824.0


def test_rates_from_the_last_two_readings_and_an_error_before_there_are_two():
    clock = iter([100.0, 101.0, 102.0, 103.0])
    stats = Statistics(Counters(), clock=lambda: next(clock))
    first = stats.current({"keys": "node.net.ext.bytes.out.rate", "devid": "all"})["stats"][0]
    assert first["value"] is None and first["error"] and first["error_code"]
    stats.sample()
    stats.sample()
    answer = stats.current({"keys": ",".join(COUNTER_OF), "devid": "all"})
    by_key = {s["key"]: s for s in answer["stats"]}
    assert set(by_key) == set(COUNTER_OF)
    assert by_key["node.net.ext.bytes.out.rate"] == {"devid": 1, "error": None, "error_code": None,
                                                     "key": "node.net.ext.bytes.out.rate", "time": 102,
                                                     "value": 5e6}
    assert by_key["node.ifs.bytes.out.rate"]["value"] == 4.5e6
    # the answer has the real answer's fields, and the validation's parser reads it
    real = json.loads((REAL / "onefs" / "real" / "statistics-current-csm-metrics-powerscale.json").read_text())
    assert set(answer["stats"][0]) == set(real["stats"][0])
    parsed, problems = array_telemetry.parse_current(answer)
    assert problems == [] and len(parsed) == 4


def test_statistics_over_https_with_privileges(pki):
    sim, port = make_sim(pki)
    try:
        sim.statistics = Statistics(Counters())
        sim.statistics.sample()
        sim.statistics.sample()
        c = client(pki, port)
        answer = c.get(array_telemetry.STATISTICS_PATH,
                       query={"keys": f"{array_telemetry.NET_OUT},{array_telemetry.IFS_OUT}", "devid": "all"})
        assert [s["key"] for s in answer["stats"]] == [array_telemetry.NET_OUT, array_telemetry.IFS_OUT]
        assert {k["key"] for k in c.get("/platform/1/statistics/keys")["keys"]} == set(COUNTER_OF)
        with pytest.raises(OneFSError) as err:
            c.get(array_telemetry.STATISTICS_PATH, query={"keys": "node.cpu.user.avg"})
        assert err.value.status == 404
        with pytest.raises(OneFSError) as err:
            c.get(array_telemetry.STATISTICS_PATH, query={"keys": array_telemetry.NET_OUT, "devid": "7"})
        assert err.value.status == 404
    finally:
        sim.stop()
    limited, port = make_sim(pki, privileges={"ISI_PRIV_LOGIN_PAPI": "r"})
    try:
        limited.statistics = Statistics(Counters())
        with pytest.raises(OneFSError) as err:
            client(pki, port).get(array_telemetry.STATISTICS_PATH, query={"keys": array_telemetry.NET_OUT})
        assert err.value.status == 403 and "ISI_PRIV_STATISTICS" in err.value.message
    finally:
        limited.stop()


def test_a_backend_without_counters_serves_no_statistics(sim, pki):
    with pytest.raises(OneFSError) as err:
        client(pki, sim.port).get(array_telemetry.STATISTICS_PATH, query={"keys": array_telemetry.NET_OUT})
    assert err.value.status == 404


def test_the_validation_sampler_against_the_simulator(pki, tmp_path):
    """python -m validation.array_telemetry sample, as the validate roles start it: the password from the
    environment, a stop file, and bytes that add up to what the counters moved."""
    sim, port = make_sim(pki)
    stop = threading.Event()
    try:
        sim.statistics = Statistics(Counters())
        thread = threading.Thread(target=sim.statistics.run, args=(0.5, stop), daemon=True)
        thread.start()
        out, stop_file = tmp_path / "r1.jsonl", tmp_path / "r1.stop"
        proc = subprocess.Popen([sys.executable, "-m", "validation.array_telemetry", "sample", "--out", str(out),
                                 "--stop-file", str(stop_file), "--interval", "0.5", "--max-s", "60",
                                 "--api-host", "127.0.0.1", "--api-port", str(port), "--api-user", API_USER,
                                 "--ca-path", str(pki.ca)], cwd=ROOT,
                                env=dict(os.environ, POWERSCALE_API_PASSWORD=API_PASSWORD),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Until five samples are written (not a fixed sleep: under load the sampler's start takes longer), then stop.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if out.is_file() and len(out.read_text().splitlines()) >= 6:  # the header line, then one line a sample
                break
            time.sleep(0.2)
        stop_file.write_text("")
        stdout, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 0, stderr
    finally:
        stop.set()
        sim.stop()
    assert not stop_file.exists() and API_PASSWORD not in out.read_text() + stdout + stderr
    samples, header, problems = array_telemetry.load_samples(out)
    assert header["query"]["devid"] == "all" and len(samples) >= 5
    moved, why = array_telemetry.bytes_moved(samples, array_telemetry.NET_OUT)
    # 5e6 bytes per 0.5 s reading is 1e7 B/s; about 3.5 s sampled, stamped in whole seconds: 1 to 5 intervals
    assert why == [] and moved is not None and 0.9e7 <= moved <= 6e7
    assert not [p for p in problems if "not available yet" not in p]
    assert Path(out).read_text().count("\n") == len(samples) + 1


def test_the_validate_roles_sample_around_a_measurement_without_showing_the_password(pki, tmp_path):
    """roles/validate's telemetry_start / telemetry_stop through ansible-playbook: the sampler runs on the control
    node while the measurement runs, stops at the stop file, and neither its command nor Ansible's output holds
    the API password (it reaches the sampler on a pipe; -vvv shows every result)."""
    import yaml

    sim, port = make_sim(pki)
    stop = threading.Event()
    try:
        sim.statistics = Statistics(Counters())
        threading.Thread(target=sim.statistics.run, args=(0.5, stop), daemon=True).start()
        run_dir = tmp_path / "run"
        inventory = {"all": {"vars": {
            "validation_telemetry": {"enabled": True, "interval_s": 0.5, "max_gap": 0.35}, "validation_timeout_s": 60,
            "powerscale_api_host": "127.0.0.1", "powerscale_api_port": port, "powerscale_api_user": API_USER,
            "powerscale_api_password": API_PASSWORD, "powerscale_ca_path": str(pki.ca),
            "telemetry_test_run_dir": str(run_dir)},
            "children": {"dgx": {"hosts": {"dgx01": {"ansible_connection": "local",
                                                     "ansible_python_interpreter": sys.executable}}}}}}
        inv = tmp_path / "inventory.yml"
        inv.write_text(yaml.safe_dump(inventory))
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
                   ANSIBLE_FORCE_COLOR="0")
        env.pop("POWERSCALE_API_PASSWORD", None)
        p = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inv), "-vvv",
                            "tests/validation/playbooks/telemetry_local.yml"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    finally:
        stop.set()
        sim.stop()
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert API_PASSWORD not in p.stdout + p.stderr
    out = run_dir / "raw" / "telemetry" / "fio" / "node-dgx01" / "r1.jsonl"
    assert not out.with_suffix(".stop").exists() and API_PASSWORD not in out.read_text()
    samples, _header, problems = array_telemetry.load_samples(out)
    assert len(samples) >= 5, problems  # about 3 s of the measurement, every 0.5 s
    moved, why = array_telemetry.bytes_moved(samples, array_telemetry.NET_OUT)
    assert why == [] and moved is not None and moved > 0
