"""Keeps the generated parts of the documentation current: each machine's Mermaid diagram (on its
pattern's page), the benchmark headline (docs/cost.md), the dispatch figures
(docs/alert-notification.md), the hot-swap figures (docs/emulator.md) and a page's cost per channel
(docs/cost.md).

`python -m bench.docs_pages` rewrites them in place, on whichever page holds their markers;
tests/test_docs.py fails when one is stale or no page holds it.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench import channels, diagrams, report

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RESULTS = Path(__file__).resolve().parent / "results.md"


def pages() -> list[Path]:
    """The documentation: README.md, the front door, and the pages under docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def diagram_markers(machine: str) -> tuple[str, str]:
    return (f"<!-- diagram: {machine} (generated from statemachines/{machine}.asl.json by bench/diagrams.py) -->",
            f"<!-- /diagram: {machine} -->")


def block(text: str, start: str, end: str) -> str:
    """What lies between the markers ``start`` and ``end`` (markers excluded, surrounding newlines stripped)."""
    if start not in text or end not in text:
        raise LookupError(f"no {start!r} ... {end!r} block")
    return text[text.index(start) + len(start):text.index(end)].strip("\n")


def generated_parts() -> list[tuple[str, str, str]]:
    """Every generated part as (start marker, end marker, content it must hold)."""
    results = RESULTS.read_text()
    return [
        *((*diagram_markers(machine), diagram) for machine, diagram in diagrams.machine_diagrams().items()),
        *((start, end, block(results, start, end))
          for start, end in ((report.HEADLINE_START, report.HEADLINE_END), (report.DISPATCH_START, report.DISPATCH_END),
                             (report.HOTSWAP_START, report.HOTSWAP_END), (channels.CHANNELS_START, channels.CHANNELS_END))),
    ]


def page_holding(start: str, end: str) -> Path:
    """The one page that holds the block between ``start`` and ``end``."""
    holders = [page for page in pages() if start in (text := page.read_text()) and end in text]
    if len(holders) != 1:
        raise LookupError(f"{len(holders)} documentation pages hold {start!r} ... {end!r}, expected one: "
                          f"{[str(page.relative_to(ROOT)) for page in holders]}")
    return holders[0]


def _replace(text: str, start: str, end: str, content: str) -> str:
    block(text, start, end)
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    return pattern.sub(lambda _: f"{start}\n{content}\n{end}", text, count=1)


def update() -> None:
    """Rewrites every generated part on the page that holds it."""
    for start, end, content in generated_parts():
        page = page_holding(start, end)
        page.write_text(_replace(page.read_text(), start, end, content))


if __name__ == "__main__":
    update()
