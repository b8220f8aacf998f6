"""One command for the bad-input corpus of device and tool outputs (issue #16, item 4):

    .venv/bin/python -m tests.bad_outputs

runs the broken validation runs (tests/validation/broken.py: nccl-tests, fio, DDP results and the fabric
sanity check's ibstat / nvidia-smi topo -m, judged by the verdict) and the DGX readiness probes' bad answers
(tests/dgx/bad_outputs.py: nvidia-smi, ibstat), prints every case and one total line, and exits non-zero
when any case was accepted or crashed its judge.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests" / "validation", ROOT / "tests" / "dgx"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


def main() -> int:
    from tests.dgx import bad_outputs as dgx
    from tests.validation import broken

    total = rejected = 0
    for name, suite in (("broken validation runs", broken), ("DGX readiness outputs", dgx)):
        outcomes = suite.run_all()
        print(f"== {name}: {len(outcomes)} cases")
        for o in outcomes:
            print(suite.line(o))
        total += len(outcomes)
        rejected += sum(o.problem is None for o in outcomes)
    print(f"{total} cases, {rejected} rejected with a clear message, {total - rejected} accepted or crashed")
    return 0 if total == len(broken.CASES) + len(dgx.CASES) and rejected == total else 1


if __name__ == "__main__":
    sys.exit(main())
