"""TW104: evaluation that runs the model with autograd recording."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.frozenargs import frozen_by_every_caller
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.deadcode import dead_ranges
from torchwise.lint.semantics.frozen import eval_calls, eval_receivers, frozen_forwards, is_eval_switch
from torchwise.lint.semantics.evalbuilt import eval_built_runs
from torchwise.lint.semantics.evalloaders import loader_eval_runs
from torchwise.lint.semantics.evalcallers import nested_in_plain_function, reached_only_under_no_grad
from torchwise.lint.semantics.evalhandoff import handed_over, only_called_without_grad
from torchwise.lint.semantics.evaldecode import decoding_runs
from torchwise.lint.semantics.evalstate import eval_state_runs
from torchwise.lint.semantics.evalregions import (called_for_training, eval_regions, evaluation_method, global_eval_runs,
                                                  event_nodes, grad_events)
from torchwise.lint.semantics.evalruns import eval_runs
from torchwise.lint.semantics.evalpaths import acting_calls
from torchwise.lint.semantics.evalreach import bare_project_evaluations, module_test_loops
from torchwise.lint.semantics.evalpeers import mixed_function_runs, peer_runs
from torchwise.lint.semantics.evalshared import shared_loop_runs
from torchwise.lint.semantics.evalsingle import single_inferences
from torchwise.lint.semantics.globalevals import global_model_runs
from torchwise.lint.semantics.modelmethods import is_module_method
from torchwise.lint.semantics.hostresults import host_result_runs
from torchwise.lint.semantics.logsamples import logging_samples
from torchwise.lint.semantics.paramfree import parameter_free_run
from torchwise.lint.semantics.restoredruns import restored_runs
from torchwise.lint.semantics.steps import backward_calls, is_eval_name, optimizer_steps

_HOST_TRIGGERS = (".numpy()", ".tolist()", "beam_search(",  # (files only host_result_runs reads)
                  "load_state_dict(", "torch.load(", "jit.load(", "load_from_checkpoint(")  # (and restored_runs)
_OTHER_FRAMEWORKS = ("tensorflow", "keras", "jax", "flax", "mxnet", "paddle")


class EvalWithoutNoGrad(Rule):
    code = "TW104"
    per_call = True
    name = "eval-without-no-grad"
    triggers = _HOST_TRIGGERS + ("eval", "train(False", "train(mode=False", "valid", "test", "predict", "infer", "step(", "_action(", "def act(", "def policy",
                "training=False", "no_grad", "valloader", "val_loader", "val_dataloader", "val_data_loader", "dev_loader",
                "devloader", "dev_dataloader")
    skip_tests = True  # tests check what a model computes; the memory of a graph there is no concern
    doc = """\
What it flags
  A model run inside code that is evidently evaluation, with autograd on. Evaluation is a
  function that calls `model.eval()` or is named like `evaluate`/`validate`/`predict`/
  `inference`, module-level code after `model.eval()`, and - in a function or script that
  also trains - the stretch from `model.eval()` to the next `model.train()` (or the end) when
  no backward, optimizer step or gradient use comes first (an evaluation pass inside the
  training function). Every model run of an evaluation is reported - the support and the query
  embeddings and the head of a few-shot validation, each branch of an evaluator
  (`if tar: model(x, lengths)` / `else: model(x)`), the final test loop after the validation
  passes - but not a loss module on its outputs (`criterion(out, y)`). The receiver of `.eval()`
  is a model when the function also calls it (`net_g.eval()`, then `net_g(data)`; also
  `self.generator.eval()`, then `self.generator(z, y)`; also through a method of the class named
  for inference that the training step backpropagates, `self.G.eval()` then `self.infer_G(x)`), and a loop
  that puts modules in eval mode names them all (`[x.eval() for x in (embedding_net,
  cls_head)]`). A model run is a call of the module (`model(x)`) or of a method that runs
  its forward pass after `.eval()` on it: `agent.get_action_and_value(x)`, `model.generate(ids)`
  (for a class of this file, a method that calls the module or its submodules; for a model handed in,
  a method every project model class that defines it runs its network in - `model.calculate_loss(x)`
  calling `self.forward(x)`, not `self.loss(x, y)` -; for an imported class, a method named for running it - `forward_masks(x)` and other `forward_*` methods, and
  scoring methods such as `lm_model.log_prob(words)` or `net.predict_proba(x)`, and
  `extract_feature(x)`, included; also such a method bound to a name first, `encode =
  trainer.gen_a.encode if a2b else trainer.gen_b.encode` after `trainer.eval()`, then
  `encode(images)` - unless the project decorates a method of that name
  with `@torch.no_grad()` or the class comes from a library whose `generate()` does so, such as
  transformers). Nothing in an evaluation function may need gradients (no `backward()`,
  optimizer step, `torch.autograd.grad`, `requires_grad_`, `img.requires_grad = True` - gradients
  with respect to the input -, adversarial `perturb()`; `Variable(x, requires_grad=False)`
  asks for none), and the
  run must not be inside `with torch.no_grad()`/`torch.inference_mode()`, under such a
  decorator, after `torch.set_grad_enabled(False)`, in a function every caller of this file hands
  a model it froze with `requires_grad_(False)`, in a function this file calls under no_grad and
  nowhere bare on a path that runs (`with torch.no_grad(): validate(...)` in the epoch loop beside
  a bare `validate(...)` on the `--evaluate` path is reported), or in one whose result this file backpropagates (`loss = F.cross_entropy(
  self.predict(x), y); loss.backward()`), or in a module-level function that every way the
  project reaches passes under no_grad (through the file's own functions and closures up to the
  calls other modules make: `with torch.no_grad(): eval_ood_detection(...)` in `eval.py`
  reaching `compute_ood_score`), or in a method of an evaluator class that only its class's own
  methods call (`self.eval_chip(net, crop)` from `crop_eval`, from a `__call__` decorated
  `@torch.no_grad()`; other modules call it only under no_grad or from a module-level function
  every way in passes under no_grad: `model.greedy_decode(ids, n)` in an inference script's
  per-example helper run inside `with torch.no_grad():`; a Lightning `validation_step`/`test_step`
  calling it runs under no_grad) - also when the evaluation puts the model
  back with `model.train()` before it returns (`self.vali(loader)` called only inside `with
  torch.no_grad():` in the epoch loop). A function named for evaluation that is nested in a function
  that is not evaluation (`def inference(model, xyz)` inside a renderer's `render_rays()`,
  which the training step calls) runs as its enclosing function does: it is no evaluation of
  its own. In a script's module-level evaluation, each later branch of the `if` holding the
  first evaluation loop (`if kind == "a": loop` / `elif kind == "b": loop`) is a pass of its own
  and is reported too.
  A decorator or context manager named for no_grad/inference_mode (`@smart_inference_mode()`),
  or a function of this file that applies one, counts as no_grad. Factory calls
  (`create_model(...)`, names bound to functions or classes) are not forward passes. Test
  files and unit tests (`test*` functions and `_test*` helpers; in a file that is no test file, a
  `test(self, setting)` method of an experiment class that is no `TestCase`, a module-level
  `test_net(net, dataset, ...)` that loops over what it is given and asserts nothing, and a
  parameterless `def test():` that puts a global model (or its enclosing function's: a closure) in eval
  mode and loops or is called by the script - also one defined under `if __name__ ...:` -,
  are evaluation; so is a `test*` function the project's own code calls, whatever it asserts -
  `ret = test(model, users)` in the training script, `test(path)` in the `__main__` block - and a
  parameterless one the script calls after putting the global model it runs in eval mode, such
  as a speed test `net.eval(); test_latency()`, and one the script calls that puts the model it is
  handed in eval mode and scores it once, `test_regression(model, feats, labels)`), framework hooks (`validation_step`), methods of `nn.Module` classes and of
  `PreTrainedModel` subclasses (part of some forward pass; also a class whose module base another
  file of the project defines, `class S3Rec(SequentialModel)`), functions that are only handed to
  other code (`inference_on_dataset(eval_fn, ...)`: the caller sets grad mode), modules of this file whose
  `forward` runs under no_grad itself, `stack.enter_context(torch.no_grad())`, and an `eval()`
  followed by a backward pass (BatchNorm frozen for training) are left alone.
  Also in a training loop: the model call that picks the action an environment steps with
  (`q_values = q_network(obs)`, then `actions = q_values.argmax(1).cpu().numpy()` and
  `envs.step(actions)`), outside no_grad, when its output goes nowhere else - not collected,
  returned or summed into the loss (REINFORCE keeps its log-probabilities: not flagged) - or
  that is made host data on the spot (`action = policy_net(s)[0][0].detach().numpy()`) and
  stepped with, whatever else keeps it (exploration noise added in place, `action += noise`,
  keeps it an action). Likewise in the environment loop of a script that trains nothing (an
  expert-trajectory collector, an evaluation rollout), and in one that hands its batches to a
  trainer (`log_dict = trainer.train(batch)`, `agent.update(batch)`: the online phase of
  offline-to-online RL), and in any other loop that steps an environment (an agent's `run()` whose
  greedy evaluation branch sits beside the branch collecting transitions for its update). Not a
  library agent's `predict()` (stable-baselines3 runs its policy under no_grad itself). A module's call of its own `step` method (`h, att, _ = self.step(x, h,
  enc)` in a beam search of an `nn.Module` that defines `step`) is a decoder step, no environment.
  And in a class that is no `nn.Module` and has no method named for training (`train`, `learn`,
  `update`, `step`...), in a file that trains nothing and takes no gradients, a method that runs
  `self.model` (or `self.model.decoder(z)`) bare and takes the output to the host on the spot
  (`.cpu()`, `.numpy()`, `.tolist()`, `.item()`) while another method of the class runs
  `self.model` under no_grad (a VAE visualiser's `_decode_latents()` beside its no_grad
  `reconstruct()`), unless the class calls that method under no_grad. Likewise a module-level
  function of such a file (a benchmark entry, `def test():` parsing its own arguments) that runs
  other passes under no_grad and one model bare, outside loops, whose result it does not return.
  And in the top-level code of such a file (an inference script), a model run bare whose result
  the passes under no_grad take (`sF = vgg(styleV)`, then `with torch.no_grad(): feature =
  matrix(cF, sF)`): the features need no graph either.
  And a generation run of the trained network after the optimizer step of its training loop,
  for the logs (`(y_gen, *_), *_ = generator.module(x[:1], x_lengths[:1], gen=True)`,
  `model.infer(text)`, also `generate=True`/`sample=True`), outside no_grad, whose result feeds
  no backward: it keeps the graph of a whole generation for a picture. So does any network run in
  the training loop (or in a helper it calls bare) whose output goes only to pictures
  (`fake = net_G(sample_z).cpu()`, then `make_grid(fake)`, `save_image(...)`, `add_image(...)`).
  And a pass over a validation or test loader (`for i, (x, y, *rest) in enumerate(valloader):`,
  `for x, y in self.val_loader:`; names like `val_loader`, `valid_loader`, `test_dataloader`,
  `dev_loader`) that runs the model with no `.eval()` before it in its function or script and no
  no_grad around it, and takes no gradients inside (no backward, optimizer step, `autograd.grad`,
  `requires_grad`): a segmentation script scoring its validation images every few epochs.
  Not in a function named for evaluation or that calls `.eval()` (checked as above), an `nn.Module`
  method, a function only called under no_grad or whose result is backpropagated, or on a model
  the function is handed (its caller is reported).
  And a test pass that reuses the training loop (`def test(self, epoch): self.iteration(epoch,
  self.test_data, train=False)`, or after `self.model.eval()` in any method or in a script:
  `self._run_one_epoch(epoch, cross_valid=True)`, `backprop(0, model, data, opt, training=False)`)
  when that loop never switches autograd off itself (no `no_grad`, `set_grad_enabled`,
  `inference_mode`) and the call is not under no_grad: reported at each forward pass of the loop
  outside the branches only training takes (`if training: ...backward...`).
  In an evaluation function, a method named for running the model it is handed counts as a run
  (`evaluate(model, dataset)` calling `model.predict(...)` per user).
  And after `self.model.eval()`, a helper method of the same class that runs `self.model`
  (`pred, true = self._process_one_batch(x, y)`, shared with the training loop) and switches
  autograd neither off nor on itself: reported at the call (a helper named for evaluation,
  `_predict_batch`, is reported once at its own forward pass instead). Likewise a function of
  another module of the project handed the model after `model.eval()` (`evaluate.metrics(model,
  test_loader, k)`, whose loop calls `model(user, item)` or `model.forward(e1, rel)`, also a
  star-imported one, `from test import *` then `lfw_test(model, ...)`, and one that hands the model
  on to another function of its file that runs it) with no grad switch or `.eval()` of
  its own. And an agent's action-selection method (`select_action(self, state)`, `act`) that
  runs its network (`self.policy.sample(state)`, `self.actor(state)`) outside no_grad and
  returns the action detached from the graph - keeping nothing of the run that still carries it
  (`self.transition.extend([log_pi, v])` of an A2C is backpropagated later) - (`.detach()`, `.cpu().numpy()`, `.item()`; also an
  actor's `policy(self, state, goal, to_numpy=True)`/`policy_with_noise(...)` whose tensor return
  runs only when a caller passes `to_numpy=False`, which none does): it runs every environment step and
  its graph is never used - unless every call of it in the project sits under no_grad (`with
  torch.no_grad(), utils.eval_mode(agent): action = agent.act(obs, step, eval_mode=True)`).
  And a frozen network in a training step: after `teacher.eval()` (or `encoder.eval()` in the
  training function it is handed to), a network that is never put back in training mode, whose
  `.parameters()` no optimizer of the file holds and whose `requires_grad` is left on, run on the
  batch (not on another network's output) in the loop that backpropagates beside the network being
  trained: reported at its forward pass; also one put in eval mode through a move
  (`flow_net.cuda().eval()`) whose output, or a method's, is `.detach()`ed at once
  (`flow_net.estimate(x).detach()`, on any input): reported at every such pass. `model.train(False)`/`model.train(mode=False)` count as
  `.eval()`; a function of this file (nested or handed the model: `describe(encoder, decoder,
  path)` after `.eval()` in `__main__`) that runs the model is reported at its forward pass. Quiet:
  a model whose parameters the function turns off first (`for p in net.parameters():
  p.requires_grad = False`), a frozen network fed a generator's output (perceptual loss), a
  function that chooses grad mode itself (`enable_grad() if training else no_grad()`).
  And a class whose model is built in evaluation mode (`self.model = Model(path, is_eval=True)`,
  `Net(ckpt, training=False)`: the model's constructor calls `.eval()`) and whose other methods
  run it (`self.model.encoder(x)`, `self.model(x)`) outside no_grad: reported once per method at
  its first forward pass - unless the class backpropagates, steps an optimizer or switches grad
  mode itself, or the file calls that method only under no_grad.
  And an inference API whose model one function puts in eval mode and others run: a class's
  `load()` (`self._model.eval()`, or `model.eval(); return model` bound as `self.model =
  self.init_model()`) and its `synthesize(...)` running `self._model.generate(...)`, or a module's `load_model()` (`global _model; ...; _model.eval()`) and its `embed(frames)`
  running `_model.forward(frames)` - reported once per running function, unless the model is put
  back in training mode, the class or file trains, the function switches grad mode, every call of
  it is under no_grad, or the model's class runs that method under no_grad itself.
  And autoregressive decoding for inference: a function named for it (`generate`, `translate`,
  `sample`, `decode`, `beam_search`; no `nn.Module` method) whose loop runs a network, reads its
  output on the host (`output.data`, `.item()`) and feeds the choice back as the next input, and
  that returns text or host values, with no backward or grad switch of its own: reported at its
  first network run (a char-RNN's `generate(decoder, prime_str)`, a seq2seq `translate(text)`).
  And an RL agent's `eval_step(self, state)` that runs its network and returns host data
  (`to_np(action)`, a NumPy result, `[action]`), and an agent's `step()`/`_transition()` that steps
  its environment once per call (`next_state, reward, done, info = self.task.step(action)`) after
  running its network for an action that only becomes that action (through `to_np`, a method of the
  class that returns host data, epsilon-greedy) - a later `action = self.network.actor(states)` of
  the update is another value. And a model class that evaluates itself: an `nn.Module` method named
  for evaluation (`test_loop(self, test_loader)`) that loops over the data it is handed and runs the
  model - `self.set_forward(x)` (few-shot models' forward over an episode), `self.forward(x)`,
  `self.feature.forward(x)` - itself or through methods of the class (`self.correct(x)`,
  `self.analysis_loop(loader)`), with no grad switch on the way and no call of it in the project
  under no_grad: reported at the forward pass. An explicit `.forward(x)` on the receiver of
  `.eval()` counts as a run (`self.eval()` then `self.forward(data)`), and so does
  `model.set_forward(z, is_feature=True)` in an evaluation function. And a runner's evaluation
  method called bare (`test_evaluator.evaluate(keep_all=True)`) when every definition of it in the
  project puts the model in eval mode and runs it with no grad switch of its own while another call
  of it sits under no_grad. And single module-level runs after `.eval()`, outside loops: in a script
  that trains nothing, of a model it restored (`net.load_state_dict(state)`) or in the `__main__`
  block of a file that defines the model class or builds it with a class or builder function of
  another module of the project (a smoke test: `model = create_net(deploy=False); model.eval(); out =
  model(x)`) - every such run, also the second one after a conversion (`switch_to_deploy()`); in a
  script that trains, after its last backward/optimizer step, of an eval-mode network no optimizer
  holds (a GAN projector rendering the latent it optimised). Not the dry run of an export script
  right before it traces or exports that network (`y = net(img)`, then `torch.jit.trace(net, img)`
  or `torch.onnx.export(net, ...)`).
  And in a script that trains nothing and asks for no gradients, a network the script puts in eval
  mode at module level (`sr_net.eval()`, or `enc = SpeakerNet().eval().cuda()` in one chain, also in
  the `__main__` block) run by a module-level function only this file calls (`def upscale(img): out =
  sr_net(img)`), or, when put in eval mode in its building chain, in a module-level loop or once after
  its weights are restored (`from torch.autograd import Variable` asks for no gradient). With no `.eval()`,
  no grad switch, nothing that trains or takes gradients (backward, optimizer, `requires_grad`, trainer), each run
  of a model the same scope restored (`model.load_state_dict(torch.load(p))`, `torch.load(p)["model"]`,
  `Tagger.load_from_checkpoint(ckpt)`, then `model(img)`, `tagger.model(ids)`) is reported. Beside a
  module-level evaluation loop, the single runs of a restored model before it are reported too. An evaluation function handed to a
  worker pool or thread (`pool.map(score_chunk, parts)`, `Process(target=f)`) is checked as if called:
  a worker starts with autograd on.
  And a function that runs a network and returns only host data, keeping nothing else of it (a
  model's `predict(self, data)` returning `score.cpu().data.numpy()`, an agent's bonus returned
  `.data.cpu().numpy()`, `generate_fast()` gathering NumPy samples, a `beam_search(src, model, ...)`
  returning text, at each run; a helper only it calls is reported at its own runs): not when it
  stores or hands on a value with a graph (`self.log_probs.append(...)`), takes gradients or
  switches grad mode, is a loss class's method, or a call of its name sits under no_grad.
  Quiet besides: code after `torch.set_grad_enabled(False)` as a statement that the file never undoes -
  in the `__init__` of the class whose method runs the model (an inference wrapper), or at module level
  before any module-level call of the running function; a module without parameters (torchaudio
  transforms, and classes of the project built only from them, such as a mel-spectrogram front end)
  whose output goes to no other network; a single run outside loops on inputs made up in place (`data =
  torch.randn(2, 3, 32, 32)`) in a function not named for evaluation - a probe of output shapes
  before training builds the layers that need them; a call of the class's own method named like a
  model (`self.model_forward(img)`, decorated `@torch.inference_mode()`), a project class reached
  by a star import and built (`model_whale(...).cuda()`); a helper handed a network whose parameters were all frozen first, a function
  decorated `@torch.no_grad()` that runs a global model, an imported model's method whose every
  definition in the project runs under no_grad itself or hands over to another object's method of
  that name (`vae.sample(n)` decoding under no_grad), and a function that takes gradients through a
  helper of its file (`self.cac_jacobian(...)` calling `torch.autograd.grad`), and functions that
  nothing in the project calls or names (dead code never runs; a module-level function of a file
  that calls a bare `fire.Fire()` is a command-line sub-command, and runs). That includes an
  interface the project's own base class declares and every model overrides (`full_rank(u)` of
  each recommender) when no script, module, test, notebook or README example calls it; an
  override of a library base class (`nn.Linear.reset_parameters`, a Lightning hook) still counts.

Why it matters
  With autograd on, every operation on parameters that require grad records the graph and
  keeps intermediate activations for a backward pass that never comes. Evaluation then needs
  several times the memory it should, runs slower, and large evaluation batches run out of
  memory.

Example
  def evaluate(model, loader):
      model.eval()
      for x, y in loader:
          out = model(x)            # TW104

Fix
  Decorate the function with `@torch.inference_mode()` (or `@torch.no_grad()` when outputs
  are later used with autograd), or wrap the loop in `with torch.inference_mode():`.

Lint and the doctor
  Lint reads evaluation code: functions named for evaluation, code after `model.eval()`, the
  evaluation stretch of a training function, forward passes through methods such as
  `agent.get_action_and_value(x)`. The doctor runs the evaluation it is given (`evaluate=`,
  or in script mode the passes of a model in eval mode that no backward goes through) and
  records whether each forward pass built an autograd graph - code lint cannot read (another
  module, a framework's loop) included.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        found = list({(f.line, f.col): f for f in self._findings(ctx)}.values())  # one finding per forward pass
        dead = dead_ranges(ctx, {f.line for f in found}) if found else []
        calls = {(c.lineno, c.col_offset + 1): c for c in ctx.nodes.get(ast.Call, ())} if found else {}
        yield from (f for f in found if not any(a <= f.line <= b for a, b in dead)  # code nothing runs (METHOD R5)
                    and not ((c := calls.get((f.line, f.col))) is not None and parameter_free_run(ctx, c)))  # no graph to record

    def _findings(self, ctx: Context) -> Iterator[Finding]:
        if not ctx.imports_module("torch") and any(ctx.imports_module(m) for m in _OTHER_FRAMEWORKS):
            return  # a TensorFlow/JAX file of a mixed project: no autograd of torch to turn off
        if not any(t in ctx.source for t in self.triggers[len(_HOST_TRIGGERS):]):
            for node, message in [*host_result_runs(ctx), *restored_runs(ctx)]:  # (the only passes that read such a file)
                yield ctx.finding(self.code, node, message, suggestion="run it under `with torch.no_grad():`")
            return
        # candidates: functions named like evaluation, and scopes that call X.eval()
        scopes: dict[int, ast.AST] = {}
        for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
            for func in ctx.nodes.get(kind, ()):
                if is_eval_name(func.name) or (func.name.startswith("test") and ctx.parent(func) is ctx.tree
                                               and evaluation_method(ctx, func)):
                    if not nested_in_plain_function(ctx, func, lambda f: is_eval_name(f.name) or bool(eval_calls(
                            ctx, list(ctx.walk_body(f.body, into_defs=True))))):
                        scopes[id(func)] = func  # (a nested `inference()` helper runs as its enclosing function does)
        for call in ctx.calls_named("eval", "train"):
            if call.func.__class__ is ast.Attribute and (not call.args and call.func.attr == "eval" or is_eval_switch(call)):
                scope = ctx.scope_of(call)
                if scope.__class__ is not ast.Lambda:
                    scopes[id(scope)] = scope
        for scope in sorted(scopes.values(), key=lambda s: getattr(s, "lineno", 0)):
            found = self._check_scope(ctx, scope)
            if scope.__class__ is ast.Module or not scope.name.lstrip("_").startswith("test"):
                found += [ctx.finding(self.code, node, f"{who} is frozen (eval mode, in no optimizer) but runs with autograd "
                                      "recording in every training step; its output needs no gradient",
                                      suggestion=f"run {who} under `with torch.no_grad():` (or call {who}.requires_grad_(False))")
                          for node, who in frozen_forwards(ctx, scope)]
            yield from {(f.line, f.col): f for f in found}.values()
        for node, message in eval_built_runs(ctx) if "=True" in ctx.source or "=False" in ctx.source else ():
            yield ctx.finding(self.code, node, message, suggestion="run the pass under `with torch.inference_mode():`")
        for node, message in decoding_runs(ctx):
            if not called_for_training(ctx, ctx.function_of(node)):
                yield ctx.finding(self.code, node, message, suggestion="decode under `with torch.inference_mode():`")
        for node, message in eval_state_runs(ctx) if ".eval()" in ctx.source else ():
            yield ctx.finding(self.code, node, message, suggestion="run the pass under `with torch.inference_mode():`")
        for node, message in [*module_test_loops(ctx), *bare_project_evaluations(ctx), *single_inferences(ctx),
                              *global_model_runs(ctx), *restored_runs(ctx)]:
            yield ctx.finding(self.code, node, message, suggestion="wrap it in `with torch.inference_mode():` (or torch.no_grad())")
        for node, message in [*peer_runs(ctx), *mixed_function_runs(ctx)]:
            yield ctx.finding(self.code, node, message, suggestion="run it under `with torch.no_grad():` like the other passes")
        for node, message in loader_eval_runs(ctx):
            yield ctx.finding(self.code, node, message, suggestion="run the pass under `with torch.no_grad():` (and model.eval())")
        for node, message in logging_samples(ctx):
            yield ctx.finding(self.code, node, message, suggestion="generate it under `with torch.no_grad():`")
        for node, message in acting_calls(ctx):
            yield ctx.finding(self.code, node, message,
                              suggestion="compute the action under `with torch.no_grad():` (or torch.inference_mode())")
        for node, message in host_result_runs(ctx):
            yield ctx.finding(self.code, node, message, suggestion="run it under `with torch.no_grad():` (or decorate the function)")
        for node, message, suggestion in shared_loop_runs(ctx, scopes):
            yield ctx.finding(self.code, node, message, suggestion=suggestion)

    def _check_scope(self, ctx: Context, scope: ast.AST) -> list[Finding]:
        is_module = scope.__class__ is ast.Module
        body = list(ctx.walk_body(scope.body))
        tested = not is_module and scope.name.lstrip("_").startswith("test")
        if tested and not evaluation_method(ctx, scope):
            return []  # unit tests and their helpers (_test_eval) check behaviour, grad mode included
        evals = eval_calls(ctx, body)
        named = not is_module and (is_eval_name(scope.name) or (tested and ctx.parent(scope) is ctx.tree))
        if not evals and not named:
            return []
        if is_module_method(ctx, scope) and (not evals or scope.name in ("forward", "__call__")):
            return []  # part of a module's forward pass (predict_masks(), forward itself): the caller sets grad mode
        receivers = eval_receivers(ctx, evals) | (global_eval_runs(ctx, scope) if not is_module else set())
        events = grad_events(ctx, body if is_module else event_nodes(scope))
        if events and not is_module and all(kind == "train" for _, kind in events) and reached_only_under_no_grad(ctx, scope):
            return []  # `vali()` ending in `model.train()`, called only under no_grad: no stretch of it records
        if events or (is_module and (backward_calls(ctx) or optimizer_steps(ctx))):
            # it also trains: only the stretches after `model.eval()` up to `model.train()` evaluate
            found = [f for start, end in eval_regions(evals, events) for f in self._runs(ctx, scope, body, receivers, start, end)]
            out = {(f.line, f.col): f for f in found}  # every run of each evaluation stretch (validation, final test)
            return [out[k] for k in sorted(out)]
        if not is_module and (only_called_without_grad(ctx, scope) or reached_only_under_no_grad(ctx, scope)
                              or frozen_by_every_caller(ctx, scope)):
            return []  # (also when every way the project reaches it passes under no_grad, or hands it a frozen model)
        if not is_module and called_for_training(ctx, scope):
            return []  # `predict()` that the file's own update step backpropagates through
        if not is_module and handed_over(ctx, scope):
            return []  # a callback given to an evaluator of another module: that caller sets grad mode
        # named like evaluation: every call counts; else the evidence is model.eval(): only calls after it
        start = None if named else min((c.lineno, c.col_offset) for c in evals)
        return self._runs(ctx, scope, body, receivers, start, None)  # every pass: branches and the loop after an early return too

    def _runs(self, ctx: Context, scope: ast.AST, body: list[ast.AST], receivers: set[str],
              start: tuple[int, int] | None, end: tuple[int, int] | None) -> list[Finding]:
        """Every forward pass in ``body`` between ``start`` and ``end`` run with autograd on."""
        where = "module-level evaluation" if scope.__class__ is ast.Module else f"{scope.name}()"
        out = []
        for node, inner in eval_runs(ctx, scope, body, receivers, start, end):
            run = f"{ctx.text(inner.func)} (in {ctx.text(node.func)}())" if inner is not None else ctx.text(node.func)
            out.append(ctx.finding(
                self.code, inner or node,
                f"{where} runs {run} with autograd recording; evaluation needs no graph",
                suggestion="wrap it in `with torch.inference_mode():` (or torch.no_grad()), or decorate the function",
            ))
        return out


RULE = EvalWithoutNoGrad()
