"""TW207: host-device synchronisations inside the training loop."""

from __future__ import annotations

import ast
import itertools
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.cpuonly import runs_only_on_cpu
from torchwise.lint.semantics.deadcode import never_runs
from torchwise.lint.semantics.deadmethods import function_at
from torchwise.lint.semantics.delegation import delegated_loops
from torchwise.lint.semantics.devices import SYNC_METHODS
from torchwise.lint.semantics.elementreads import size_element_reads
from torchwise.lint.semantics.formatreads import formatted_names
from torchwise.lint.semantics.forwardsyncs import MASK_FIX as _MASK_FIX, forward_syncs
from torchwise.lint.semantics.gradnorm import has_optimizer_steps
from torchwise.lint.semantics.helperreads import helper_reads
from torchwise.lint.semantics.hiddenreads import hidden_reads
from torchwise.lint.semantics.hostreads import host_reader
from torchwise.lint.semantics.inputgrads import reads_input_gradient
from torchwise.lint.semantics.lossreads import loss_mask_reads, loss_read_messages, mask_read_kind
from torchwise.lint.semantics.losstests import TEST_FIX, loss_tests
from torchwise.lint.semantics.metricobjects import metric_object_reads
from torchwise.lint.semantics.stepreads import every_step_read
from torchwise.lint.semantics.stephooks import step_hook_reads
from torchwise.lint.semantics.stepscans import mask_selections, tensor_conditions
from torchwise.lint.semantics.steps import hot_loops, step_functions
from torchwise.lint.semantics.stepregion import host_reader_calls, step_region as _region  # (what runs a node every step)
from torchwise.lint.semantics.syncs import CASTS, REPEAT_FIX as _REPEAT_FIX, SYNC_FIX as _SYNC_FIX, legacy_findings, sync_call


class HostSyncInLoop(Rule):
    code = "TW207"
    per_call = True
    name = "host-sync-in-hot-loop"
    triggers = ("backward", "step", ".item()", ".tolist()", "mask", "nonzero", ".any()", ".all()", ".sum()", "Loss(", "_loss(", "Criterion(", ".bool()", "rand(",
                "scaler(", "synchronize(", ".cpu().numpy()", ".train_a", ".train_step", ".train_batch", ".train_on", ".learn(", "update_params(")
    doc = """\
What it flags
  Reads of a device value on the host that happen every training step (in the loop around the
  backward pass or optimizer step; where the optimizers are stepped in a loop of their own,
  `for opt, sched in zip(optimizers, schedulers): opt.step()`, the loop around that one - a
  module-level torchrun loop included): `.item()`, `.cpu()`, `.numpy()`, `.tolist()`, `float(loss)`/`int(t)`/`bool(loss == 0)` (also NumPy's old alias `np.float(top1)`), `.nonzero()`/`torch.nonzero`, `print(t)` (also in an f-string,
  `"...".format(t)` or `"%.4f" % (i, t)`; a gradient norm from `clip_grad_norm_` is such a tensor), text formatted from a
  tensor wherever it goes (`pbar.set_postfix(loss='%.4f' % loss)`, `bar.set_description("{:.5f}".format(cls_loss))`,
  `logging.info(f"{loss:.3f}")`: reported at the call the text is handed to), `if`/`while` tests that
  compare a tensor (also a field of a moved batch object: `if data.train_mask.sum() == 0:`) or
  ask whether it holds a value (`if class_id in y:`: `(y == class_id).any()` read as a bool),
  boolean-mask indexing of a device tensor (`out[mask == 0]`, `pred[is_labeled]`, `out[pred < n, :]`, `ids[pos]` with a device mask cast `pos = pos.to(device).to(torch.bool)` or `.bool()`:
  the result's size has to reach the host), also in a loss function the step calls with device tensors, directly,
  through a helper that hands its arguments on, also a helper of another module (`labels[~mask]` in `info_nce_loss(features)`, `target[(target >= 0) * (target != 255)]` in `seg_ce(pred, label)` called by `utils.loss_calc(pred, label, device)`,
  `loss.masked_select(gold.ne(pad))` in `cal_loss()` called by `cal_performance()`, a function of another module handed its inputs by a loss module's `forward` the step builds, `LF.pair_loss(x, label)`, or by a model method the loop of a third module calls every step, `net.get_loss(feat, y)` -, also through a star import; also `.nonzero()` of such a mask, `torch.nonzero(valid).size(0)`, `(labels == k).nonzero()` in a mining helper) or from a model's training
  forward (`d[d > 0].mean()` in `rkd_loss()` called by `forward_train()`) - there also a test of a reduction of what it was handed (`if torch.sum(y == -1) > 0:`,
  `n = hard.sum()` ... `if n > 0:`/`assert`; not a skip with `continue`, nor under `if proto is not None:`) -, in the
  `forward` of a loss module (a class named for a loss, or any `nn.Module` of a module of losses by
  its path: `class RKD` in `kd_losses/rkd.py`, `dist[dist > 0].mean()`; `loc_data[pos_idx]` with `pos_idx = (conf_t > 0).unsqueeze(2).expand_as(loc_data)`,
  `regression[positive_indices, :]` with `positive_indices = torch.ge(iou_max, 0.5)`: one finding
  per selection, naming the loss's other lines), in a model's `forward` where the selection feeds its loss
  (`logits.view(-1, n)[active_loss]` handed to `loss_fct`), with a mask drawn at random in a
  module's method on the forward path (an edge dropout: `values[(torch.rand(n) + keep).int().bool()]`, `.type(torch.bool)`),
  and on a device tensor in a forward pass or a helper it calls (`distance[mask] = dist[mask]`;
  also with a mask a method of the file makes on the device: `center[~mask]` with `mask =
  self._draw_mask(center)` returning `m.to(center.device)`; a decoder's per-row pad stripping of the targets it is handed, `[y[y != PAD] for y in padded]` in `forward` or a method `forward` calls that moves nothing itself); `self.gamma.item()` of an `nn.Module`'s own parameter or buffer
  in its methods (every forward pass; also one entry of a buffer of settings, `int(self.params[0].item())`);
  a getter of the project called every step that returns a registered buffer or parameter on
  the host (`model.get_step()` with `def get_step(self): return self.step.data.item()`); a copy to the host (`offsets.cpu().data.numpy()`,
  `.detach().cpu().numpy()`) of a tensor an `nn.Module`'s `forward` computed, on the training path and
  outside any `if` (a tensor handed to forward as it is - labels, lengths - may be on the host
  already and is left alone, unless the forward moves what it built from the copy back to the device:
  `t = torch.zeros(n, c).scatter_(1, t.unsqueeze(1).cpu(), 1)`; `t = t.cuda()` in a label-smoothing loss, or a method its class calls builds a tensor from the copy and moves it to the device: `lens.cpu().numpy()` ... `torch.tensor(w).to(self.opt.device)`, also `self.weights(pos).to(device)` at the call); a call of a helper that does such a read on what it is given (a function
  of this file, or of the project linted with it: `self.reduce_loss_dict(loss_dict)`,
  `calculate_accuracy(out, y)`; a helper of another module is also reported at its read, `return hits.item()` in `utils.top1()`, not on the CPU branch of an `if torch.cuda.is_available():` - not for reads the helper makes only under a modulo test of its own,
  `if self.steps % 10 == 0:`, or under a test of a sink the call hands `None` or nothing -, a progress logger of another module that reads `losses[k].data[0]`
  or `image[0].cpu()` of what it is handed, `logger.log({"loss_G": loss_G})` - resolved through
  the project's imports, so `torch.log(loss)` is not the project's `log()` and a `log()` of
  another module that only prints does not hide it; a helper of the file named for evaluation counts
  when it has no loop, `.eval()` or `no_grad` of its own: `print_eval("train", scores, y, loss)`); `writer.add_scalar(tag, loss, step)` with a tensor (the writer
  reads it); `.item()` in a LightningModule's `training_step` (`self.log_dict({k: v.item() ...})`) or a Dassl trainer's `forward_backward` (`{"loss": loss.item()}`);
  a hand-written gradient-norm helper that reads each parameter's norm on the host
  (`math.pow(p.grad.data.norm(), 2)`, `p.grad.norm().item()` in a loop over the parameters, also
  `for name, p in model.named_parameters()`, and a test of a value made from the gradient, `if
  clip / (param_norm + 1e-6) < 1:`) that
  the step calls (`clip_grad_value_(model.parameters())`, a wrapper optimizer's `step()`); `.item()` of its own losses in a loss function the step calls
  (`return loss, Munch(real=loss_real.item())`), or `float()` of them (`logs['l2'] = float(loss_l2)`, also under a test of the run's settings, `if self.opts.l2_lambda > 0:`; per sample in a criterion's `forward`, `float(sim)`; not of host numbers, `float(x.size(0))`, nor of what a loss hands back beside its loss, nor under a verbose or debug switch); the pre-0.4 `loss.data[0]`; an unconditional `torch.cuda.synchronize()` in a
  training loop that reads nothing on the host after it but under a log interval (also one timing the batch for a meter, `batch_time.update(time.time() - end)`;
  not in a benchmark: a function or file named for one, a list of step times), and one that is
  followed by a read of the step's values (`torch.cuda.synchronize(); meter.update(loss.item())`:
  reported at the synchronize, where the step waits - the reads after it add no wait of their
  own); one under a test of the run's settings (`if torch.cuda.is_available():`, `if
  args.distributed:`) counts as unconditional there, and is reported also where the step's reads
  follow it (they wait on the other setting); `scaler.get_scale()` and `scaler.state_dict()["scale"]` of a `GradScaler` (or a project
  wrapper named `*scaler`), which read the scale with `.item()` - reported also after a
  synchronize. "Every step" means inside the loop that runs `backward()` or an optimizer `step()`
  (the innermost such loop, or one nested in it; where each batch repeats the step, `for x, y in
  loader: for _ in range(replays): ... opt.step()`, also the loop over the data), in a method that calls a step method of its
  class once per call, outside any loop or test (an agent's `update()` calling
  `self.update_critic(...)` and `self.update_actor(...)`: outside its own loops; the step
  methods' reads are reported where they are, not at these calls), or anywhere in a function that runs one
  training step per call (backward and step with no loop of its own: `train_step(batch)`, a
  model class's `optimize_parameters()`; also a method running the backward pass whose calling loop
  steps the optimizer, `loss = self._train_step(batch)`; the backward may sit in gradient-accumulation loops over
  `range(config["num_accumulations"])` before the function's one step - not in a loop over the
  data set, `range(len(loader))`, which makes one step per epoch), or in the `step()` of an `Optimizer` subclass of the
  file (an optimizer that runs the backward pass itself), or in a loop that hands its step to
  a call once per pass: a method or function of the file that trains once per call
  (`self.train_step(batch)`) or repeats updates over `range()` loops on data the pass made
  (`batch = agent.collect_samples(n)` ... `update_params(batch)`), a function of another module
  of the project, imported by name, that runs a backward pass, handed that pass's data
  (`a2c_step(policy, value, optimizer, states, ...)`), a method named for training every
  definition of which in the project runs a backward pass, handed a part of the pass's batch
  (`getattr(model, f"vae{c}").train_a_batch(x[y == c])`), or a helper handed the loss first and an
  optimizer (`loss_scaler(loss, optimizer, clip_grad=...)`); not a loop calling a function that
  trains over a loader of its own (an epoch function), nor one that steps an environment itself
  (an RL update loop around its rollout). The value must evidently live on the accelerator -
  a loss or a term summed into the backward pass, a model output, something moved with
  `.to(device)`/`.cuda()`, a tensor another module of the project puts on the device
  at import (`from utils import std` of `std = torch.tensor(s).view(3, 1, 1).cuda()`), a reduction across processes of those (`reduce_tensor(loss)`) - and
  the code must target one: its function moves data to a device, or it only receives its data
  (an `update(self, rollouts)` method) in a file that does, in a class whose base class in another
  module of the project moves data (`class DDPM(BaseModel)` calling the base's `self.set_device(x)`,
  which does `x.to(self.device)`), or in a module that a file of the
  project moving data to a device imports (a CPU-only helper module of a course, imported by
  nothing that uses a GPU, is left alone).
  The step's values are also followed through the project's own functions and methods handed
  them (`util.masked_mape(predict, real, 0.0).item()`, `model.discriminator(emb, summary)`; not
  builtins, container or logger methods, library functions, nor helpers named for the host such
  as `to_cpu()`), dtype changes (`acc.to(torch.float32)`), the other outputs of the module call
  that made the loss (`loss, acc = segmentation_module(batch)`; also a model's outputs kept under a name and unpacked later, `out = model(x)`; `recon, z, terms = out`; einops' `rearrange`/`repeat`/`reduce` of a device tensor; not of a loss or metric
  function, which may hand statistics back as numbers), tensors unpacked from a project
  function handed them (`prec1, prec5 = accuracy(output, target, topk=(1, 5))`,
  `intersection, union, target = intersectionAndUnionGPU(output, target, n)`; from one named
  for losses or statistics, `compute_*`, `get_*`, `calc_*`, only where every `return` of it hands
  back there a tensor computed by torch operations from a tensor the call hands it: `top1, top5 =
  calc_topk_accuracy(out, y, (1, 5))` returning `[correct[:k].float().sum() / n for k in topk]` or
  a list it appends such sums to, in this file or the project module it is imported from; never
  from a helper whose returns are host values, `.item()`, `float()`, NumPy, whatever its name), the dicts and lists it fills and the helpers it
  hands them to (`reduced = reduce_loss_dict(loss_dict)`; `reduced["d"].mean().item()`,
  `ddp_reduce(batch.ntokens, self.device)` (a reduction helper handed the device),
  `sum(scaled.values()).item()` of a dict comprehension over them, `sum(replay_losses).item()`),
  terms weighted into the backward pass (`reconL.item()` with `loss = self.w * reconL + ...`; also clamped or reduced first, `a.clamp(max=k) + b`, and elements of a list of losses it sums, `shown = losses[0]` beside `loss = w * losses[0] + ...`),
  `target.new_tensor([n])`, `y.to(self._device())`, `_, pred = y_hat.max(1)` (also `torch.max(probs, 1)`), a batch unpacked from a
  method of the file that hands its arguments back moved (`images, masks = self.cuda(*items)` with
  `return (x.to(self.device) for x in args)`), the operands of the loss the function backpropagates
  read with a tensor method (`-log_prob.mean().item()` and `self.alpha.item()` beside `loss =
  (self.alpha * log_prob - q).mean(); loss.backward()`: the same binding the loss used), tensors a project
  function handed the device returns (`obs, reward = utils.to_torch(batch, self.device)`), values
  the function hands to a collective (`dist.all_reduce(acc1)`, `acc = reduce_tensor(acc, args)`: NCCL sums CUDA
  tensors), the log-probability and entropy of a distribution a model returned
  (`dist = self.actor(obs, std)`; `dist.log_prob(a)`, `dist.entropy()`), `torch.maximum(q,
  lower)`, a tensor a method of the file returns from what it is handed (`alpha, alpha_loss =
  self._alpha_and_alpha_loss(obs, log_pi)` returning `obs.new_tensor(k)`; not a number it hands
  back, `obs.size(0)`), a parameter every call in the file hands such a value (`def _q_loss(self,
  obs, alpha)`), an attribute the class only ever assigns device tensors (`self.log_alpha =
  torch.tensor([0.0], device=self.device)`, `self.alpha = self.log_alpha.exp().detach()`) and `self(x)` in a
  model's method, and a host round trip (`to_one_hot(y.cpu(), n).to(y.device)`). A project
  helper reading its `**kwargs` (`metric_logger.update(**loss_dict)`) or copying what it is given
  (`to_cpu(loss)`) is such a helper; a helper the step calls every step (here or from another
  module's loop) that selects with a mask from what it is handed (a metric's `output[output ==
  target]`) too; and the reads (`float(err.mean())`, `math.sqrt(...)`, `out[gt > 0]`) in a method of a project metric object the loop builds and calls every step (`r = Result(); r.evaluate(pred, gt)`: reported at the reads). Also `.item()` of a tensor made from the inputs in a loss module's methods
  (`num_boxes = torch.clamp(num_boxes / world, min=1).item()`) or in a loss function the step
  calls, also from another module, or in any top-level function of a module of losses by its path
  (`n_word = non_pad_mask.sum().item()`; `.item()` in `loss.CDAN(...)`, for a call that hands the
  parameter its branch tests, `if entropy is not None:`; a call whose loss - alone
  or first of what it hands back - the step backpropagates on an accelerator counts as handed the
  step's tensors: `critic_loss, logs = iq_loss(agent, q, v, next_v, batch)`, also its selections
  by a flag unpacked from the batch, `obs[is_expert.squeeze(1), ...]`), and of its own loss in
  a model's `forward` or in a model's method that opens the step - zeroes the gradients, computes
  the losses and hands them back for a backward pass its caller runs (`logs = [("l_d", dis_loss.item())]`
  in `process()`: reported at the read, not at the call); `assert`/`if` tests of the batch's tensors in a model's methods that a
  step or forward calls (also of a class whose `nn.Module` base is another module's) and in a
  helper another module's forward calls (`assert (boxes1[:, 2:] >= boxes1[:, :2]).all()`; also a
  reduction bound to a name first: `n = torch.sum(obj_mask)` ... `if n != 0:` in a loss's forward;
  `torch.equal(query, key)` in an attention function a forward calls: a Python bool of two tensors;
  a parameter's gradient read in the loop, `torch.norm(named[i][1].grad).cpu()`, once per parameter);
  per-parameter gradient reads in a trainer's method that steps the optimizer or that it calls
  on `self` (`any(not isfinite(p.grad).all() for p in params)`, `(p.grad ** 2).sum().item()`);
  reads of a batch tensor element by element in a Python loop of code every step runs
  (`predicted[i].item()`, `[allowed[i.item()] for i in y]`: one wait per element), also an
  element used as a size or count in the training loop (`sub[i].repeat((batch.context_size[i], 1))
  for i in range(n)`: read with `__index__`).
  A 0-dim device tensor written through a mask (`weight[pos] = 1 / pos_num` with `pos_num =
  pos.sum()`, `x[mask] = x.min()`) is flagged too: only a number or a CPU scalar takes the
  `masked_fill_` path; a tensor value goes through `index_put_`, which runs `nonzero`. An `if` on a
  comparison's test (`if (grad_norms == 0).any():`) of a device tensor, also one kept in a pre-0.4
  `Variable(x.data, requires_grad=True)`, is a tensor condition; so is a NaN/inf guard of any device value of
  the step, whatever its branch does (`if torch.isnan(loss).any(): raise ...` with `loss = self.train_step(batch)`,
  `if not torch.isfinite(penalty):`; not joined by `and` after a modulo test). Also: tensorboard_logger's
  `log_value(tag, t, step)` of a tensor; a reshaped mask (`logits.flatten(0, 1)[mask.view(-1)]`); `.item()` in a
  function whose loss (alone or first) the training loop backpropagates (`loss, hits = forward_pass(model, batch)`);
  a batch moved by mapping a lambda over it (`nest.map(lambda t: t.to(device), batch)`) is on the device, and a host
  object's transform handed straight to a metric (`mae(normalizer.denorm(out.cpu()), y)`) is no host consumer.
  Not flagged: scripts that only run on the CPU (every device a `'cpu'` constant, no accelerator named
  in the file, none imported by another module), where no read waits for a GPU.
  Not flagged: reads in a dataset module's data pipeline (a crop helper only an augmentation's
  `__call__` or a dataset's `__getitem__` runs, `[float(x) for x in bbox]`: host arrays in the loader's
  workers, in a file that moves nothing to the device); reads in a helper under a test of a parameter the call hands `None` or leaves to a
  `None` default (`loss.CDAN(x, net, None)`, `if entropy is not None:`); the branch opposite to the
  step (`if phase != "inference": <backward, step> else: ...`; not of a modulo test); what a `def
  train` runs before its loop (`net.train(True)` is no call of it); `int()` of the pieces of a
  string (`[int(i) for i in config["gpu"].split(",")]`); a Python number in the loss, logged (`add_scalar(tag, w, i)`,
  `w = ramp(i)` returning `float(np.exp(...))`, `math.exp()`, a constant, an option times those); code nothing in the project runs (a function or method of a script or an
  imported module whose name no file mentions but its own `def`, a helper only such code or a class nothing names calls - unless the project picks classes out of modules by a computed name,
  `getattr(importlib.import_module(m), name)`: ruling R5 of issue 22); reads under a test of a sink or flag the step hands on
  only at intervals (`storer = self._pre_call(is_train, storer)` with a helper that gives `None`
  off every N-th step, then `if storer is not None: storer["loss"].append(loss.item())`, also in
  a helper that receives the sink as a parameter, `verbose=it % 200 == 0`); selections under a
  flag of a forward that defaults to `False` and is set only in files that run no backward pass (`def
  forward(self, pts, vis=False)` ... `if vis:`, set by a plotting script); a value cached on the first call (`if self._ready is None: self._ready = bool(self._flag.item())`); values already on the CPU, also results of a call whose every argument the
  function moved to the CPU (`loss, eer = model.loss(embeds.to(loss_device))` with `loss_device =
  torch.device("cpu")`: a loss computed on the CPU by design); a Python number written through a mask (`x[mask] = 0`,
  `x[mask, :] = -1`, `x[mask] = float("-inf")`, `x[mask] = s.item()`: PyTorch fills it with
  `masked_fill_`, no sync - the `.item()` is a read of its own where the step runs it); selections in a loss class nothing in the project names (a losses
  module's `OHNMLoss` beside the `BalancedLoss` the trainer builds: it never runs; a class its module builds by a computed name, `eval(name)(...)` over its `__all__`, is named by the config);
  masks of NumPy arrays or of values taken off the device (`.cpu().numpy()`, `np.random.rand(n) < p`), and tests of them in a loss's forward (`flat = t.cpu().numpy()`; `n = (flat != ignore).sum()`; `if n < k:`: the copy is reported, not the test), masks in a data
  transform's `__call__`, and selections in a model's `forward` that no loss takes (inference:
  `boxes[scores > 0.5]`); reads under a periodic test such as
  `if step % 100 == 0:` (or a helper of the file that returns such a modulo test; not one whose
  branch runs a backward pass, `if self.total_it % self.policy_freq == 0:` around the actor's
  update or `if i % n_critic == 0:` around the generator's: what it reads, it reads every update;
  nor one by an option whose argparse default is 1 that nothing else in the project sets - a
  sibling script's own `--log_step` does not -, `% args.log_step` with `default=1` (declared in the
  file, or where the file declares none, by every other module that does: the entry script), also
  through a local copy, `log_step = args.log_step`, or a parameter that defaults to 1 and that every
  caller leaves so or hands such an option, `def train_epoch(..., print_modulus=1)`, also joined
  by `and` or `or` to another test, `or step == iters`: every step), under a test
  of elapsed clock time (`if now - last_log > args.log_freq_time:`, names bound from
  `time.time()`/`perf_counter()`), under a test of a step counter against a mark the branch moves
  (`if t_env - self.log_stats_t >= interval: ...; self.log_stats_t = t_env`, `if step >= next_log:
  ...; next_log += every`; not one whose branch runs a backward pass), or in the branch for the one batch that holds an item fixed
  before the loop (`if plot_id in ids:` with `ids` unpacked from the batch: about once per
  epoch); the pre-0.4 arm of a torch version test (`if torch.__version__ ...:` / a name bound
  from it, the arm that reads with `.data[0]`: it never runs on PyTorch 0.4 or later, and the
  other arm's `.item()` is the read reported); tests and `nonzero()` in a model's
  `generate()`/`sample()`-like method that no training step calls (an autoregressive stop test
  that only the synthesis script runs); reads after
  an unconditional `torch.cuda.synchronize()` earlier in the same loop body with no backward
  pass or optimizer step between them (the synchronize is reported instead, once); reads whose value goes to an environment's `step()` (an RL action has to reach
  the host) or to a method that works on it on the host (`memory.update_priorities(idxs,
  loss.detach().cpu().numpy())` for a NumPy replay tree; a NumPy function is no such method, also
  where `np` comes from a star import: `np.isnan(grad_norm.cpu())` is flagged), also through a name bound to the read
  and handed on later in the same function (`loss_PER = loss.detach().abs().cpu().numpy()` ...
  `memory.update_priority_on_tree(idx, loss_PER)`; not when the name is only printed or
  collected); reads handed to a host-only library whose result the step moves back to the device (R9: `v = solve_qp(C, -p, A, b)[0]` ... `torch.tensor(g).to(device)`, a superpixel helper's `slic(img)` with `.type_as(x)` at the call, PESQ scores computed in `joblib` workers as a discriminator's target, also inside a project helper the step calls; not a round trip through NumPy, OpenCV or the standard library alone, a metrics package's score, nor a result only logged);
  values on the host already: what a helper the file star-imports returns as a host value (`np.mean(scores)`), a NumPy mask the caller made (`emb[masked > 0]` with `masked` unpacked from a helper returning `np.zeros_like(seq)`), a loss computed from a model output copied to the host (`preds = model(x).cpu()`; `loss = ctc(preds, targets, sizes, lengths)`); a loop counter compared with a number
  (`if i == start:`); evaluation helpers (`test()`, `evaluate()`) and generation (`engine.rollout(ids, mask)`, `generate()`: token lists for decoding, R9) called from a step; reads of a `.grad` in a
  file that never steps an optimizer nor updates a tensor from a gradient by hand (an attack's
  `grad = adj.grad.data.numpy()` for `np.argsort`, a saliency map: the gradient is the loop's result); the read
  of a full-batch step function (one step per call) whose calling loop also evaluates on every
  pass, which waits for the GPU anyway (not `evaluate_node(pred.cpu(), y)`, handed host copies: it runs no pass of its own). Nor: reads under a name bound to a modulo test
  (`early = i % freq == 0 and step < 2000; if early or late:`); in a branch that ends the run or
  its loop (`print(loss_dict); sys.exit(1)`, `raise`, `break`); a test whose branch breaks the
  loop (`if torch.max(abs(h)) > 10: break`: the algorithm's own stop; also through a flag, `if kl > target: stop = True` ... `if stop: break`; a NaN guard is still
  flagged), or the best-so-far test of a patience early stop (`if loss < best: best = loss; wait = 0`
  `else: wait += 1` with `if wait == patience: break` in the same loop: R9) or skips a pass of a `range` loop when a selection is empty (`if mask_t.sum() == 0:
  continue` over time steps: R9; skipping a loader's batch is an input check, flagged); what an epoch
  loop with a step of its own runs outside its batch loop over a loader made before it; methods of
  a class whose every object is called only off the training path (a detector's `Detect` in the
  `else` of `if self.training:`, a calibration metric built as a loss and called only where the
  model is in `.eval()` or under `no_grad`, a variant of a module that only an inference script
  loads and calls under `no_grad`, and the parts it builds, `self.cnet = CNN()`); dead code (a vendored `@add_start_docstrings` task head named only in docstrings; a call under `if False:`; a
  private method named only in a comment, `# adj = self._sparse_dropout(adj)`, also in a model module a registry
  imports by a computed name); NumPy data a project helper makes, handed to a converter (`one_hot =
  index_to_one_hot(batch.actions, n)` returning `np.zeros(...)`, then `to_tensor_var(one_hot)`); `group['lr']` and a tuple element a training function returns as a number (`res[4]` of `return (loss.item(), get_lr(opt))`); `.numel()`/`.size()` tests of a gradient; a call of a helper whose read lies in a training loop of
  its own (reported at the read); under a debugging switch (`if self.debug_mode:`, `if args.debug:`, also and-ed: `if args.debug_ratio and i == 0:`); under an opt-in switch that is off by default and whose branch writes or shows a picture (`if cfg.show_flow:` of a `store_true` option around `cv2.imwrite`); a helper's `.item()` of a number made only from shapes (`np.prod(m.size()).item()`); under a test of the loop's own index that holds for its first passes only (`if epoch == 0:`, `if batch_idx < 5:`); a logger handed `optimizer.param_groups[0]['lr']` (a float) or a tensor the function built on the CPU itself (`torch.FloatTensor(array)`, `torch.zeros(n)`, combined by torch functions); a
  synchronize under an opt-in timing option (`if args.time_exp:` with `default=0`, reading a
  timer); a script that can only run on the CPU (every CUDA choice behind an option no run turns
  on: `--no-cuda` a `store_true` option with `default=True`); tensors handed back to the sampler that drew the step's inputs (`t, w =
  sampler.sample(...)` ... `sampler.update_with_losses(t, losses)`: it keeps them on the host to
  draw the next step); the evaluation block of a training loop (`with torch.no_grad():
  model.eval(); ...`) and reads after it in the same pass (the evaluation drained the GPU); what
  a function that trains in a loop of its own runs before or after that loop; post-processing
  modules (`PostProcessPanoptic`); selections in functions that build, match or split targets
  (`build_targets`, `split_on_targets`: data-dependent by design); `.tolist()` of indices in a
  loss module (host lookups); element reads of `lengths`-like tensors and in decoding or
  sampling methods; end-of-task hooks and first-call checks behind a flag (`if not
  self.checked: self.check_once(x)`).

Why it matters
  The GPU runs asynchronously: the host queues kernels and moves on. Reading a value on the
  host forces it to wait until every queued kernel has finished, so the queue drains on every
  step and the GPU idles while Python prepares the next one. One `.item()` per step can cost
  a large share of throughput for small and medium models.

Example
  for x, y in loader:
      loss = criterion(model(x.cuda()), y.cuda())
      loss.backward(); optimizer.step(); optimizer.zero_grad()
      total += loss.item()                          # TW207

Fix
  Keep running values on the device (`total += loss.detach()`) and read them once per log
  interval (`if step % 100 == 0: print(total.item() / 100)`); the torchwise Trainer syncs once
  per interval. For a boolean-mask selection keep shapes static: weight by the mask
  (`(loss * mask).sum() / mask.sum()`), `torch.where(mask, x, 0)`, `x.masked_fill(~mask, 0)`, or
  the loss's own `ignore_index`.

Lint and the doctor
  Lint reads the shapes of this rule's list: reads in the training loop or a step function,
  behind a helper of the file or project, through logging calls. The doctor counts the
  synchronisations of real CUDA steps (`torch.cuda.set_sync_debug_mode`), including those
  lint cannot see: inside the model's forward, library code.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if runs_only_on_cpu(ctx):  # every device of the script is the CPU: no read waits for a GPU
            return
        dead: dict[int, bool] = {}  # code nothing in the project runs (ruling R5): asked per function with a finding
        lines: set[int] = set()  # (a helper's read another module's step calls: once, where no other route reported it)
        helper = (ctx.finding(self.code, n, m, suggestion="return the tensor and read it once per log interval") for n, m in helper_reads(ctx))
        for finding in itertools.chain(self._findings(ctx), (f for f in helper if f.line not in lines)):
            if (func := function_at(ctx, finding.line)) is not None and id(func) not in dead:
                dead[id(func)] = never_runs(ctx, func)
            if func is None or not dead[id(func)]:
                lines.add(finding.line)
                yield finding

    def _findings(self, ctx: Context) -> Iterator[Finding]:
        forward = ctx._cache["tw207:forward"] = set()  # (statements reported here: not again as a loss's selection)
        for node, message, suggestion in [*forward_syncs(ctx), *step_hook_reads(ctx)]:  # forwards; Lightning/Dassl hooks
            forward.add(id(ctx.statement_of(node)))
            yield ctx.finding(self.code, node, message, suggestion=suggestion)
        yield from self._loss_function_reads(ctx)
        yield from self._loss_masks(ctx)
        yield from (ctx.finding(self.code, n, m, suggestion="accumulate the metric on the device, read it once per log interval")
                    for n, m in metric_object_reads(ctx))  # result.evaluate(pred, target) with result = Result()
        if not hot_loops(ctx) and not step_functions(ctx) and not has_optimizer_steps(ctx) and not delegated_loops(ctx):
            return
        seen: set[int] = set()
        # _report() first asks whether the node runs every step: ask that before the dearer questions
        for call in ctx.calls_named(*SYNC_METHODS, "nonzero", "print", *CASTS):
            found = sync_call(ctx, call) if _region(ctx, call) is not None else None
            if found is None:
                continue
            subject, what = found
            if subject.__class__ is ast.Call and host_reader(ctx, subject):
                continue  # float(accuracy(out, y)): the helper reads on the host (reported as such), its result is a number
            if reads_input_gradient(ctx, call):
                continue  # an attack's or saliency map's gradient: the loop's result, no training step (R1)
            finding = self._report(ctx, call, subject, what)
            if finding is not None and id(call) not in seen:
                seen.add(id(call))
                yield finding
        yield from filter(None, (self._report(ctx, call, None, f"{name}() of a tensor ({where})", check_subject=False)
                                 for call, name, where in host_reader_calls(ctx)))  # (semantics.stepregion)
        yield from {id(t): f for t, f in ((t, self._report(ctx, at, n, w)) for t, at, n, w in formatted_names(ctx)  # one per text
                                          if _region(ctx, t) is not None) if f is not None}.values()
        yield from tensor_conditions(ctx, self._report)
        yield from legacy_findings(ctx, self._report)  # loss.data[0], a needless torch.cuda.synchronize()
        for sub in size_element_reads(ctx):
            finding = self._report(ctx, sub, None, f"{ctx.text(sub)} as a size (read on the host once per element)",
                                   check_subject=False, suggestion=_REPEAT_FIX) if _region(ctx, sub) is not None else None
            if finding is not None:
                yield finding
        yield from filter(None, (self._report(ctx, node, None, what, check_subject=False, hidden=hidden, suggestion=fix)
                                 for node, what, fix, hidden in hidden_reads(ctx) if _region(ctx, node) is not None))
        yield from mask_selections(ctx, self._report)

    def _loss_masks(self, ctx: Context) -> Iterator[Finding]:
        """Boolean-mask selections (and tests of reductions: semantics.losstests) in a loss function or metric helper the step calls with device tensors."""
        for node, func, where, what in [*((n, f, w, mask_read_kind(n)) for n, f, w in loss_mask_reads(ctx, self._per_step)),
                                  *((n, f, w, "a tensor condition") for n, f, w in loss_tests(ctx, self._per_step))]:
            if id(ctx.statement_of(node)) not in ctx._cache["tw207:forward"]:  # (one line each: the rule module is at its size)
                yield ctx.finding(self.code, node, f"{what} in {func.name}(), which the training step calls every step ({where}), waits for the GPU", suggestion=_MASK_FIX if what[0] == "b" else TEST_FIX)

    def _per_step(self, ctx: Context, call: ast.Call) -> bool:
        return self._report(ctx, call, None, "", check_subject=False) is not None

    def _loss_function_reads(self, ctx: Context) -> Iterator[Finding]:
        """``.item()`` in a loss function (or forward helper, loss module method) the step calls every step."""
        for read, message in loss_read_messages(ctx, self._per_step):
            yield ctx.finding(self.code, read, message, suggestion="return the detached tensors and read them once per log interval")

    def _report(self, ctx: Context, node: ast.AST, subject: ast.AST | None, what: str, check_subject: bool = True,
                suggestion: str = "keep the value on the device (e.g. .detach()) and read it once per log interval",
                hidden: bool = False) -> Finding | None:
        """A finding at ``node`` when it runs every training step on an accelerator; at the synchronize before
        it (once) where there is one. ``hidden``: a read inside a library call, reported even after a synchronize."""
        region, sync = every_step_read(ctx, node, subject, check_subject, hidden) or (None, None)
        if region is None:
            return None  # not every training step, or no device value of the step (semantics.stepreads)
        looping = region.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef)
        where = f"the training loop (line {region.lineno})" if looping else f"the training step {region.name}() (line {region.lineno})"
        if sync is not None:  # the read adds no wait: the synchronize before it is where the step waits
            reported = ctx._cache.setdefault("tw207:synchronizes", set())
            if id(sync) in reported:
                return None
            reported.add(id(sync))
            return ctx.finding(self.code, sync, f"{ctx.text(sync)} in {where} waits for the GPU to finish every step, "
                               f"for the {what} after it (line {node.lineno})", suggestion=_SYNC_FIX)
        return ctx.finding(self.code, node, f"{what} in {where} waits for the GPU to finish every step", suggestion=suggestion)


RULE = HostSyncInLoop()
