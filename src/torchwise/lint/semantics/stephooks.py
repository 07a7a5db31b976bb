"""Methods a training framework calls once per step, which no loop of the project shows (TW207,
TW204): a LightningModule's ``training_step``, and a Dassl trainer's ``forward_backward`` (Dassl's
``TrainerX.run_epoch`` calls it for every batch and hands the dict of floats it returns to a
``MetricMeter``, so ``loss.item()`` there reads the GPU every step) with the ``parse_batch_train``
/ ``parse_batch_test`` that copy the batch Dassl's loaders hand over - loaders Dassl's
``build_data_loader`` pins whenever CUDA is used (``pin_memory=(torch.cuda.is_available() and
cfg.USE_CUDA)``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.steps import runs_periodically

# Dassl's trainer classes (dassl.engine): their run_epoch calls forward_backward for every batch
_DASSL_TRAINERS = frozenset({"TrainerX", "TrainerXU", "SimpleTrainer", "TrainerBase"})
_DASSL_PARSERS = frozenset({"parse_batch_train", "parse_batch_test"})


def step_hook_reads(ctx: Context) -> list[tuple[ast.Call, str, str]]:
    """``.item()``/``.tolist()`` in a framework's per-step hook: ``(read, message, suggestion)``.
    Reads under a periodic test are left alone."""
    found = []
    for func, runner in _hooks(ctx, {"training_step", "forward_backward"}):
        fix = "log the tensors themselves (self.log/log_dict accept tensors)" if runner == "Lightning" else \
            "sum the losses on the device and read them once per print interval"
        for node in ast.walk(func):
            if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in ("item", "tolist") \
                    and not node.args and not runs_periodically(ctx, node) and not _parsed_part(ctx, node.func.value):
                found.append((node, f".{node.func.attr}() in {func.name}(), which {runner} runs every step, waits for the GPU", fix))
    return found


def _parsed_part(ctx: Context, expr: AST, depth: int = 6) -> bool:
    """A part of what ``self.parse_batch_train(batch)`` hands back, or an element or split of one
    (``[d[0].item() for d in torch.split(domain_x, n)]``): the parser may return it as the loader
    made it, on the host (a domain label)."""
    while expr.__class__ in (ast.Subscript, ast.Attribute):
        expr = expr.value
    if expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and depth > 0:
        if expr.func.attr.startswith("parse_batch"):
            return True
        return expr.func.attr in ("split", "chunk") and bool(expr.args) and _parsed_part(ctx, expr.args[0], depth - 1)
    b = ctx.binding_at(expr.id, expr) if expr.__class__ is ast.Name and depth > 0 else None
    if b is None or b.value is None or b.kind not in ("for", "assign", "unpack"):
        return False
    return _parsed_part(ctx, b.value, depth - 1)


def dassl_batch_parser(ctx: Context, func: AST | None) -> bool:
    """``func`` is a Dassl trainer's ``parse_batch_train``/``parse_batch_test``, in a project that
    does not build unpinned loaders of its own (no ``pin_memory=False``): what it copies is a batch
    of a pinned loader."""
    if func is None or func.__class__ is not ast.FunctionDef or func.name not in _DASSL_PARSERS:
        return False
    if any("pin_memory=False" in text.replace(" ", "") for _, text in ctx.project.files) or "pin_memory=False" in ctx.source:
        return False
    return any(f is func for f, _ in _hooks(ctx, _DASSL_PARSERS))


def parsed_batch(ctx: Context, expr: AST, use: AST, depth: int = 4) -> bool:
    """``expr`` is (a part of) the batch handed to the method around ``use``: its parameter, or a
    name taken from it (``input = batch["img"]``, ``input, label = batch``)."""
    while depth > 0:
        while expr.__class__ in (ast.Subscript, ast.Attribute) or expr.__class__ is ast.Call and \
                expr.func.__class__ is ast.Attribute and expr.func.attr in ("float", "long", "contiguous"):
            expr = expr.value if expr.__class__ is not ast.Call else expr.func.value
        if expr.__class__ is not ast.Name or expr.id in ("self", "cls"):
            return False
        b = ctx.binding_at(expr.id, use)
        if b is None:
            return False
        if b.kind == "param":
            return True
        if b.kind not in ("assign", "unpack") or b.value is None:
            return False
        expr, use, depth = b.value, b.node, depth - 1
    return False


def _hooks(ctx: Context, names: set[str] | frozenset[str]) -> list[tuple[AST, str]]:
    """Methods named in ``names`` of a class deriving from a LightningModule or a Dassl trainer."""
    lightning = "training_step" in names and "training_step" in ctx.source and "ightning" in ctx.source
    dassl = "dassl" in ctx.source
    if not lightning and not dassl:
        return []
    found = []
    for func in ctx.nodes.get(ast.FunctionDef, ()):
        klass = ctx.parent(func)
        if func.name not in names or klass.__class__ is not ast.ClassDef:
            continue
        bases = ctx.local_class_bases(klass.name)
        if lightning and func.name == "training_step" and any("lightning" in b.lower() and b.endswith("LightningModule") for b in bases):
            found.append((func, "Lightning"))
        elif dassl and func.name != "training_step" and any(b.startswith("dassl.") and b.rsplit(".", 1)[1] in _DASSL_TRAINERS
                                                            for b in bases):
            found.append((func, "Dassl"))
    return found


__all__ = ["dassl_batch_parser", "parsed_batch", "step_hook_reads"]
