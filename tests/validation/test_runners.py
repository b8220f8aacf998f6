"""The runners that run on the DGX nodes: command lines (NCCL environment from facts) and a real fio
client/server run on loopback whose missing client the verdict catches."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import ROOT

from validation.verdict import FAIL, PASS, judge_fio_case

RUNNERS = ROOT / "validation" / "runners"


def load(name: str):
    sys.path.insert(0, str(RUNNERS))
    spec = importlib.util.spec_from_file_location(name, RUNNERS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def nccl_args(**kw) -> argparse.Namespace:
    base = dict(case="all", kind="all", nodes="dgx01,dgx02", addrs="203.0.113.11,203.0.113.12", gpus_per_node=8,
                launcher="mpirun", bin="/opt/nccl-tests/build/all_reduce_perf", min_bytes=33554432,
                max_bytes=8589934592, iters=20, warmup=5, repeats=5, ib_hca="mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,"
                "mlx5_7,mlx5_8,mlx5_9", env=["NCCL_DEBUG=WARN"], mpirun_arg=None, srun_arg=None,
                container_image=None, container_mounts=None, python="python3", rdzv_endpoint=None, rdzv_id="x")
    base.update(kw)
    return argparse.Namespace(**base)


def test_mpirun_fabric_case_uses_exact_hca_match_and_ring():
    nr = load("nccl_runner")
    args = nccl_args()
    env = nr.nccl_env(args)
    assert env["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9"
    assert env["NCCL_ALGO"] == "Ring" and env["NCCL_DEBUG"] == "WARN"
    cmd = nr.build_command(args, env)
    assert cmd[:6] == ["mpirun", "--allow-run-as-root", "--tag-output", "-np", "16", "-H"]
    assert cmd[6] == "203.0.113.11:8,203.0.113.12:8"
    assert "-x" in cmd and "NCCL_IB_HCA" in cmd and cmd[-2:] == ["-w", "5"]
    assert cmd[cmd.index("-g") + 1] == "1" and cmd[cmd.index("-c") + 1] == "1"


def test_single_node_direct_and_srun_pyxis():
    nr = load("nccl_runner")
    single = nccl_args(kind="single", nodes="dgx01", launcher="direct")
    env = nr.nccl_env(single)
    assert "NCCL_ALGO" not in env  # NVLink inside a node: let NCCL choose
    cmd = nr.build_command(single, env)
    assert cmd[0].endswith("all_reduce_perf") and cmd[cmd.index("-g") + 1] == "8"
    srun = nr.build_command(nccl_args(launcher="srun", container_image="nvcr.io#nvidia/pytorch:24.05-py3"), env)
    assert srun[:3] == ["srun", "--mpi=pmix", "--nodes=2"]
    assert "--container-image=nvcr.io#nvidia/pytorch:24.05-py3" in srun and "--ntasks-per-node=8" in srun


def test_scrub_env_never_keeps_secrets():
    common = load("common")
    env = {"NCCL_IB_HCA": "=mlx5_0", "NGC_API_KEY": "s3cr3t", "NCCL_PASSWORD_X": "p", "HOME": "/root",
           "OMP_NUM_THREADS": "1"}
    assert common.scrub_env(env) == {"NCCL_IB_HCA": "=mlx5_0", "OMP_NUM_THREADS": "1"}


def test_remove_tree_refuses_foreign_paths(tmp_path):
    common = load("common")
    with pytest.raises(SystemExit):
        common.remove_tree(str(tmp_path), "validation")
    target = tmp_path / ".validation-scratch" / "run"
    target.mkdir(parents=True)
    assert common.remove_tree(str(tmp_path / ".validation-scratch"), ".validation-scratch") is True
    assert not target.exists()


def test_fio_client_server_on_loopback_and_missing_client(tmp_path):
    runner = RUNNERS / "fio_runner.py"
    pidfile = tmp_path / "fio.pid"
    subprocess.run([sys.executable, str(runner), "--phase=server-start", f"--pidfile={pidfile}",
                    "--bind=ip:127.0.0.1,18731"], check=True, capture_output=True)
    try:
        profile = ["--bs=1M", "--size-per-job=8M", "--numjobs=1", "--iodepth=1", "--ioengine=psync", "--direct=0",
                   "--runtime=1", "--drop-caches=0", "--timeout=60"]
        good = [f"--client=dgx01=127.0.0.1:18731={tmp_path / 'scratch' / 'dgx01'}"]
        missing = [*good, f"--client=dgx02=127.0.0.1:18732={tmp_path / 'scratch' / 'dgx02'}"]
        for phase, case, clients in (("layout", "layout", good), ("read", "node-dgx01", good),
                                     ("read", "aggregate", missing)):
            subprocess.run([sys.executable, str(runner), f"--phase={phase}", f"--case={case}",
                            f"--out-dir={tmp_path / 'raw' / 'fio' / case}", *profile, *clients],
                           check=True, capture_output=True, timeout=120)
    finally:
        subprocess.run([sys.executable, str(runner), "--phase=server-stop", f"--pidfile={pidfile}"], check=True)
    meta = json.loads((tmp_path / "raw" / "fio" / "aggregate" / "meta.json").read_text())
    assert meta["expected_clients"] == {"127.0.0.1:18731": "dgx01", "127.0.0.1:18732": "dgx02"}
    ok, values, _ = judge_fio_case(tmp_path / "raw" / "fio" / "node-dgx01", "node-dgx01", False)
    assert ok.status == PASS and values[0] > 0
    bad, values, _ = judge_fio_case(tmp_path / "raw" / "fio" / "aggregate", "aggregate", False)
    assert bad.status == FAIL and values == [None]
    assert any("dgx02 (127.0.0.1:18732)" in r for r in bad.reasons)
    assert not pidfile.exists()


def test_job_file_values_hold_no_semicolon():
    # fio's job-file parser ends a value at ";": exec_prerun "sh -c 'sync; echo 3 > ...'" became "sh -c 'sync"
    # in the lab, the prerun failed and every job moved 0 bytes with error 0 (fixture below)
    fr = load("fio_runner")
    args = argparse.Namespace(bs="1M", size_per_job="32M", numjobs=2, ioengine="libaio", iodepth=4, direct=1,
                              runtime=5, drop_caches=1)
    text = fr.job_file(args, "read", "/mnt/scratch/.validation-scratch/run/dgx01")
    assert "exec_prerun=" in text and "drop-caches" in text
    for line in text.splitlines():
        assert ";" not in line, line
