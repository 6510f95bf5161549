"""The documentation: README.md as the front door, a page per topic under docs/, links that resolve, and
the generated parts (each machine's diagram, the benchmark headline, the dispatch and hot-swap figures) current."""

from __future__ import annotations

import re

import pytest

from bench import channels, diagrams, docs_pages, report

STALE = "run python -m bench.docs_pages"
# Where a reader looks for each machine's diagram: its pattern's page.
DIAGRAM_PAGES = {
    "alert_notification": "alert-notification.md",
    "job_poller": "job-poller.md",
    "export_poller": "job-poller.md",
    "callback_job": "job-poller.md",
    "map_retry": "map-retry.md",
}
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", markdown, flags=re.DOTALL), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_each_machine_is_drawn_on_its_patterns_page_as_its_asl_file_draws_it():
    # Given
    generated = diagrams.machine_diagrams()
    # Then
    assert set(generated) == set(DIAGRAM_PAGES), "a machine has no page to be drawn on: add it to DIAGRAM_PAGES"
    for machine, diagram in generated.items():
        markers = docs_pages.diagram_markers(machine)
        page = docs_pages.page_holding(*markers)
        assert page == docs_pages.DOCS / DIAGRAM_PAGES[machine]
        assert docs_pages.block(page.read_text(), *markers) == diagram, (
            f"{page.name}'s diagram of {machine} differs from statemachines/{machine}.asl.json: {STALE}"
        )


# Each block of bench/results.md a docs page quotes: its markers, the page quoting it, a phrase it holds.
QUOTED_FIGURES = {
    "headline": (report.HEADLINE_START, report.HEADLINE_END, "cost.md", "transitions"),
    "dispatch": (report.DISPATCH_START, report.DISPATCH_END, "alert-notification.md", "StartExecution calls"),
    "hotswap": (report.HOTSWAP_START, report.HOTSWAP_END, "emulator.md", "hotswap-deployment time"),
    "channels": (channels.CHANNELS_START, channels.CHANNELS_END, "cost.md", "SMS, Germany"),
}


@pytest.mark.parametrize(("start", "end", "page_name", "phrase"), QUOTED_FIGURES.values(), ids=QUOTED_FIGURES.keys())
def test_each_docs_page_quotes_its_benchmark_figures_as_results_md_has_them(start, end, page_name, phrase):
    # Given
    results = docs_pages.RESULTS.read_text()
    # When
    page = docs_pages.page_holding(start, end)
    quoted = docs_pages.block(page.read_text(), start, end)
    # Then
    assert page == docs_pages.DOCS / page_name
    assert quoted == docs_pages.block(results, start, end), f"docs/{page_name}'s figures are stale: {STALE}"
    assert phrase in quoted


def test_every_relative_link_in_the_docs_reaches_a_file_and_heading_that_exist():
    # Given
    broken = []
    for page in docs_pages.pages():
        # When
        for target in MARKDOWN_LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and anchor not in _anchors(resolved.read_text()):
                broken.append(f"{page.name}: {target} (no such heading)")
    # Then
    assert broken == []


def test_the_readme_is_a_front_door_that_links_every_page_of_docs():
    # Given
    readme = docs_pages.README.read_text()
    # When
    linked = {target.partition("#")[0] for target in MARKDOWN_LINK.findall(readme)}
    # Then: the two commands, exactly, and a link to every page
    assert "make demo   #" in readme and "make test   #" in readme
    assert [page.name for page in docs_pages.pages()[1:] if f"docs/{page.name}" not in linked] == []
    assert len(readme.splitlines()) < 150, "README.md is the front door: give a topic its own page under docs/"


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


def test_a_page_without_the_markers_is_refused():
    with pytest.raises(LookupError):
        docs_pages.block("no markers here", *docs_pages.diagram_markers("map_retry"))
