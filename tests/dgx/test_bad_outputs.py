"""Issue #16 (bad input): every bad nvidia-smi / ibstat answer of tests/dgx/bad_outputs.py fails readiness
with a reason, without crashing it, and blames only the checks of the probe that answered badly."""

from __future__ import annotations

import pytest
from bad_outputs import CASES, healthy_passes, judge


def test_the_healthy_node_passes():
    assert healthy_passes()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.tool}: {c.what}" for c in CASES])
def test_bad_output_is_rejected_with_a_reason(case):
    outcome = judge(case)
    assert outcome.problem is None, outcome.problem
    assert outcome.reason
