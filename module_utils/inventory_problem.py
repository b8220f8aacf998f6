"""The one inventory-defect row (host | variable | value | problem | fix) and the one table that shows them.

Every input check builds these: preflight's rules (module_utils/preflight_rules.py), the switch plan
(module_utils/cumulus_fabric.py) and the DGX plans (module_utils/dgx_nfs.py, dgx_ngc.py), so that a defect
reads the same wherever it is caught. ``line()`` is its one-line form (a module's failure message),
``render_table`` the table (preflight's output, the DGX plan modules' failure message). Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

ERROR = "error"
WARNING = "warning"
# The value of a variable the inventory does not set (shown as "(not set)").
MISSING = object()


def show(value: Any) -> str:
    """The value column: compact, one line, at most 60 characters."""
    if value is MISSING:
        return "(not set)"
    text = value if isinstance(value, str) else json.dumps(value, default=str, separators=(",", ":"))
    text = " ".join(str(text).split())
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Problem:
    """One inventory defect: on which host, which variable, its value, what is wrong and how to fix it."""

    host: str
    variable: str
    value: Any
    problem: str
    fix: str
    severity: str = ERROR

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "variable": self.variable, "value": show(self.value), "problem": self.problem,
                "fix": self.fix, "severity": self.severity}

    def line(self) -> str:
        return f"{self.host}: {self.variable}={self.value!r}: {self.problem}. Fix: {self.fix}"


def cell(value: Any) -> str:
    """A table cell: one line, and no column separator inside it (the table stays machine-readable)."""
    return " ".join(str("" if value is None else value).split()).replace(" | ", " / ")


def render_table(rows: list[Mapping[str, Any]], title: str = "preflight") -> str:
    """The one table: host | variable | value | problem | fix. Problems carry their severity as a prefix."""
    errors = sum(1 for r in rows if r.get("severity") == ERROR)
    warnings = len(rows) - errors
    head = f"{title}: {errors} error(s), {warnings} warning(s)"
    if not rows:
        return head + " - every rule passed"
    cols = ("host", "variable", "value", "problem", "fix")
    cells = [[cell(r.get("host")), cell(r.get("variable")), cell(r.get("value")),
              f"{'ERROR' if r.get('severity') == ERROR else 'WARNING'}: {cell(r.get('problem'))}", cell(r.get("fix"))]
             for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols[:-1])]

    def line(values: list[str]) -> str:
        return " | ".join([v.ljust(w) for v, w in zip(values[:-1], widths, strict=True)] + [values[-1]])

    sep = "-+-".join("-" * w for w in widths) + "-+-" + "-" * 20
    return "\n".join([head, line(list(cols)), sep, *(line(c) for c in cells)])


def is_int(value: Any) -> TypeGuard[int]:
    """An inventory integer: YAML's true/false are bools, which Python counts as ints, and no rule takes them."""
    return isinstance(value, int) and not isinstance(value, bool)


# A DNS name (RFC 1123 labels, at most 253 characters); schema types and the SmartConnect zone rule use it.
HOSTNAME_RE = r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"


def is_hostname(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(HOSTNAME_RE, value) is not None
