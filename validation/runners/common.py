"""Shared helpers of the runners. Runs on the DGX nodes: standard library only, Python >= 3.8.

Every runner records what it did in ``<case dir>/meta.json`` (see validation/verdict.py): the command,
the nodes, what it asked of the tool (``asked``, once, from its own arguments: the parameters of
validation/asked.yml) and one entry per sample with its exit status, whether it timed out, its duration and
the raw file. A runner exits 0 when it recorded the outcome, whatever the outcome:
the verdict, not the runner, decides PASS or FAIL, so a failed measurement still reaches the report.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
from typing import Any

# Environment variables worth recording with a result; anything that looks like a credential never is.
_ENV_KEEP = re.compile(r"^(NCCL_|UCX_|OMPI_MCA_|PMIX_MCA|GLOO_|TORCH_|CUDA_VISIBLE_DEVICES$|OMP_NUM_THREADS$|"
                       r"MASTER_ADDR$|MASTER_PORT$|SLURM_JOB_ID$|SLURM_NNODES$)")
_ENV_SECRET = re.compile(r"(KEY|SECRET|PASSW|TOKEN|CREDENTIAL|AUTH)", re.I)


def scrub_env(env: dict[str, str]) -> dict[str, str]:
    """The part of an environment a report may show: NCCL/UCX/MPI/torch tuning, never credentials."""
    return {k: v for k, v in sorted(env.items()) if _ENV_KEEP.match(k) and not _ENV_SECRET.search(k)}


def enroot_uri(image: str) -> str:
    """An image as pyxis's --container-image takes it: enroot's URI ``[USER@][REGISTRY#]IMAGE[:TAG]`` or a
    squashfs path (NVIDIA/pyxis README, srun --help). A Docker-style ``nvcr.io/nvidia/pytorch:TAG`` is read by
    enroot before 4.0 as Docker Hub's ``nvcr.io/nvidia/pytorch``: the registry is split off with ``#``."""
    if not image or image.startswith(("/", "./")) or image.endswith(".sqsh") or "#" in image:
        return image
    first, _, rest = image.partition("/")
    user, at, host = first.rpartition("@")
    if rest and ("." in host or ":" in host or host == "localhost"):
        return f"{user}{at}{host}#{rest}"
    return image


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def meta_path(case_dir: str) -> str:
    return os.path.join(case_dir, "meta.json")


def load_meta(case_dir: str) -> dict[str, Any]:
    try:
        with open(meta_path(case_dir), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def save_meta(case_dir: str, meta: dict[str, Any]) -> None:
    os.makedirs(case_dir, exist_ok=True)
    tmp = meta_path(case_dir) + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=2, sort_keys=True)
    os.replace(tmp, meta_path(case_dir))


def init_meta(case_dir: str, **fields: Any) -> dict[str, Any]:
    """Start (or continue) a case's meta.json; the fields describe the case, samples are appended."""
    meta = load_meta(case_dir)
    meta.update(fields)
    meta.setdefault("samples", [])
    meta.setdefault("created", now())
    save_meta(case_dir, meta)
    return meta


def add_sample(case_dir: str, sample: dict[str, Any]) -> None:
    meta = load_meta(case_dir)
    samples = [s for s in meta.get("samples", []) if s.get("file") != sample.get("file")]
    samples.append(sample)
    meta["samples"] = samples
    save_meta(case_dir, meta)


def run(cmd: list[str], out_file: str, timeout_s: float, env: dict[str, str] | None = None,
        err_file: str | None = None, cwd: str | None = None) -> dict[str, Any]:
    """Run cmd with stdout to out_file (stderr to err_file or the same file); kill its process group on timeout."""
    started = time.time()
    os.makedirs(os.path.dirname(out_file) or ".", exist_ok=True)
    with open(out_file, "wb") as out, open(err_file or os.devnull, "wb") as err:
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err if err_file else subprocess.STDOUT, env=env,
                                    cwd=cwd, start_new_session=True)
        except OSError as exc:
            return {"rc": 127, "timed_out": False, "duration_s": 0.0, "reason": f"cannot start {cmd[0]}: {exc}"}
        timed_out = False
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                rc = proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
    return outcome(rc, timed_out, started, timeout_s, os.path.basename(cmd[0]))


def outcome(rc: int, timed_out: bool, started: float, timeout_s: float, what: str) -> dict[str, Any]:
    """A launch's record: exit status, whether the time limit killed it, how long it took, and why it failed."""
    result: dict[str, Any] = {"rc": rc, "timed_out": timed_out, "duration_s": round(time.time() - started, 3)}
    if timed_out:
        result["reason"] = f"killed after the {timeout_s:g} s limit"
    elif rc != 0:
        result["reason"] = f"{what} exited with status {rc}"
    return result


def run_env_workers(cmd: list[str], *, nodes: list[str], this_node: str, procs_per_node: int, endpoint: str,
                    env: dict[str, str], log: str, timeout_s: float) -> dict[str, Any]:
    """Start this node's share of a torch.distributed job without a launcher agent, and wait for it.

    Each worker gets the env:// rendezvous variables torchrun would set (RANK = node index x procs + local
    rank, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/MASTER_PORT = the first node's store), so the job is the same
    but every node imports torch once per worker instead of once more for the agent (tens of seconds in a
    TCG VM). The first worker that fails stops the others on this node (as torchrun does), and the whole
    share is killed at the time limit; the result says which happened."""
    node_index = nodes.index(this_node)
    host, _, port = endpoint.rpartition(":")
    started = time.time()
    os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
    procs: list[subprocess.Popen] = []
    with open(log, "wb") as out:
        try:
            for local in range(procs_per_node):
                wenv = dict(env, MASTER_ADDR=host, MASTER_PORT=port, WORLD_SIZE=str(len(nodes) * procs_per_node),
                            RANK=str(node_index * procs_per_node + local), LOCAL_RANK=str(local),
                            LOCAL_WORLD_SIZE=str(procs_per_node), GROUP_RANK=str(node_index))
                procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=wenv,
                                              start_new_session=True))
        except OSError as exc:
            _kill_all(procs)
            return {"rc": 127, "timed_out": False, "duration_s": 0.0, "reason": f"cannot start {cmd[0]}: {exc}"}
        timed_out, failed = False, None
        while [p.poll() for p in procs].count(None):    # poll every worker: each poll reaps its exit status
            failed = next((p for p in procs if p.returncode not in (None, 0)), None)
            if failed is not None:
                _kill_all(procs)
                break
            if time.time() - started > timeout_s:
                timed_out = True
                _kill_all(procs)
                break
            time.sleep(0.5)
        rcs = [p.wait() for p in procs]
    rc = failed.returncode if failed is not None else next((r for r in rcs if r != 0), 0)
    return outcome(rc, timed_out, started, timeout_s, f"a worker ({os.path.basename(cmd[1] if len(cmd) > 1 else cmd[0])})")


def _processes_with(needles: list[str]) -> list[int]:
    """PIDs of this node's processes whose command line holds every needle (read from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if all(n in cmdline for n in needles):
            pids.append(int(entry))
    return pids


def wait_for_ranks(needles: list[str], appear_s: float, finish_s: float, poll_s: float = 1.0) -> dict[str, Any]:
    """On a node whose ranks another node's engine (srun, mpirun) starts: wait for them to appear (a process whose
    command line holds every needle) and then to end, so that what wraps this runner (util_sampler.py) samples
    the node while it trains. Bounded both ways; says what it saw."""
    started = time.time()
    seen = False
    while time.time() - started < appear_s + finish_s:
        present = bool(_processes_with(needles))
        seen = seen or present
        if seen and not present:
            return {"ranks_seen": True, "waited_s": round(time.time() - started, 1)}
        if not seen and time.time() - started > appear_s:
            break
        time.sleep(poll_s)
    return {"ranks_seen": seen, "waited_s": round(time.time() - started, 1), "gave_up": True}


def _kill_all(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)


def tail(path: str, limit: int = 400) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


# How long a stat of a mount point may take before the mount counts as not answering: a hard NFS mount whose
# server stopped blocks every access until the server is back, so the stage's cleanup must ask first.
MOUNT_ANSWER_S = 20.0


def answers(path: str, timeout_s: float = MOUNT_ANSWER_S) -> bool:
    """Whether a stat of ``path`` (or of the nearest existing parent) comes back within timeout_s. The stat runs
    in a child process, so a hung NFS mount hangs the child, never this process: on timeout the child is sent
    SIGKILL (NFS waits are killable) and left to the kernel; it ends when the mount answers again."""
    proc = subprocess.Popen(["stat", "-t", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return False
    return True


def remove_tree(path: str, guard: str) -> bool:
    """Remove a directory the validation created; refuses any path whose last part is not `guard`-named, and
    stops with the reason (leaving the directory) when the file system under it does not answer."""
    parent = os.path.dirname(os.path.abspath(path).rstrip("/")) or "/"
    if not answers(parent, MOUNT_ANSWER_S):
        raise SystemExit(f"{path} was NOT removed: {parent} did not answer a stat within {MOUNT_ANSWER_S:g} s (an NFS "
                         "server that stopped or cannot be reached?). Remove it once the mount answers again; the "
                         "validation wrote nothing else there")
    real = os.path.realpath(path)
    if os.path.basename(real.rstrip("/")) != guard and guard not in real.split(os.sep):
        raise SystemExit(f"refusing to remove {real}: not a validation directory (no '{guard}' in the path)")
    if real in ("/", os.path.realpath(os.path.expanduser("~"))):
        raise SystemExit(f"refusing to remove {real}")
    if not os.path.exists(real):
        return False
    shutil.rmtree(real)
    return True


def pack_base64(src: str, arcroot: str, reroute: dict[str, str] | None = None) -> tuple[str, int]:
    """Every file under src (but *.tmp, *.part) as one uncompressed tar in base64 text, each as
    <arcroot>/<path under src>, or <reroute[first part]>/<rest> when its first path part is rerouted (nccl's
    sysinfo/ goes to sysinfo/). What the raw_outputs action plugin reads from stdout: one shell command per stage
    and node, no module, no file transfer. Returns the text and the count of files."""
    reroute = reroute or {}
    buf = io.BytesIO()
    count = 0
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for dirpath, dirnames, filenames in os.walk(src):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith((".tmp", ".part")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, src).replace(os.sep, "/")
                first, _, rest = rel.partition("/")
                arcname = f"{reroute[first]}/{rest}" if rest and first in reroute else f"{arcroot}/{rel}"
                tar.add(path, arcname=arcname, recursive=False)
                count += 1
    return base64.b64encode(buf.getvalue()).decode("ascii"), count


def unpack_tree(archive: str, dest: str) -> int:
    """Unpack an archive of pack_base64 (decoded) into dest: regular files and directories only, every name relative and
    inside dest (a member that is absolute, climbs out with '..', or is a link or device fails the whole
    unpack before anything is written). The archive is removed afterwards. Returns the count of files."""
    root = os.path.realpath(dest)
    with tarfile.open(archive, "r") as tar:
        members = tar.getmembers()
        for m in members:
            target = os.path.realpath(os.path.join(root, m.name))
            if os.path.isabs(m.name) or not (target == root or target.startswith(root + os.sep)):
                raise SystemExit(f"refusing {archive}: member {m.name!r} lies outside {dest}")
            if not (m.isfile() or m.isdir()):
                raise SystemExit(f"refusing {archive}: member {m.name!r} is not a regular file or directory")
        files = 0
        for m in members:
            target = os.path.join(root, m.name)
            if m.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            src = tar.extractfile(m)
            assert src is not None  # a regular file, checked above
            with src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            files += 1
    os.remove(archive)
    return files


def drop_caches() -> None:
    """sync, then drop the page cache, dentries and inodes (echo 3 > /proc/sys/vm/drop_caches)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as fh:
        fh.write("3\n")


if __name__ == "__main__":
    # python3 common.py remove PATH GUARD : the stages' cleanup (a measurement leaves nothing behind)
    # python3 common.py drop-caches       : fio's exec_prerun on each client (a job file cannot hold "a; b")
    # python3 common.py pack-base64 SRC ARCROOT [PART=ROOT ...] [--remove=PATH] : a stage's raw outputs as one base64
    #                                     tar on stdout (plugins/action/raw_outputs.py unpacks it on the control node);
    #                                     with --remove, PATH (a 'validation' directory) is removed once packed, before
    #                                     anything is printed: the stage's cleanup in the same command
    import sys

    if sys.argv[1:2] == ["drop-caches"]:
        drop_caches()
    elif len(sys.argv) == 4 and sys.argv[1] == "remove":
        print(json.dumps({"removed": remove_tree(sys.argv[2], sys.argv[3]), "path": sys.argv[2]}))
    elif len(sys.argv) >= 4 and sys.argv[1] == "pack-base64":
        removals = [arg.split("=", 1)[1] for arg in sys.argv[4:] if arg.startswith("--remove=")]
        parts = dict(arg.split("=", 1) for arg in sys.argv[4:] if not arg.startswith("--remove="))
        text, _count = pack_base64(sys.argv[2], sys.argv[3], parts)
        for path in removals:
            remove_tree(path, "validation")
        sys.stdout.write(text + "\n")
    else:
        raise SystemExit("usage: common.py remove PATH GUARD | drop-caches | "
                         "pack-base64 SRC ARCROOT [PART=ROOT ...] [--remove=PATH]")
