"""Run every invalid inventory of tests/preflight_cases/ through preflight and check it is rejected.

Each case is a directory named after its defect, holding an inventory overlay (hosts.yml and
group_vars/all/*.yml next to it) used after its base inventory, and expect.yml naming the host and variable the
table must show. A case PASSES when `ansible-playbook -i inventories/<base> -i <case>/hosts.yml PLAYBOOK --tags
preflight` fails, its table has an ERROR row for that host and variable with a fix, and no play other than
the inventory rules ran. One line per case, then a count; the exit status is non-zero when any case
misbehaves (or when there is no case).

PLAYBOOK is playbooks/preflight.yml unless --playbook says otherwise: the stage that site.yml and every stage
playbook import first, so its rejection is theirs, and Ansible loads it in about 60% of site.yml's time.
tests/preflight/test_cases.py also runs cases through site.yml itself, where no other play may start either.

    .venv/bin/python -m tests.preflight_cases [-j JOBS] [--playbook site.yml] [NAME-SUBSTRING ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from validation.inventory_layers import inventory_args

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = Path(__file__).resolve().parent
INVENTORY_PLAY = "Preflight | inventory rules"
# Every secret resolves to a dummy unless a case empties it: only the case's own defect may show.
SECRET_ENV = ("POWERSCALE_API_PASSWORD", "SN3700V_PASSWORD", "QM8700_PASSWORD", "NGC_API_KEY", "NGC_MIRROR_PASSWORD")


@dataclass(frozen=True)
class Row:
    host: str
    variable: str
    value: str
    problem: str
    fix: str


@dataclass
class Outcome:
    name: str
    ok: bool
    reason: str
    seconds: float
    rows: list[Row] = field(default_factory=list)


def cases(filters: list[str] | None = None) -> list[Path]:
    found = sorted(p.parent for p in CASES_DIR.glob("*/expect.yml"))
    return [c for c in found if not filters or any(f in c.name for f in filters)]


def parse_table(output: str) -> list[Row]:
    """The rows of the inventory table as ansible-playbook printed them."""
    rows, inside = [], False
    for line in output.splitlines():
        text = line.strip()
        if text.startswith("preflight (inventory):"):
            inside = True
            continue
        if not inside:
            continue
        if " | " not in text:
            inside = not (text and not text.startswith("-"))
            continue
        parts = [p.strip() for p in text.split(" | ")]
        if len(parts) < 5 or parts[:2] == ["host", "variable"]:
            continue
        rows.append(Row(parts[0], parts[1], " | ".join(parts[2:-2]), parts[-2], parts[-1]))
    return rows


DEFAULT_PLAYBOOK = "playbooks/preflight.yml"


def command(case: Path, expect: dict, playbook: str = DEFAULT_PLAYBOOK) -> list[str]:
    offline = bool(expect.get("offline", True))
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"),
           *inventory_args(f"inventories/{expect.get('inventory', 'production')}"), "-i", str(case / "hosts.yml"),
           playbook, "--tags", "preflight", "-e", f"preflight_offline={str(offline).lower()}"]
    if not offline:
        # Online cases exercise the controller-side secret checks. Were preflight to pass wrongly, the target
        # phase would connect: make every connection local, so no traffic leaves this machine.
        cmd += ["-e", "ansible_connection=local"]
    return cmd


def run_case(case: Path, timeout: int = 300, playbook: str = DEFAULT_PLAYBOOK) -> Outcome:
    start = time.monotonic()
    expect = yaml.safe_load((case / "expect.yml").read_text())
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               PY_COLORS="0")
    env.update({name: "preflight-case-dummy" for name in SECRET_ENV})
    env.update({k: str(v) for k, v in (expect.get("env") or {}).items()})
    try:
        proc = subprocess.run(command(case, expect, playbook), cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Outcome(case.name, False, f"timed out after {timeout}s", time.monotonic() - start)
    output = proc.stdout + proc.stderr
    seconds = time.monotonic() - start
    rows = parse_table(output)
    plays = re.findall(r"^PLAY \[(.*?)\]", output, re.M)
    want = (str(expect["host"]), str(expect["variable"]))
    match = [r for r in rows if (r.host, r.variable) == want and r.problem.startswith("ERROR:") and r.fix]
    if proc.returncode == 0:
        reason = "preflight passed an invalid inventory"
    elif not plays:
        errors = [line for line in output.splitlines() if "ERROR" in line] or output.strip().splitlines()[-1:]
        reason = "ansible-playbook did not start a play: " + (errors[0][:200] if errors else "no output")
    elif plays != [INVENTORY_PLAY]:
        reason = f"plays that ran: {plays or 'none'} (only '{INVENTORY_PLAY}' may)"
    elif "preflight found" not in output:
        reason = "ansible-playbook failed, but not at preflight's check: " + output.strip().splitlines()[-1][:160]
    elif not match:
        reason = f"no ERROR row with a fix for {want[0]} {want[1]}; rows: {[(r.host, r.variable) for r in rows]}"
    else:
        return Outcome(case.name, True, f"{match[0].host} {match[0].variable}: {match[0].problem[7:]}", seconds, rows)
    return Outcome(case.name, False, reason, seconds, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.preflight_cases", description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=2, help="cases run in parallel (default 2)")
    parser.add_argument("--playbook", default=DEFAULT_PLAYBOOK,
                        help=f"the playbook each case runs with --tags preflight (default {DEFAULT_PLAYBOOK})")
    parser.add_argument("names", nargs="*", help="run only cases whose name contains one of these")
    args = parser.parse_args(argv)
    selected = cases(args.names)
    if not selected:
        print("no preflight case found", file=sys.stderr)
        return 2
    start = time.monotonic()
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for outcome in pool.map(lambda case: run_case(case, playbook=args.playbook), selected):
            failed += not outcome.ok
            status = "PASS" if outcome.ok else "FAIL"
            print(f"{status}  {outcome.name:<42} {outcome.seconds:5.1f}s  {outcome.reason}", flush=True)
    print(f"{len(selected)} cases: {len(selected) - failed} passed, {failed} failed "
          f"({time.monotonic() - start:.0f}s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
