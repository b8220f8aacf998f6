"""Faults of the launch engine on the running lab (issue #21's acceptance), through Slurm (`srun --mpi=pmix`, the
DGX VMs' Slurm 22.05): each gives FAIL naming the case and Slurm's reason, and leaves nothing running (no job in
squeue, no rank on any DGX):

- a node drained before the run: preflight stops before any measurement, naming the node and the scontrol fix;
  drained during the run: the cases that need it FAIL with srun's "Required node not available";
- a rank killed in the middle of the all-node case: srun ends the step on every node (--kill-on-bad-exit) and the
  case FAILs with srun's words;
- an allocation Slurm cannot satisfy (more ranks per node than the VMs have CPUs): srun gives up after --immediate
  and the cases FAIL with Slurm's "Unable to allocate resources" reason.

    pytest -m lab_faults tests/faults_lab/test_engine_faults.py      (the lab must be up: python -m lab up)
"""

from __future__ import annotations

import json
import re
import time

import pytest

from .test_lab_faults import LAB, VALIDATE_FAST, converged, flat, must, report_of, run, ssh, stages, start

pytestmark = pytest.mark.lab_faults
__all__ = ["converged"]  # the module fixture: the lab converged before the cases, every VM up after them

SLURM = ["-e", "validation_engine=slurm"]
DGX = ("dgx01", "dgx02")
CONTROLLER = "dgx01"   # slurmctld (lab/vmconfig.py slurm_conf: the first DGX)
# '[g]' keeps the pattern from matching the shell that runs pgrep
RANKS = "[g]loo_allreduce|[d]dp_train"
# Bounds (seconds) of the faulted run of each case, from the start of ansible-playbook to its end. README's table.
BOUND_S = {
    "drained_preflight": 300,   # preflight alone: check-slurm reads sinfo and stops the run
    "drained_mid_run": 600,     # paths + NCCL: each case that needs the drained node waits --immediate (60 s)
    "rank_killed": 600,         # paths + NCCL: the step ends when the rank does
    "unsatisfiable": 600,       # paths + NCCL: every case waits --immediate (60 s), the single-node ones together
}


def leftovers() -> list[str]:
    """What a failed case may not leave behind: a job in squeue, a rank process on a DGX."""
    left = []
    jobs = must(CONTROLLER, "squeue -h -o '%i %j %T %N'").strip()
    if jobs:
        left.append(f"squeue: {jobs}")
    for node in DGX:
        # pgrep: 0 found, 1 none; anything else (or SSH failing) is no answer, and must() fails the case
        procs = must(node, f"pgrep -af '{RANKS}'; [ $? -le 1 ]", timeout=60).strip()
        if procs:
            left.append(f"{node}: {procs}")
    return left


def nothing_left(within_s: float = 90) -> None:
    """Slurm may show a job COMPLETING for a moment after its step ended (docs/launch-engines.md): give it time."""
    deadline = time.monotonic() + within_s
    while (left := leftovers()) and time.monotonic() < deadline:
        time.sleep(5)
    assert not left, f"left running after the case: {left}"


def resume(node: str) -> None:
    must(CONTROLLER, f"scontrol update nodename={node} state=resume 2>/dev/null; "
                     f"for i in $(seq 60); do [ \"$(sinfo -h -n {node} -o %t)\" = idle ] && exit 0; sleep 2; done; "
                     f"sinfo -h -N -o '%N %t %E'; exit 1", timeout=180)


def nccl_reasons(report: dict) -> str:
    return " ".join(f"{c['label']}: {' '.join(c['reasons'])}" for c in report["verdict"]["checks"]
                    if c["stage"] == "nccl" and c["status"] == "FAIL")


def test_slurm_drained_node_stops_preflight_then_fails_the_cases_mid_run(converged, tmp_path):
    try:
        must(CONTROLLER, "scontrol update nodename=dgx02 state=drain reason=faults-lab")
        rc, out, elapsed = run(tmp_path, "playbooks/validate.yml", *SLURM, *VALIDATE_FAST, *stages("nccl"),
                               bound_s=BOUND_S["drained_preflight"])
        text = flat(out)
        assert rc != 0 and elapsed < BOUND_S["drained_preflight"], out[-4000:]
        assert "dgx02: Slurm cannot launch the validation (validation_engine slurm" in text, out[-4000:]
        assert "node dgx02 is drain" in text and "scontrol update nodename=dgx02 state=resume" in text, out[-4000:]
        assert "report.html" not in out, "a run that preflight stopped measured anyway"
        resume("dgx02")

        # drained after preflight, while the single-node cases run: the cases that need dgx02 then FAIL
        book = start(tmp_path, "playbooks/validate.yml", *SLURM, *VALIDATE_FAST, *stages("nccl"))
        book.wait_for("NCCL | single-node all-reduce on every DGX", timeout_s=400)
        must(CONTROLLER, "scontrol update nodename=dgx02 state=drain reason=faults-lab")
        rc, out, _ = book.finish(BOUND_S["drained_mid_run"])
        report = report_of(out)
        assert rc != 0 and report["verdict"]["status"] == "FAIL", out[-4000:]
        reasons = nccl_reasons(report)
        assert re.search(r"nccl_\w+\[all\]|all-node|\ball\b", reasons), reasons
        assert "srun: Slurm could not allocate the nodes" in reasons, reasons
        assert "drained" in reasons, reasons
        nothing_left()
    finally:
        resume("dgx02")


def test_slurm_rank_killed_mid_run_fails_the_case_and_ends_the_step(converged, tmp_path):
    book = start(tmp_path, "playbooks/validate.yml", *SLURM, *VALIDATE_FAST, *stages("nccl"))
    try:
        book.wait_for("NCCL | all-node all-reduce", timeout_s=600)
        # on dgx02 itself: the first rank of the all-node case that appears is killed a second after it started
        must("dgx02", f"setsid nohup sh -c 'for i in $(seq 1500); do p=$(pgrep -f \"{RANKS}\" | head -1); "
                      f"[ -n \"$p\" ] && {{ sleep 1; kill -9 $p; echo killed $p; exit 0; }}; sleep 0.2; done' "
                      f"> /tmp/faults-rank-kill.log 2>&1 < /dev/null &")
        rc, out, _ = book.finish(BOUND_S["rank_killed"])
        killed = must("dgx02", "cat /tmp/faults-rank-kill.log")
        assert "killed" in killed, f"no rank was killed: {killed}"
        report = report_of(out)
        assert rc != 0 and report["verdict"]["status"] == "FAIL", out[-4000:]
        reasons = nccl_reasons(report)
        # the rank killed is the cause, the step srun cancelled its consequence (the lab's capture of this case:
        # tests/fixtures/slurm/real/srun-22.05.8-lab-rank-killed.txt)
        assert re.search(r"srun: tasks? [\d,-]+ on dgx02 ended first: Killed; Slurm cancelled step", reasons), reasons
        nothing_left()
    finally:
        ssh("dgx02", "pkill -f 'faults-rank-kill' ; rm -f /tmp/faults-rank-kill.log", timeout=60)


def test_slurm_allocation_that_cannot_be_satisfied_fails_with_slurms_reason(converged, tmp_path):
    cpus = int(must("dgx01", "nproc").strip())
    # twice as many processes per node as the node has CPUs (each process drives gpus_per_process ranks)
    per_process = LAB["validation_nccl"].get("gpus_per_process", 1)
    nccl = {**LAB["validation_nccl"], "procs_per_node": cpus * 2 * per_process}
    rc, out, elapsed = run(tmp_path, "playbooks/validate.yml", *SLURM, *VALIDATE_FAST, *stages("nccl"),
                           "-e", json.dumps({"validation_nccl": nccl}), bound_s=BOUND_S["unsatisfiable"])
    report = report_of(out)
    assert rc != 0 and report["verdict"]["status"] == "FAIL", out[-4000:]
    reasons = nccl_reasons(report)
    assert "srun: Slurm could not allocate the nodes" in reasons, reasons
    assert elapsed < BOUND_S["unsatisfiable"]
    nothing_left()
