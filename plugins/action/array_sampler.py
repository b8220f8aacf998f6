"""Action plugin array_sampler: start or stop the OneFS statistics sampler (validation/array_telemetry.py) on the
control node around a measurement.

Documentation: library/array_sampler.py. The sampler is a detached child of this plugin's process; the API
password reaches it on a pipe. It is never a module argument that Ansible writes down (an async job's result file
and its async_status answer hold the module's arguments, stdin included: the lab flow's ansible-runner events
did), never in an environment (Ansible puts a task's environment on the command line of the shell it starts) and
never on a command line.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

_ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    """Whether pid still runs (a zombie waiting for its reaper counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def start(python: str, project_dir: str, out: Path, stop_file: Path, options: dict[str, Any], password: str) -> int:
    """Start the sampler detached (its own session, so the worker's end does not end it); the password is the
    first line of its stdin. Returns its pid."""
    out.parent.mkdir(parents=True, exist_ok=True)
    stop_file.unlink(missing_ok=True)
    argv = [python, "-m", "validation.array_telemetry", "sample", f"--out={out}", f"--stop-file={stop_file}",
            *(f"--{k.replace('_', '-')}={v}" for k, v in options.items()), "--password-stdin"]
    log = out.with_suffix(".log").open("ab")
    try:
        proc = subprocess.Popen(argv, cwd=project_dir, stdin=subprocess.PIPE, stdout=log, stderr=log,
                                start_new_session=True, close_fds=True)
    finally:
        log.close()
    if proc.stdin is None:  # stdin=PIPE always gives one
        raise AssertionError("the sampler's stdin is not a pipe")
    proc.stdin.write(password.encode() + b"\n")
    proc.stdin.close()
    return proc.pid


def stop(pid: int, stop_file: Path, wait_s: float) -> tuple[bool, float]:
    """Ask the sampler to stop (it takes one more reading, removes the stop file and ends) and wait for it.
    Returns (ended, seconds waited)."""
    stop_file.parent.mkdir(parents=True, exist_ok=True)
    stop_file.touch()
    began = time.monotonic()
    while time.monotonic() - began < wait_s:
        if not _alive(pid):
            stop_file.unlink(missing_ok=True)  # a sampler that died early never removed it
            return True, time.monotonic() - began
        time.sleep(0.2)
    return False, time.monotonic() - began


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("state", "pid", "out", "stop_file", "python", "project_dir", "interval", "max_s",
                             "api_host", "api_port", "api_user", "api_password", "ca_path", "validate_certs",
                             "wait_s"))

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        state = args.get("state", "started")
        stop_file = Path(str(args.get("stop_file") or ""))
        if not args.get("stop_file"):
            return {**result, "failed": True, "msg": "array_sampler: stop_file is required"}
        if self._play_context.check_mode:
            return {**result, "changed": False, "skipped": True, "msg": "check mode: no measurement, no sampler"}
        if state == "stopped":
            try:
                pid = int(args.get("pid"))
            except (TypeError, ValueError):
                return {**result, "failed": True, "msg": f"array_sampler: pid must be the started sampler's, got {args.get('pid')!r}"}
            ended, waited = stop(pid, stop_file, float(args.get("wait_s", 60)))
            if not ended:
                return {**result, "failed": True, "pid": pid,
                        "msg": f"the array sampler (pid {pid}) did not end {waited:.0f} s after its stop file "
                        f"{stop_file} was written. Fix: see its log beside its output; the array's side of this "
                        "measurement is judged from what it wrote."}
            return {**result, "changed": False, "pid": pid, "waited_s": round(waited, 1)}
        if state != "started":
            return {**result, "failed": True, "msg": f"array_sampler: state must be started or stopped, got {state!r}"}
        missing = [k for k in ("out", "api_host", "api_user") if not args.get(k)]
        if missing:
            return {**result, "failed": True, "msg": f"array_sampler: {', '.join(missing)} required"}
        options = {k: args[k] for k in ("interval", "max_s", "api_host", "api_port", "api_user", "ca_path",
                                        "validate_certs") if args.get(k) is not None}
        pid = start(str(args.get("python") or (task_vars or {}).get("ansible_playbook_python") or "python3"),
                    str(args.get("project_dir") or _ROOT), Path(str(args["out"])), stop_file, options,
                    str(args.get("api_password") or ""))
        return {**result, "changed": False, "pid": pid}
