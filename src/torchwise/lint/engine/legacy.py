"""Parsing files written for PyTorch before 0.4: ``x.cuda(async=True)``.

PyTorch 0.4 renamed the ``async=`` argument of ``.cuda()``/``.to()``/``.copy_()`` to
``non_blocking=`` and Python 3.7 made ``async`` a reserved word, so such a file no longer parses.
Old training code still carries it (often in a ``utils.py`` every script imports); refusing the
whole file would hide every other pitfall in it. When the plain parse fails and the file passes
``async`` as a keyword argument, the argument is read in place as a same-length placeholder (so
every line and column stays exact) and renamed ``non_blocking`` in the tree: the rules see what
the code means, and TW502 reports the old spelling, with a fix.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine.lazyre import lazy_compile

#: ``(async=`` / ``, async =`` (not ``async ==``): the argument name, with what precedes it
_ASYNC_KEYWORD = lazy_compile(r"([(,]\s*)async(\s*=)(?!=)")
_PLACEHOLDER = "Async"  # same length as ``async``, so positions in the text are unchanged


def parse(source: str, path: str = "<unknown>") -> ast.Module:
    """``ast.parse``, but a file that fails only for pre-0.4 ``async=`` arguments is read with
    them as ``non_blocking=`` (positions unchanged). Raises the original ``SyntaxError`` otherwise."""
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        if "async" not in source:
            raise
        patched, count = _ASYNC_KEYWORD.subn(rf"\1{_PLACEHOLDER}\2", source)
        if not count:
            raise
        try:
            tree = ast.parse(patched, filename=path)
        except SyntaxError:
            raise exc from None
    for node in ast.walk(tree):
        if node.__class__ is ast.keyword and node.arg == _PLACEHOLDER:
            node.arg = "non_blocking"
    return tree

