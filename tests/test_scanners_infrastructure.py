"""Independent scanners on every synthesized template: checkov and cfn-lint with the AWS serverless rules.

Both must report 0 unacknowledged findings, and every acknowledgement in ``stacks/common/scanners.py``
must still match a finding (a fixed finding leaves no stale excuse behind).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from stacks.common.scanners import ACKNOWLEDGED
from tests.conftest import HANG_SECONDS, ROOT

CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
CFN_LINT = Path(sys.executable).parent / "cfn-lint"


@pytest.fixture(scope="module")
def checkov_report(synthesized_app) -> dict:
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV.relative_to(ROOT)} is missing: `make setup` installs checkov (requirements-checkov.txt)")
    templates = sorted(str(synthesized_app.template_path(name)) for name in synthesized_app.templates)
    completed = subprocess.run(
        [str(CHECKOV), "--framework", "cloudformation", "--skip-download", "-o", "json",
         *(arg for path in templates for arg in ("-f", path))],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    report = json.loads(completed.stdout)
    assert isinstance(report, dict), completed.stderr  # one report for the one framework
    return report


def test_checkov_reports_no_failed_check(checkov_report):
    failed = [(f["check_id"], f["resource"]) for f in checkov_report["results"].get("failed_checks", [])]
    assert failed == []
    assert checkov_report["summary"]["passed"] > 0


def test_every_checkov_acknowledgement_is_still_needed_and_carries_its_reason(checkov_report):
    skipped = checkov_report["results"].get("skipped_checks", [])
    by_type = Counter((s["resource"].split(".")[0], s["check_id"]) for s in skipped)
    for resource_type, findings in ACKNOWLEDGED.items():
        for finding in (f for f in findings if f.startswith("CKV_")):
            assert by_type[(resource_type, finding)] > 0, f"{finding} on {resource_type} is no longer reported"
    assert all(s["check_result"].get("suppress_comment") for s in skipped)


def cfn_lint(paths: list[str]) -> list[dict]:
    """cfn-lint's default rules plus the AWS serverless rules; its JSON list of matches."""
    completed = subprocess.run(
        [str(CFN_LINT), "-a", "cfn_lint_serverless.rules", "--format", "json", "--", *paths],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert completed.stdout.strip().startswith("["), completed.stderr
    return json.loads(completed.stdout)


def test_cfn_lint_with_the_serverless_rules_finds_only_what_is_acknowledged_and_all_of_it(synthesized_app):
    # Given: the templates with every cfn-lint acknowledgement taken out (one cfn-lint run checks both
    # sides, default rules and .cfnlintrc's included, so the templates as they are pass cfn-lint; `make
    # lint` runs it on them as they are)
    stripped, acknowledged = [], set()
    for name, template in synthesized_app.templates.items():
        copy = json.loads(json.dumps(template))
        for logical_id, resource in copy["Resources"].items():
            ignored = resource.get("Metadata", {}).pop("cfn-lint", {})
            reasons = ignored.get("reasons", {})
            for rule in ignored.get("config", {}).get("ignore_checks", []):
                assert reasons.get(rule), f"{logical_id}: {rule} is acknowledged without a reason"
                acknowledged.add((name, logical_id, rule))
        path = synthesized_app.outdir / f"{name}.unacknowledged.json"
        path.write_text(json.dumps(copy))
        stripped.append(str(path))
    # When
    matches = cfn_lint(stripped)
    # Then: every finding is acknowledged on its resource, and every acknowledgement is still needed
    found = {
        (Path(m["Filename"]).name.split(".")[0], m["Location"]["Path"][1], m["Rule"]["Id"]) for m in matches
    }
    assert found == acknowledged
