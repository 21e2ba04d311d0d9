import os
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def cli():
    """The kapprox binary: $KAPPROX_CLI, the workspace's release build, or
    `kapprox` on PATH; the test skips without one."""
    path = os.environ.get("KAPPROX_CLI") or Path(__file__).resolve().parents[2] / "target" / "release" / "kapprox"
    found = str(path) if Path(path).is_file() else shutil.which("kapprox")
    if found is None:
        pytest.skip("no kapprox binary (build it with cargo build --release -p kapprox-cli, or set KAPPROX_CLI)")
    return found
