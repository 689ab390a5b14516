from pathlib import Path

import pytest


@pytest.fixture
def mcp_home(tmp_path: Path) -> Path:
    """A fresh store folder for one test (the server creates it on start)."""
    return tmp_path / "home"
