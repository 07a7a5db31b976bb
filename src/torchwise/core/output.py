"""How commands print a result: JSON for tools, rich on a terminal, plain text when piped.

Plain text also stands in for rich where rich is not installed (the base install of ``lint``,
``rule`` and ``rules`` has no dependencies). A reader that closes the pipe early is handled by
the dispatcher (:func:`torchwise.cli.main`), not here.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable


def rich_wanted() -> bool:
    """True when stdout is a terminal and rich can be imported."""
    if not sys.stdout.isatty():
        return False
    from torchwise.core.extras import available

    return available("rich")


def emit(data: Any, *, as_json: bool, rich: Callable[[Any], None], text: Callable[[Any], str], to_json: Callable[[Any], str] | None = None) -> None:
    """Print ``data`` in the form that suits where stdout goes."""
    if as_json:
        print(to_json(data) if to_json else json.dumps(data, indent=2))
    elif rich_wanted():
        rich(data)
    else:
        print(text(data))
