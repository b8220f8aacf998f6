"""The fault suites' count: one line at the end of the pytest run, "faults survived N/M", over the cases of
tests/faults (no VMs, part of the default run) and tests/faults_lab (-m lab_faults, the running lab).

A case survived when it passed: its fault ended in its bound with a message naming the host, what failed and what
to do, nothing was left behind, and the re-run converged. A case that failed, errored or was skipped did not.
pytest's own exit status is non-zero on any miss.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

SUITES = ("tests/faults/", "tests/faults_lab/")
PLUGIN_NAME = "faults-summary"


@dataclass(eq=False)  # a pytest plugin object: hashed by identity
class FaultSummary:
    outcomes: dict[str, str] = field(default_factory=dict)  # nodeid -> passed | missed

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.nodeid.startswith(SUITES):
            return
        if report.failed or report.skipped:
            self.outcomes[report.nodeid] = "missed"
        elif report.when == "call" and self.outcomes.get(report.nodeid) != "missed":
            self.outcomes[report.nodeid] = "passed"

    def line(self) -> str:
        parts = []
        for suite in SUITES:
            mine = [o for n, o in self.outcomes.items() if n.startswith(suite)]
            if mine:
                parts.append(f"{suite.rstrip('/')}: {mine.count('passed')}/{len(mine)}")
        survived = sum(o == "passed" for o in self.outcomes.values())
        return f"faults survived {survived}/{len(self.outcomes)} ({', '.join(parts)})"

    def pytest_terminal_summary(self, terminalreporter) -> None:  # type: ignore[no-untyped-def]
        if self.outcomes:
            terminalreporter.write_sep("=", self.line())


def register(config: pytest.Config) -> None:
    """Called by both suites' conftest: the first one registers the one summary."""
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(FaultSummary(), PLUGIN_NAME)
