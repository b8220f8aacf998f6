"""One inventory defect in the shape of the preflight table (variable, value, problem, fix).

Shared by the controller-side plan modules (dgx_nfs_plan, dgx_ngc_plan), which report the defects they find
before anything on a DGX is changed. Preflight's own rows (module_utils/preflight_rules.Problem) add the host
and a severity. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One inventory defect: which variable, its value, what is wrong and how to fix it."""

    variable: str
    value: Any
    problem: str
    fix: str

    def as_dict(self) -> dict[str, Any]:
        return {"variable": self.variable, "value": self.value, "problem": self.problem, "fix": self.fix}
