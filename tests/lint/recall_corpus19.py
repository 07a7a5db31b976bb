"""The recall corpus, round 12 part A: TW207 classes the tuning sets 12-14 showed on their first
looks (host reads of the training step lint missed, and reads it reported that are not per-step
syncs) - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------ TW207 a log interval bound to a name
# A depth trainer logs often early on and rarely later: the interval tests are bound to names
# first (`early = i % freq == 0 and step < 2000`) and the branch tests the names. What the branch
# runs - a metric helper that reads on the host - runs once per interval, not every step.
_PHASED = """
    import torch
    class Trainer:
        def run_epoch(self):
            for i, batch in enumerate(self.loader):
                batch = {{k: v.to(self.device) for k, v in batch.items()}}
                out, losses = self.process(batch)
                self.optimizer.zero_grad()
                losses["loss"].backward()
                self.optimizer.step()
                {bind}
                if {test}:
                    self.depth_metrics(batch, out, losses)
                self.step += 1

        def depth_metrics(self, batch, out, losses):
            gt = batch["depth_gt"]
            pred = out["depth"]
            valid = gt > 0
            gt = gt[valid]
            pred = pred[valid]
            losses["abs_rel"] = torch.mean(torch.abs(gt - pred) / gt).cpu()
"""
QUIET += [
    Shape("TW207", "metric helper called under `if early or late:` with both names bound to modulo tests",
          d(_PHASED.format(bind="early = i % self.log_every == 0 and self.step < 2000\n                late = self.step % 2000 == 0",
                           test="early or late"))),
    Shape("TW207", "the same helper under one name bound to a modulo test", d(_PHASED.format(
        bind="log_now = self.step % self.opt.log_frequency == 0", test="log_now"))),
]
FIND += [
    Shape("TW207", "look-alike: the name is bound to a flag that holds every step", d(_PHASED.format(
        bind="has_depth = 'depth_gt' in batch", test="has_depth")), 12),
]

# ------------------------------------------------------------ TW207 the error path of a finite check
# A detection trainer checks the logged loss value and, when it is not finite, prints the loss
# dict and stops: that print runs once, when training dies.
_STOP = """
    import math
    import sys
    import torch
    def train_one_epoch(model, criterion, loader, optimizer, device):
        for samples, targets in loader:
            samples = samples.to(device)
            loss = criterion(model(samples), targets)
            loss_value = {value}
            if not math.isfinite(loss_value):
                print("Loss is {{}}, stopping".format(loss_value))
                print(loss)
                {stop}
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
QUIET += [
    Shape("TW207", "print(loss) in the branch that ends with sys.exit(1)", d(_STOP.format(
        value="float(running)", stop="sys.exit(1)"))),
    Shape("TW207", "print(loss) in the branch that raises", d(_STOP.format(
        value="float(running)", stop='raise RuntimeError("loss diverged")'))),
]
FIND += [
    Shape("TW207", "look-alike: the branch goes on training (no exit)", d(_STOP.format(
        value="float(running)", stop="loss = loss.clamp(max=1e4)")), 11),
]

# ------------------------------------------------------------ TW207 a loss-aware sampler fed back
# A diffusion trainer draws the step's timesteps and importance weights from a schedule sampler,
# then hands the per-sample losses back to the same sampler, which keeps their history on the host
# to draw the next step: the algorithm needs the values there (like replay priorities).
_SAMPLER = d("""
    import numpy as np
    import torch
    class LossAwareSampler:
        def sample(self, n, device):
            p = self.weights() / self.weights().sum()
            idx = np.random.choice(len(p), size=(n,), p=p)
            return torch.from_numpy(idx).to(device), torch.from_numpy(1 / (len(p) * p[idx])).float().to(device)

        def update_with_losses(self, ts, losses):
            for t, loss in zip(ts.tolist(), losses.tolist()):
                self.history[t].append(loss)
""")
_LOOP = """
    import torch
    from resample import LossAwareSampler
    class Loop:
        def __init__(self, model, diffusion):
            self.sampler = LossAwareSampler()
            self.meter = LossAwareSampler()
            self.model, self.diffusion = model.cuda(), diffusion

        def forward_backward(self, batch):
            for i in range(0, batch.shape[0], self.micro):
                micro = batch[i:i + self.micro].to(self.device)
                t, weights = self.sampler.sample(micro.shape[0], self.device)
                losses = self.diffusion.training_losses(self.model, micro, t)
                {feed}
                loss = (losses["loss"] * weights).mean()
                loss.backward()
                self.opt.step()
"""
PROJECTS += [
    ProjectShape("TW207", "the step's losses handed back to the sampler that drew its timesteps and weights", {
        "resample.py": _SAMPLER, "train_util.py": d(_LOOP.format(feed='self.sampler.update_with_losses(t, losses["loss"].detach())')),
    }),
    ProjectShape("TW207", "look-alike: the losses handed to another object of the same kind, which drew nothing", {
        "resample.py": _SAMPLER, "train_util.py": d(_LOOP.format(feed='self.meter.update_with_losses(t, losses["loss"].detach())')),
    }, (('resample.py', 10), ('train_util.py', 14),)),
]

# ------------------------------------------------------------ TW207 an evaluation inside the training loop
# A linear probe trains a classifier on frozen graph embeddings, one full-graph step per epoch, and
# evaluates every epoch under no_grad to keep the best model: the reads there belong to the
# evaluation (and the algorithm uses the validation accuracy to pick the model); the progress text
# after it reads when the GPU is drained already; the final test after the loop runs once.
_PROBE = """
    import copy
    import torch
    def accuracy(pred, labels):
        return (pred.argmax(1) == labels).float().mean().item()

    def probe(model, graph, feats, labels, masks, optimizer, epochs, device):
        train_mask, val_mask, test_mask = masks
        criterion = torch.nn.CrossEntropyLoss()
        best_acc, best_model = 0, None
        bar = tqdm(range(epochs))
        for epoch in bar:
            model.train()
            out = model(graph, feats.to(device))
            loss = criterion(out, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                model.eval()
                pred = model(graph, feats.to(device))
                val_acc = accuracy(pred[val_mask], labels[val_mask])
                val_loss = criterion(pred[val_mask], labels[val_mask])
            if val_acc >= best_acc:
                best_acc, best_model = val_acc, copy.deepcopy(model)
            bar.set_description(f"loss {loss.item():.4f} val {val_loss.item():.4f}")
        best_model.eval()
        with torch.no_grad():
            final = best_model(graph, feats.to(device))
        return accuracy(final[test_mask], labels[test_mask])
"""
QUIET += [Shape("TW207", "linear probe: evaluation block each epoch, progress text after it, the final test after the loop",
                d(_PROBE))]
FIND += [
    Shape("TW207", "look-alike: the progress text before the evaluation block still waits every step",
          d(_PROBE.replace('            bar.set_description(f"loss {loss.item():.4f} val {val_loss.item():.4f}")\n', "")
            .replace("            optimizer.step()\n", "            optimizer.step()\n            bar.set_description(f\"loss {loss.item():.4f}\")\n")), 18),
]

# ------------------------------------------------------------ TW207 a post-processing module
# A detector's post-processing module turns the outputs into results for the evaluation (panoptic
# segments, boxes for the COCO API); its forward is no forward pass of a training step.
_POST = """
    import torch
    import torch.nn as nn
    class {name}(nn.Module):
        def forward(self, outputs, sizes):
            keep = outputs["scores"] > self.threshold
            while True:
                small = torch.as_tensor([a <= 4 for a in self.areas(outputs)], device=keep.device)
                if small.any().item():
                    outputs = self.merge(outputs, small)
                else:
                    break
            return outputs
    model = Model().cuda()
"""
QUIET += [Shape("TW207", "a PostProcess module's forward tests a tensor to merge segments", d(_POST.format(name="PostProcessPanoptic")))]
FIND += [Shape("TW207", "look-alike: the same test in a module of the model", d(_POST.format(name="SegmentHead")), 8)]

# ------------------------------------------------------------ TW207 the step's losses in a dict, reduced and read
# A GAN loop collects its losses in a dict made before the loop (`loss_dict["d"] = d_loss`),
# reduces it across processes with a helper of the project (on one GPU it returns the dict
# itself), and reads every entry with `.mean().item()` for the progress bar, every iteration.
_GAN = """
    import torch
    def train(loader, generator, discriminator, g_optim, d_optim, device):
        loss_dict = {{}}
        for idx in range(100000):
            real = next(loader).to(device)
            fake = generator(torch.randn(real.size(0), 512, device=device))
            d_loss = d_logistic_loss(discriminator(real), discriminator(fake.detach()))
            loss_dict["d"] = d_loss
            discriminator.zero_grad()
            d_loss.backward()
            d_optim.step()
            g_loss = g_nonsaturating_loss(discriminator(fake))
            loss_dict["g"] = g_loss
            generator.zero_grad()
            g_loss.backward()
            g_optim.step()
            reduced = {reduce}(loss_dict)
            d_val = reduced["d"].mean().item()
            g_val = reduced["g"].mean().item()
            progress.set_description(f"d: {{d_val:.4f}}; g: {{g_val:.4f}}")
"""
FIND += [
    Shape("TW207", "loss dict reduced by reduce_loss_dict(), each entry read with .mean().item() every iteration",
          d(_GAN.format(reduce="reduce_loss_dict")), 19),
    Shape("TW207", "the same dict through an all_reduce_dict() helper of another module", d(_GAN.format(
        reduce="dist_utils.all_reduce_dict").replace("import torch\n", "import torch\n    import dist_utils\n")), 20),
]
QUIET += [
    Shape("TW207", "look-alike: the dict collects numbers read every 100 iterations", d(_GAN.format(reduce="reduce_loss_dict")
          .replace('loss_dict["d"] = d_loss', 'loss_dict["d"] = 0.0').replace('loss_dict["g"] = g_loss', 'loss_dict["g"] = 0.0')
          .replace("            reduced = ", "            if idx % 100 != 0:\n                continue\n            reduced = "))),
    Shape("TW207", "look-alike: the dict holds numbers read off the device once per interval", d(_GAN.format(reduce="reduce_loss_dict")
          .replace('loss_dict["d"] = d_loss', 'loss_dict["d"] = stats.d').replace('loss_dict["g"] = g_loss', 'loss_dict["g"] = stats.g'))),
]

# A detection trainer weights the reduced loss dict in a dict comprehension and sums its values
# for the logged loss: `sum(scaled.values()).item()` reads the sum every step.
_WEIGHTED = """
    import torch
    import utils
    def train_one_epoch(model, criterion, loader, optimizer, device):
        for samples, targets in loader:
            outputs = model(samples.to(device))
            loss_dict = criterion(outputs, targets)
            losses = sum(loss_dict[k] * criterion.weight_dict[k] for k in loss_dict)
            reduced = utils.reduce_dict(loss_dict)
            scaled = {{k: v * criterion.weight_dict[k] for k, v in reduced.items() if k in criterion.weight_dict}}
            {read}
            optimizer.zero_grad()
            losses.backward()
            optimizer.step()
"""
FIND += [
    Shape("TW207", "the sum of a weighted dict comprehension of the reduced losses, read with .item()",
          d(_WEIGHTED.format(read="loss_value = sum(scaled.values()).item()")), 10),
    Shape("TW207", "each weighted loss read in a loop over the dict's items", d(_WEIGHTED.format(
        read="logged = {k: v.item() for k, v in scaled.items()}")), 10),
]
QUIET += [
    Shape("TW207", "look-alike: the dict comprehension reads nothing (tensors handed to a logger that keeps them)",
          d(_WEIGHTED.format(read="meters.append(scaled)"))),
]

# A continual-learning model's train_a_batch() steps the optimizer itself and returns the losses
# for the progress bar: terms unpacked from its loss function and weighted into the total, a
# list of replayed losses filled per replay, a penalty added with a coefficient.
_CL = """
    import torch
    import torch.nn.functional as F
    class VAE(torch.nn.Module):
        def train_a_batch(self, x, y, x_=None, rnt=0.5):
            self.optimizer.zero_grad()
            x = x.cuda()
            recon, mu, logvar = self(x)
            reconL, variatL = self.loss_function(x=x, x_recon=recon, mu=mu, logvar=logvar)
            loss_cur = self.lamda_rcl * reconL + self.lamda_vl * variatL
            predL_r = [None] * len(x_)
            for i, replay in enumerate(x_):
                predL_r[i] = F.cross_entropy(self.classify(replay), y[i])
            loss_replay = sum(predL_r) / len(x_)
            loss_total = loss_cur if x_ is None else rnt * loss_cur + (1 - rnt) * loss_replay
            penalty = None
            if self.ewc:
                penalty = self.ewc_loss()
                loss_total += self.reg_strength * penalty
            loss_total.backward()
            self.optimizer.step()
            return {{
                {entry}
            }}
"""
FIND += [
    Shape("TW207", "a term unpacked from the model's loss function, read in the returned dict",
          d(_CL.format(entry="'recon': reconL.item() if x is not None else 0,")), 22),
    Shape("TW207", "the sum of the list of replayed losses, read in the returned dict",
          d(_CL.format(entry="'pred_r': sum(predL_r).item() / len(x_) if x_ is not None else 0,")), 22),
    Shape("TW207", "a penalty added to the total with a coefficient, read in the returned dict",
          d(_CL.format(entry="'param_reg': penalty.item() if penalty is not None else 0,")), 22),
]
QUIET += [
    Shape("TW207", "look-alike: the replay weight, a number mixed into the total, converted with float()",
          d(_CL.format(entry="'rnt': float(rnt),"))),
    Shape("TW207", "look-alike: an accuracy the loss function returns as a number beside the loss", d(
        _CL.format(entry="'acc': float(acc),").replace(
            "reconL, variatL = self.loss_function(x=x, x_recon=recon, mu=mu, logvar=logvar)",
            "reconL, acc = self.loss_function(x=x, x_recon=recon, mu=mu, logvar=logvar)\n            variatL = 0"))),
]

# A segmentation trainer counts the samples on every rank in a tensor made like the target and
# all-reduces it before reading it back.
FIND += [
    Shape("TW207", "target.new_tensor([n]) all-reduced, then .item() every step", d("""
        import torch
        import torch.distributed as dist
        def train(loader, model, criterion, optimizer):
            for images, target in loader:
                images, target = images.cuda(non_blocking=True), target.cuda(non_blocking=True)
                loss = criterion(model(images), target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                n = images.size(0)
                count = target.new_tensor([n], dtype=torch.long)
                dist.all_reduce(count)
                n = count.item()
                meter.update(n)
    """), 13),
]

# ------------------------------------------------------------ TW207 project helpers that read what they are handed
# A metric logger of the project reads every keyword tensor with .item() (`def update(self,
# **kwargs)`); a `to_cpu(t)` helper copies a tensor to the host. The training loop of another
# module calls them with the step's losses every step.
_MISC = d("""
    import torch
    from collections import defaultdict
    class MetricLogger:
        def __init__(self):
            self.meters = defaultdict(list)

        def update(self, **kwargs):
            for k, v in kwargs.items():
                if isinstance(v, torch.Tensor):
                    v = v.item()
                self.meters[k].append(v)

    def to_cpu(tensor):
        return tensor.detach().cpu()
""")
_ENGINE = """
    import torch
    import misc
    from misc import to_cpu
    def train_one_epoch(model, criterion, loader, optimizer, device):
        metric_logger = misc.MetricLogger()
        for samples, targets in loader:
            outputs = model(samples.to(device))
            loss_dict = criterion(outputs, targets)
            loss = sum(loss_dict.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            {read}
"""
PROJECTS += [
    ProjectShape("TW207", "MetricLogger.update(**kwargs) of another module, handed the loss dict every step", {
        "misc.py": _MISC, "engine.py": d(_ENGINE.format(read="metric_logger.update(**loss_dict)")),
    }, (('engine.py', 13), ('misc.py', 10),)),
    ProjectShape("TW207", "to_cpu(loss).item() with to_cpu() of another module", {
        "misc.py": _MISC, "engine.py": d(_ENGINE.format(read='log = [("loss", to_cpu(loss).item())]')),
    }, (('engine.py', 13), ('misc.py', 14),)),
    ProjectShape("TW207", "look-alike: the logger handed a number", {
        "misc.py": _MISC, "engine.py": d(_ENGINE.format(read="metric_logger.update(lr=optimizer.param_groups[0]['lr'])")),
    }),
    ProjectShape("TW207", "look-alike: a logger whose update(**kwargs) only stores what it is given", {
        "misc.py": _MISC.replace("            if isinstance(v, torch.Tensor):\n                v = v.item()\n", ""),
        "engine.py": d(_ENGINE.format(read="metric_logger.update(**loss_dict)")),
    }),
]

# ------------------------------------------------------------ TW207 .item() in the loss of every step
# A set-prediction criterion normalises by the number of target boxes: it makes the count a tensor
# on the outputs' device (to all-reduce it), then reads it back with .item() in its forward - every
# training step. A translation loss's statistics helper reads the token counts of the batch.
FIND += [
    Shape("TW207", "a criterion's forward reads the normalising box count with .item()", d("""
        import torch
        import torch.nn as nn
        class SetCriterion(nn.Module):
            def forward(self, outputs, targets):
                num_boxes = sum(len(t["labels"]) for t in targets)
                num_boxes = torch.as_tensor([num_boxes], dtype=torch.float, device=outputs["pred_logits"].device)
                if is_dist_avail_and_initialized():
                    torch.distributed.all_reduce(num_boxes)
                num_boxes = torch.clamp(num_boxes / get_world_size(), min=1).item()
                return {k: self.get_loss(k, outputs, targets, num_boxes) for k in self.losses}
        criterion = SetCriterion().cuda()
    """), 9),
    Shape("TW207", "a loss module's statistics method reads token counts of the batch with .item()", d("""
        import torch
        import torch.nn as nn
        class LabelSmoothingLossCompute(nn.Module):
            def forward(self, scores, target):
                loss = self.criterion(scores, target)
                return loss, self._stats(loss.detach(), scores, target)

            def _stats(self, loss, scores, target):
                pred = scores.max(1)[1]
                non_padding = target.ne(self.padding_idx)
                num_correct = pred.eq(target).masked_fill(~non_padding, 0).sum()
                return Statistics(loss.item(), non_padding.sum().item(), num_correct)
        device = torch.device("cuda")
    """), 12),
]
QUIET += [
    Shape("TW207", "look-alike: the count read only when a flag asks for statistics every 100 steps", d("""
        import torch
        import torch.nn as nn
        class CountingLoss(nn.Module):
            def forward(self, logits, target):
                loss = nn.functional.cross_entropy(logits, target)
                self.calls += 1
                if self.calls % 100 == 0:
                    self.seen = target.ne(0).sum().item()
                return loss
        criterion = CountingLoss().cuda()
    """)),
    Shape("TW207", "look-alike: a loss module of a project that never uses a GPU", d("""
        import torch
        import torch.nn as nn
        class CountingLoss(nn.Module):
            def forward(self, logits, target):
                n = target.ne(0).sum().item()
                return nn.functional.cross_entropy(logits, target, reduction="sum") / n
    """)),
]

# A speech transformer's loss module: cal_performance(pred, gold) hands its arguments to
# cal_loss(), which normalises the smoothed loss by the number of tokens read with .item() and
# selects the real tokens with masked_select; the solver of another module calls cal_performance
# in its training loop every step.
_ASR_LOSS = d("""
    import torch
    import torch.nn.functional as F
    def cal_performance(pred, gold, smoothing=0.0):
        pred = pred.view(-1, pred.size(2))
        gold = gold.contiguous().view(-1)
        loss = cal_loss(pred, gold, smoothing)
        return loss

    def cal_loss(pred, gold, smoothing=0.0):
        if smoothing > 0.0:
            non_pad_mask = gold.ne(-1)
            n_word = non_pad_mask.sum().item()
            one_hot = torch.zeros_like(pred).scatter(1, (gold * non_pad_mask.long()).view(-1, 1), 1)
            loss = -(one_hot * F.log_softmax(pred, dim=1)).sum(dim=1)
            return loss.masked_select(non_pad_mask).sum() / n_word
        return F.cross_entropy(pred, gold, ignore_index=-1)
""")
_ASR_SOLVER = """
    import torch
    from loss import cal_performance
    class Solver:
        def run_one_epoch(self, loader):
            for padded_input, lengths, padded_target in loader:
                padded_input, padded_target = padded_input.cuda(), padded_target.cuda()
                pred, gold = self.model(padded_input, lengths, padded_target)
                {call}
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""
PROJECTS += [
    ProjectShape("TW207", "cal_loss() reads the token count and selects with a mask; another module's loop calls cal_performance()", {
        "loss.py": _ASR_LOSS, "solver.py": d(_ASR_SOLVER.format(call="loss = cal_performance(pred, gold, smoothing=0.1)")),
    }, (("loss.py", 12), ("loss.py", 15))),
    ProjectShape("TW207", "look-alike: only the evaluation loop of the other module calls it", {
        "loss.py": _ASR_LOSS, "solver.py": d(_ASR_SOLVER.format(call="loss = F.cross_entropy(pred, gold)")) + d("""
            def evaluate(model, loader):
                for padded_input, lengths, padded_target in loader:
                    pred, gold = model(padded_input.cuda(), lengths, padded_target.cuda())
                    total = cal_performance(pred, gold, smoothing=0.1)
        """),
    }),
]

# ------------------------------------------------------------ TW207 input checks on every forward pass
# A box-IoU helper asserts that its boxes are well formed; a detector's matcher and criterion in
# another module call it from their forward with the predicted boxes, every step. An ODE-RNN
# encoder's method, called from its forward, asserts the inputs hold no NaN per time point.
_BOX_OPS = d("""
    import torch
    def box_area(boxes):
        return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])

    def generalized_box_iou(boxes1, boxes2):
        assert (boxes1[:, 2:] >= boxes1[:, :2]).all()
        assert (boxes2[:, 2:] >= boxes2[:, :2]).all()
        lt = torch.min(boxes1[:, None, :2], boxes2[:, :2])
        return box_area(boxes1)[:, None] - lt.sum(-1)
""")
_MATCHER = """
    import torch
    from torch import nn
    from box_ops import generalized_box_iou
    class HungarianMatcher(nn.Module):
        @torch.no_grad()
        def {method}(self, outputs, targets):
            out_bbox = outputs["pred_boxes"].flatten(0, 1)
            tgt_bbox = torch.cat([v["boxes"] for v in targets])
            return -generalized_box_iou(out_bbox, tgt_bbox)
    matcher = HungarianMatcher().to("cuda")
"""
PROJECTS += [
    ProjectShape("TW207", "asserts of a box helper that another module's forward calls with the predicted boxes", {
        "box_ops.py": _BOX_OPS, "matcher.py": d(_MATCHER.format(method="forward")),
    }, (("box_ops.py", 6), ("box_ops.py", 7))),
    ProjectShape("TW207", "look-alike: only an evaluation method calls the helper", {
        "box_ops.py": _BOX_OPS, "matcher.py": d(_MATCHER.format(method="evaluate")),
    }),
]
FIND += [
    Shape("TW207", "an encoder method its forward calls asserts the inputs hold no NaN", d("""
        import torch
        import torch.nn as nn
        class Encoder(nn.Module):
            def forward(self, data, time_steps):
                return self.run_odernn(data, time_steps)

            def run_odernn(self, data, time_steps):
                assert not torch.isnan(data).any()
                ys = []
                for i in range(len(time_steps)):
                    ys.append(self.gru(data[:, i]))
                return torch.stack(ys, 1)
        model = Encoder().cuda()
    """), 8),
]

# A latent ODE model derives from the project's VAE base class (an nn.Module of another module);
# the base's compute_all_losses(), which the training loop calls, calls the subclass's
# get_reconstruction(), whose asserts check its tensors every step.
_BASE = d("""
    import torch
    import torch.nn as nn
    class VAE_Baseline(nn.Module):
        def compute_all_losses(self, batch, kl_coef=1.0):
            pred, info = self.get_reconstruction(batch["tp"], batch["data"], batch["mask"])
            return {"loss": torch.mean((pred - batch["data"]) ** 2)}
""")
_LATENT = d("""
    import torch
    from base_models import VAE_Baseline
    class LatentODE(VAE_Baseline):
        def get_reconstruction(self, time_steps, data, mask):
            mu, std = self.encoder(torch.cat((data, mask), -1), time_steps)
            std = std.abs()
            assert torch.sum(std < 0) == 0.
            z0 = mu + std * torch.randn_like(std)
            assert not torch.isnan(z0).any()
            return self.decoder(self.solver(z0, time_steps)), {"first_point": (mu, std)}
""")
_RUN = """
    import torch
    from latent_ode import LatentODE
    model = LatentODE().to(torch.device("cuda"))
    for batch in loader:
        {call}
        optimizer.zero_grad()
        res["loss"].backward()
        optimizer.step()
"""
PROJECTS += [
    ProjectShape("TW207", "asserts in a subclass method of the project's VAE base, called by the losses the loop computes", {
        "base_models.py": _BASE, "latent_ode.py": _LATENT, "run_models.py": d(_RUN.format(call="res = model.compute_all_losses(batch)")),
    }, (("latent_ode.py", 7), ("latent_ode.py", 9))),
    ProjectShape("TW207", "look-alike: an audio front end's method asserting its input range, called only by the preprocessing", {
        "stft.py": d("""
            import torch
            class TacotronSTFT(torch.nn.Module):
                def mel_spectrogram(self, y):
                    assert torch.min(y.data) >= -1
                    return self.mel_basis @ self.stft(y)
        """),
        "preprocess.py": d("""
            import torch
            from stft import TacotronSTFT
            stft = TacotronSTFT().cuda()
            for wav in wavs:
                mels.append(stft.mel_spectrogram(torch.from_numpy(wav).cuda()).cpu())
        """),
    }),
]

# ------------------------------------------------------------ TW207 per-parameter reads in a trainer's step methods
# A diffusion trainer's run_step() runs the micro-batch backward passes, then optimize_normal(),
# which steps the optimizer and logs the gradient norm summed parameter by parameter with .item();
# its fp16 path first tests every parameter's gradient for non-finite values with any(...).
_TRAIN_LOOP = """
    import numpy as np
    import torch as th
    class TrainLoop:
        def run_step(self, batch):
            self.forward_backward(batch)
            if self.use_fp16:
                self.optimize_fp16()
            else:
                self.optimize_normal()

        def forward_backward(self, batch):
            for i in range(0, batch.shape[0], self.microbatch):
                loss = self.diffusion.training_losses(self.model, batch[i:i + self.microbatch].cuda())
                loss.mean().backward()

        def optimize_fp16(self):
            if any(not th.isfinite(p.grad).all() for p in self.model_params):
                self.lg_loss_scale -= 1
                return
            self.opt.step()

        def optimize_normal(self):
            {call}
            self.opt.step()

        def _log_grad_norm(self):
            sqsum = 0.0
            for p in self.master_params:
                sqsum += (p.grad ** 2).sum().item()
            self.logger.logkv_mean("grad_norm", np.sqrt(sqsum))
"""
FIND += [
    Shape("TW207", "any(not isfinite(p.grad).all() for p in params) in the method that steps the optimizer",
          d(_TRAIN_LOOP.format(call="self._log_grad_norm()")), 17),
    Shape("TW207", "gradient norm summed per parameter with .item() in a method the optimizer-step method calls",
          d(_TRAIN_LOOP.format(call="self._log_grad_norm()")), 29),
]
QUIET += [
    Shape("TW207", "look-alike: the gradient norm logged once per log interval", d(_TRAIN_LOOP.format(
        call="if self.step % self.log_interval == 0:\n                self._log_grad_norm()").replace(
        "            if any(not th.isfinite(p.grad).all() for p in self.model_params):\n                self.lg_loss_scale -= 1\n                return\n", ""))),
]

# ------------------------------------------------------------ TW207 element-by-element reads in a Python loop
# A TTS length regulator expands each phoneme by its duration, read with .item() one phoneme at a
# time; a conditional VAE picks each label's prior modes with y[i].item(); a loss maps every label
# of the batch through a Python list with i.item(). One wait for the GPU per element, every step.
_LR = """
    import torch
    import torch.nn as nn
    class LengthRegulator(nn.Module):
        def LR(self, x, duration):
            return [self.{expand}(batch, target) for batch, target in zip(x, duration)]

        def {expand}(self, batch, {predicted}):
            out = []
            for i, vec in enumerate(batch):
                expand_size = {predicted}[i].item()
                out.append(vec.expand(max(int(expand_size), 0), -1))
            return torch.cat(out, 0)

        def forward(self, x, duration):
            return self.LR(x, duration)
    regulator = LengthRegulator().cuda()
"""
FIND += [Shape("TW207", "a length regulator reads each phoneme's duration with .item()",
               d(_LR.format(expand="expand", predicted="predicted")), 10)]
QUIET += [
    Shape("TW207", "look-alike: the loop reads sequence lengths handed in (often a host tensor for packing)",
          d(_LR.format(expand="expand", predicted="lengths"))),
    Shape("TW207", "look-alike: a beam search method reads each hypothesis's tokens", d("""
        import torch
        import torch.nn as nn
        class Decoder(nn.Module):
            def forward(self, memory, tgt):
                return self.out(self.layers(tgt, memory))

            def beam_search(self, memory, beam=5):
                hyp = self.start(memory)
                for step in range(100):
                    scores = self.out(self.layers(hyp, memory))
                    tokens = [self.vocab[int(t)] for t in scores.argmax(-1)[0]]
                return tokens
        decoder = Decoder().cuda()
    """)),
]
_CVAE = """
    import torch
    import torch.nn.functional as F
    class CondVAE(torch.nn.Module):
        def calculate_log_p_z(self, z, y):
            modes = []
            for i in range(len(y)):
                target = y[i].item()
                modes.append(list(range(target * self.k, (target + 1) * self.k)))
            return self.log_normal(z, torch.tensor(modes, device=z.device))

        def loss_function(self, x, recon, z, y, allowed):
            actual_y = torch.tensor([allowed[i.item()] for i in y]).to(z.device)
            return F.mse_loss(recon, x), -self.calculate_log_p_z(z, actual_y).mean()

        def train_a_batch(self, x, y, allowed):
            x, y = x.cuda(), y.cuda()
            recon, z = self(x)
            rec, kl = self.loss_function(x, recon, z, y, allowed)
            self.optimizer.zero_grad()
            (rec + kl).backward()
            self.optimizer.step()
"""
FIND += [
    Shape("TW207", "y[i].item() for every label in a method the loss calls", d(_CVAE), 7),
    Shape("TW207", "i.item() for every label in a comprehension of the model's loss function", d(_CVAE), 12),
]

# ------------------------------------------------------------ TW207 a metric helper that selects with a mask
# A segmentation trainer computes intersection and union every step with a helper of another
# module that selects the correct pixels with a boolean mask: the selection's size has to reach
# the host. Target assignment (which targets each anchor or vocabulary bucket gets) selects by
# design.
_METRIC = """
    import torch
    def {name}(output, target, K, ignore_index=255):
        {prep}
        output = output.view(-1)
        target = target.view(-1)
        output[target == ignore_index] = ignore_index
        hit_mask = output == target
        intersection = output[hit_mask]
        area_intersection = torch.histc(intersection, bins=K, min=0, max=K - 1)
        return area_intersection
"""
_SEG_TRAIN = d("""
    import torch
    from util import intersection_and_union_gpu
    def train(loader, model, criterion, optimizer, classes):
        for images, target in loader:
            images, target = images.cuda(non_blocking=True), target.cuda(non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            inter = intersection_and_union_gpu(output.max(1)[1], target, classes)
""")
PROJECTS += [
    ProjectShape("TW207", "a metric helper of another module selects the correct pixels with a mask, every step", {
        "util.py": d(_METRIC.format(name="intersection_and_union_gpu", prep="assert output.dim() in [1, 2, 3]")),
        "train.py": _SEG_TRAIN,
    }, (("util.py", 8),)),
    ProjectShape("TW207", "look-alike: the loop calls the helper once per log interval", {
        "util.py": d(_METRIC.format(name="intersection_and_union_gpu", prep="assert output.dim() in [1, 2, 3]")),
        "train.py": _SEG_TRAIN.replace("        inter = ", "        if step % 50 == 0:\n            inter = ").replace(
            "for images, target in loader:", "for step, (images, target) in enumerate(loader):"),
    }),
    ProjectShape("TW207", "look-alike: a target-building helper keeps the targets that match an anchor", {
        "util.py": d("""
            import torch
            def build_targets(p, targets, anchors):
                r = targets[:, :, 4:6] / anchors[:, None]
                j = torch.max(r, 1. / r).max(2)[0] < 4
                t = targets[j]
                return t[:, :2].long().T, t[:, 2:6]
        """),
        "train.py": _SEG_TRAIN.replace("intersection_and_union_gpu", "build_targets"),
    }),
]
QUIET += [
    Shape("TW207", "look-alike: a split softmax loss buckets the targets by vocabulary split", d("""
        import torch
        import torch.nn as nn
        class SplitCrossEntropyLoss(nn.Module):
            def split_on_targets(self, hiddens, targets):
                split_targets, split_hiddens = [], []
                for idx in range(1, self.nsplits):
                    mask = (targets >= self.splits[idx - 1]) * (targets < self.splits[idx])
                    split_targets.append(torch.masked_select(targets, mask))
                    split_hiddens.append(hiddens.masked_select(mask.unsqueeze(1).expand_as(hiddens)).view(-1, hiddens.size(1)))
                return split_targets, split_hiddens

            def forward(self, weight, bias, hiddens, targets):
                split_targets, split_hiddens = self.split_on_targets(hiddens, targets)
                return sum(self.bucket_loss(w, h, t) for w, h, t in zip(weight, split_hiddens, split_targets))
        criterion = SplitCrossEntropyLoss().cuda()
    """)),
]

# ------------------------------------------------------------ TW207 device values the step makes in its own way
# A continual learner moves its batch with a device helper of its own (`x.to(self._device())`),
# builds one-hot targets on the host and brings them back (`to_one_hot(y.cpu(), n).to(y.device)`),
# and reads the training accuracy from its own forward pass (`_, pred = y_hat.max(1)`), every step.
_CL_STEP = """
    import torch
    import torch.nn.functional as F
    class Classifier(torch.nn.Module):
        def _device(self):
            return next(self.parameters()).device

        def train_a_batch(self, x, y):
            self.optimizer.zero_grad()
            {move}
            recon, y_hat = self(x)
            {read}
            loss = F.cross_entropy(y_hat, y)
            loss.backward()
            self.optimizer.step()
            return {{"loss": loss.detach()}}
"""
FIND += [
    Shape("TW207", "one-hot targets built from y.cpu() and moved back to y.device, every step", d(_CL_STEP.format(
        move="x = x.cuda()", read="targets = to_one_hot(y.cpu(), y_hat.size(1)).to(y.device)")), 11),
    Shape("TW207", "accuracy of the model's own outputs unpacked with _, pred = y_hat.max(1), read with .item()",
          d(_CL_STEP.format(move="x = x.cuda()", read="_, pred = y_hat.max(1)\n            acc = (y == pred).sum().item()")), 12),
    Shape("TW207", "labels moved with the class's own device helper, compared and read every step", d(_CL_STEP.format(
        move="x, y = x.cuda(), y.to(self._device())", read="acc = (y == y_hat.argmax(1)).float().mean().item()")), 11),
]
QUIET += [
    Shape("TW207", "look-alike: labels copied to the host for a NumPy metric that stays there", d(_CL_STEP.format(
        move="x = x.cuda()", read="targets = to_one_hot(labels_np, 10)"))),
    Shape("TW207", "look-alike: a CPU copy of the labels made once, outside the step", d(_CL_STEP.format(
        move="x = x.cuda()", read="pass").replace("class Classifier", "host_labels = all_labels.cpu()\n    class Classifier"))),
]

# A masked graph autoencoder's forward computes its reconstruction loss and returns it with a
# dict of the value read with .item(), every training step.
FIND += [
    Shape("TW207", "a model's forward returns its loss and loss.item() for logging", d("""
        import torch
        import torch.nn as nn
        class PreModel(nn.Module):
            def forward(self, g, x):
                loss = self.mask_attr_prediction(g, x)
                loss_item = {"loss": loss.item()}
                return loss, loss_item
        model = PreModel().cuda()
    """), 6),
]
QUIET += [
    Shape("TW207", "look-alike: the forward returns the loss tensor itself in the dict", d("""
        import torch
        import torch.nn as nn
        class PreModel(nn.Module):
            def forward(self, g, x):
                loss = self.mask_attr_prediction(g, x)
                return loss, {"loss": loss.detach()}
        model = PreModel().cuda()
    """)),
]

# ------------------------------------------------------------ TW207 look-alikes from other projects
# A training loop that stops when the loss has converged: the stop test is the algorithm's (R9).
QUIET += [
    Shape("TW207", "a training loop stops when the loss converged: if loss < tol: break", d("""
        import torch
        def fit(model, x, y, opt, tol=1e-4):
            x, y = x.cuda(), y.cuda()
            for it in range(10000):
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if loss < tol:
                    break
    """)),
]
FIND += [
    Shape("TW207", "look-alike: the same test only logs (no stop)", d("""
        import torch
        def fit(model, x, y, opt, tol=1e-4):
            x, y = x.cuda(), y.cuda()
            for it in range(10000):
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if loss < tol:
                    print("converged")
    """), 9),
]

# A continual-learning model subclasses the project's model base class; its end-of-task hook
# (called by the base when a task ends) and a first-call input check behind a flag test tensors,
# but neither runs every step.
_CL_BASE = d("""
    import torch.nn as nn
    class ContinualModel(nn.Module):
        def meta_end_task(self, dataset):
            self.end_task(dataset)

        def forward(self, x):
            if not self.checked_once:
                self.check_inputs_once(x)
            return self.net(x)
""")
_CL_MODEL = d("""
    import torch
    from continual_model import ContinualModel
    class XDer(ContinualModel):
        def end_task(self, dataset):
            chosen = self.buffer.labels < self.current_task
            if chosen.any():
                self.buffer.logits[chosen] = self.update_logits(self.buffer.logits[chosen])

        def check_inputs_once(self, x):
            assert torch.sum(abs(x.float() - x.long().float())) < 0.0001
            self.checked_once = True

        def observe(self, inputs, labels):
            self.opt.zero_grad()
            loss = self.loss(self.net(inputs.cuda()), labels.cuda())
            loss.backward()
            self.opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "look-alike: an end-of-task hook and a check behind a first-call flag of a project model class", {
        "continual_model.py": _CL_BASE, "xder.py": _CL_MODEL,
    }),
]

# A captioning loss wrapper turns the ground-truth indices into a Python list to pick the host
# captions the self-critical reward needs.
QUIET += [
    Shape("TW207", "look-alike: indices read with .tolist() to pick host-side references for a reward", d("""
        import torch
        import torch.nn as nn
        class LossWrapper(nn.Module):
            def forward(self, fc_feats, labels, gts, gt_indices):
                gen_result, logprobs = self.model(fc_feats, mode="sample")
                refs = [gts[i] for i in gt_indices.tolist()]
                reward = torch.from_numpy(self.cider(gen_result, refs)).to(logprobs)
                return -(logprobs * reward).mean()
        wrapper = LossWrapper().cuda()
    """)),
]

# ------------------------------------------------------------ TW207 a helper of a CRLF file
# The same project helper, in a file saved with Windows line endings: the helper is still read.
PROJECTS += [
    ProjectShape("TW207", "an augmentation tuner of another module (CRLF line endings) reads the discriminator's output", {
        "non_leaking.py": d("""
            import torch
            class AdaptiveAugment:
                def tune(self, real_pred):
                    self.buf += torch.tensor((torch.sign(real_pred).sum().item(), real_pred.shape[0]), device=real_pred.device)

                    return self.p
        """).replace("\n", "\r\n"),
        "train.py": d("""
            import torch
            from non_leaking import AdaptiveAugment
            def train(loader, discriminator, d_optim, device):
                ada = AdaptiveAugment()
                for real in loader:
                    real_pred = discriminator(real.to(device))
                    d_loss = torch.nn.functional.softplus(-real_pred).mean()
                    d_loss.backward()
                    d_optim.step()
                    p = ada.tune(real_pred)
        """),
    }, (('non_leaking.py', 4), ('train.py', 10),)),
]

# ------------------------------------------------------------ TW207 a host copy in the loss of every step
# A detector's loss function returns its terms copied to the host with a helper of the project
# (`to_cpu(t)`: `t.detach().cpu()`), for the logs; the training loop of another module calls it
# every step.
_YOLO_UTILS = d("""
    def to_cpu(tensor):
        return tensor.detach().cpu()
""")
_YOLO_LOSS = """
    import torch
    import torch.nn as nn
    from utils import to_cpu
    def compute_loss(predictions, targets, model):
        device = targets.device
        lbox, lobj = torch.zeros(1, device=device), torch.zeros(1, device=device)
        for layer_predictions in predictions:
            lobj += nn.BCEWithLogitsLoss()(layer_predictions[..., 4], targets[..., 4])
            lbox += (layer_predictions[..., :4] - targets[..., :4]).abs().mean()
        lbox *= 0.05
        loss = lbox + lobj
        return loss, {terms}
"""
_YOLO_TRAIN = d("""
    import torch
    from loss import compute_loss
    def train(model, loader, optimizer, device):
        for imgs, targets in loader:
            outputs = model(imgs.to(device))
            loss, loss_components = compute_loss(outputs, targets.to(device), model)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
""")
PROJECTS += [
    ProjectShape("TW207", "a loss function returns its terms through to_cpu() of another module, every step", {
        "utils.py": _YOLO_UTILS, "loss.py": d(_YOLO_LOSS.format(terms="to_cpu(torch.cat((lbox, lobj, loss)))")),
        "train.py": _YOLO_TRAIN,
    }, (("loss.py", 12),)),
    ProjectShape("TW207", "look-alike: the terms returned detached, on the device", {
        "utils.py": _YOLO_UTILS, "loss.py": d(_YOLO_LOSS.format(terms="torch.cat((lbox, lobj, loss)).detach()")),
        "train.py": _YOLO_TRAIN,
    }),
]

# ------------------------------------------------------------ TW207 an optimizer that computes the loss in its step
# A functional-regularisation optimizer's step() runs the forward and backward pass itself and
# returns the losses read with .item(): it runs once per training step.
_FROMP = """
    import torch
    import torch.nn.functional as F
    from torch.optim import Optimizer
    class {name}({base}):
        def step(self, x, y):
            self.zero_grad()
            logits = self.model(x.cuda())
            loss_cur = F.cross_entropy(logits, y.cuda())
            loss_cur.backward()
            self.update_by_hand()
            return {{"loss_total": loss_cur.item()}}
"""
FIND += [Shape("TW207", "step() of an Optimizer subclass returns loss_cur.item()", d(_FROMP.format(name="FROMP", base="Optimizer")), 11)]
QUIET += [Shape("TW207", "look-alike: step() of a plain class (a scheduler-like helper nobody steps per batch)",
                d(_FROMP.format(name="Evaluator", base="object")))]
