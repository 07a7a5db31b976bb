"""Evaluation that runs the model with autograd on.

What: when an ``evaluate(model, batch)`` function is given to the doctor, it is called once on
the model copy after the training steps, with a hook on the model noting whether each forward
pass ran with gradients enabled and returned outputs that require grad (an autograd graph was
built). Without ``evaluate=`` the check is skipped: the doctor cannot see evaluation code it is
not given (``torchwise lint`` checks evaluation loops statically; the Trainer evaluates under
``inference_mode``). In script mode the evaluation passes are the forwards no backward goes
through of a model in eval mode, or fed another DataLoader's batches than training's (a
validation loop); when the steps are done the doctor ends the training epoch early so that the
script's own evaluation runs and is seen.
Why: the graph keeps every intermediate activation alive until the outputs are dropped, so
evaluation needs several times the memory of a no-grad pass (large validation batches run out
of memory) and is slower; nothing uses those gradients.
Example: ``model.eval(); for x, y in val_loader: acc += (model(x).argmax(1) == y).sum()``.
Fix: wrap evaluation and inference in ``with torch.inference_mode():`` (or ``torch.no_grad()``);
``model.eval()`` alone switches Dropout/BatchNorm behaviour, not autograd.
"""

from __future__ import annotations

from torchwise.doctor.report import Finding, Skipped

CODES = ("TW104",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def check(ctx) -> list[Finding] | Skipped:
    script = getattr(ctx, "script", False)
    if not ctx.evaluate_given:
        if script:
            return Skipped(CODES, "no evaluation pass ran (a forward in eval mode, or on another loader's batches, "
                           "that no backward went through)")
        return Skipped(CODES, "no evaluate= function given: the doctor runs training steps only")
    if not ctx.eval_calls:
        return Skipped(CODES, "evaluate() did not call the model")
    graphs = sum(1 for enabled, requires in ctx.eval_calls if enabled and requires)
    if not graphs:
        return []
    line = ctx.scratch.get("eval_line", "")
    who = "the evaluation (model in eval mode, no backward)" if script else "evaluate()"
    return [Finding(
        "TW104", "warning",
        f"{who} ran {graphs} of {len(ctx.eval_calls)} forward pass(es) with autograd on, building graphs nobody uses",
        (f"evaluation forward at {line}" if line else "evaluation") if script else "evaluate()",
        {"forward_passes": len(ctx.eval_calls), "with_autograd_graph": graphs},
        "wrap evaluation in `with torch.inference_mode():` (model.eval() alone does not turn autograd off)",
    )]
