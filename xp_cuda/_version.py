"""The package's version, written once, in pyproject.toml: a checkout (editable or on
PYTHONPATH) reads that file beside the package, an installed wheel its metadata."""
from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

DIST = "xp-cuda"


def version() -> str:
    project = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if project.is_file():  # this checkout's own (another installed copy must not answer)
        m = re.search(r'^version\s*=\s*"([^"]+)"', project.read_text(), re.M)
        if m:
            return m.group(1)
    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:
        return "0+unknown"
