"""Node's own warnings during synthesis read as text (issue 40), not as the bytes literals jsii prints
for them (aws/jsii issues 3171 and 4065: b'!!  This software has not been tested with node ...\\n')."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import HANG_SECONDS, ROOT

WARNING = "(node:1) Warning: a warning Node itself prints"


def _stderr_of_starting_the_cdk(tmp_path, *, installed: bool) -> list[str]:
    # Given: the Node jsii starts prints a line of its own on stderr first, as Node does with a
    # warning (JSII_NODE names the node binary jsii runs)
    node = tmp_path / "node"
    node.write_text(f"#!/bin/sh\necho '{WARNING}' >&2\nexec {shutil.which('node')} \"$@\"\n")
    node.chmod(0o755)
    # When: aws_cdk is imported (which starts Node), as app.py does, with or without the shim first
    script = ("from stacks import jsii_console; jsii_console.install()\n" if installed else "") + "import aws_cdk\n"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "JSII_NODE": str(node)},
                          capture_output=True, text=True, timeout=HANG_SECONDS)
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node, as synthesis does")
def test_a_line_node_prints_reads_as_node_wrote_it(tmp_path):
    lines = _stderr_of_starting_the_cdk(tmp_path, installed=True)
    assert WARNING in lines
    assert [line for line in lines if line.startswith(("b'", 'b"'))] == []


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node, as synthesis does")
def test_without_the_shim_jsii_prints_it_as_python_bytes(tmp_path):
    # What the shim is for: if a jsii release prints such lines as text itself, this fails and the shim can go
    assert f"b'{WARNING}\\n'" in _stderr_of_starting_the_cdk(tmp_path, installed=False)


def test_app_py_installs_the_shim_before_it_imports_aws_cdk():
    source = (ROOT / "app.py").read_text()
    assert source.index("jsii_console.install()") < source.index("from aws_cdk import")
