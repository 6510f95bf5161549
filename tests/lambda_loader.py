"""Imports a function's modules from lambdas/<function>/ the way the Lambda runtime does.

A function's own modules have names no other function uses (``<function>_logic``, ``slack_webhook``;
see README, "Lambda code"), so every function directory can stay on sys.path together and nothing
is evicted. ``handler.py``, which every function has, is loaded under a name of its own
(``lambdas.<function>.handler``) and afresh on each call, as a cold start loads it: a handler that
creates its clients or reads its environment at import does so inside the test that loads it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

LAMBDAS_DIR = Path(__file__).resolve().parents[1] / "lambdas"
HANDLER = "handler"


def load_lambda_module(function: str, module: str = HANDLER) -> ModuleType:
    function_dir = LAMBDAS_DIR / function
    path = function_dir / f"{module}.py"
    if not path.is_file():
        raise FileNotFoundError(path)
    if str(function_dir) not in sys.path:
        sys.path.append(str(function_dir))
    if module != HANDLER:
        return importlib.import_module(module)
    name = f"lambdas.{function}.{HANDLER}"
    spec = importlib.util.spec_from_file_location(name, path)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded  # dataclasses and pickling look their module up by name
    spec.loader.exec_module(loaded)
    return loaded
