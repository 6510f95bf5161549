"""Helpers the patches share for replacing a name inside moto's modules."""

from __future__ import annotations

import sys
import types
from typing import Any

MOTO_VERSION = "5.2.5"  # every patch was written against this release (requirements-dev.txt)


def modules_importing(module: types.ModuleType, name: str, value: Any) -> list[str]:
    """Step Functions modules other than ``module`` that imported ``value`` as ``name``."""
    return [
        mod_name
        for mod_name, mod in list(sys.modules.items())
        if mod_name.startswith("moto.stepfunctions") and mod is not module and getattr(mod, name, None) is value
    ]
