"""Loads state machine definitions from statemachines/ and fills their ${Placeholder}s."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Mapping

STATEMACHINES_DIR = Path(__file__).resolve().parents[2] / "statemachines"
PLACEHOLDER = re.compile(r"\$\{([A-Za-z][A-Za-z0-9]*)\}")


def definition_path(machine: str) -> Path:
    return STATEMACHINES_DIR / f"{machine}.asl.json"


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


def load_definition(machine: str, substitutions: Mapping[str, str]) -> str:
    """Return the ASL text of ``machine`` with every placeholder replaced.

    Values may be CDK tokens: the caller gets a string CDK renders as an inline
    ``DefinitionString`` (Fn::Join), which both AWS and the local emulator deploy.
    """
    return fill_placeholders(definition_path(machine).read_text(encoding="utf-8"), substitutions, f"{machine}.asl.json")


def fill_placeholders(text: str, substitutions: Mapping[str, str], source: str) -> str:
    """``text`` (ASL JSON) with each ``${Name}`` replaced by ``substitutions[Name]``.

    Unknown or unused names are errors so a typo cannot ship a half-filled machine.
    """
    json.loads(text)  # fail early, naming the source, on broken JSON
    wanted = placeholders(text)
    given = set(substitutions)
    if wanted != given:
        raise ValueError(
            f"{source} placeholders {sorted(wanted)} do not match substitutions {sorted(given)}: "
            f"missing {sorted(wanted - given)}, unused {sorted(given - wanted)}"
        )
    return PLACEHOLDER.sub(lambda m: substitutions[m.group(1)], text)
