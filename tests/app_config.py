"""The app's settings as cdk.json gives them (the one place they live), with a test's overrides."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from stacks.config import AppConfig

CONTEXT = json.loads((Path(__file__).resolve().parents[1] / "cdk.json").read_text())["context"]


def app_config(**overrides: Any) -> AppConfig:
    return dataclasses.replace(AppConfig.from_context(CONTEXT.get), **overrides)
