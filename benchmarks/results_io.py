"""The one writer of a benchmark's results: print the JSON, then write it to the benchmark's output file (its folder made)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_results(out: dict[str, Any], path: Path) -> None:
    """Print ``out`` as indented JSON and write it, with a final newline, to ``path``."""
    text = json.dumps(out, indent=2)
    print(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
