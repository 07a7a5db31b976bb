"""A module-level loss function (or mining/metric helper) of one module that runs every training
step because a *method* of another module calls it (TW207, :func:`.lossreads.every_step_call`):

- the ``forward`` of a loss module (or a method it calls) hands it its own inputs -
  ``class ContrastiveLoss(nn.Module): def forward(self, x, label): return LF.contrastive_loss(x, label)``
  with the criterion built and called by the training step: a loss class the project names
  (:func:`.masks.in_loss_module`) runs on every forward pass of the loss;
- a method of a model or trainer class that the training loop of a third module calls every step
  with the step's device tensors hands it its own parameters - ``model.getLoss(feat, out, labels)``
  in the loop, ``def getLoss(self, ..., labels): ... sigmoid_loss(results, labels)``.

The call in the method must hand the helper the method's own parameters, outside a periodic or
rarely-true branch; a method named for evaluation, or one off the training path, is left alone."""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import Context
from torchwise.lint.semantics.callers import method_call_sites
from torchwise.lint.semantics.evalblocks import off_training_path
from torchwise.lint.semantics.hostreads import holds_device_values
from torchwise.lint.semantics.masks import in_loss_module
from torchwise.lint.semantics.once import forward_path_function
from torchwise.lint.semantics.rarely import runs_rarely
from torchwise.lint.semantics.steps import hot_region_of, is_eval_name, runs_periodically
from torchwise.lint.semantics.stepvalues import step_device_value


def remote_method_step(other: Context, call: ast.Call) -> str | None:
    """Where the method of ``other`` around ``call`` (a call of a helper handed the method's own
    parameters, checked by the caller) runs every training step (module doc), or None."""
    method = other.function_of(call)
    klass = other.parent(method) if method is not None else None
    if klass.__class__ is not ast.ClassDef or is_eval_name(method.name) or hot_region_of(other, call) is not None \
            or runs_periodically(other, call) or runs_rarely(other, call) or off_training_path(other, call, method):
        return None
    if in_loss_module(other, method) and other.project.moves_to_device and forward_path_function(other, call) is not None:
        return f"{other.path}:{call.lineno}, in {klass.name}.{method.name}()"
    if method.name.startswith("_") or method.name in ("forward", "__call__"):
        return None  # (a private helper, or a forward: the loss module's case above, or a model's own check)
    for third, site in method_call_sites(other, method.name):
        if hot_region_of(third, site) is not None and not runs_periodically(third, site) and not runs_rarely(third, site) \
                and any(holds_device_values(third, a, site) or step_device_value(third, a, site) for a in site.args):
            return f"{os.path.basename(third.path)}:{site.lineno}, through {klass.name}.{method.name}()"
    return None


__all__ = ["remote_method_step"]
