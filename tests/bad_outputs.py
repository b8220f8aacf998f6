"""One command for the bad-input corpus of device and tool outputs (issue #16, item 4):

    .venv/bin/python -m tests.bad_outputs

runs the broken validation runs (tests/validation/broken.py: nccl-tests, fio, DDP results and the fabric
sanity check's ibstat / nvidia-smi topo -m, judged by the verdict), the DGX readiness probes' bad answers
(tests/dgx/bad_outputs.py: nvidia-smi, ibstat), the QM8700's (tests/fabric_qm8700/bad_outputs.py: MLNX-OS JSON API
and CLI), the SN3700V's (tests/fabric_sn3700v/bad_outputs.py: NVUE REST API, clagctl / iproute2 JSON,
lsb-release) and the OneFS Platform API's (tests/powerscale/bad_outputs.py), prints every case and one total line,
and exits non-zero when any case was accepted or crashed its judge. Each suite also runs alone
(`python -m tests.<area>.bad_outputs`) and under pytest (its test_bad_outputs.py, in the default run).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests" / "validation", ROOT / "tests" / "dgx"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


def main() -> int:
    from tests.device_text import outcome_line
    from tests.dgx import bad_outputs as dgx
    from tests.fabric_qm8700 import bad_outputs as qm8700
    from tests.fabric_sn3700v import bad_outputs as sn3700v
    from tests.powerscale import bad_outputs as powerscale
    from tests.validation import broken

    suites = (("broken validation runs", broken), ("DGX readiness outputs", dgx),
              ("QM8700 MLNX-OS answers", qm8700), ("SN3700V NVUE and Cumulus answers", sn3700v),
              ("PowerScale OneFS API answers", powerscale))
    total = rejected = 0
    for name, suite in suites:
        outcomes = suite.run_all()
        print(f"== {name}: {len(outcomes)} cases")
        for o in outcomes:
            print(getattr(suite, "line", outcome_line)(o))
        total += len(outcomes)
        rejected += sum(o.problem is None for o in outcomes)
    print(f"{total} cases, {rejected} rejected with a clear message, {total - rejected} accepted or crashed")
    return 0 if total == sum(len(suite.CASES) for _, suite in suites) and rejected == total else 1


if __name__ == "__main__":
    sys.exit(main())
