"""The analysis context of one file: what rules receive.

A :class:`Context` holds a parsed file and answers the questions rules ask:

* where is a node (1-based line/column, exact character offsets for edits);
* what does a name or attribute chain mean (``nn.CrossEntropyLoss`` -> ``torch.nn.CrossEntropyLoss``
  through ``import torch.nn as nn``, ``from torch import nn``, ``from ... import X as Y``);
* what was last bound to a name before a given use, in its function (or at module level),
  and what an instance was built from (``crit = nn.CrossEntropyLoss()``; ``self.bn = ...``);
* which function, class, loops, ``with`` blocks and ``if`` tests enclose a node;
* which ``# noqa`` comments suppress a finding.

One parse and one traversal per file, then cheap queries. Only the standard library (``ast``,
``tokenize``) is used; torch is never imported.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine.legacy import parse as legacy_parse
from torchwise.lint.engine.dataflow import DataFlow
from torchwise.lint.engine.nodes import AST
from torchwise.lint.engine.source import SourceText
from torchwise.lint.engine.suppression import header_end, noqa_table
from torchwise.lint.facts import NO_FACTS, ProjectFacts
from torchwise.lint.findings import Finding, Fix


class Context(DataFlow, SourceText):
    """A parsed file and the queries rules use. Built by :func:`build_context`."""

    def __init__(self, source: str, path: str, tree: ast.Module, project: ProjectFacts | None = None) -> None:
        SourceText.__init__(self, source)
        DataFlow.__init__(self, tree)
        self.path = path
        # facts about the rest of the project (see torchwise.lint.project); none for a lone file
        self.project: ProjectFacts = project if project is not None else NO_FACTS

    def finding(
        self,
        code: str,
        node: AST,
        message: str,
        suggestion: str | None = None,
        fix: Fix | None = None,
        end_node: AST | None = None,
    ) -> Finding:
        """A finding at ``node`` (through ``end_node``), suppressible on its lines and at the end
        of its statement's header."""
        end_node = end_node or node
        line = node.lineno
        end_line = end_node.end_lineno or line
        stmt = self.statement_of(node)
        if isinstance(stmt, ast.stmt):
            header = header_end(stmt)
            lines = tuple(sorted({line, end_line, header}))
        else:
            lines = (line, end_line)
        return Finding(
            path=self.path,
            line=line,
            col=self.char_col(line, node.col_offset) + 1,
            code=code,
            message=message,
            end_line=end_line,
            end_col=self.char_col(end_line, end_node.end_col_offset or 0) + 1,
            suggestion=suggestion,
            fix=fix,
            noqa_lines=lines,
        )

    def noqa(self, line: int) -> frozenset[str] | None:
        """Codes suppressed on ``line``: None (no noqa), empty set (bare ``# noqa``: all), or codes."""
        table = self._cache.get("noqa")
        if table is None:
            table = noqa_table(self.source, len(self._line_starts), self.line_text)
            self._cache["noqa"] = table
        return table.get(line)

    def suppressed(self, finding: Finding) -> bool:
        for line in finding.noqa_lines or {finding.line, finding.end_line}:
            codes = self.noqa(line)
            if codes is None:
                continue
            if not codes or any(finding.code.startswith(c) for c in codes):
                return True
        return False


def parse(source: str, path: str) -> ast.Module:
    return legacy_parse(source, path)


def build_context(source: str, path: str, tree: ast.Module | None = None) -> Context:
    return Context(source, path, tree if tree is not None else parse(source, path))
