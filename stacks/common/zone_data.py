"""The time-zone database the app controls: the pinned tzdata its shared layer ships, read alike at synthesis and at runtime.

The functions read zones only from that package (``PYTHONTZPATH`` empty in their environment: zoneinfo
then searches no directory and falls back to ``tzdata``), whatever the python3.13 image carries. The
layer copies the release installed in the venv that synthesizes it, refused unless it is the one
requirements-shared-layer.txt pins; synthesis reads zones from that same installed copy
(``zones_as_the_functions_read_them``), so a schedule the app declares is checked against the data
the functions will use.
"""

from __future__ import annotations

import re
import shutil
import zoneinfo
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_

ROOT = Path(__file__).resolve().parents[2]
SHARED_LAYER_DIR = ROOT / "lambdas" / "shared_layer"
SHARED_LAYER_REQUIREMENTS = ROOT / "requirements-shared-layer.txt"
# zoneinfo reads this when it is imported: empty means no directory is searched, only the tzdata package
# (docs.python.org/3/library/zoneinfo.html, "Environment configuration": PYTHONTZPATH).
ZONE_ENVIRONMENT = {"PYTHONTZPATH": ""}


def tzdata_release() -> str:
    pinned = re.search(r"^tzdata==(\S+)", SHARED_LAYER_REQUIREMENTS.read_text(), re.M)
    if pinned is None:
        raise ValueError(f"{SHARED_LAYER_REQUIREMENTS.name} pins no tzdata release")
    return pinned.group(1)


def pinned_tzdata() -> metadata.Distribution:
    """The installed tzdata distribution, refused unless it is the pinned release."""
    release = tzdata_release()
    try:
        installed = metadata.distribution("tzdata")
    except metadata.PackageNotFoundError:
        installed = None
    if installed is None or installed.version != release:
        found = "is not installed" if installed is None else f"{installed.version} is installed"
        raise RuntimeError(
            f"tzdata {release} is pinned in {SHARED_LAYER_REQUIREMENTS.name} for the shared layer, but {found} "
            "in the Python that synthesizes the app: run `make setup` (or pip install -r requirements-dev.txt)"
        )
    return installed


@jsii.implements(ILocalBundling)
class _SharedLayerBundling:
    """The layer's asset: lambdas/shared_layer as it is, plus the pinned tzdata package under python/."""

    def try_bundle(self, output_dir: str, _options: BundlingOptions) -> bool:
        output = Path(output_dir)
        shutil.copytree(SHARED_LAYER_DIR, output, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        distribution = pinned_tzdata()
        # The package and its dist-info, as `pip install --target python/` would lay them out.
        packaged = ("tzdata/", f"tzdata-{distribution.version}.dist-info/")
        for file in distribution.files or ():
            relative = file.as_posix()
            if relative.startswith(packaged) and "__pycache__" not in relative:
                target = output / "python" / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(file.locate(), target)
        return True


def shared_layer_code() -> lambda_.Code:
    # Hashed by what it holds, so a new tzdata pin is a new layer version though no source file changed.
    return lambda_.Code.from_asset(
        str(SHARED_LAYER_DIR),
        asset_hash_type=AssetHashType.OUTPUT,
        bundling=BundlingOptions(
            # Never pulled: the local bundling always succeeds or fails synthesis with its reason.
            image=lambda_.Runtime.PYTHON_3_13.bundling_image,
            local=_SharedLayerBundling(),
        ),
    )


@contextmanager
def zones_as_the_functions_read_them() -> Iterator[None]:
    """Within it, zoneinfo reads zones only from the pinned tzdata, as the functions do.

    zoneinfo's search path and cache are the process's, so both are set for the block and put back:
    zones already read from the machine's database stay out of it, and the ones read in it out of the rest.
    """
    pinned_tzdata()
    searched = zoneinfo.TZPATH
    zoneinfo.reset_tzpath(to=())
    zoneinfo.ZoneInfo.clear_cache()
    try:
        yield
    finally:
        zoneinfo.reset_tzpath(to=searched)
        zoneinfo.ZoneInfo.clear_cache()
