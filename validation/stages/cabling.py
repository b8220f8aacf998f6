"""The cabling stage's rerun in the validation stage, judged into the handover report: one sanity check per cable
(a JUnit case each), from ``<run>/raw/cabling/cabling.json``, which roles/cabling/tasks/judge.yml writes (the same
check as the cabling stage before any change: validation/cabling/check.py).

A cable is PASS when OK or a deviation the site accepts (said in its reasons), FAIL otherwise, naming where each
end really goes (INFO where the site does not enforce the check, cabling_enforce: false, as the lab until its
images carry lldpd). A raw/cabling directory without a readable report is one FAIL: the rerun did not finish.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..checks import FAIL, INFO, PASS, Check

STAGE = "cabling"


def judge_cabling(raw: Path) -> tuple[list[Check], dict[str, Any]]:
    """Checks and the report's series (the table and the port picture read them) of a run's cabling rerun."""
    if not raw.is_dir():
        return [], {}
    path = raw / "cabling.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        cables, summary = list(doc["cables"]), dict(doc["summary"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [Check(name="cabling", stage=STAGE, kind="sanity", status=FAIL,
                      reasons=[f"{path} cannot be read ({exc}): the cabling rerun did not finish"])], {}
    checks = []
    enforced = summary.get("enforced", True) is not False
    for cable in cables:
        a, b = cable["a"], cable["b"]
        ok = cable["status"] == "OK" or bool(cable.get("accepted"))
        reasons = [f"{cable['status']}: {cable['reason']}"]
        if cable.get("accepted"):
            reasons.append(f"accepted by the site: {cable['accepted']}")
        if cable.get("evidence"):
            reasons.append("evidence: " + ", ".join(cable["evidence"]))
        if not ok and not enforced:
            reasons.insert(0, "not enforced by the site (cabling_enforce: false)")
        checks.append(Check(name="cable", stage=STAGE, kind="sanity", status=PASS if ok else FAIL if enforced else INFO,
                            instance=f"{a['node']} {a['port']} - {b['node']} {b['port']}", reasons=reasons))
    errors = list(summary.get("errors") or [])
    if errors:
        checks.append(Check(name="cabling_read", stage=STAGE, kind="sanity", status=FAIL if enforced else INFO,
                            reasons=errors if enforced else ["not enforced by the site (cabling_enforce: false)",
                                                             *errors]))
    return checks, {"summary": summary, "cables": cables}
