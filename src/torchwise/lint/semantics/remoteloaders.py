"""Loaders a module-level helper builds and returns to other modules: ``def get_iterators(config,
...)`` returning ``train_iterator, test_iterator`` that a script takes (``from utils import *``,
``utils.get_iterators(...)``) where it trains on a GPU. The helper's own file need not say so."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import project_calls, star_calls
from torchwise.lint.semantics.devices import gpu_evident_for


def returned_to_remote_gpu(ctx: Context, func: AST) -> bool:
    """Is ``func`` (a module-level function of this file) called from another module of the project
    at a place with GPU evidence (its function, or the caller's module level)?"""
    if func.__class__ is not ast.FunctionDef or ctx.parent(func) is not ctx.tree or not ctx.project.files:
        return False
    key = ("remote-loader-gpu", ctx.path, func.name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = any(gpu_evident_for(other, call) for other, call in [*project_calls(ctx, func.name), *star_calls(ctx, func.name)])
        ctx.project.answers[key] = found
    return found
