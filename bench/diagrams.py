"""ASL -> Mermaid flowchart: each machine's diagram generated from its statemachines/*.asl.json file."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

STATEMACHINES_DIR = Path(__file__).resolve().parents[1] / "statemachines"
LABEL_MAX_CHARS = 60
SHAPES = {
    "Task": ('["', '"]'),
    "Pass": ('("', '")'),
    "Choice": ('{"', '"}'),
    "Wait": ('(["', '"])'),
    "Succeed": ('(["', '"])'),
    "Fail": ('(["', '"])'),
    "Parallel": ('[["', '"]]'),
}
COMPARATORS = {
    "Equals": "=", "LessThan": "<", "GreaterThan": ">", "LessThanEquals": "≤", "GreaterThanEquals": "≥",
}


def _text(value: str) -> str:
    """Text safe inside a quoted Mermaid label."""
    return value.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def _path(path: str) -> str:
    return path.removeprefix("$.").removeprefix("$")


def jsonata_condition(expression: str) -> str:
    """A JSONata Condition as it reads aloud: no {% %}, no $states.input., no $ before names."""
    text = expression.strip().removeprefix("{%").removesuffix("%}").strip()
    text = text.replace("$states.input.", "")
    text = re.sub(r"\$exists\(([\w.]+)\)", r"\1 present", text)
    text = re.sub(r"\$not\(", "not (", text)
    text = re.sub(r"\$(\w)", r"\1", text)
    return text


def condition(rule: dict) -> str:
    """A Choice rule as a short readable expression (its Comment, where it has one)."""
    if "Comment" in rule:
        return rule["Comment"]
    if "Condition" in rule:
        return jsonata_condition(rule["Condition"])
    if "And" in rule or "Or" in rule:
        joiner = " and " if "And" in rule else " or "
        return joiner.join(condition(r) for r in rule.get("And", rule.get("Or")))
    if "Not" in rule:
        inner = rule["Not"]
        flippable = [key for key in inner if key.startswith("Is")]
        if flippable:  # "not (x present)" reads better as "x absent"
            return condition({**inner, flippable[0]: not inner[flippable[0]]})
        return f"not ({condition(inner)})"
    variable = _path(rule["Variable"])
    for key, value in rule.items():
        if key in ("Variable", "Next"):
            continue
        if key == "IsPresent":
            return f"{variable} {'present' if value else 'absent'}"
        if key.startswith("Is"):
            return f"{variable} {'is' if value else 'is not'} {key[2:].lower()}"
        if key.endswith("Matches"):
            return f"{variable} matches '{value}'"
        operand = _path(value) if key.endswith("Path") else (f"'{value}'" if isinstance(value, str) else json.dumps(value))
        operator = key.removesuffix("Path")
        for kind in ("String", "Numeric", "Boolean", "Timestamp"):
            operator = operator.removeprefix(kind)
        return f"{variable} {COMPARATORS.get(operator, operator)} {operand}"
    raise ValueError(f"unrecognised Choice rule {rule}")


def _label(text: str) -> str:
    text = text if len(text) <= LABEL_MAX_CHARS else text[: LABEL_MAX_CHARS - 1] + "…"
    return _text(text)


class _Chart:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ids: dict[tuple[str, str], str] = {}
        self.used: set[str] = {"start", "end", "graph", "subgraph", "class", "style"}

    def node_id(self, scope: str, name: str) -> str:
        key = (scope, name)
        if key not in self.ids:
            base = "".join(word[:1].upper() + word[1:] for word in re.split(r"\W+", name)) or "State"
            candidate, n = base, 2
            while candidate in self.used:
                candidate, n = f"{base}{n}", n + 1
            self.used.add(candidate)
            self.ids[key] = candidate
        return self.ids[key]

    def states(self, states: dict[str, Any], scope: str, indent: str) -> None:
        for name, state in states.items():
            node = self.node_id(scope, name)
            kind = state["Type"]
            if kind == "Map":
                processor = state.get("ItemProcessor") or state["Iterator"]
                mode = processor.get("ProcessorConfig", {}).get("Mode", "INLINE").lower()
                self.lines.append(f'{indent}subgraph {node} ["{_text(name)} (Map, {mode})"]')
                inner_scope = f"{scope}/{name}"
                self.states(processor["States"], inner_scope, indent + "    ")
                self.lines.append(f"{indent}end")
                continue
            opening, closing = SHAPES[kind]
            self.lines.append(f"{indent}{node}{opening}{_text(name)}{closing}")
            if kind == "Fail":
                self.lines.append(f"{indent}class {node} fail")
            if kind == "Succeed":
                self.lines.append(f"{indent}class {node} succeed")

    def edges(self, states: dict[str, Any], scope: str, start_at: str, entry: str | None) -> None:
        if entry is not None:
            self.lines.append(f"    {entry} --> {self.node_id(scope, start_at)}")
        for name, state in states.items():
            node = self.node_id(scope, name)
            if state["Type"] == "Map":
                processor = state.get("ItemProcessor") or state["Iterator"]
                self.edges(processor["States"], f"{scope}/{name}", processor["StartAt"], None)
            for rule in state.get("Choices", []):
                self.lines.append(f'    {node} -->|"{_label(condition(rule))}"| {self.node_id(scope, rule["Next"])}')
            if "Default" in state:
                self.lines.append(f'    {node} -->|"otherwise"| {self.node_id(scope, state["Default"])}')
            for catcher in state.get("Catch", []):
                errors = ", ".join(catcher["ErrorEquals"])
                self.lines.append(f'    {node} -.->|"{_label(errors)}"| {self.node_id(scope, catcher["Next"])}')
            if "Next" in state:
                self.lines.append(f"    {node} --> {self.node_id(scope, state['Next'])}")


def mermaid(definition: dict[str, Any]) -> str:
    """The definition as a Mermaid flowchart: Map states are subgraphs, Catch edges are dotted."""
    chart = _Chart()
    chart.lines += ["flowchart TD", '    start(["start"])']
    chart.states(definition["States"], "", "    ")
    chart.edges(definition["States"], "", definition["StartAt"], "start")
    chart.lines += [
        "    classDef fail fill:#fde2e1,stroke:#c0392b",
        "    classDef succeed fill:#e3f6e5,stroke:#2e7d32",
    ]
    return "\n".join(chart.lines)


def machine_diagrams() -> dict[str, str]:
    """Every machine of the app by file stem, as a fenced Mermaid block."""
    return {
        path.name.removesuffix(".asl.json"): "```mermaid\n" + mermaid(json.loads(path.read_text())) + "\n```"
        for path in sorted(STATEMACHINES_DIR.glob("*.asl.json"))
    }


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(mermaid(json.loads(Path(path).read_text())))
