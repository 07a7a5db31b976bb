"""The file's text: 1-based lines, UTF-8 byte columns (as ``ast`` reports them) turned into exact
character offsets, and the edits fixes are made of."""

from __future__ import annotations

import ast

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.engine.nodes import AST
from torchwise.lint.findings import Edit

_NEWLINE = lazy_compile(r"\r\n|\r|\n")


class SourceText:
    """Positions and edits in one source text."""

    def __init__(self, source: str) -> None:
        self.source = source
        starts = [0]
        starts.extend(m.end() for m in _NEWLINE.finditer(source))
        starts.append(len(source))
        self._line_starts = starts

    def offset(self, line: int, col_bytes: int) -> int:
        """Character offset of (1-based line, UTF-8 byte column) as the ast reports them."""
        start = self._line_starts[line - 1]
        end = self._line_starts[line] if line < len(self._line_starts) else len(self.source)
        text = self.source[start:end]
        if text.isascii():
            return start + col_bytes
        return start + len(text.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))

    def char_col(self, line: int, col_bytes: int) -> int:
        return self.offset(line, col_bytes) - self._line_starts[line - 1]

    def span(self, node: AST) -> tuple[int, int]:
        """``(start, end)`` character offsets of ``node`` in the source."""
        return (
            self.offset(node.lineno, node.col_offset),
            self.offset(node.end_lineno, node.end_col_offset),
        )

    def text(self, node: AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def line_text(self, line: int) -> str:
        if line < 1 or line >= len(self._line_starts):
            return ""
        return self.source[self._line_starts[line - 1] : self._line_starts[line]].rstrip("\r\n")

    def replace(self, node: AST, text: str) -> Edit:
        start, end = self.span(node)
        return Edit(start, end, text)

    def replace_attr(self, node: ast.Attribute, new_attr: str) -> Edit | None:
        """Edit that renames the attribute of ``a.b`` (only ``b``), or None if it cannot be located."""
        end = self.offset(node.end_lineno, node.end_col_offset)
        start = end - len(node.attr)
        if self.source[start:end] != node.attr:
            return None
        return Edit(start, end, new_attr)

    def add_keyword(self, call: ast.Call, text: str) -> Edit | None:
        """Edit that appends the argument ``text`` (e.g. ``weights_only=True``) to ``call``."""
        items: list[AST] = list(call.args) + list(call.keywords)
        if items:
            last = max(items, key=lambda n: (n.end_lineno, n.end_col_offset))
            if len(call.args) == 1 and not call.keywords and call.args[0].__class__ is ast.GeneratorExp:
                inner = self.text(call.args[0])
                if not inner.startswith("("):
                    return None
            pos = self.offset(last.end_lineno, last.end_col_offset)
            return Edit(pos, pos, ", " + text)
        end = self.offset(call.end_lineno, call.end_col_offset)
        if self.source[end - 1 : end] != ")":
            return None
        func_end = self.offset(call.func.end_lineno, call.func.end_col_offset)
        between = self.source[func_end : end - 1]
        if between.strip() != "(":
            return None  # comments or line breaks inside empty parentheses: leave them alone
        return Edit(end - 1, end - 1, text)
