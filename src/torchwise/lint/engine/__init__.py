"""The lint engine core: parse a file once, index it, and answer the queries rules ask.

Layers, lowest first (each module imports only those before it):

* :mod:`~torchwise.lint.engine.lazyre` -- regular expressions compiled on first use;
* :mod:`~torchwise.lint.engine.nodes` -- node kinds and pure node utilities (``last_name``, ``argument``...);
* :mod:`~torchwise.lint.engine.legacy` -- parsing pre-0.4 files (``x.cuda(async=True)``);
* :mod:`~torchwise.lint.engine.bindings` -- every binding of every name in a scope;
* :mod:`~torchwise.lint.engine.tree` -- one traversal: parents, enclosures, calls by name, imports;
* :mod:`~torchwise.lint.engine.dataflow` -- def-use: ``binding_at``, ``resolve``, ``constructed_from``;
* :mod:`~torchwise.lint.engine.source` -- positions, text and edits;
* :mod:`~torchwise.lint.engine.suppression` -- ``# noqa`` comments;
* :mod:`~torchwise.lint.engine.context` -- :class:`Context`, the object rules receive;
* :mod:`~torchwise.lint.engine.fixes` -- applying fixes to a text.

This package re-exports what rules and semantic helpers use. It imports nothing above it:
no semantic helper, no rule, no project scan (``tests/lint/test_layers.py`` checks it).
"""

from __future__ import annotations

from torchwise.lint.engine.bindings import Binding, target_names
from torchwise.lint.engine.context import Context, build_context, parse
from torchwise.lint.engine.nodes import (
    AST, DEF_TYPES, FUNCTION_TYPES, LOOP_TYPES, SCOPE_TYPES, argument, canonical, children, has_star_args, keyword,
    last_name, param_default, root_name, str_consts,
)

__all__ = [
    "AST", "Binding", "Context", "DEF_TYPES", "FUNCTION_TYPES", "LOOP_TYPES", "SCOPE_TYPES", "argument",
    "build_context", "canonical", "children", "has_star_args", "keyword", "last_name", "param_default", "parse", "root_name",
    "str_consts", "target_names",
]
