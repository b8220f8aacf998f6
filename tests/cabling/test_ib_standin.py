"""The lab's stand-in ibnetdiscover/iblinkinfo (lab/ib_standin.py): the real formats for the lab's compute design,
labelled, read back by the parsers; its faults (swap, missing, 2x width) judged as a real fabric's would be."""

from __future__ import annotations

import pytest

from lab import ib_standin
from validation.cabling import check, dumps, plan


@pytest.fixture(scope="module")
def compute():
    return [c for c in plan.design(plan.load_view(["inventories/common", "inventories/lab"])) if c.width]


def judge(compute, faults):
    links = []
    for tool in (ib_standin.ibnetdiscover, ib_standin.iblinkinfo):
        text = tool(compute, faults)
        assert text.startswith(ib_standin.LABEL)
        links += dumps.parse(text, None, tool.__name__)[1]
    return {(str(v.a), str(v.b)): (v.status, v.reason) for v in check.check(compute, links).entries}


def test_as_designed_all_ok(compute):
    assert len(compute) == 4
    assert {s for s, _ in judge(compute, ib_standin.Faults()).values()} == {"OK"}


def test_faults(compute):
    got = judge(compute, ib_standin.Faults(swap=[(0, 1)], missing=[2], width2x=[3]))
    assert got[("dgx01 mlx5_0/1", "qm8700-01 1")] == (
        "MISWIRED", "dgx01 mlx5_0/1 goes to qm8700-01 2; qm8700-01 1 goes to dgx02 mlx5_0/1")
    assert got[("dgx01 mlx5_1/1", "qm8700-02 1")][0] == "MISSING"
    assert got[("dgx02 mlx5_1/1", "qm8700-02 2")] == ("DEGRADED", "width 2x, designed 4x; iblinkinfo: could be 4x")
