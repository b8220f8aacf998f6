"""Readable progress from Ansible's events: the stage, case k of N, elapsed and remaining time, and the wall
time of each stage at the end. Pure: events in (dicts as ansible-runner emits them, ``job_events/*.json``),
a ``Progress`` out; ``python -m validation run|deploy`` prints it, and the ``readable`` stdout callback
(plugins/callback/) uses the same stage accounting for plain ``ansible-playbook`` runs.

The cases N are what the validation plan will measure (``planned_cases``: the same enumeration the verdict
judges, from the run's context.json). A case is counted when a runner on a node reports back: the finished
task's ``res.cmd`` is the runner's argv (``nccl_runner.py --case all``, ``fio_runner.py --case aggregate
--sample 2``, ``ddp_runner.py --case=n2``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from .site import Site
from .verdict import expected_nccl_cases

# roles/validate: one entry point per stage, each a task file tasks/<stage>.yml with its parts in tasks/<stage>_*.yml;
# its shared files (node.yml, bring_raw.yml, telemetry_*.yml, stage_guard.yml) belong to the stage that includes them.
VALIDATE_ROLE = "validate"
VALIDATE_STAGES = ("prepare", "paths", "nccl", "fio", "ddp", "report")
# The labels of the measurement stages (role_label) and the runner scripts their tasks start on the nodes, by stage.
MEASUREMENT_ROLES = {"validate_nccl": "nccl", "validate_fio": "fio", "validate_ddp": "ddp"}
RUNNER_SCRIPTS = {"nccl_runner.py": "nccl", "fio_runner.py": "fio", "ddp_runner.py": "ddp"}
# Events that end one host's part of a task.
_RESULT_EVENTS = {"runner_on_ok", "runner_on_failed", "runner_on_unreachable"}


@dataclass(frozen=True)
class Progress:
    planned: tuple[str, ...] = ()
    done: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    unplanned: tuple[str, ...] = ()
    first: datetime | None = None
    last: datetime | None = None
    stage: str | None = None
    task: str | None = None
    stage_seconds: tuple[tuple[str, float], ...] = ()
    measure_start: datetime | None = None
    last_case_end: datetime | None = None
    problems: tuple[str, ...] = ()

    @property
    def elapsed_s(self) -> float:
        return (self.last - self.first).total_seconds() if self.first and self.last else 0.0

    @property
    def remaining_s(self) -> float | None:
        """Estimate: the measurement time per finished case so far, times the cases still to run."""
        done = len(self.done)
        if not done or self.measure_start is None or self.last_case_end is None:
            return None
        per_case = (self.last_case_end - self.measure_start).total_seconds() / done
        return per_case * max(len(self.planned) - done, 0)


def case_key(stage: str, case: str, sample: int | None = None) -> str:
    return f"{stage} {case}" + (f" sample {sample}" if sample is not None else "")


def planned_cases(site_or_ctx: Site | Mapping[str, Any]) -> tuple[str, ...]:
    """Every case a validation run of this site (or context) measures, in the order the roles run them."""
    site = Site.of(site_or_ctx)
    nodes = list(site.nodes)
    repeats = site.repeats or 1
    out: list[str] = []
    if site.enabled("nccl"):
        out += [case_key("nccl", case) for case, _nodes, _kind in expected_nccl_cases(nodes)]
    if site.enabled("fio"):
        out.append(case_key("fio", "layout"))
        for sample in range(1, repeats + 1):
            out.append(case_key("fio", "aggregate", sample))
            out += [case_key("fio", f"node-{n}", sample) for n in nodes]
    if site.enabled("ddp"):
        out += [case_key("ddp", f"n{count}") for count in sorted({1, len(nodes)} if nodes else {1})]
    return tuple(out)


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def case_of(event: dict[str, Any]) -> str | None:
    """The case a result event reports, from the runner argv in ``res.cmd``; None for any other event."""
    if event.get("event") not in _RESULT_EVENTS:
        return None
    res = (event.get("event_data") or {}).get("res")
    argv = res.get("cmd") if isinstance(res, dict) else None
    if not isinstance(argv, list):
        return None
    argv = [str(a) for a in argv]
    stage = next((RUNNER_SCRIPTS[a.rsplit("/", 1)[-1]] for a in argv if a.rsplit("/", 1)[-1] in RUNNER_SCRIPTS), None)
    case = _option(argv, "--case")
    if stage is None or not case:
        return None
    sample = _option(argv, "--sample")
    return case_key(stage, case, int(sample) if sample and sample.isdigit() else None)


def role_label(role: str | None, task_path: str | None = None) -> str | None:
    """The part of a play a task belongs to: ``validate_<stage>`` for a task of roles/validate's stage files (by the
    file it comes from, ``.../roles/validate/tasks/nccl_multi.yml:12``), any other role by its name; None for a task
    of roles/validate outside a stage file (a shared file: the stage that included it goes on)."""
    if role != VALIDATE_ROLE:
        return role
    stem = Path((task_path or "").rsplit(":", 1)[0]).stem
    stage = stem.split("_", 1)[0]
    return f"{role}_{stage}" if stage in VALIDATE_STAGES else None


def stage_of(play: str | None, role: str | None = None) -> str | None:
    """A stage label: the play name before " | " (the playbooks' naming), then the role when there is one."""
    if not play:
        return None
    head = play.split(" | ", 1)[0].strip()
    return f"{head} / {role}" if role else head


def _time(event: dict[str, Any]) -> datetime | None:
    created = event.get("created")
    try:
        return datetime.fromisoformat(created) if isinstance(created, str) else None
    except ValueError:
        return None


def _add_seconds(pairs: tuple[tuple[str, float], ...], stage: str, seconds: float) -> tuple[tuple[str, float], ...]:
    if any(name == stage for name, _ in pairs):
        return tuple((name, s + seconds if name == stage else s) for name, s in pairs)
    return (*pairs, (stage, seconds))


def _problem(event: dict[str, Any]) -> str | None:
    data = event.get("event_data") or {}
    kind = event.get("event")
    if kind == "runner_on_failed" and not data.get("ignore_errors"):
        verb = "failed"
    elif kind == "runner_on_unreachable":
        verb = "unreachable"
    else:
        return None
    raw_res = data.get("res")
    res = raw_res if isinstance(raw_res, dict) else {}
    msg = str(res.get("msg") or res.get("stderr") or res.get("censored") or "").strip().splitlines()
    return f"{data.get('host', '?')}: {data.get('task', '?')}: {verb}" + (f": {msg[0][:200]}" if msg else "")


def advance(p: Progress, event: dict[str, Any]) -> Progress:
    """The progress after one more event (events in the order Ansible emitted them)."""
    now = _time(event)
    data = event.get("event_data") or {}
    changes: dict[str, Any] = {}
    if now is not None:
        if p.first is None or now < p.first:
            changes["first"] = now
        if p.last is not None and p.stage is not None and now > p.last:
            changes["stage_seconds"] = _add_seconds(p.stage_seconds, p.stage, (now - p.last).total_seconds())
        changes["last"] = max(now, p.last) if p.last else now  # hosts report in parallel: not always in order
    kind = event.get("event")
    if kind == "playbook_on_stats":
        changes["stage"] = None
    elif data.get("play") and kind != "playbook_on_start":
        role = data.get("role") or None
        label = role_label(role, data.get("task_path"))
        if kind == "playbook_on_play_start":
            changes["stage"] = stage_of(data["play"])
        elif role is None or label is not None:
            changes["stage"] = stage_of(data["play"], label)
        if label in MEASUREMENT_ROLES and p.measure_start is None and now is not None:
            changes["measure_start"] = now
    if kind == "playbook_on_task_start":
        changes["task"] = data.get("task") or data.get("name")
    problem = _problem(event)
    if problem:
        changes["problems"] = (*p.problems, problem)
    case = case_of(event)
    if case is not None:
        if case not in p.planned:
            if case not in p.unplanned:
                changes["unplanned"] = (*p.unplanned, case)
        elif case not in p.done:
            changes["done"] = (*p.done, case)
            changes["last_case_end"] = now or p.last_case_end
        if kind != "runner_on_ok" and case not in p.failed:
            changes["failed"] = (*p.failed, case)
    return replace(p, **changes)


def progress_of(events: list[dict[str, Any]], planned: tuple[str, ...] = ()) -> Progress:
    p = Progress(planned=planned)
    for event in events:
        p = advance(p, event)
    return p


def duration(seconds: float | None) -> str:
    """12 s, 3 min 05 s, 1 h 02 min."""
    if seconds is None:
        return "unknown"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def status_line(p: Progress) -> str:
    """One line: stage, case k of N, elapsed, remaining."""
    parts = [p.stage or "-"]
    if p.planned:
        parts.append(f"case {len(p.done)} of {len(p.planned)}")
    parts.append(f"elapsed {duration(p.elapsed_s)}")
    if p.planned:
        parts.append(f"~{duration(p.remaining_s)} left" if p.remaining_s is not None else "remaining unknown")
    return " | ".join(parts)


def stage_report(p: Progress) -> list[str]:
    """The wall time of each stage, in the order they ran, then the total; the cases that did not finish."""
    if not p.stage_seconds:
        return []
    width = max(len(name) for name, _ in p.stage_seconds)
    lines = [f"{name:<{width}}  {duration(s):>14}" for name, s in p.stage_seconds]
    lines.append(f"{'total':<{width}}  {duration(p.elapsed_s):>14}")
    if p.planned:
        missing = [c for c in p.planned if c not in p.done]
        lines.append(f"cases: {len(p.done)} of {len(p.planned)} reported"
                     + (f", {len(p.failed)} failed ({', '.join(p.failed)})" if p.failed else "")
                     + (f"; not run: {', '.join(missing)}" if missing else ""))
    return lines

