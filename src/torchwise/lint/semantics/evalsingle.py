"""Single forward passes of a script after ``model.eval()`` (TW104), outside any loop: a viewer that
restores trained weights and runs the model once, a model file's ``__main__`` smoke test
(``model.eval(); output = model(input)``), and the final rendering after an optimisation loop that
ran through a frozen network (a GAN projector optimising a latent). And what is no evaluation: a
single run on inputs made up in place, a probe of output shapes (:func:`shape_probe`)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.frozen import eval_calls
from torchwise.lint.semantics.projectclasses import project_kind
from torchwise.lint.semantics.steps import training_calls


def _main_guard(ctx: Context, node: ast.AST) -> bool:
    return any("__main__" in ctx.text(if_node.test) for if_node, _ in ctx.enclosing_ifs(node))


def _defines_module(ctx: Context) -> bool:
    return any(any(b.startswith("torch.nn.") for b in ctx.local_class_bases(k.name)) for k in ctx.nodes.get(ast.ClassDef, ()))


def single_inferences(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(call, message)`` for module-level runs of a model after its ``.eval()``, outside loops and
    no_grad: in a script that trains nothing, of a model it restored (``net.load_state_dict(...)``)
    or in the ``__main__`` block of a file that defines the model class; in a script that trains,
    after its last backward/optimizer step, of a frozen network no optimizer holds and that never
    goes back to training mode."""
    if ".eval()" not in ctx.source:
        return
    evals = [c for c in ctx.calls_named("eval") if not c.args and ctx.function_of(c) is None]
    if not evals:
        return
    trains = training_calls(ctx)
    last_train = max(((c.lineno, c.col_offset) for c in trains), default=None)
    for ev in eval_calls(ctx, evals):
        who = ctx.text(ev.func.value)
        start = (ev.lineno, ev.col_offset)
        runs = sorted((n for n in ctx.calls_named(last_name(ev.func.value) or "") if (n.args or n.keywords)
                       and ctx.text(n.func) == who and (n.lineno, n.col_offset) > start and ctx.function_of(n) is None),
                      key=lambda n: (n.lineno, n.col_offset))
        if not runs or f"{who}.train(" in ctx.source:
            continue
        if not trains:
            looped = any(ctx.enclosing_loops(n) for n in runs)  # (a loop after eval() is the evaluation loop the rule reports itself)
            runs = [n for n in runs if not ctx.enclosing_loops(n)]
            if not runs or under_no_grad(ctx, runs[0]):
                continue
            call = runs[0]
            restored = any(ctx.text(n.func) == f"{who}.load_state_dict" and (n.lineno, n.col_offset) < (call.lineno, call.col_offset)
                           and ctx.function_of(n) is None for n in ctx.calls_named("load_state_dict"))
            if looped and not restored:
                continue  # (beside the evaluation loop, single runs count only of trained weights: no smoke test)
            if _exported_after(ctx, call, who):
                continue  # a dry run right before `torch.jit.trace(net, img)`: the export script's warm-up
            if restored or (_main_guard(ctx, call) and (_defines_module(ctx) or _project_built(ctx, ev.func.value, ev))):
                for run in runs:  # each pass: the check's second run after `switch_to_deploy()` records a graph too
                    if not under_no_grad(ctx, run):
                        yield run, (f"{who} runs once after {who}.eval() with autograd recording"
                                    f"{' (a smoke test of the model)' if not restored else ''}; inference needs no graph")
            continue
        after = [n for n in runs if (n.lineno, n.col_offset) > last_train and not ctx.enclosing_loops(n)
                 and not under_no_grad(ctx, n)]
        if after and f"{who}.parameters(" not in ctx.source:
            yield after[0], (f"{who} (in eval mode, in no optimizer) runs after the last optimisation step with autograd "
                         "recording; its output needs no graph")


def _project_built(ctx: Context, model: ast.AST, use: ast.AST) -> bool:
    """``model = create_RepVGG_B1(deploy=False)`` in a ``__main__`` check of a script: the model is
    built by a module class or a builder function another file of the project defines."""
    if model.__class__ is not ast.Name or not ctx.project.files:
        return False
    b = ctx.binding_at(model.id, use)
    if b is None or b.kind != "assign" or b.value.__class__ is not ast.Call:
        return False
    name = last_name(b.value.func)
    if name is None or name in ctx.local_classes:
        return False
    if project_kind(ctx, b.value.func) == "module":
        return True
    head = f"def {name}("
    return any(head in text for path, text in ctx.project.files if path != ctx.path)


_EXPORTS = ("torch.jit.trace", "torch.onnx.export", "torch.jit.script")


def _exported_after(ctx: Context, call: ast.Call, who: str) -> bool:
    """The script exports the model it just ran (``torch.jit.trace(net, img)``, ``torch.onnx.export(net, ...)``)
    at module level after the run: the run is the export's dry run, the graph is the export's business."""
    return any(c.args and ctx.text(c.args[0]) == who and (c.lineno, c.col_offset) > (call.lineno, call.col_offset)
               and ctx.function_of(c) is None for c in ctx.calls_to(*_EXPORTS))


_DUMMY_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty"})


def shape_probe(ctx: Context, call: ast.Call) -> bool:
    """A single run, outside any loop, on inputs made up in place (``data = torch.randn(2, 3, 32, 32)``)
    in a function that is no evaluation by name: a probe of the output shapes before training
    builds the layers that depend on them, not an evaluation pass."""
    if ctx.enclosing_loops(call) or not call.args:
        return False
    for arg in [*call.args, *(k.value for k in call.keywords if k.arg is not None and k.value.__class__ is not ast.Constant)]:
        value = arg
        if arg.__class__ is ast.Name:
            b = ctx.binding_at(arg.id, call)
            value = b.value if b is not None and b.kind == "assign" else None
        if value.__class__ is not ast.Call or ctx.qualname(value.func) not in _DUMMY_FACTORIES:
            return False
    return True
