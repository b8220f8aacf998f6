#!/usr/bin/env python3
"""The launch engines real sites use, in one place: Slurm (srun --mpi=pmix) and Open MPI (mpirun).

Runs on the DGX nodes (standard library only, Python >= 3.8) and is imported by the runners:

  launch_command(spec, program)   the srun or mpirun command line for one multi-node case; production and the lab
                                  build it from the same LaunchSpec, only `program` differs (nccl-tests'
                                  all_reduce_perf, or the lab's stand-in gloo_allreduce.py / ddp_train.py)
  rank_env(environ)               torch.distributed's env:// variables (RANK, WORLD_SIZE, LOCAL_RANK, ...) from
                                  the ones srun or mpirun give each rank, so a stand-in rank started by either
                                  engine joins the same job
  engine_failures(engine, text)   why the engine ended a launch, from what srun/slurmstepd or mpirun printed:
                                  an allocation Slurm refused, a node drained, a rank that exited non-zero, a
                                  time limit; the reasons a FAIL names (the real outputs this reads are in
                                  tests/fixtures/slurm/real, SOURCES says where each comes from)
  mpi_plugins(text)               what `srun --mpi=list` offers (pmix or not), for the engine check below
  resolve(...)                    which engine a run uses (validation_engine auto|slurm|mpirun|ssh), for both roles
  python3 engines.py check-slurm  the engine's readiness on a node before any measurement: srun present, pmix in
                                  `srun --mpi=list`, the nodes idle in the partition (sinfo); JSON out
  python3 engines.py resolve      resolve() on the node (it knows whether srun is installed); JSON out

Time limits: each engine is given the case's limit itself (srun --time, mpirun --timeout), so a case that runs
too long ends with the engine's own reason and the engine cleans up its ranks; the runner's process-group kill
(common.run) stays as the backstop ENGINE_GRACE_S later. srun also gets --immediate: an allocation Slurm cannot
grant at once (nodes drained, down or busy) fails within alloc_wait_s instead of queueing, and
--kill-on-bad-exit=1: one rank exiting non-zero ends the step on every node.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

ENGINES = ("srun", "mpirun")

# How long after the engine's own time limit the runner kills the launcher's process group: srun waits up to
# KillWait (30 s by default) plus its own 32 s for a cancelled step ("srun: Job step aborted: Waiting up to 32
# seconds for job step to finish", tests/fixtures/slurm/real/srun-step-time-limit.txt).
ENGINE_GRACE_S = 120.0


@dataclass(frozen=True)
class LaunchSpec:
    """One multi-node launch, whatever the engine: which nodes, how many ranks on each, what the ranks get."""

    engine: str                      # srun | mpirun
    nodes: tuple[str, ...]           # Slurm node names (srun --nodelist), in rank order
    addrs: tuple[str, ...]           # the same nodes' addresses for mpirun -H (the fabric addresses)
    procs_per_node: int              # ranks per node (one per GPU)
    gpus_per_node: int               # GPUs each node's ranks ask for; 0: none (the lab's CPU stand-ins)
    time_limit_s: float              # the case's limit, given to the engine itself
    job_name: str                    # srun --job-name: what squeue shows, what a cleanup cancels by name
    export: tuple[str, ...] = ()     # variables every rank must see (mpirun -x; srun --export=ALL carries them)
    partition: str = ""              # srun --partition; empty: the cluster's default partition
    alloc_wait_s: int = 60           # srun --immediate: give up on an allocation not granted by then
    container_image: str = ""        # pyxis --container-image (enroot URI)
    container_mounts: str = ""       # pyxis --container-mounts
    extra: tuple[str, ...] = field(default_factory=tuple)  # the site's own engine arguments, last

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine {self.engine!r} is not one of {', '.join(ENGINES)}")
        if not self.nodes or self.procs_per_node < 1:
            raise ValueError(f"a launch needs nodes and at least one rank per node (nodes {list(self.nodes)}, "
                             f"procs_per_node {self.procs_per_node})")
        if self.engine == "mpirun" and len(self.addrs) != len(self.nodes):
            raise ValueError(f"mpirun needs one address per node: nodes {list(self.nodes)}, addrs {list(self.addrs)}")


def job_name(stage: str, case: str) -> str:
    """srun --job-name of one case: what squeue shows and what cancel_leftovers looks for."""
    return f"validation-{stage}-{case}"


def slurm_minutes(seconds: float) -> int:
    """srun --time in whole minutes, rounded up (at least 1: --time=0 means no limit to Slurm)."""
    return max(1, math.ceil(seconds / 60.0))


def launch_command(spec: LaunchSpec, program: Sequence[str]) -> list[str]:
    """The engine's command line that starts `program` as procs_per_node ranks on every node of the spec."""
    if spec.engine == "srun":
        cmd = ["srun", "--mpi=pmix", f"--job-name={spec.job_name}", f"--nodes={len(spec.nodes)}",
               f"--nodelist={','.join(spec.nodes)}", f"--ntasks-per-node={spec.procs_per_node}"]
        if spec.gpus_per_node:
            cmd.append(f"--gpus-per-node={spec.gpus_per_node}")
        cmd += ["--exclusive", "--export=ALL", "--kill-on-bad-exit=1", f"--immediate={int(spec.alloc_wait_s)}",
                f"--time={slurm_minutes(spec.time_limit_s)}"]
        if spec.partition:
            cmd.append(f"--partition={spec.partition}")
        if spec.container_image:
            cmd.append(f"--container-image={spec.container_image}")
            if spec.container_mounts:
                cmd.append(f"--container-mounts={spec.container_mounts}")
        return [*cmd, *spec.extra, *program]
    ranks = len(spec.nodes) * spec.procs_per_node
    cmd = ["mpirun", "--allow-run-as-root", "--tag-output", "-np", str(ranks),
           "-H", ",".join(f"{a}:{spec.procs_per_node}" for a in spec.addrs),
           "--map-by", f"ppr:{spec.procs_per_node}:node", "--bind-to", "numa"]
    for key in sorted(set(spec.export)):
        cmd += ["-x", key]
    cmd += ["--timeout", str(max(1, math.ceil(spec.time_limit_s)))]
    return [*cmd, *spec.extra, *program]


# --- which engine ---------------------------------------------------------------------------------------------

# validation_engine -> the NCCL runner's launcher, and what the DDP runtime `host` (the node's own python, the
# lab's) becomes: ssh is the lab's scheduler-less path (the runners start the stand-in's ranks themselves)
_ENGINE_NCCL = {"slurm": "srun", "mpirun": "mpirun", "ssh": "gloo"}
_ENGINE_DDP_HOST = {"slurm": "srun", "mpirun": "mpirun", "ssh": "host"}


def resolve(engine: str, nccl_launcher: str, ddp_runtime: str, standins: bool, srun_found: bool) -> dict[str, object]:
    """The launch of this run, from the inventory (validation_engine, validation_nccl.launcher,
    validation_ddp.runtime, validation_lab_standins) and whether this node has srun: the one place the roles ask.

    auto picks Slurm where srun is installed, else Open MPI. An explicit validation_nccl.launcher wins for NCCL.
    DDP's docker and pyxis runtimes are the site's choice and stay; its `host` runtime (the lab's) is started by
    the engine. The SSH path (engine ssh, launcher gloo) exists for the lab's stand-ins only."""
    if engine not in ("auto", *_ENGINE_NCCL):
        raise ValueError(f"validation_engine is {engine!r}: use auto, slurm, mpirun or ssh")
    chosen = ("slurm" if srun_found else "mpirun") if engine == "auto" else engine
    launcher = nccl_launcher if nccl_launcher != "auto" else _ENGINE_NCCL[chosen]
    if launcher == "gloo" and not standins:
        raise ValueError("validation_engine ssh (validation_nccl.launcher gloo) starts the lab's gloo stand-in, and "
                         "validation_lab_standins is false: use slurm, mpirun or auto on a site")
    runtime = _ENGINE_DDP_HOST[chosen] if ddp_runtime == "host" else ddp_runtime
    return {"engine": chosen, "nccl_launcher": launcher, "nccl_standin": standins and launcher in ENGINES,
            "ddp_runtime": runtime, "srun_found": srun_found}


# --- ranks ----------------------------------------------------------------------------------------------------

# torch.distributed env:// variable <- the engine's per-rank variable (srun(1) OUTPUT ENVIRONMENT VARIABLES: the
# SLURM_* names, as in the `srun -n 1 env` capture of open-mpi/ompi#10286; Open MPI's mpirun(1): OMPI_COMM_WORLD_*)
_RANK_VARS = {
    "srun": (("RANK", "SLURM_PROCID"), ("WORLD_SIZE", "SLURM_NTASKS"), ("LOCAL_RANK", "SLURM_LOCALID"),
             ("LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"), ("GROUP_RANK", "SLURM_NODEID")),
    "mpirun": (("RANK", "OMPI_COMM_WORLD_RANK"), ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"),
               ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"), ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE")),
}


def launched_by(environ: Mapping[str, str]) -> str | None:
    """Which engine started this process as a rank (None: neither, e.g. the SSH path's env:// workers)."""
    if "SLURM_PROCID" in environ and "SLURM_STEP_ID" in environ:
        return "srun"
    if "OMPI_COMM_WORLD_RANK" in environ:
        return "mpirun"
    return None


def rank_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The env:// variables this rank lacks, from its engine's; {} when RANK is already set or no engine started
    it. MASTER_ADDR/MASTER_PORT are not the engine's: the launcher exports them with the rest of the case's
    environment (srun --export=ALL, mpirun -x)."""
    engine = launched_by(environ)
    if "RANK" in environ or engine is None:
        return {}
    out = {}
    for torch_name, engine_name in _RANK_VARS[engine]:
        value = environ.get(engine_name)
        if value is not None and torch_name not in environ:
            out[torch_name] = value
    missing = [n for n in ("RANK", "WORLD_SIZE", "LOCAL_RANK") if n not in out and n not in environ]
    if missing:
        raise RuntimeError(f"started by {engine} but {', '.join(missing)} cannot be derived: the engine set none of "
                           f"{', '.join(e for t, e in _RANK_VARS[engine] if t in missing)}")
    return out


# --- failures ---------------------------------------------------------------------------------------------------

_SRUN_ALLOC = re.compile(r"^srun: error: Unable to allocate resources: (?P<why>.+?)\s*$", re.M)
_SRUN_STEP = re.compile(r"^srun: error: Unable to create step for job (?P<job>\d+): (?P<why>.+?)\s*$", re.M)
_SRUN_PENDING = re.compile(r"^srun: (?P<why>Required node not available \(down, drained or reserved\)|"
                           r"Requested partition configuration not available now|"
                           r"Nodes required for job are DOWN, DRAINED.*?)\s*$", re.M)
_SLURM_CANCELLED = re.compile(r"\*\*\* (?P<what>JOB|STEP) (?P<id>[\w.]+) ON (?P<node>\S+) CANCELLED AT (?P<at>\S+)"
                              r"(?: DUE TO (?P<why>[A-Z][A-Z ]*?))?(?: by \S+)? \*\*\*")
_SRUN_TASKS_EXIT = re.compile(r"^srun: error: (?P<node>\S+): tasks? (?P<tasks>[\d,\-]+): Exited with exit code "
                              r"(?P<code>\d+)\s*$", re.M)
_SRUN_TASKS_OTHER = re.compile(r"^srun: error: (?P<node>\S+): tasks? (?P<tasks>[\d,\-]+): (?P<what>(?!Exited)[A-Z].*?)"
                               r"\s*$", re.M)
_SRUN_MPI = re.compile(r"^srun: error: (?P<why>.*(?:pmi/pmix: can not load PMIx library|invalid MPI type|"
                       r"Invalid MPI type|cannot find mpi plugin).*?)\s*$", re.M)
_SRUN_STEP_STUCK = re.compile(r"^srun: error: (?P<why>Timed out waiting for job step to complete)\s*$", re.M)
_SRUN_ANY_ERROR = re.compile(r"^srun: error: (?P<why>.+?)\s*$", re.M)
_SRUN_NODE_FAIL = re.compile(r"^srun: error: (?P<why>Node failure on \S+)\s*$", re.M)
_MPIRUN_EXIT = re.compile(r"one or more processes exited with non-zero status.*?Process name: \[\[\d+,\d+\],"
                          r"(?P<rank>\d+)\]\s+Exit code:\s+(?P<code>\d+)", re.S)
_MPIRUN_INIT = re.compile(r"It looks like orte_init failed.*?Open MPI developer\):\s*\n\s*(?P<what>\S.*?)\s*\n"
                          r"\s*--> (?P<ret>.+?)\s*$", re.S | re.M)
_MPIRUN_UNOPENED = re.compile(r"mca_base_component_repository_open: unable to open (?P<comp>\S+): (?P<why>.+?)"
                              r"(?: \(ignored\))?\s*$", re.M)
_MPIRUN_TIMEOUT = re.compile(r"The user-provided time limit for job execution has been\s+reached:\s+"
                             r"(?:Timeout|MPIEXEC_TIMEOUT): (?P<secs>\d+) seconds", re.S)


def _srun_failures(text: str) -> list[str]:
    out: list[str] = []
    for m in _SRUN_MPI.finditer(text):
        out.append(f"the pmix MPI plugin cannot be used: {m['why'].strip()}")
    if out:
        return [*out[:1], "check srun --mpi=list and the PMIx library on the nodes (Debian: libpmix-dev provides the "
                          "libpmix.so that Slurm's mpi_pmix_v4.so opens)"]
    for m in _SRUN_ALLOC.finditer(text):
        pending = [p["why"] for p in _SRUN_PENDING.finditer(text)]
        out.append(f"Slurm could not allocate the nodes: {m['why']}" + (f" ({'; '.join(pending)})" if pending else ""))
    for m in _SRUN_STEP.finditer(text):
        out.append(f"Slurm could not start the step in job {m['job']}: {m['why']}")
    for m in _SLURM_CANCELLED.finditer(text):
        why = (m["why"] or "").strip()
        if not why:  # cancelled by srun (--kill-on-bad-exit): the cause is the task that ended before the step did
            out += [f"task{'s' if re.search(r'[,-]', t['tasks']) else ''} {t['tasks']} on {t['node']} ended first: "
                    f"{t['what']}" for t in _SRUN_TASKS_OTHER.finditer(text, 0, m.start())]
        out.append(f"Slurm cancelled {m['what'].lower()} {m['id']} on {m['node']} at {m['at']}"
                   + (f" due to {why.lower()}" if why else ""))
    for m in _SRUN_TASKS_EXIT.finditer(text):
        plural = "s" if re.search(r"[,\-]", m["tasks"]) else ""
        out.append(f"task{plural} {m['tasks']} on {m['node']} exited with code {m['code']}")
    for m in _SRUN_NODE_FAIL.finditer(text):
        out.append(m["why"])
    if _SRUN_STEP_STUCK.search(text):
        out.append("srun timed out waiting for the step to end: ranks may still run on the nodes")
    if not out:  # only consequences (Terminated, Killed): still the engine's word on why the ranks ended
        for m in _SRUN_TASKS_OTHER.finditer(text):
            out.append(f"tasks {m['tasks']} on {m['node']}: {m['what']}")
    if not out:  # any other refusal srun printed, in its own words (an invalid --gpus-per-node on nodes without GRES)
        out = [m["why"] for m in _SRUN_ANY_ERROR.finditer(text)][:3]
    return list(dict.fromkeys(out))


def _mpirun_failures(text: str) -> list[str]:
    out = []
    for m in _MPIRUN_INIT.finditer(text):
        missing = [f"{u['comp']}: {u['why']}" for u in _MPIRUN_UNOPENED.finditer(text)]
        out.append(f"mpirun could not start its runtime (orte_init failed: {m['what']}; {m['ret']})"
                   + (f"; components it could not open: {'; '.join(missing)}" if missing else ""))
    for m in _MPIRUN_TIMEOUT.finditer(text):
        out.append(f"mpirun's time limit of {m['secs']} s was reached and the job aborted")
    for m in _MPIRUN_EXIT.finditer(text):
        out.append(f"rank {m['rank']} exited with code {m['code']} and mpirun aborted the job")
    return out


def engine_failures(engine: str, text: str) -> list[str]:
    """The engine's reasons for ending a launch, most telling first; [] when it printed none."""
    if engine == "srun":
        return _srun_failures(text)
    if engine == "mpirun":
        return _mpirun_failures(text)
    return []


def engine_reason(engine: str, text: str) -> str | None:
    """One line for a FAIL: the engine's name and its reasons; None when it printed none."""
    reasons = engine_failures(engine, text)
    return f"{engine}: {'; '.join(reasons)}" if reasons else None


def judge_launch(result: Mapping[str, object], engine: str, text: str) -> dict[str, object]:
    """A launch's record (common.run's) with the engine's reasons: they replace the bare "srun exited with status
    1". An engine that exited 0 but said the launch failed (srun's "Timed out waiting for job step to complete"
    exits 0: tests/fixtures/slurm/real/srun-step-abort-timed-out.txt) is marked engine_failed, which the verdict
    counts as a failed sample; the exit status itself is never rewritten."""
    out = dict(result)
    reason = engine_reason(engine, text)
    if reason is None:
        return out
    if out.get("timed_out") and out.get("reason"):
        reason = f"{reason}; {out['reason']}"
    out["reason"] = reason
    if out.get("rc") == 0 and not out.get("timed_out"):
        out["engine_failed"] = True
    return out


def _jobs_named(job_name: str) -> list[list[str]]:
    q = subprocess.run(["squeue", "--me", "-h", f"--name={job_name}", "-o", "%i %T"], capture_output=True, text=True,
                       timeout=60, check=False)
    return [line.split() for line in q.stdout.splitlines() if line.strip()]


def cancel_leftovers(job_name: str, completing_s: float = 60.0) -> list[str]:
    """After srun ended: this launch's jobs Slurm still holds (an srun killed at the backstop can leave its
    allocation behind), cancelled with scancel and named, so a failed case leaves nothing running. A job still
    COMPLETING right after srun returned is Slurm finishing it (seen after successful runs of Debian's 22.05.8):
    it is given completing_s to go. [] where there is no squeue (mpirun) or nothing was left."""
    if shutil.which("squeue") is None:
        return []
    deadline = time.monotonic() + completing_s
    jobs = _jobs_named(job_name)
    while jobs and all(j[1:] == ["COMPLETING"] for j in jobs) and time.monotonic() < deadline:
        time.sleep(1.0)
        jobs = _jobs_named(job_name)
    if not jobs:
        return []
    c = subprocess.run(["scancel", *[j[0] for j in jobs]], capture_output=True, text=True, timeout=60, check=False)
    done = "cancelled" if c.returncode == 0 else f"scancel failed (exit {c.returncode}: {c.stderr.strip()[:200]})"
    return [f"Slurm job {j[0]} ({j[1] if len(j) > 1 else '?'}) was still there after srun ended: {done}" for j in jobs]


def note_leftovers(result: Mapping[str, object], leftovers: list[str]) -> dict[str, object]:
    """A launch's record with what cancel_leftovers found: a job left behind fails the sample, named."""
    out = dict(result)
    if leftovers:
        prior = [str(out["reason"])] if out.get("reason") else []
        out["reason"] = "; ".join(prior + leftovers)
        out["leftovers"] = leftovers
        if out.get("rc") == 0 and not out.get("timed_out"):
            out["engine_failed"] = True
    return out


def settle_launch(result: Mapping[str, object], engine: str, text: str, stage: str, case: str) -> dict[str, object]:
    """One engine launch's record, as every runner keeps it: under srun and mpirun the engine's own reasons
    (judge_launch); under srun also the case's job steps left behind, cancelled and named (note_leftovers)."""
    out = judge_launch(result, engine, text) if engine in ("srun", "mpirun") else dict(result)
    if engine == "srun":
        out = note_leftovers(out, cancel_leftovers(job_name(stage, case)))
    return out


# --- srun --mpi=list and the node check ----------------------------------------------------------------------

@dataclass(frozen=True)
class MpiPlugins:
    types: tuple[str, ...]           # "none", "pmi2", "pmix", "cray_shasta", ...
    pmix_versions: tuple[str, ...]   # "pmix_v4", ...

    @property
    def has_pmix(self) -> bool:
        return "pmix" in self.types or bool(self.pmix_versions)


def mpi_plugins(text: str) -> MpiPlugins:
    """Parse `srun --mpi=list`. Raises ValueError on text that is not that listing (fail closed: an answer that
    cannot be read never counts as pmix being there)."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().startswith("MPI plugin types are"))
    except StopIteration:
        raise ValueError(f"not an `srun --mpi=list` listing (no 'MPI plugin types are...' line): "
                         f"{text.strip()[:160]!r}") from None
    types: list[str] = []
    versions: list[str] = []
    for line in lines[start + 1:]:
        if line.startswith(("\t", " ")) and line.strip() and " " not in line.strip():
            types.append(line.strip())
            continue
        m = re.match(r"\s*specific pmix plugin versions available:\s*(.*)$", line)
        if m:
            versions = [v.strip() for v in m.group(1).split(",") if v.strip()]
        break
    return MpiPlugins(tuple(types), tuple(versions))


# sinfo -h -N -p <partition> -o '%N %t': one node per line, its compact state (idle, alloc, mix, drain, drng,
# down, ...; a trailing * = not responding, ~ = powered off, # = powering up, % = powering down)
def sinfo_states(text: str) -> dict[str, str]:
    states = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1]
    return states


def slurm_problems(nodes: Sequence[str], mpi_list: str, sinfo: str, partition: str) -> list[str]:
    """Why Slurm cannot run the validation on these nodes now ([] = it can): pmix missing from srun --mpi=list,
    a node missing from the partition, or not idle (drained, down, allocated: a busy node would make the
    validation wait or measure alongside another job)."""
    problems = []
    try:
        plugins = mpi_plugins(mpi_list)
        if not plugins.has_pmix:
            problems.append(f"srun --mpi=list offers no pmix (it offers {', '.join(plugins.types) or 'nothing'}): the "
                            "validation launches with srun --mpi=pmix. Build or install Slurm with its PMIx plugin "
                            "(Debian: slurm-wlm-basic-plugins and libpmix-dev), or set validation_engine: mpirun")
    except ValueError as exc:
        problems.append(f"srun --mpi=list could not be read: {exc}")
    where = f"partition {partition}" if partition else "the default partition"
    states = sinfo_states(sinfo)
    for node in nodes:
        state = states.get(node)
        if state is None:
            problems.append(f"node {node} is not in {where} (sinfo lists {', '.join(sorted(states)) or 'no node'})")
        elif state != "idle":
            problems.append(f"node {node} is {state} in {where}, not idle: resume it (scontrol update "
                            f"nodename={node} state=resume) or wait for its jobs to end")
    return problems


def check_slurm(nodes: Sequence[str], partition: str) -> dict[str, object]:
    """Ask this node's Slurm client (read-only: srun --mpi=list, sinfo) whether the validation can run."""
    if shutil.which("srun") is None or shutil.which("sinfo") is None:
        return {"ok": False, "srun_found": False, "problems": [
            "srun/sinfo not found on this node: Slurm's client (slurm-client) is not installed, or set "
            "validation_engine: mpirun"]}
    mpi = subprocess.run(["srun", "--mpi=list"], capture_output=True, text=True, timeout=60, check=False)
    argv = ["sinfo", "-h", "-N", "-o", "%N %t"] + ([f"--partition={partition}"] if partition else [])
    info = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    problems = slurm_problems(nodes, mpi.stdout + mpi.stderr, info.stdout, partition)
    if info.returncode != 0:
        problems.append(f"sinfo failed (exit {info.returncode}): {info.stderr.strip()[:300]}")
    return {"ok": not problems, "srun_found": True, "problems": problems, "mpi_list": mpi.stdout,
            "sinfo": info.stdout}


USAGE = ("usage: engines.py check-slurm NODE[,NODE...] [PARTITION]  (NODE '-': this node's short hostname)\n"
         "       engines.py resolve ENGINE NCCL_LAUNCHER DDP_RUNTIME STANDINS(true|false)")

if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "check-slurm":
        names = [socket.gethostname().split(".")[0] if n == "-" else n for n in sys.argv[2].split(",")]
        print(json.dumps(check_slurm(names, sys.argv[3] if len(sys.argv) == 4 else ""), indent=2))
        sys.exit(0)
    if len(sys.argv) == 6 and sys.argv[1] == "resolve":
        try:
            print(json.dumps(resolve(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].lower() in ("true", "1", "yes"),
                                     shutil.which("srun") is not None)))
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
        sys.exit(0)
    raise SystemExit(USAGE)
