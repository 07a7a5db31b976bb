"""The hooks the doctor attaches around a user's script, in the child process (see :mod:`.script`).

- ``Tensor.backward`` is wrapped: before it, the gradients it will add to are read (TW110); after
  it, the loss is noted as pending for the next optimizer step (one loss series per objective,
  :mod:`~torchwise.doctor.objectives`).
- Global optimizer step hooks: the gradients of the stepping optimizer's parameters, its
  objective's step, a sampled update/weight ratio; ``--steps`` counts the steps of *every*
  optimizer.
- Weights updated by hand (``p.data.add_(p.grad, alpha=-lr)``, no ``torch.optim``): when the
  parameters change between two backwards with no optimizer step, every backward is a step.
- ``DataLoader`` iterators are wrapped (loader wait, which loader feeds training). When the steps
  are done the training loader's epoch is ended early instead of stopping at once, so the script's
  own evaluation (``model.eval()``, ``no_grad``, another loader) runs and is seen — each other
  loader for at most ``EVAL_BATCHES`` batches and ``EVAL_SECONDS`` — and the script is stopped at
  its next training step.
"""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["StopScript", "Attached", "EVAL_BATCHES", "EVAL_SECONDS"]

EVAL_BATCHES = 10  # batches of each other loader after the steps (evaluation)
EVAL_SECONDS = 30.0  # at most this long after the steps, then the script is stopped
HAND_CHECKS = (2, 3, 5, 9, 17, 33, 65)  # backwards (no optimizer yet) at which the weights are compared with the start
GRAPH_PASSES = 3  # backwards whose graphs are walked for the parameters they train (TW115)


class StopScript(BaseException):
    """Raised from the doctor's hooks to end the script after the steps asked for."""


class Attached:
    """The hooks of the child process around the user's script."""

    def __init__(self, steps: int, budget: float | None, full: bool, evaluate: bool = True) -> None:
        from torchwise.doctor.script_evidence import ScriptEvidence
        from torchwise.doctor.watch import Watch

        self.steps, self.budget, self.full = steps, budget, full
        self.watch = Watch(labels=True)
        self.watch.retained_on = True
        self.evidence = ScriptEvidence(self.watch)
        self.names = self.evidence.names  # id(model) -> the script's variable holding it
        self.opt_names: dict[int, str] = {}  # id(optimizer) -> the script's variable holding it
        self.optimizers: list[Any] = []
        self.positions: list[list[int]] = []  # per optimizer: the watch's positions of its parameters
        self.backward_line = ""
        self.started = time.perf_counter()
        self.stopped = False
        self.total_steps = 0
        self.rounds = 0  # steps of the first optimizer (one row of gradient norms each)
        self.hand = False  # weights updated by hand after backward
        self.backwards = 0
        self.evaluate = evaluate and not full
        self.draining = False  # the steps are done: the script's evaluation runs
        self.drain_started = 0.0
        self._in_backward = False

    # -- attach / close --------------------------------------------------------------------------
    def attach(self) -> None:
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
        from torch.utils.data.dataloader import _BaseDataLoaderIter

        self.watch.attach()
        self.watch.activations_on = True
        self._handles = [register_optimizer_step_pre_hook(self._pre_step), register_optimizer_step_post_hook(self._post_step)]
        self._backward, self._grad = torch.Tensor.backward, torch.autograd.grad
        self._loader_iter, self._loader_next = torch.utils.data.DataLoader.__iter__, _BaseDataLoaderIter.__next__
        attached, original, autograd_grad = self, self._backward, self._grad
        loader_iter, loader_next = self._loader_iter, self._loader_next

        def backward(tensor, *args, **kwargs):
            if attached._in_backward:  # torch re-dispatches Tensor.backward through the watch's mode
                return original(tensor, *args, **kwargs)
            attached._before_backward(tensor)
            attached._in_backward = True
            try:
                result = original(tensor, *args, **kwargs)
            finally:
                attached._in_backward = False
            attached._after_backward(tensor)
            return result

        def grad(*args, **kwargs):  # an attack or a gradient penalty: that pass was not evaluation
            attached.evidence.gradients_taken()
            return autograd_grad(*args, **kwargs)

        def iterate(loader):  # the first loader iterated for training: its length is one epoch
            if attached.watch.result.distinct_batches is None and attached.total_steps == 0:
                try:
                    attached.watch.result.distinct_batches = len(loader)
                except TypeError:
                    pass
            iterator = loader_iter(loader)
            attached.evidence.loader_iter(loader, iterator)
            return iterator

        def next_batch(iterator):  # the time the step waits for its batch
            if attached.draining:
                attached._drain_next(iterator)
            t0, batch = attached.evidence.clock(), None
            try:
                batch = loader_next(iterator)
                return batch
            finally:
                t1 = attached.evidence.clock()
                attached.evidence.loader_next(iterator, (t1[0] - t0[0], t1[1] - t0[1]), batch)

        torch.Tensor.backward = backward  # type: ignore[method-assign]
        torch.autograd.grad = grad
        torch.utils.data.DataLoader.__iter__ = iterate  # type: ignore[method-assign]
        _BaseDataLoaderIter.__next__ = next_batch  # type: ignore[method-assign]

    def close(self) -> None:
        import torch
        from torch.utils.data.dataloader import _BaseDataLoaderIter

        torch.Tensor.backward = self._backward  # type: ignore[method-assign]
        torch.autograd.grad = self._grad
        torch.utils.data.DataLoader.__iter__ = self._loader_iter  # type: ignore[method-assign]
        _BaseDataLoaderIter.__next__ = self._loader_next  # type: ignore[method-assign]
        for h in self._handles:
            h.remove()
        self.watch.close()

    # -- backward --------------------------------------------------------------------------------
    def _before_backward(self, loss: Any) -> None:
        if self.draining or (self.hand and self._done()):
            self._stop()
        if self.hand:
            self.watch.updates.after()  # the hand update of the previous step is done
        if self.watch._params is None:  # before any update: the parameters of the models run so far
            import itertools

            roots = list(self.evidence.grad_roots.values())
            params = [p for p in dict.fromkeys(itertools.chain.from_iterable(r.parameters() for r in roots)) if p.requires_grad]
            if not params:  # no nn.Module: the tensors this loss's graph accumulates into (w, b of a hand-written model)
                params = _leaves(loss)
            self.watch.track(params, [])
            if not roots and params:
                found = _script_names(params)
                self.watch.result.param_names = [found.get(id(p), n) for p, n in zip(params, self.watch.result.param_names)]
        self.watch.cleared.before_backward(self.watch._params or [])
        if self.backwards < GRAPH_PASSES:  # TW115: parameters the loss trains that no model registers
            from torch import nn

            for t in _leaves(loss):
                if isinstance(t, nn.Parameter):
                    self.evidence.graph_params.setdefault(id(t), t)

    def _after_backward(self, loss: Any) -> None:
        from torchwise.doctor.frames import user_frame

        line = user_frame()
        if not self.backward_line:
            self.backward_line = line
        self.watch.objectives.backward(loss, line)
        self.watch.reset_stack()
        self.evidence.after_backward(loss)
        self.backwards += 1
        if not self.optimizers and not self.hand and self.backwards in HAND_CHECKS and self._weights_changed():
            self.hand = True  # the earlier backwards were steps too
            self.watch.result.hand_updated = True
        if self.hand and not self.optimizers:
            for value, at in self.watch.objectives.take_pending():
                self.watch.objectives.put_pending(value, at)
                self._hand_step(at)
        elif not self.optimizers and self.backwards >= HAND_CHECKS[-1] and not self.watch.result.never_updated:
            self.watch.result.never_updated = not self._weights_changed()

    def _weights_changed(self) -> bool:
        import torch

        params, start = self.watch._params, self.watch._start
        if not params or start is None:
            return False
        with torch.no_grad():
            return any(not torch.equal(p.detach(), s) for p, s in zip(params, start))

    def _hand_step(self, line: str) -> None:
        """One step of a hand-updated script: this backward; the update follows in the script."""
        positions = list(range(len(self.watch._params or ())))
        self.watch.note_grads(positions)
        self.watch.push_grads()
        self.watch.cleared.step(0, positions)
        self.watch.objectives.step(f"backward at {line}", f"loss backwarded at {line}", None, self.evidence.pass_roots())
        self.evidence.before_step(None, True)
        if self.watch.updates.sampled(self.total_steps):
            self.watch.updates.before([self.watch._params[i] for i in positions], positions)  # type: ignore[index]
        self._count_step(True)

    # -- optimizer steps -------------------------------------------------------------------------
    def _pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.draining:
            self._stop()  # the evaluation is over: the next training step is not run
        if all(o is not optimizer for o in self.optimizers):
            params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
            self.optimizers.append(optimizer)
            self.positions.append(self.watch.track_more(params, [optimizer]))
        k = next(i for i, o in enumerate(self.optimizers) if o is optimizer)
        first = k == 0
        self.watch.note_grads(self.positions[k])
        if first:
            self.watch.push_grads()
        if self.rounds < 3:
            self._name_models()
        self.watch.cleared.step(k, self.positions[k])
        if len(self.watch.result.lr_history) < 20_000:
            self.watch.result.lr_history.append((k, self.total_steps, [float(g.get("lr", 0.0)) for g in optimizer.param_groups]))
        self.watch.objectives.step(f"optimizer {k}", self._opt_name(k), k, self.evidence.pass_roots())
        self.evidence.before_step(optimizer, first)
        if self.watch.updates.sampled(self.total_steps):
            params = self.watch._params or []
            self.watch.updates.before([params[i] for i in self.positions[k]], self.positions[k])

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.watch.updates.after()
        self._count_step(optimizer is self.optimizers[0])

    def _count_step(self, first: bool) -> None:
        """One optimizer step (any optimizer) or hand-updated backward is done."""
        if first:
            self.rounds += 1
            self.evidence.after_step(self.watch.activations_on)
        self.evidence.step_done()
        self.total_steps += 1
        self.watch.after_step()
        if first:
            self.watch.activations_on = self.rounds % 2 == 0
        if self.stopped or self.draining or not self._done():
            return
        if self.evaluate and self.evidence.train_iterator() is not None:
            self.draining = True  # the training loader's epoch ends: the script's evaluation runs
            self.drain_started = time.perf_counter()
            self.evidence.start_evaluation(self.watch.step_index)
        elif not self.hand:
            self._stop()
        # weights updated by hand: stopped at the next backward, after this step's update

    def _done(self) -> bool:
        over_budget = self.budget is not None and time.perf_counter() - self.started > self.budget
        return not self.full and (self.total_steps >= self.steps or over_budget)

    # -- stopping --------------------------------------------------------------------------------
    def _drain_next(self, iterator: Any) -> None:
        if time.perf_counter() - self.drain_started > EVAL_SECONDS:
            self._stop()
        if iterator is self.evidence.train_iterator() or self.evidence.served_count(iterator) >= EVAL_BATCHES:
            raise StopIteration

    def _stop(self) -> None:
        self.stopped = True
        raise StopScript()

    # -- names -----------------------------------------------------------------------------------
    def _opt_name(self, k: int) -> str:
        opt = self.optimizers[k]
        return self.opt_names.get(id(opt)) or f"optimizer {k + 1} ({type(opt).__name__})"

    def _name_models(self) -> None:
        """The script's variables that hold the models (``generator``...) and optimizers (``opt_d``)."""
        models = [r for r in self.evidence.grad_roots.values() if id(r) not in self.names]
        self.names.update(_script_names(models))
        self.opt_names.update(_script_names([o for o in self.optimizers if id(o) not in self.opt_names]))


def _script_names(objects: list[Any]) -> dict[int, str]:
    """id -> the name of a variable of the user's code (not torch's, not torchwise's) holding it."""
    from torchwise.doctor.frames import _OWN_DIR, _SKIP_DIRS

    wanted, found = {id(o) for o in objects}, {}
    frame = sys._getframe(1)
    while frame is not None and wanted:
        if not frame.f_code.co_filename.startswith(_SKIP_DIRS + (_OWN_DIR,)):
            for scope in (frame.f_locals, frame.f_globals):
                for name, value in list(scope.items()):
                    if id(value) in wanted and not name.startswith("_"):
                        found[id(value)] = name
                        wanted.discard(id(value))
        frame = frame.f_back
    return found


def _leaves(loss: Any, limit: int = 10_000) -> list[Any]:
    """The leaf tensors that need grad in ``loss``'s graph (where backward accumulates), in graph order."""
    node = getattr(loss, "grad_fn", None)
    seen, kept, stack, leaves = set(), [], [node] if node is not None else [], []
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        kept.append(node)  # alive while walking: no id is reused
        variable = getattr(node, "variable", None)
        if variable is not None and variable.requires_grad:
            leaves.append(variable)
        stack.extend(n for n, _ in getattr(node, "next_functions", ()))
    return list(reversed(leaves))
