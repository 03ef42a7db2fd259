"""Capture sets kept between benchmark runs, each in a folder with its ``manifest.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def cached(target: Path) -> tuple[list[Path], dict[str, Any]] | None:
    """The files and manifest of the set kept in ``target``, or None unless every file is
    there whole (their sizes add up to the manifest's ``counts.file_bytes``)."""
    manifest = target / "manifest.json"
    if not manifest.exists():
        return None
    data: dict[str, Any] = json.loads(manifest.read_text())
    files = [target / name for name in data["files"]]
    if sum(f.stat().st_size for f in files if f.exists()) != data["counts"]["file_bytes"]:
        return None
    return files, data
