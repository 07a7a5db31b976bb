"""TW305: ``cudnn.deterministic = True`` without ``torch.use_deterministic_algorithms(True)``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.project.hydraconfig import hydra_config
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.backends import cudnn_flag_assignments
from torchwise.lint.semantics.deadcode import dead_code
from torchwise.lint.semantics.files import in_demo_main
from torchwise.lint.semantics.optiondefaults import option_default


class PartialDeterminism(Rule):
    code = "TW305"
    name = "partial-determinism"
    triggers = ("determin",)  # (also the misspellings: determinstic)
    doc = """\
What it flags
  `torch.backends.cudnn.deterministic = True`, or set from an option that is on by default
  (`= args.torch_deterministic` with `add_argument("--torch-deterministic", default=True)` in
  the file, `= config.CUDNN.DETERMINISTIC` where a module of the project assigns
  `config.CUDNN.DETERMINISTIC = True`), in a file that never calls
  `torch.use_deterministic_algorithms(...)`; also an option whose default lint cannot read (a
  parameter `cfg`, a YAML file other than a Hydra script's own config). Also a misspelled flag set to True
  (`torch.backends.cudnn.determinstic = True`: Python adds the attribute, cuDNN never reads it),
  and the flag set in a `__main__` block that runs the program (`main()` of the file). Not
  flagged: an option off by default (`store_true`,
  `config.CUDNN.DETERMINISTIC = False` in the config module, `cuda_deterministic: False` in the
  `conf/config.yaml` that `@hydra.main(config_path="conf", config_name="config")` reads), also
  as the guard of the assignment (`if args.cuda_deterministic: cudnn.deterministic = True`): the
  project does not ask for determinism unless a user turns it on; the `__main__` smoke test of a library module; a
  seeding helper that nothing in the project calls (dead code, such as a stale copy
  `segmentation/misc.py` of the `utils/misc.py` every script imports).

Why it matters
  The cuDNN flag covers cuDNN convolutions only. Many other CUDA kernels - scatter/index_add
  with atomics, some pooling and interpolation backward passes, cuBLAS with several
  workspaces - remain nondeterministic, so results still vary between runs.
  `use_deterministic_algorithms(True)` switches every operation to a deterministic
  implementation or raises where none exists; for cuBLAS it also needs the environment
  variable `CUBLAS_WORKSPACE_CONFIG=:4096:8` (or `:16:8`) set before CUDA starts.

Example
  torch.backends.cudnn.deterministic = True        # TW305: the rest stays nondeterministic

Fix
  `torch.use_deterministic_algorithms(True)` plus
  `os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"` at start-up, or
  `torchwise.seed_everything(seed, deterministic=True)`, which sets all of it.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        dets = cudnn_flag_assignments(ctx, "deterministic", literal_only=False)
        typos = _misspelled_flags(ctx)
        if not (dets or typos) or ctx.calls_to("torch.use_deterministic_algorithms", "torch.set_deterministic_debug_mode"):
            return
        for node, attr in typos:
            yield ctx.finding(
                self.code, node,
                f"cudnn.{attr} is no cuDNN flag (a misspelling of deterministic): determinism is asked for and nothing is set",
                suggestion='call torch.use_deterministic_algorithms(True) and set CUBLAS_WORKSPACE_CONFIG=":4096:8"',
            )
        for node in dets:
            if in_demo_main(ctx, node) and not _runs_program(ctx, node):
                continue  # a smoke test that prints a shape: nothing to reproduce
            if dead_code(ctx, node):
                continue  # a seeding helper nothing in the project calls (a stale copy of a module): it never runs (R5)
            if node.value.__class__ is not ast.Constant and self._default(ctx, node.value) is False \
                    or node.value.__class__ is ast.Constant and _guarded_by_off_option(ctx, node, self._default):
                continue  # an option that is off by default: nothing asks for determinism
            when = "" if node.value.__class__ is ast.Constant else f" (when {ctx.text(node.value)} is on)"
            yield ctx.finding(
                self.code, node,
                f"cudnn.deterministic covers cuDNN only; other CUDA kernels stay nondeterministic{when}",
                suggestion='also call torch.use_deterministic_algorithms(True) and set CUBLAS_WORKSPACE_CONFIG=":4096:8"',
            )


    @staticmethod
    def _default(ctx: Context, value: ast.AST) -> bool | None:
        """The option's default: argparse, a field, a config module - or the YAML config of a Hydra script."""
        found = option_default(ctx, value)
        if found is None and value.__class__ is ast.Attribute and value.value.__class__ is ast.Name:
            found = (hydra_config(ctx.path, ctx.source, ctx.project.answers) or {}).get(value.attr)
        return found


def _guarded_by_off_option(ctx: Context, node: ast.AST, default) -> bool:
    """``if device.type == "cuda" and args.cuda_deterministic: cudnn.deterministic = True`` where the
    option is off by default: set only when a user asks for it."""
    for if_node, in_body in ctx.enclosing_ifs(node):
        if not in_body:
            continue
        test = if_node.test
        parts = test.values if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And else [test]
        if any(p.__class__ is ast.Attribute and p.value.__class__ is ast.Name and default(ctx, p) is False for p in parts):
            return True
    return False


_CUDNN_FLAGS = frozenset({"deterministic", "benchmark", "enabled", "allow_tf32", "benchmark_limit", "version"})


def _misspelled_flags(ctx: Context) -> list[tuple[ast.Assign, str]]:
    """``torch.backends.cudnn.determinstic = True``: a new attribute that reads like
    ``deterministic`` - Python sets it without complaint and cuDNN never sees it."""
    if "cudnn" not in ctx.source:
        return []
    out = []
    for node in ctx.nodes.get(ast.Assign, ()):
        if node.value.__class__ is not ast.Constant or node.value.value is not True:
            continue
        for t in node.targets:
            if t.__class__ is ast.Attribute and t.attr not in _CUDNN_FLAGS and (ctx.qualname(t) or "").startswith(
                    "torch.backends.cudnn.") and _edits(t.attr.lower(), "deterministic") <= 2:
                out.append((node, t.attr))
    return out


def _edits(a: str, b: str) -> int:
    """The edit distance between two short words (insertions, deletions, substitutions)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def _runs_program(ctx: Context, node: ast.AST) -> bool:
    """The ``__main__`` block around ``node`` calls a function of this file (``main()``): it runs the
    program, it is no smoke test."""
    block = next((a for a in ctx.ancestors(node) if a.__class__ is ast.If and ctx.parent(a) is ctx.tree), None)
    defined = {n.name for n in ctx.tree.body if n.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)}
    return block is not None and any(n.__class__ is ast.Call and n.func.__class__ is ast.Name and n.func.id in defined
                                     for n in ast.walk(block))


RULE = PartialDeterminism()
