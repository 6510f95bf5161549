"""Keeps README.md's generated parts current: each machine's Mermaid diagram, the benchmark headline and
the dispatch figures.

`python -m bench.readme` rewrites them in place; tests/test_readme.py fails when they are stale.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench import diagrams, report

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = Path(__file__).resolve().parent / "results.md"


def diagram_markers(machine: str) -> tuple[str, str]:
    return (f"<!-- diagram: {machine} (generated from statemachines/{machine}.asl.json by bench/diagrams.py) -->",
            f"<!-- /diagram: {machine} -->")


def block(text: str, start: str, end: str) -> str:
    """What lies between the markers ``start`` and ``end`` (markers excluded, surrounding newlines stripped)."""
    if start not in text or end not in text:
        raise LookupError(f"README.md has no {start!r} ... {end!r} block")
    return text[text.index(start) + len(start):text.index(end)].strip("\n")


def _replace(text: str, start: str, end: str, content: str) -> str:
    block(text, start, end)
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    return pattern.sub(lambda _: f"{start}\n{content}\n{end}", text, count=1)


def update(text: str) -> str:
    for machine, diagram in diagrams.machine_diagrams().items():
        text = _replace(text, *diagram_markers(machine), diagram)
    results = RESULTS.read_text()
    for start, end in ((report.HEADLINE_START, report.HEADLINE_END), (report.DISPATCH_START, report.DISPATCH_END)):
        text = _replace(text, start, end, block(results, start, end))
    return text


def write(text: str) -> None:
    README.write_text(text)


if __name__ == "__main__":
    write(update(README.read_text()))
