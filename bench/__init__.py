"""`make bench`: the seed designs against this app's, measured side by side in the local emulator."""

import sys
from pathlib import Path

# The demo item processor's draw (patterns_common.items_demo) decides which processing of an item
# fails; the benchmark replays it to tell first successes from re-processings.
_SHARED_CODE = str(Path(__file__).resolve().parents[1] / "lambdas" / "shared_layer" / "python")
if _SHARED_CODE not in sys.path:
    sys.path.append(_SHARED_CODE)
