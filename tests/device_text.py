"""Edits of real device outputs for the bad-input corpora (tests/validation/broken.py, tests/dgx/bad_outputs.py,
tests/fabric_qm8700/bad_outputs.py, tests/fabric_sn3700v/bad_outputs.py, tests/powerscale/bad_outputs.py), and what
their suites share: the project's modules on the path, and how one case is judged and printed."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def ibstat_set(text: str, ca: str, field: str, value: str) -> str:
    """ibstat's output with one field of CA ``ca``'s port block (``State``, ``Rate``...) set to ``value``."""
    head, sep, rest = text.partition(f"CA '{ca}'\n")
    block, nxt, tail = rest.partition("CA '")
    block = re.sub(rf"(?m)^([ \t]+{re.escape(field)}:[ \t]*)[^\n]*", lambda m: m.group(1) + value, block)
    return head + sep + block + nxt + tail


# ------------------------------------------------------------------ shared by the device suites of tests/bad_outputs.py


def use_project_modules() -> None:
    """Import the project's modules as Ansible ships them (what tests/conftest.py does for pytest), so that a
    suite also runs alone with `python -m`: module_utils as ansible.module_utils.<name>, library/ importable."""
    import ansible.module_utils

    root = Path(__file__).resolve().parents[1]
    if str(root / "module_utils") not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(str(root / "module_utils"))
    for path in (root, root / "library"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))


def cut(text: str, at: str, keep: bool = False) -> str:
    """``text`` broken off just before (or, with keep, just after) the first ``at``: an output cut mid-way."""
    index = text.index(at)
    return text[: index + (len(at) if keep else 0)]


@dataclass
class Outcome:
    """One bad output judged: ``problem`` is None when it was rejected as it must be, with ``reason``."""

    case: Any
    problem: str | None
    reason: str = ""


def judge_call(case: Any, call: Callable[[], tuple[bool, str]], errors: tuple[type[BaseException], ...]) -> Outcome:
    """Run what the module runs on a bad output. ``call`` returns (rejected, text) when it comes back (a plan with
    problems, mismatches: rejected; a result: not); one of ``errors`` with a message is a rejection; anything else
    raised is a crash, and an error without a message is no clear rejection."""
    try:
        rejected, text = call()
    except errors as exc:
        message = str(exc).strip()
        return Outcome(case, None, message) if message else Outcome(case, f"{type(exc).__name__} without a message")
    except Exception as exc:  # the point of the corpus: a bad output must not crash what reads it
        return Outcome(case, f"crashed: {type(exc).__name__}: {exc}")
    return Outcome(case, None, text) if rejected else Outcome(case, f"accepted: {text}")


def outcome_line(o: Outcome) -> str:
    """One line per case: its verdict, the output it broke, and the message (or what went wrong) on one line."""
    text = " ".join((o.problem or o.reason).split())
    return f"{'rejected' if o.problem is None else 'WRONG':8} [{o.case.tool}] {o.case.what}: {text[:200]}"


def run_corpus(cases: list[Any], judge: Callable[[Any], Outcome], healthy_passes: Callable[[], bool]) -> list[Outcome]:
    """Every case judged; an empty list when the healthy answers the cases are cut from do not themselves read as
    healthy (the corpus would prove nothing)."""
    return [judge(c) for c in cases] if healthy_passes() else []


def print_corpus(outcomes: list[Outcome], proves_nothing: str) -> int:
    """A bad-output suite's command line: one line per case, then the totals; exit status 0 only when every case
    was rejected. An empty list means the suite's healthy answers did not read as healthy (``proves_nothing``)."""
    if not outcomes:
        print(proves_nothing)
        return 1
    for o in outcomes:
        print(outcome_line(o))
    rejected = sum(o.problem is None for o in outcomes)
    print(f"{len(outcomes)} bad outputs, {rejected} rejected with a reason, {len(outcomes) - rejected} accepted or crashed")
    return 0 if rejected == len(outcomes) else 1


def corpus_tests(cases: list[Any], healthy_passes: Callable[[], bool], judge: Callable[[Any], Outcome],
                 minimum: int = 20) -> tuple[Callable[[], None], Callable[[], None], Callable[[Any], None]]:
    """The three tests of a device suite's test_bad_outputs.py: the healthy answers the cases are cut from read as
    no change (else the corpus would prove nothing), the corpus has at least ``minimum`` cases with one
    description each, and every case is rejected with a reason. A test file assigns them to test_* names."""
    import pytest

    def test_the_healthy_answers_read_as_no_change() -> None:
        assert healthy_passes()

    def test_the_corpus_has_a_case_per_answer_and_one_description_each() -> None:
        assert len(cases) >= minimum
        assert len({(c.tool, c.what) for c in cases}) == len(cases)

    @pytest.mark.parametrize("case", cases, ids=[f"{c.tool}: {c.what}" for c in cases])
    def test_bad_output_is_rejected_with_a_reason(case: Any) -> None:
        outcome = judge(case)
        assert outcome.problem is None, outcome.problem
        assert outcome.reason

    return (test_the_healthy_answers_read_as_no_change, test_the_corpus_has_a_case_per_answer_and_one_description_each,
            test_bad_output_is_rejected_with_a_reason)
