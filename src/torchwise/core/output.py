"""How commands print a result: JSON for tools, rich on a terminal, plain text when piped."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable


def emit(data: Any, *, as_json: bool, rich: Callable[[Any], None], text: Callable[[Any], str], to_json: Callable[[Any], str] | None = None) -> None:
    """Print ``data`` in the form that suits where stdout goes."""
    if as_json:
        print(to_json(data) if to_json else json.dumps(data, indent=2))
    elif sys.stdout.isatty():
        rich(data)
    else:
        print(text(data))
