"""Issue #16 (bad input): every bad NVUE or Cumulus answer of tests/fabric_sn3700v/bad_outputs.py ends in an NvueError, ReleaseError or SwitchError with its reason, or mismatches that fail the task, never in
"no change", a change or a crash; and the healthy answers the cases are cut from read as no change (else the
corpus would prove nothing)."""

from __future__ import annotations

from tests.device_text import corpus_tests

from .bad_outputs import CASES, healthy_passes, judge

(test_the_healthy_answers_read_as_no_change, test_the_corpus_has_a_case_per_answer_and_one_description_each,
 test_bad_output_is_rejected_with_a_reason) = corpus_tests(CASES, healthy_passes, judge)
