"""TW111: a matrix initialiser (xavier/kaiming/orthogonal) applied to 1-D parameters."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.factorynames import SHAPED

MATRIX_INITS = frozenset({
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
    "sparse_", "eye_", "dirac_", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
    "orthogonal", "sparse", "eye", "dirac",
})


def _is_matrix_init(ctx: Context, call: ast.Call) -> bool:
    q = ctx.qualname(call.func)
    return q is not None and q.startswith("torch.nn.init.") and q.rsplit(".", 1)[1] in MATRIX_INITS


def _iterates_parameters(ctx: Context, loop: ast.For) -> str | None:
    """The loop variable bound to each parameter when the loop walks ``m.parameters()``/
    ``m.named_parameters()``, else None."""
    it = loop.iter
    if it.__class__ is not ast.Call or it.func.__class__ is not ast.Attribute:
        return None
    target = loop.target
    if it.func.attr == "parameters" and target.__class__ is ast.Name:
        return target.id
    if it.func.attr == "named_parameters" and target.__class__ is ast.Tuple and len(target.elts) == 2:
        second = target.elts[1]
        return second.id if second.__class__ is ast.Name else None
    return None


# the shaped factories and two typed legacy constructors (torch.Tensor(n), torch.FloatTensor(n))
_MAKERS = SHAPED | {"Tensor", "FloatTensor"}


def _dims(ctx: Context, value: ast.AST | None) -> int | None:
    """The number of dimensions of ``nn.Parameter(torch.empty(a, b))`` (also ``Tensor(a, b)``,
    ``torch.zeros((a, b))``, and ``... if bias else None``); None when it cannot be told."""
    if value is not None and value.__class__ is ast.IfExp:
        sides = [_dims(ctx, v) for v in (value.body, value.orelse) if not (v.__class__ is ast.Constant and v.value is None)]
        return sides[0] if len(sides) == 1 else None
    if value is None or value.__class__ is not ast.Call or last_name(value.func) != "Parameter" or not value.args:
        return None
    made = value.args[0]
    if made.__class__ is not ast.Call or last_name(made.func) not in _MAKERS or not made.args \
            or any(a.__class__ is ast.Starred for a in made.args):
        return None
    if len(made.args) == 1 and made.args[0].__class__ in (ast.Tuple, ast.List):
        return len(made.args[0].elts)
    if any(a.__class__ in (ast.Tuple, ast.List) for a in made.args):
        return None
    return len(made.args)


def _own_matrix_bias(ctx: Context, arg: ast.Attribute, use: ast.AST) -> bool:
    """``self.bias`` that the class itself makes a parameter of two or more dimensions
    (``self.bias = nn.Parameter(Tensor(n_tokens, d))``, a bias per token): a matrix initialiser
    works on it."""
    if arg.value.__class__ is not ast.Name or arg.value.id != "self":
        return False
    cls = ctx.class_of(use)
    values = ctx.self_attr_values(cls, "bias") if cls is not None else []
    dims = [_dims(ctx, v) for v in values if not (v.__class__ is ast.Constant and v.value is None)]
    return bool(dims) and all(d is not None and d >= 2 for d in dims)


class MatrixInitOnBias(Rule):
    code = "TW111"
    name = "matrix-init-on-bias"
    triggers = ("xavier", "kaiming", "orthogonal", "sparse_", "eye_", "dirac_")
    doc = """\
What it flags
  A matrix initialiser from `torch.nn.init` (`xavier_*`, `kaiming_*`, `orthogonal_`, `sparse_`,
  `eye_`, `dirac_`) applied to every parameter of a loop over `model.parameters()` or
  `model.named_parameters()` with no test in front of it (no `if p.dim() > 1`, no name test,
  no `continue`), or applied to a `.bias` directly - not to a `self.bias` the module makes
  itself with two or more dimensions (`self.bias = nn.Parameter(Tensor(n_tokens, d))`).

Why it matters
  These schemes derive fan-in and fan-out from at least two dimensions. Biases and
  normalisation weights are 1-D, so the first one raises "Fan in and fan out can not be
  computed for tensor with fewer than 2 dimensions" and the model never gets built.

Example
  for p in model.parameters():
      nn.init.xavier_uniform_(p)          # TW111: fails at the first bias

Fix
  Initialise only parameters with `p.dim() >= 2` with the matrix scheme and zero the biases,
  or use `torchwise.init_weights(model, scheme=...)`.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for name in MATRIX_INITS:
            for call in ctx.calls_named(name):
                if not call.args or not _is_matrix_init(ctx, call):
                    continue
                arg = call.args[0]
                if arg.__class__ is ast.Attribute and arg.attr == "bias":
                    if _own_matrix_bias(ctx, arg, call):
                        continue  # self.bias = nn.Parameter(Tensor(d_bias, d_token)): a 2-D bias of the module's own
                    yield ctx.finding(
                        self.code, call,
                        f"{last_name(call.func)} needs at least 2 dimensions; a bias has 1",
                        suggestion="initialise biases with nn.init.zeros_ (or constant_)",
                    )
                    continue
                if arg.__class__ is not ast.Name:
                    continue
                stmt = ctx.statement_of(call)
                loop = ctx.parent(stmt)
                if loop.__class__ is not ast.For or getattr(stmt, "_tw_field", "") != "body":
                    continue  # inside an if/try: guarded
                if _iterates_parameters(ctx, loop) != arg.id:
                    continue
                guarded = False
                for earlier in loop.body:
                    if earlier is stmt:
                        break
                    if any(n.__class__ in (ast.If, ast.Continue, ast.Try, ast.Assert) for n in ast.walk(earlier)):
                        guarded = True
                        break
                if guarded:
                    continue
                yield ctx.finding(
                    self.code, call,
                    f"{last_name(call.func)} is applied to every parameter, 1-D biases included, and will raise",
                    suggestion="apply it only when p.dim() >= 2 and zero the biases",
                )


RULE = MatrixInitOnBias()
