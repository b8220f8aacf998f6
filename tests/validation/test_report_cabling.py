"""The handover report's Cabling section (issue #37): the cabling rerun's raw/cabling/cabling.json judged into one
sanity check per cable (JUnit cases), its table and the picture of the switch ports, within report.schema.json."""

from __future__ import annotations

import json
from pathlib import Path

from tests.validation.conftest import report_schema_errors
from validation import report
from validation.cabling import check
from validation.cabling.model import Cable, End, Link
from validation.verdict import evaluate


def write_cabling(run: Path, enforced: bool = True, errors: list[str] | None = None) -> None:
    plan = [Cable(End("dgx01", "enp225s0f0"), End("sn3700v01", "swp1"), "100G"),
            Cable(End("dgx03", "enp225s0f0"), End("sn3700v01", "swp2"), "100G"),
            Cable(End("f800-1", "40gige-1"), End("sn3700v01", "swp17"), "40G")]
    links = [Link(End("sn3700v01", "swp1"), End("dgx03", "enp225s0f0"), "lldp", "sn3700v01"),
             Link(End("sn3700v01", "swp2"), End("dgx01", "enp225s0f0"), "lldp", "sn3700v01")]
    accepted = [check.Accepted("f800-1", "40gige-1", "MISSING", "optic on order")]
    doc = check.check(plan, links, accepted).to_dict()
    doc["summary"].update(errors=errors or [], enforced=enforced)
    (run / "raw" / "cabling").mkdir(parents=True, exist_ok=True)
    (run / "raw" / "cabling" / "cabling.json").write_text(json.dumps(doc))


def test_cabling_section_checks_junit_and_picture(production_run, production_ctx):
    write_cabling(production_run)
    verdict = evaluate(production_run, production_ctx)
    cabling = [c for c in verdict.checks if c.stage == "cabling"]
    assert [(c.label, c.status) for c in cabling] == [
        ("cable[dgx01 enp225s0f0 - sn3700v01 swp1]", "FAIL"), ("cable[dgx03 enp225s0f0 - sn3700v01 swp2]", "FAIL"),
        ("cable[f800-1 40gige-1 - sn3700v01 swp17]", "PASS")]
    assert cabling[0].reasons[0] == ("MISWIRED: dgx01 enp225s0f0 goes to sn3700v01 swp2; sn3700v01 swp1 goes to "
                                     "dgx03 enp225s0f0")
    assert "accepted by the site: optic on order" in cabling[2].reasons
    doc = report.build_report(production_run, production_ctx, verdict, {})
    doc = json.loads(json.dumps(doc))
    assert report_schema_errors(doc) == []
    junit = report.junit_xml(doc)
    assert 'testsuite name="validation.cabling" tests="3" failures="2"' in junit
    html = report.html_report(doc)
    assert "Cabling (the physical build against the design)" in html
    assert "Switch ports by cable status" in html and "<svg" in html
    assert "sn3700v01 swp1: MISWIRED: designed to dgx01 enp225s0f0" in html


def test_not_enforced_is_info_and_a_missing_report_is_a_fail(production_run, production_ctx):
    write_cabling(production_run, enforced=False, errors=["sn3700v01: lldpctl -f json failed (rc 127)"])
    checks = [c for c in evaluate(production_run, production_ctx).checks if c.stage == "cabling"]
    assert {c.status for c in checks} == {"INFO", "PASS"}
    assert checks[-1].name == "cabling_read" and "not enforced" in checks[-1].reasons[0]
    (production_run / "raw" / "cabling" / "cabling.json").unlink()
    checks = [c for c in evaluate(production_run, production_ctx).checks if c.stage == "cabling"]
    assert [(c.name, c.status) for c in checks] == [("cabling", "FAIL")]
    assert "the cabling rerun did not finish" in checks[0].reasons[0]
