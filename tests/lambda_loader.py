"""Imports a function's modules from lambdas/<function>/ the way the Lambda runtime does.

Every function directory has plain module names (handler.py, logic.py); importing two of them in
one test session would collide in sys.modules, so each load evicts the previous function's modules.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

LAMBDAS_DIR = Path(__file__).resolve().parents[1] / "lambdas"
SHARED_LAYER_DIR = LAMBDAS_DIR / "shared_layer" / "python"


def _evict_function_modules() -> None:
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if file.startswith(str(LAMBDAS_DIR)) and not file.startswith(str(SHARED_LAYER_DIR)):
            del sys.modules[name]


def load_lambda_module(function: str, module: str = "handler") -> ModuleType:
    function_dir = LAMBDAS_DIR / function
    if not (function_dir / f"{module}.py").is_file():
        raise FileNotFoundError(function_dir / f"{module}.py")
    _evict_function_modules()
    sys.path.insert(0, str(function_dir))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(function_dir))
