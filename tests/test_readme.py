"""README.md's generated parts: each machine's diagram and the benchmark headline stay current."""

from __future__ import annotations

import pytest

from bench import diagrams, readme, report


def test_readme_shows_every_machine_as_its_asl_file_draws_it():
    # Given
    text = readme.README.read_text()
    # When
    generated = diagrams.machine_diagrams()
    # Then
    assert generated, "no statemachines/*.asl.json found"
    for machine, diagram in generated.items():
        assert readme.block(text, *readme.diagram_markers(machine)) == diagram, (
            f"README.md's diagram of {machine} differs from statemachines/{machine}.asl.json: run python -m bench.readme"
        )


def test_readme_quotes_the_benchmark_headline_as_results_md_has_it():
    # Given
    results = readme.RESULTS.read_text()
    # When
    quoted = report.read_headline(readme.README.read_text())
    # Then
    assert quoted == report.read_headline(results), "README.md's \"What it costs\" is stale: run python -m bench.readme"
    assert "transitions" in quoted


def test_readme_shows_the_dispatch_figures_as_results_md_has_them():
    # Given
    results = readme.RESULTS.read_text()
    # When
    quoted = readme.block(readme.README.read_text(), report.DISPATCH_START, report.DISPATCH_END)
    # Then
    assert quoted == readme.block(results, report.DISPATCH_START, report.DISPATCH_END), (
        "README.md's dispatch figures are stale: run python -m bench.readme"
    )
    assert "StartExecution calls" in quoted


def test_mermaid_draws_choices_catches_and_map_processors():
    # Given
    definition = {
        "StartAt": "Check",
        "States": {
            "Check": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.count", "NumericLessThanPath": "$.limit", "Next": "Items"},
                    {"Not": {"Variable": "$.items", "IsPresent": True}, "Next": "Give Up"},
                ],
                "Default": "Done",
            },
            "Items": {
                "Type": "Map",
                "ItemProcessor": {"StartAt": "Work", "States": {
                    "Work": {"Type": "Task", "Resource": "x", "End": True,
                             "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Note Failure"}]},
                    "Note Failure": {"Type": "Pass", "End": True},
                }},
                "Next": "Done",
            },
            "Give Up": {"Type": "Fail", "Error": "E"},
            "Done": {"Type": "Succeed"},
        },
    }
    # When
    chart = diagrams.mermaid(definition).splitlines()
    # Then
    assert chart[0] == "flowchart TD"
    assert '    Check -->|"count #lt; limit"| Items' in chart
    assert '    Check -->|"items absent"| GiveUp' in chart
    assert '    Check -->|"otherwise"| Done' in chart
    assert '    subgraph Items ["Items (Map, inline)"]' in chart
    assert '        Work["Work"]' in chart
    assert '        NoteFailure("Note Failure")' in chart
    assert '    Work -.->|"States.ALL"| NoteFailure' in chart
    assert "    Items --> Done" in chart
    assert "    class GiveUp fail" in chart


def test_a_readme_without_the_markers_is_refused():
    with pytest.raises(LookupError):
        readme.block("no markers here", *readme.diagram_markers("map_retry"))
