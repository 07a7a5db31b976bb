"""A loss (or any graph-carrying tensor) kept and built upon across steps: the graph grows.

What: in a script run, every result of an operation done outside the models' forward passes that
requires grad (a loss, a sum of losses), and every model output, is remembered weakly with the
step it was made at and the earlier steps whose results it holds (retained.py). An operation
whose graph-carrying result holds the results of two or more earlier steps (``total += loss`` by
its third step, ``ema = 0.9 * ema + 0.1 * loss``, ``sum(kept_losses)``, ``torch.cat(kept_outputs)``)
is the accumulation: reported with its line, the steps it spans and how often it happened. One
earlier step is allowed: a metric computed after ``optimizer.step()`` from that iteration's
output. Operations
on ``loss.item()`` or ``loss.detach()`` make plain numbers and are not seen; the models' own
forwards (a recurrent state) are not looked at. In Task mode the doctor runs its own loop: not
applicable.
Why: the result stays attached to the autograd graph of every step so far. Each step adds
its graph to the chain, nothing of it can be freed while the total lives (with evaluation
losses, never backwarded, that includes every activation), and memory grows until the run dies.
Example: ``running_loss += loss`` inside the training loop.
Fix: accumulate plain numbers: ``running_loss += loss.item()`` (or ``loss.detach()`` to stay on
the device, ``.item()`` once per log interval).
Measured (2026-11-25): ``total += loss`` is seen at its line by its third step,
``sum(loss_history[-100:])`` and ``torch.cat(outputs)`` as soon as they run; the fixed twins of
the doctor-bug corpus and 18 clean public scripts (pytorch/examples, yunjey's tutorial,
PyTorch-GAN) never hold two earlier steps' results. No threshold: one occurrence is the bug.
"""

from __future__ import annotations

from torchwise.doctor.report import Finding, Skipped

CODES = ("TW101",)
SCRIPT = True


def check(ctx) -> list[Finding] | Skipped:
    if not getattr(ctx, "script", False):
        return Skipped(CODES, "the doctor runs its own training loop; checked on scripts")
    e = getattr(ctx.watch, "retained", None)
    if not e:
        return []
    line = e.get("line", "")
    return [Finding(
        "TW101", "warning",
        f"a tensor that carries the autograd graph is built upon across steps ({e['function']} at step {e['used_at_step']} "
        f"on a result of step {e['made_at_step']}; {e['operations']} such operation(s) in {e['steps_with_it']} step(s)): "
        "the graphs of all steps stay alive and memory grows every step",
        line or "outside the model's forward",
        dict(e),
        "accumulate numbers, not tensors: total += loss.item() (or loss.detach(), with .item() once per log interval)",
    )]
