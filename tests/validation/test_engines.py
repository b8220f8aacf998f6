"""validation/runners/engines.py: the srun/mpirun command lines, the ranks' env:// variables, and the engines'
failure reasons read from real outputs (tests/fixtures/slurm/real, each described in its SOURCES)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

REAL = ROOT / "tests" / "fixtures" / "slurm" / "real"
RUNNERS = ROOT / "validation" / "runners"


def engines():
    """engines.py as the runners import it: from their own directory (a dataclass module needs a real import)."""
    if str(RUNNERS) not in sys.path:
        sys.path.insert(0, str(RUNNERS))
    return importlib.import_module("engines")


def spec(engine: str = "srun", **kw):
    eng = engines()
    base = dict(engine=engine, nodes=("dgx01", "dgx02"), addrs=("10.10.0.11", "10.10.0.12"), procs_per_node=8,
                gpus_per_node=8, time_limit_s=3600, job_name="validation-nccl-all",
                export=("NCCL_IB_HCA", "NCCL_ALGO"))
    base.update(kw)
    return eng.LaunchSpec(**base)


def flags(cmd: list[str]) -> dict[str, str]:
    return {c.split("=", 1)[0]: c.split("=", 1)[1] for c in cmd if c.startswith("--") and "=" in c}


# ------------------------------------------------------------------------------------------------ command lines

def test_srun_line_asks_for_pmix_the_ranks_the_limits_and_fails_fast():
    eng = engines()
    cmd = eng.launch_command(spec(), ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8"])
    f = flags(cmd)
    assert cmd[:2] == ["srun", "--mpi=pmix"]
    assert f["--nodes"] == "2" and f["--nodelist"] == "dgx01,dgx02" and f["--ntasks-per-node"] == "8"
    assert f["--gpus-per-node"] == "8" and "--exclusive" in cmd and f["--export"] == "ALL"
    assert f["--kill-on-bad-exit"] == "1"                     # one failed rank ends the step everywhere
    assert f["--immediate"] == "60"                            # a drained node fails the case, never queues it
    assert f["--time"] == "60" and f["--job-name"] == "validation-nccl-all"
    assert cmd[-3:] == ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8"]
    # the lab's stand-ins ask for no GPU; the partition and the time limit follow the spec (minutes, rounded up)
    lab = eng.launch_command(spec(gpus_per_node=0, procs_per_node=1, time_limit_s=61, partition="dgx"), ["x"])
    assert "--gpus-per-node" not in flags(lab) and flags(lab)["--time"] == "2" and flags(lab)["--partition"] == "dgx"


def test_mpirun_line_maps_ranks_per_node_exports_the_environment_and_bounds_time():
    eng = engines()
    cmd = eng.launch_command(spec("mpirun", time_limit_s=90.5), ["prog"])
    assert cmd[:5] == ["mpirun", "--allow-run-as-root", "--tag-output", "-np", "16"]
    assert cmd[cmd.index("-H") + 1] == "10.10.0.11:8,10.10.0.12:8"
    assert cmd[cmd.index("--map-by") + 1] == "ppr:8:node"
    assert [cmd[i + 1] for i, c in enumerate(cmd) if c == "-x"] == ["NCCL_ALGO", "NCCL_IB_HCA"]
    assert cmd[cmd.index("--timeout") + 1] == "91" and cmd[-1] == "prog"


def test_bad_specs_are_refused_with_the_values():
    with pytest.raises(ValueError, match="engine 'ssh'"):
        spec("ssh")
    with pytest.raises(ValueError, match="one address per node"):
        spec("mpirun", addrs=("10.10.0.11",))


# ------------------------------------------------------------------------------------------------ rank variables

def test_rank_env_from_srun_and_mpirun_and_not_twice():
    eng = engines()
    # the SLURM_* names and values as srun set them (open-mpi/ompi#10286's `srun -n 1 env`)
    slurm = {"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "1", "SLURM_LOCALID": "0",
             "SLURM_NODEID": "0"}
    assert eng.rank_env(slurm) == {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "GROUP_RANK": "0"}
    ompi = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
            "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
    assert eng.rank_env(ompi) == {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    assert eng.rank_env(dict(ompi, RANK="3")) == {}            # torchrun or the SSH path already set it
    assert eng.rank_env({"SLURM_PROCID": "0"}) == {}           # an sbatch script, not a step's task
    with pytest.raises(RuntimeError, match="SLURM_NTASKS"):
        eng.rank_env({"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_LOCALID": "0"})


def test_two_mpirun_ranks_of_a_stand_in_get_their_env(tmp_path):
    """rank_env in a real process per rank: what gloo_allreduce.py/ddp_train.py do first."""
    prog = ("import os, sys; sys.path.insert(0, sys.argv[1]); import engines; "
            "os.environ.update(engines.rank_env(os.environ)); print(os.environ['RANK'], os.environ['WORLD_SIZE'])")
    outs = []
    for rank in (0, 1):
        env = dict(os.environ, OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE="2",
                   OMPI_COMM_WORLD_LOCAL_RANK=str(rank), OMPI_COMM_WORLD_LOCAL_SIZE="2")
        env.pop("RANK", None)
        outs.append(subprocess.run([sys.executable, "-c", prog, str(ROOT / "validation" / "runners")], env=env,
                                   capture_output=True, text=True, check=True).stdout.strip())
    assert outs == ["0 2", "1 2"]


# ------------------------------------------------------------------------------------------------ real outputs

def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


# every real file: what the engine check or the failure reader must make of it
EXPECTED_FAILURES = {
    # the lab's Slurm 22.05.8, a rank killed from outside mid-run: the rank that ended first is the cause, the
    # step srun cancelled (--kill-on-bad-exit) and the other ranks' "Terminated" its consequences
    "srun-22.05.8-lab-rank-killed.txt": ["task 2 on dgx02 ended first: Killed",
                                         "Slurm cancelled step 12.0 on dgx01 at 2026-11-26T20:45:04"],
    "srun-tasks-exited-1.txt": ["tasks 10-11 on taurusi2031 exited with code 1"],
    "srun-step-time-limit.txt": ["Slurm cancelled step 32233190.0 on nid01934 at 2020-07-03T02:59:56 due to time "
                                 "limit"],
    "srun-allocate-invalid-time-limit.txt": ["Slurm could not allocate the nodes: Requested time limit is invalid "
                                             "(missing or exceeds some limit)"],
    "srun-step-abort-timed-out.txt": ["srun timed out waiting for the step to end: ranks may still run on the "
                                      "nodes"],
    "srun-step-task-failure.txt": ["Slurm cancelled step 52222788.0 on nid002888 at 2026-04-29T23:36:37 due to task "
                                   "failure"],
    "srun-step-node-config-unavailable.txt": ["Slurm could not start the step in job 17627941: Requested node "
                                              "configuration is not available"],
    # Debian 12's own Slurm 22.05.8 running engines.launch_command's srun line (SOURCES says how)
    "srun-22.05.8-debian12-rank-exit.txt": ["task 1 on vm exited with code 3"],
    "srun-22.05.8-debian12-unknown-node.txt": ["Slurm could not allocate the nodes: Invalid node name specified"],
    "srun-22.05.8-debian12-more-tasks-than-cpus.txt": [
        "Slurm could not allocate the nodes: Requested nodes are busy (Requested partition configuration not "
        "available now)"],
    "srun-22.05.8-debian12-drained.txt": [
        "Slurm could not allocate the nodes: Requested nodes are busy (Required node not available (down, drained "
        "or reserved))"],
    "srun-22.05.8-debian12-time-limit.txt": ["Slurm cancelled step 5.0 on vm at 2026-11-26T16:56:54 due to time "
                                             "limit"],
    "srun-22.05.8-debian12-gpus-without-gres.txt": ["Invalid generic resource (gres) specification"],
    "srun-22.05.8-debian12-launch-failed-exit-0.txt": ["task 0 launch failed: Unspecified error",
                                                       "task 1 launch failed: Unspecified error"],
}
MPIRUN_FAILURES = {
    "mpirun-4-process-exit.txt": ["rank 0 exited with code 1 and mpirun aborted the job"],
    "mpirun-4-timeout.txt": ["mpirun's time limit of 2 s was reached and the job aborted"],
    # Debian 12's own Open MPI 4.1.4 running engines.launch_command's mpirun line (SOURCES says how)
    "mpirun-4.1.4-debian12-rank-exit.txt": ["rank 1 exited with code 3 and mpirun aborted the job"],
    "mpirun-4.1.4-debian12-timeout.txt": ["mpirun's time limit of 3 s was reached and the job aborted"],
    "mpirun-4.1.4-debian12-orte-init-failed.txt": [
        "mpirun could not start its runtime (orte_init failed: opal_pmix_base_select failed; Returned value Not "
        "found (-13) instead of ORTE_SUCCESS); components it could not open: mca_pmix_ext3x: libmunge.so.2: cannot "
        "open shared object file: No such file or directory"],
}
MPIRUN_CLEAN = ("mpirun-4.1.4-debian12-ranks.txt",)
SRUN_CLEAN = ("srun-22.05.8-debian12-ranks.txt",)
PMIX_FAILURES = ("srun-mpi-pmix-plugin-missing.txt", "srun-mpi-pmix-library-missing.txt",
                 "srun-22.05.8-debian12-without-libpmix-dev.txt")
MPI_LISTS = {
    "srun-mpi-list-pmix_v3.txt": (("cray_shasta", "none", "pmi2", "pmix"), ("pmix_v3",), True),
    "srun-mpi-list-pmix_v4-24.05.2.txt": (("none", "pmi2", "cray_shasta", "pmix"), ("pmix_v4",), True),
    "srun-mpi-list-no-pmix.txt": (("cray_shasta", "none", "pmi2"), (), False),
    "srun-mpi-pmix-library-missing.txt": (("none", "pmix", "cray_shasta", "pmi2"), ("pmix_v5",), True),
    "srun-22.05.8-debian12-mpi-list.txt": (("pmix", "none", "cray_shasta", "pmi2"), ("pmix_v4",), True),
}


def test_every_real_output_is_described_and_read():
    described = {line.strip() for line in real("SOURCES").splitlines() if line.strip().endswith(".txt")}
    files = {p.name for p in REAL.glob("*.txt")}
    assert files == described, f"files without a SOURCES entry: {files - described}; entries without a file: " \
                               f"{described - files}"
    covered = set(EXPECTED_FAILURES) | set(MPIRUN_FAILURES) | set(PMIX_FAILURES) | set(MPI_LISTS) | set(MPIRUN_CLEAN) | set(SRUN_CLEAN)
    assert files <= covered, f"real outputs no test reads: {files - covered}"


@pytest.mark.parametrize("name", sorted(EXPECTED_FAILURES))
def test_srun_failures_from_real_outputs(name):
    eng = engines()
    assert eng.engine_failures("srun", real(name)) == EXPECTED_FAILURES[name]
    assert eng.engine_reason("srun", real(name)).startswith("srun: ")


@pytest.mark.parametrize("name", sorted(MPIRUN_FAILURES))
def test_mpirun_failures_from_real_outputs(name):
    eng = engines()
    assert eng.engine_failures("mpirun", real(name)) == MPIRUN_FAILURES[name]
    assert eng.engine_failures("srun", real(name)) == []       # each engine reads its own words only


@pytest.mark.parametrize("name", PMIX_FAILURES)
def test_a_slurm_without_usable_pmix_says_so(name):
    eng = engines()
    reasons = eng.engine_failures("srun", real(name))
    assert reasons[0].startswith("the pmix MPI plugin cannot be used: ") and "libpmix-dev" in reasons[1]


@pytest.mark.parametrize("name", sorted(MPI_LISTS))
def test_srun_mpi_list_from_real_outputs(name):
    eng = engines()
    types, versions, has = MPI_LISTS[name]
    got = eng.mpi_plugins(real(name))
    assert (got.types, got.pmix_versions, got.has_pmix) == (types, versions, has)


def test_unreadable_mpi_list_never_counts_as_pmix():
    eng = engines()
    with pytest.raises(ValueError, match="not an `srun --mpi=list` listing"):
        eng.mpi_plugins("srun: error: Unable to contact slurm controller (connect failure)\n")
    problems = eng.slurm_problems(["dgx01"], "", "dgx01 idle\n", "")
    assert len(problems) == 1 and "could not be read" in problems[0]


def test_clean_output_gives_no_reason():
    eng = engines()
    assert eng.engine_failures("srun", "# Avg bus bandwidth    : 1.2 \n") == []
    assert eng.engine_reason("mpirun", "") is None


# ------------------------------------------------------------------------------------------------ the node check

def test_slurm_problems_name_pmix_the_partition_and_each_node_not_idle():
    eng = engines()
    ok = eng.slurm_problems(["dgx01", "dgx02"], real("srun-mpi-list-pmix_v4-24.05.2.txt"),
                            "dgx01 idle\ndgx02 idle\n", "dgx")
    assert ok == []
    bad = eng.slurm_problems(["dgx01", "dgx02", "dgx03"], real("srun-mpi-list-no-pmix.txt"),
                             "dgx01 drain\ndgx02 idle*\n", "dgx")
    assert bad[0].startswith("srun --mpi=list offers no pmix (it offers cray_shasta, none, pmi2)")
    assert "validation_engine: mpirun" in bad[0]
    assert bad[1].startswith("node dgx01 is drain in partition dgx, not idle")
    assert bad[2].startswith("node dgx02 is idle* in partition dgx")        # idle but not responding
    assert bad[3].startswith("node dgx03 is not in partition dgx")


def test_check_slurm_without_slurm_fails_closed(monkeypatch):
    eng = engines()
    monkeypatch.setattr(eng.shutil, "which", lambda name: None)
    result = eng.check_slurm(["dgx01"], "")
    assert result["ok"] is False and "slurm-client" in result["problems"][0]


def test_check_slurm_reads_the_clients_answers(tmp_path, monkeypatch):
    """check-slurm as a node runs it, with srun/sinfo stand-ins on PATH that print real answers."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    listing = REAL / "srun-mpi-list-no-pmix.txt"
    (bindir / "srun").write_text(f"#!/bin/sh\ncat {listing}\n")
    (bindir / "sinfo").write_text("#!/bin/sh\nprintf 'dgx01 idle\\n'\n")
    for f in bindir.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    out = subprocess.run([sys.executable, str(ROOT / "validation/runners/engines.py"), "check-slurm", "dgx01"],
                         env=env, capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    assert result["ok"] is False and len(result["problems"]) == 1 and "offers no pmix" in result["problems"][0]


def test_engines_module_is_plain_python_38():
    """It runs on the nodes from the runners' directory: standard library only."""
    text = Path(ROOT / "validation/runners/engines.py").read_text()
    imports = {line.split()[1].split(".")[0] for line in text.splitlines() if line.startswith(("import ", "from "))}
    assert imports <= {"__future__", "json", "math", "re", "shutil", "socket", "subprocess", "sys", "time", "collections",
                       "dataclasses"}


# ------------------------------------------------------------------------------------------------ nccl_runner

def fake_engine(tmp_path: Path, name: str, script: str) -> dict[str, str]:
    """An executable `name` first on PATH (the real srun/mpirun are not on the test machine): it records its
    argv and the environment it was given, then runs `script` (sh)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / name
    exe.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/argv\nenv > {tmp_path}/env\n{script}\n')
    exe.chmod(0o755)
    return dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")


def run_nccl(tmp_path: Path, env: dict[str, str], *extra: str) -> dict:
    out = tmp_path / "case"
    argv = [sys.executable, str(RUNNERS / "nccl_runner.py"), "--case", "all", "--kind", "all", "--out-dir", str(out),
            "--nodes", "dgx01,dgx02", "--node-hostnames", "dgx-01,dgx-02", "--addrs", "203.0.113.11,203.0.113.12",
            "--gpus-per-node", "2", "--min-bytes", "1048576", "--max-bytes", "4194304", "--iters", "3",
            "--warmup", "1", "--repeats", "2", "--timeout", "60", "--ib-hca", "auto", *extra]
    subprocess.run(argv, env=env, check=True, capture_output=True, text=True, timeout=120)
    return json.loads((out / "meta.json").read_text())


def test_a_failed_rank_under_srun_is_the_samples_reason(tmp_path):
    env = fake_engine(tmp_path, "srun", f"cat {REAL / 'srun-tasks-exited-1.txt'} >&2; exit 1")
    meta = run_nccl(tmp_path, env, "--launcher", "srun")
    assert meta["engine"] == "srun" and meta["command"][:2] == ["srun", "--mpi=pmix"]
    assert "--nodelist=dgx-01,dgx-02" in meta["command"]      # Slurm's node names: the hostnames the nodes report
    assert [s["rc"] for s in meta["samples"]] == [1, 1]
    assert meta["samples"][0]["reason"] == "srun: tasks 10-11 on taurusi2031 exited with code 1"
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[:2] == ["--mpi=pmix", "--job-name=validation-nccl-all"] and "--kill-on-bad-exit=1" in argv
    assert "NCCL_ALGO=Ring" in (tmp_path / "env").read_text().splitlines()   # srun --export=ALL passes it on


def test_an_engine_that_exits_0_after_a_stuck_step_fails_the_sample(tmp_path):
    from validation.checks import _sample_problems

    env = fake_engine(tmp_path, "srun", f"cat {REAL / 'srun-step-abort-timed-out.txt'} >&2; exit 0")
    meta = run_nccl(tmp_path, env, "--launcher", "srun")
    sample = meta["samples"][0]
    assert sample["rc"] == 0 and sample["engine_failed"] is True
    assert _sample_problems(meta, sample) == [
        "r1.log: the launch failed although its engine exited 0: srun: srun timed out waiting for the step to end: "
        "ranks may still run on the nodes"]


def test_the_stand_in_under_mpirun_one_launch_every_repeat_through_the_engines_output(tmp_path):
    tables = "".join(f"[1,0]<stdout>:# stand-in repeat {k} of 2\n[1,0]<stdout>:# table {k}\n" for k in (1, 2))
    env = fake_engine(tmp_path, "mpirun", f"printf '%s' '{tables}'")
    meta = run_nccl(tmp_path, env, "--launcher", "mpirun", "--standin", "--rdzv-endpoint", "203.0.113.11:29400")
    cmd = meta["command"]
    assert cmd[0] == "mpirun" and cmd[cmd.index("-H") + 1] == "203.0.113.11:2,203.0.113.12:2"
    assert cmd[cmd.index("--timeout") + 1] == "120"             # the case's limit for both repeats
    exported = [cmd[i + 1] for i, c in enumerate(cmd) if c == "-x"]
    assert {"MASTER_ADDR", "MASTER_PORT", "NCCL_ALGO", "OMP_NUM_THREADS"} <= set(exported)
    program = cmd[cmd.index("--timeout") + 2:]
    assert program[1].endswith("gloo_allreduce.py") and program[-1] == "--stdout" and "--repeats" in program
    assert meta["lab_standin"] is True and meta["env"]["MASTER_ADDR"] == "203.0.113.11"
    assert [(s["file"], s["rc"], s["console"]) for s in meta["samples"]] == [("r1.log", 0, "launch.log"),
                                                                             ("r2.log", 0, "launch.log")]
    case = tmp_path / "case"
    assert (case / "r2.log").read_text() == "[1,0]<stdout>:# stand-in repeat 2 of 2\n[1,0]<stdout>:# table 2\n"


def test_ranks_per_process_start_fewer_processes_with_the_same_ranks(tmp_path):
    """--gpus-per-process 2 is all_reduce_perf -g 2: srun starts one task per node, each driving both ranks (the
    stand-in's --devices 2), and the case still expects every rank."""
    env = fake_engine(tmp_path, "srun", "exit 0")
    meta = run_nccl(tmp_path, env, "--launcher", "srun", "--standin", "--rdzv-endpoint", "203.0.113.11:29400",
                    "--gpus-per-process", "2")
    cmd = meta["command"]
    assert "--ntasks-per-node=1" in cmd and meta["asked"]["ranks"] == 4 and meta["asked"]["ngpus"] == 2
    program = cmd[cmd.index("--time=2") + 1:]
    assert program[program.index("--devices") + 1] == "2"
    env = fake_engine(tmp_path, "mpirun", "exit 0")
    meta = run_nccl(tmp_path, env, "--launcher", "mpirun", "--gpus-per-process", "2")
    cmd = meta["command"]
    assert cmd[cmd.index("-np") + 1] == "2" and cmd[cmd.index("-H") + 1] == "203.0.113.11:1,203.0.113.12:1"
    assert cmd[cmd.index("-g") + 1] == "2" and meta["asked"]["ranks"] == 4 and meta["asked"]["ngpus"] == 2


def test_ranks_per_process_must_divide_the_ranks_of_a_node(tmp_path):
    env = fake_engine(tmp_path, "srun", "exit 0")
    with pytest.raises(subprocess.CalledProcessError) as err:
        run_nccl(tmp_path, env, "--launcher", "srun", "--gpus-per-process", "3")
    assert "--gpus-per-process 3 must divide --gpus-per-node 2" in err.value.stderr
    assert not (tmp_path / "argv").exists()                  # refused before anything was launched


def test_the_stand_in_under_an_engine_needs_the_store_address(tmp_path):
    env = fake_engine(tmp_path, "srun", "exit 0")
    with pytest.raises(subprocess.CalledProcessError) as err:
        run_nccl(tmp_path, env, "--launcher", "srun", "--standin")
    assert "needs --rdzv-endpoint HOST:PORT" in err.value.stderr


# ------------------------------------------------------------------------------------------------ ddp_runner

def run_ddp(tmp_path: Path, env: dict[str, str], runtime: str, *extra: str, this_node: str = "dgx01") -> dict | None:
    out = tmp_path / "n2"
    argv = [sys.executable, str(RUNNERS / "ddp_runner.py"), "--case", "n2", "--out-dir", str(out),
            "--nodes", "dgx01,dgx02", "--this-node", this_node, "--runtime", runtime, "--gpus", "0",
            "--procs-per-node", "2", "--rdzv-endpoint", "203.0.113.11:29500", "--rdzv-id", "run-n2",
            "--model", "tiny", "--steps", "3", "--modes", "synthetic", "--repeats", "2", "--timeout", "300",
            "--addrs", "203.0.113.11,203.0.113.12", *extra]
    subprocess.run(argv, env=env, check=True, capture_output=True, text=True, timeout=120)
    return json.loads((out / "meta.json").read_text()) if (out / "meta.json").exists() else None


def test_ddp_ranks_under_srun_one_launch_from_the_first_node(tmp_path):
    env = fake_engine(tmp_path, "srun", f"cat {REAL / 'srun-step-time-limit.txt'} >&2; exit 143")
    # the other node launches nothing: it stays while its ranks (here a stand-in process named like one) train,
    # so the utilisation sampler that wraps it samples the training
    rank = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)", "ddp_train.py", str(tmp_path / "n2")])
    t0 = time.monotonic()
    assert run_ddp(tmp_path, env, "srun", "--alloc-wait", "0", this_node="dgx02") is None
    assert rank.poll() is not None and time.monotonic() - t0 >= 2.5
    meta = run_ddp(tmp_path, env, "srun")
    cmd = meta["command"]
    assert meta["engine"] == "srun" and meta["peers"] == [] and cmd[:2] == ["srun", "--mpi=pmix"]
    f = flags(cmd)
    assert f["--ntasks-per-node"] == "2" and "--gpus-per-node" not in f and f["--time"] == "5"
    assert cmd[cmd.index("--time=5") + 2].endswith("ddp_train.py") and cmd[cmd.index("--device") + 1] == "cpu"
    seen = (tmp_path / "env").read_text().splitlines()
    assert "MASTER_ADDR=203.0.113.11" in seen and "MASTER_PORT=29500" in seen and "OMP_NUM_THREADS=1" in seen
    assert [s["file"] for s in meta["samples"]] == ["synthetic-r1.json", "synthetic-r2.json"]
    assert meta["samples"][0]["rc"] == 143 and meta["samples"][0]["reason"].startswith(
        "srun: Slurm cancelled step 32233190.0 on nid01934 at 2020-07-03T02:59:56 due to time limit")


def test_ddp_ranks_under_mpirun_get_the_rendezvous_exported(tmp_path):
    env = fake_engine(tmp_path, "mpirun", f"cat {REAL / 'mpirun-4-process-exit.txt'}; exit 1")
    meta = run_ddp(tmp_path, env, "mpirun")
    cmd = meta["command"]
    assert cmd[cmd.index("-H") + 1] == "203.0.113.11:2,203.0.113.12:2" and cmd[cmd.index("-np") + 1] == "4"
    assert {"MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS"} <= {cmd[i + 1] for i, c in enumerate(cmd) if c == "-x"}
    assert meta["samples"][1]["reason"] == "mpirun: rank 0 exited with code 1 and mpirun aborted the job"


def test_pyxis_training_uses_the_same_srun_line():
    """The site's pyxis launch: engines.py's srun line around torchrun, one task per node with every GPU."""
    sys.path.insert(0, str(RUNNERS))
    ddp = importlib.import_module("ddp_runner")
    args = ddp.argparse.Namespace(
        runtime="pyxis", gpus=1, procs_per_node=8, nodes="dgx01,dgx02", this_node="dgx01", case="n2",
        image="nvcr.io/nvidia/pytorch:24.05-py3", rdzv_endpoint="10.10.0.11:29400", rdzv_id="n2", rdzv_timeout=900,
        local_addr=None, model="resnet50", batch_size=256, image_size=224, num_classes=1000, steps=50,
        warmup_steps=10, modes="synthetic,real", workers=8, repeats=5, out_dir="/scratch/ddp/n2", amp=1,
        dataset=None, python="python3", timeout=3600, node_hostnames="dgx-01,dgx-02", addrs=None, partition="dgx",
        alloc_wait=60)
    cmd = ddp.build_command(args, 2)
    f = flags(cmd)
    assert cmd[:2] == ["srun", "--mpi=pmix"] and f["--ntasks-per-node"] == "1" and f["--gpus-per-node"] == "8"
    assert f["--nodelist"] == "dgx-01,dgx-02" and f["--partition"] == "dgx" and f["--time"] == "60"
    assert f["--container-image"] == "nvcr.io#nvidia/pytorch:24.05-py3"
    assert cmd[cmd.index(f"--container-mounts={f['--container-mounts']}") + 1] == "torchrun"


# ------------------------------------------------------------------------------------------------ which engine

@pytest.mark.parametrize(("engine", "launcher", "runtime", "standins", "srun", "want"), [
    # a site: auto follows srun; DDP's docker/pyxis stay the site's choice
    ("auto", "auto", "docker", False, True, ("slurm", "srun", False, "docker")),
    ("auto", "auto", "pyxis", False, False, ("mpirun", "mpirun", False, "pyxis")),
    ("slurm", "mpirun", "docker", False, True, ("slurm", "mpirun", False, "docker")),   # an explicit launcher wins
    # the lab: the engine starts the stand-ins, the SSH path stays for no scheduler
    ("slurm", "auto", "host", True, True, ("slurm", "srun", True, "srun")),
    ("mpirun", "auto", "host", True, True, ("mpirun", "mpirun", True, "mpirun")),
    ("ssh", "auto", "host", True, True, ("ssh", "gloo", False, "host")),
])
def test_resolve(engine, launcher, runtime, standins, srun, want):
    got = engines().resolve(engine, launcher, runtime, standins, srun)
    assert (got["engine"], got["nccl_launcher"], got["nccl_standin"], got["ddp_runtime"]) == want


def test_resolve_refuses_the_ssh_path_on_a_site_and_unknown_engines():
    with pytest.raises(ValueError, match="validation_lab_standins is false"):
        engines().resolve("ssh", "auto", "docker", False, True)
    with pytest.raises(ValueError, match="use auto, slurm, mpirun or ssh"):
        engines().resolve("docker", "auto", "docker", False, True)
    proc = subprocess.run([sys.executable, str(RUNNERS / "engines.py"), "resolve", "ssh", "auto", "docker", "false"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "validation_lab_standins is false" in proc.stderr


def test_a_job_slurm_still_holds_after_srun_ended_is_cancelled_and_named(tmp_path):
    env = fake_engine(tmp_path, "srun", f"cat {REAL / 'srun-tasks-exited-1.txt'} >&2; exit 1")
    bindir = tmp_path / "bin"
    (bindir / "squeue").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/squeue-argv\necho "4711 RUNNING"\n')
    (bindir / "scancel").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/scancel-argv\n')
    for name in ("squeue", "scancel"):
        (bindir / name).chmod(0o755)
    meta = run_nccl(tmp_path, env, "--launcher", "srun")
    assert meta["samples"][0]["reason"] == ("srun: tasks 10-11 on taurusi2031 exited with code 1; Slurm job 4711 "
                                            "(RUNNING) was still there after srun ended: cancelled")
    assert (tmp_path / "squeue-argv").read_text().splitlines()[:3] == ["--me", "-h", "--name=validation-nccl-all"]
    assert (tmp_path / "scancel-argv").read_text().split() == ["4711"]


def test_nothing_left_behind_adds_nothing():
    eng = engines()
    assert eng.note_leftovers({"rc": 0, "timed_out": False}, []) == {"rc": 0, "timed_out": False}
    marked = eng.note_leftovers({"rc": 0, "timed_out": False}, ["Slurm job 1 (PENDING) was still there"])
    assert marked["engine_failed"] is True and marked["reason"] == "Slurm job 1 (PENDING) was still there"


def test_wait_for_ranks_gives_up_when_none_appear():
    sys.path.insert(0, str(RUNNERS))
    common = importlib.import_module("common")
    got = common.wait_for_ranks(["ddp_train.py", "/no/such/case-dir"], appear_s=0.5, finish_s=5, poll_s=0.1)
    assert got["ranks_seen"] is False and got["gave_up"] is True and got["waited_s"] < 2


def test_debian_open_mpi_ran_the_line_with_the_ranks_and_the_environment():
    """The mpirun line as Debian 12's Open MPI 4.1.4 ran it: two ranks, each with torch's variables from
    OMPI_COMM_WORLD_* (engines.rank_env) and the exported NCCL_ALGO / MASTER_ADDR; no failure read into it."""
    text = real("mpirun-4.1.4-debian12-ranks.txt")
    assert engines().engine_failures("mpirun", text) == []
    assert "[1,0]<stdout>:rank 0 world 2 local 0 algo Ring master 127.0.0.1" in text.splitlines()
    rank1 = "".join(part for line in text.splitlines() if line.startswith("[1,1]<stdout>:")
                    for part in line.split("[1,1]<stdout>:") if part)
    assert rank1 == "rank 1 world 2 local 1 algo Ring master 127.0.0.1"


def test_debian_slurm_ran_the_line_with_the_ranks_and_the_environment():
    """The srun line as Debian 12's Slurm 22.05.8 ran it: two tasks, each with torch's variables from SLURM_*
    (engines.rank_env) and the exported NCCL_ALGO / MASTER_ADDR (--export=ALL); no failure read into it."""
    text = real("srun-22.05.8-debian12-ranks.txt")
    assert engines().engine_failures("srun", text) == []
    assert sorted(text.splitlines()) == ["rank 0 world 2 local 0 algo Ring master 127.0.0.1",
                                         "rank 1 world 2 local 1 algo Ring master 127.0.0.1"]


def test_a_job_still_completing_after_srun_is_waited_for_not_cancelled(tmp_path, monkeypatch):
    """Debian's 22.05.8 showed the job COMPLETING right after a successful srun returned (SOURCES): that is Slurm
    finishing it, not a job left behind."""
    eng = engines()
    answers = iter([[["3", "COMPLETING"]], [["3", "COMPLETING"]], []])
    monkeypatch.setattr(eng.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(eng, "_jobs_named", lambda name: next(answers))
    monkeypatch.setattr(eng.time, "sleep", lambda s: None)
    assert eng.cancel_leftovers("validation-nccl-all") == []


def test_a_step_that_never_started_fails_the_sample_although_srun_exited_0():
    """Debian's 22.05.8 printed 'task N launch failed' and exited 0 (SOURCES): the sample must not pass."""
    got = engines().judge_launch({"rc": 0, "timed_out": False}, "srun",
                                 real("srun-22.05.8-debian12-launch-failed-exit-0.txt"))
    assert got["engine_failed"] is True and got["rc"] == 0
    assert got["reason"] == "srun: task 0 launch failed: Unspecified error; task 1 launch failed: Unspecified error"
