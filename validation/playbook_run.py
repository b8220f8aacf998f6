"""Run a playbook through ansible-runner's Python API, print readable progress (validation/progress.py) and
keep ansible-runner's artifacts with the run, with no secret in them.

ansible-runner writes the whole environment into ``artifacts/<ident>/command`` and, unless told not to, the
extra vars and passwords into ``env/``. So it runs in a private temporary directory (mode 0700, removed
afterwards, ``suppress_env_files``), and only a sanitized copy is kept: ``command`` without the environment
and with every ``-e`` value hidden, ``job_events/``, ``stdout``, ``stderr``, ``rc`` and ``status`` with the
value of every secret-looking environment variable and extra var replaced by ``********``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from getpass import getpass
from pathlib import Path
from typing import Any, TextIO

from . import inventory_layers, progress

ROOT = Path(__file__).resolve().parent.parent
HIDDEN = "********"
# Names whose values are secrets: the inventories' secret variables and environment variables (secrets.yml:
# *_password, *_api_key, vault_*; POWERSCALE_API_PASSWORD, NGC_API_KEY, ...) and the usual suspects.
SECRET_NAME = re.compile(r"(pass(word|wd)?|secret|token|key)$|^vault_", re.IGNORECASE)
EXTRA_VARS_FLAGS = ("-e", "--extra-vars")
VAULT_PROMPT_FLAGS = ("-J", "--ask-vault-pass", "--ask-vault-password")
# Files of an ansible-runner artifact directory that are kept (scrubbed); everything else is left behind.
KEPT_FILES = ("stdout", "stderr", "rc", "status")


@dataclass(frozen=True)
class Launch:
    playbook: Path
    inventory: str
    args: tuple[str, ...]  # the operator's ansible-playbook arguments
    artifacts: Path  # where the sanitized artifacts are kept
    show_ansible: bool = False  # also print Ansible's own output


def extra_var_args(args: tuple[str, ...] | list[str]) -> list[str]:
    """The value of every -e/--extra-vars argument of an ansible-playbook command line, in order."""
    out: list[str] = []
    for i, a in enumerate(args):
        if a in EXTRA_VARS_FLAGS and i + 1 < len(args):
            out.append(args[i + 1])
        elif a.startswith("--extra-vars="):
            out.append(a.split("=", 1)[1])
    return out


def _extra_var_pairs(args: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    """key=value pairs of every -e/--extra-vars argument (JSON objects too; @file is not opened)."""
    pairs: list[tuple[str, str]] = []
    for value in extra_var_args(args):
        if value.startswith("@"):
            continue
        try:
            doc = json.loads(value)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            pairs += [(str(k), str(v)) for k, v in doc.items()]
        else:
            pairs += [tuple(item.split("=", 1)) for item in value.split() if "=" in item]  # type: ignore[misc]
    return pairs


def secret_values(environ: dict[str, str], args: tuple[str, ...] | list[str]) -> list[str]:
    """The values that must not reach a kept artifact: secret-named environment variables and extra vars."""
    found = {v for k, v in environ.items() if SECRET_NAME.search(k)}
    found |= {v for k, v in _extra_var_pairs(args) if SECRET_NAME.search(k)}
    return sorted((v for v in found if len(v) >= 4), key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, HIDDEN)
    return text


def hide_extra_vars(argv: list[str]) -> list[str]:
    """The command line with the value of every -e/--extra-vars replaced (they may hold secrets)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(HIDDEN)
            hide_next = False
        elif arg.startswith("--extra-vars="):
            out.append("--extra-vars=" + HIDDEN)
        else:
            out.append(arg)
            hide_next = arg in EXTRA_VARS_FLAGS
    return out


def export_artifacts(src: Path, dest: Path, secrets: list[str]) -> None:
    """Copy an ansible-runner artifact directory to dest: the kept files scrubbed, `command` without env."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "job_events").mkdir(exist_ok=True)
    for event in sorted((src / "job_events").glob("*.json")):
        (dest / "job_events" / event.name).write_text(scrub(event.read_text(encoding="utf-8"), secrets),
                                                      encoding="utf-8")
    for name in KEPT_FILES:
        if (src / name).is_file():
            (dest / name).write_text(scrub((src / name).read_text(encoding="utf-8", errors="replace"), secrets),
                                     encoding="utf-8")
    if (src / "command").is_file():
        doc = json.loads((src / "command").read_text(encoding="utf-8"))
        kept = {"command": hide_extra_vars([str(a) for a in doc.get("command") or []]), "cwd": doc.get("cwd"),
                "env": "not kept: the environment can hold secrets"}
        (dest / "command").write_text(scrub(json.dumps(kept, indent=2), secrets) + "\n", encoding="utf-8")


def vault_prompt_answers(args: tuple[str, ...]) -> dict[str, str]:
    """--ask-vault-pass: ask here, before the run; ansible-runner answers Ansible's prompt with it."""
    if not any(a in VAULT_PROMPT_FLAGS for a in args):
        return {}
    return {r"Vault password.*:\s*?$": getpass("Vault password: ")}


class _Printer:
    """Folds each event into the progress and prints what changed: stage, finished cases, problems."""

    def __init__(self, planned: tuple[str, ...], replan: Callable[[], tuple[str, ...] | None], out: TextIO,
                 show_ansible: bool) -> None:
        self.progress = progress.Progress(planned=planned)
        self.replan = replan
        self.replanned = False
        self.out = out
        self.show_ansible = show_ansible

    def __call__(self, event: dict[str, Any]) -> bool:
        before = self.progress
        if not self.replanned:
            plan = self.replan()
            if plan is not None:
                self.progress = replace(self.progress, planned=plan)
                self.replanned = True
        now = progress.advance(self.progress, event)
        self.progress = now
        if self.show_ansible and event.get("stdout"):
            print(event["stdout"], file=self.out)
        if now.stage and now.stage != before.stage and not self.show_ansible:
            print(f"== {progress.status_line(now)}", file=self.out)
        for case in now.done[len(before.done):]:
            state = "FAILED" if case in now.failed else "done"
            print(f"   {case}: {state} | {progress.status_line(now)}", file=self.out)
        for problem in now.problems[len(before.problems):]:
            print(f"   ! {problem}", file=self.out)
        self.out.flush()
        return True


def run(launch: Launch, planned: tuple[str, ...] = (),
        replan: Callable[[], tuple[str, ...] | None] = lambda: None, out: TextIO = sys.stdout) -> int:
    """Run the playbook; the exit status of ansible-playbook, or 1 when it did not run to an end."""
    import ansible_runner  # heavy; only the commands that run Ansible need it

    args = launch.args
    passwords = vault_prompt_answers(args)
    secrets = secret_values(dict(os.environ), args) + list(passwords.values())
    venv_bin = str(Path(sys.executable).parent)
    envvars = {
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}",
        # ansible-runner would turn host key checking off; the project's rule (ansible.cfg) is on.
        "ANSIBLE_HOST_KEY_CHECKING": os.environ.get("ANSIBLE_HOST_KEY_CHECKING", "True"),
        # ansible-runner replaces the stdout callback and its plugin path: the project's display underneath.
        "ANSIBLE_STDOUT_CALLBACK": "readable",
        "ANSIBLE_CALLBACK_PLUGINS": str(ROOT / "plugins" / "callback"),
        "ANSIBLE_NOCOLOR": "1",  # the kept stdout is read as text
    }
    printer = _Printer(planned, replan, out, launch.show_ansible)
    layers = inventory_layers.sources(launch.inventory)  # inventories/common, then the site
    shown = shlex.join(inventory_layers.inventory_args(launch.inventory))
    print(f"+ ansible-playbook {shown} {launch.playbook} {' '.join(hide_extra_vars(list(args)))}",
          file=out, flush=True)
    with tempfile.TemporaryDirectory(prefix="validation-runner-") as private:
        result = None
        try:
            result = ansible_runner.run(
                private_data_dir=private, project_dir=str(ROOT), playbook=str(launch.playbook),
                inventory=layers, cmdline=shlex.join(args), envvars=envvars,
                passwords=passwords or None, suppress_env_files=True, fact_cache_type="none", ident="playbook",
                quiet=True, event_handler=printer,
            )
        finally:
            src = Path(private) / "artifacts" / "playbook"
            if src.is_dir():
                export_artifacts(src, launch.artifacts, secrets)
    for line in progress.stage_report(printer.progress):
        print(line, file=out)
    print(f"ansible-runner artifacts: {launch.artifacts}", file=out)
    if result is None or result.rc is None:
        print(f"ansible-playbook did not run to an end (status {getattr(result, 'status', 'unknown')})", file=out)
        return 1
    if result.status != "successful":
        print(f"ansible-playbook: {result.status}, exit status {result.rc}", file=out)
        if not printer.progress.problems:  # no failed task to show: the error is in Ansible's own output
            stdout = launch.artifacts / "stdout"
            tail = stdout.read_text(encoding="utf-8").strip().splitlines()[-15:] if stdout.is_file() else []
            print("\n".join(tail), file=out)
    return int(result.rc) if result.rc else (0 if result.status == "successful" else 1)
