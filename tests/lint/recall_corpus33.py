"""The recall corpus, round 15 part A: TW207 classes the tuning sets 19 and 20 showed on their
first looks - each written in our own words and reduced to its shape, with look-alikes that must
stay quiet. ``recall_corpus.py`` adds these to its lists.

Rounds 12-14 (``recall_corpus19.py``, ``recall_corpus24.py``, ``recall_corpus29.py``) widened
TW207 to loss helpers, forward passes and loops that hand their step to a call, and quieted it on
sinks handed on at intervals, flags only plotting sets, first-call caches and dead helpers. This
round removes the false findings of code that still does not run every training step - a log
gated by the distance from a mark the branch moves (a multi-agent RL learner), an epoch loop's own
code outside its batch loop, post-processing and calibration classes only inference calls, the
skip of an empty selection inside the step (ruling R9) - and adds reads the sets still missed: a
label-smoothing loss's host round trip, selections with slices, a progress print named for
evaluation, and a step split between a backward method and its caller's optimizer step.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------ TW207 a log gated by a mark the branch moves
# Multi-agent RL learners keep the environment step they last logged at; every train() call
# compares the current step with it and logs (reading the losses with .item()) only when the
# logging interval has passed, then moves the mark. Before round 15 each read was reported as a
# read of every step.
QUIET += [
    Shape("TW207", "look-alike: an RL learner's statistics logged once the environment steps since the last log pass the interval", d("""
        import torch
        class QLearner:
            def __init__(self, mac, args, logger):
                self.mac, self.args, self.logger = mac, args, logger
                self.optimiser = torch.optim.RMSprop(mac.parameters(), lr=args.lr)
                self.log_stats_t = -args.learner_log_interval - 1
            def train(self, batch, t_env):
                q = self.mac(batch["obs"].to(self.args.device))
                td = q - batch["target"].to(self.args.device)
                loss = (td ** 2).mean()
                self.optimiser.zero_grad()
                loss.backward()
                self.optimiser.step()
                if t_env - self.log_stats_t >= self.args.learner_log_interval:
                    self.logger.log_stat("loss", loss.item(), t_env)
                    self.logger.log_stat("td_abs", td.abs().mean().item(), t_env)
                    self.log_stats_t = t_env
    """)),
    Shape("TW207", "look-alike: a print when the step passes the next mark, which the branch advances", d("""
        import torch
        def fit(model, loader, opt, device, every=500):
            next_print = every
            step = 0
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                if step >= next_print:
                    print(step, loss.item())
                    next_print += every
    """)),
    Shape("TW207", "look-alike: a helper the step calls that logs behind such a mark (read at its intervals only)", d("""
        import torch
        class Learner:
            def __init__(self, net, opt, interval):
                self.net, self.opt, self.interval, self.last_log = net, opt, interval, 0
            def _log(self, loss, t):
                if t - self.last_log > self.interval:
                    print("loss", loss.item())
                    self.last_log = t
            def train(self, batch, t):
                loss = self.net(batch.cuda()).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                self._log(loss, t)
    """)),
]
FIND += [
    Shape("TW207", "a gate on the steps since the last update whose branch is the update itself: its read runs every update", d("""
        import torch
        def run(agent, env, opt, device, update_every=4):
            last_update = 0
            obs = env.reset()
            for t in range(100000):
                obs, reward, done, _ = env.step(agent.act(obs))
                if t - last_update >= update_every:
                    loss = agent.loss(agent.sample().to(device))
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    print(loss.item())
                    last_update = t
    """), 12),
    Shape("TW207", "an improvement test on the loss itself still reads every step (the mark is the best loss)", d("""
        import torch
        def fit(model, loader, opt, device):
            best = float("inf")
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()
                if best - loss.item() > 0.01:
                    best = loss.item()
    """), 9),
]

# ------------------------------------------------------------ TW207 the skip of an empty selection inside the step (R9)
# A centralised critic trained per time step skips the steps every episode padded away; a mask
# loss skips the images none of whose masks is large enough. Both are data-dependent branches of
# the algorithm under ruling R9. A loop over the loader's batches that skips an empty batch keeps
# its finding (recall_corpus2: an input check every step).
QUIET += [
    Shape("TW207", "look-alike: a critic's per-time-step loop that skips fully padded time steps", d("""
        import torch
        def train_critic(critic, opt, batch, mask, targets):
            critic = critic.cuda()
            for t in reversed(range(mask.size(1))):
                mask_t = mask[:, t].cuda()
                if mask_t.sum() == 0:
                    continue
                q_t = critic(batch[:, t].cuda())
                loss = (((q_t - targets[:, t].cuda()) * mask_t) ** 2).sum() / mask_t.sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
    Shape("TW207", "look-alike: a mask loss that skips an image with no mask above the area threshold", d("""
        import torch
        import torch.nn as nn
        class MaskLoss(nn.Module):
            def forward(self, pred_masks, gt_masks, min_area):
                total = pred_masks.new_zeros(())
                for i in range(gt_masks.size(0)):
                    keep = gt_masks[i].sum(dim=(0, 1)) > min_area
                    if torch.sum(keep) < 1:
                        continue
                    total = total + (pred_masks[i] - gt_masks[i]).abs().mean()
                return total
        def step(model, criterion, opt, x, gt):
            loss = criterion(model(x.cuda()), gt.cuda(), 16)
            opt.zero_grad()
            loss.backward()
            opt.step()
    """), path="losses.py"),
]
FIND += [
    Shape("TW207", "a NaN guard that skips the time step is a check, not the algorithm's skip", d("""
        import torch
        def train_critic(critic, opt, batch, targets):
            critic = critic.cuda()
            for t in range(batch.size(1)):
                loss = ((critic(batch[:, t].cuda()) - targets[:, t].cuda()) ** 2).mean()
                if torch.isnan(loss).any():
                    continue
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 6),
]

# ------------------------------------------------------------ TW207 an epoch loop with a step of its own
# A PDE surrogate's script trains autoregressively in its batch loop or, in another mode, one
# step on the last batch after it; then it logs the epoch. The epoch loop is the innermost loop
# around that second step, but everything it runs outside the batch loop runs once per epoch.
QUIET += [
    Shape("TW207", "look-alike: an epoch loop whose batch loop trains, with a one-step mode and the epoch log after it", d("""
        import torch
        def run(model, train_loader, optimizer, scheduler, device, epochs, mode):
            for ep in range(epochs):
                total = 0.0
                for xx, yy in train_loader:
                    xx, yy = xx.to(device), yy.to(device)
                    if mode == "unrolled":
                        loss = torch.nn.functional.mse_loss(model(xx), yy)
                        total = total + loss.detach()
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
                if mode == "single":
                    loss = torch.nn.functional.mse_loss(model(xx[..., 0]), yy[..., -1])
                    total += loss.item()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                scheduler.step()
                print(f"epoch {ep}: {loss.item():.4f} {total:.4f}")
    """)),
]
FIND += [
    Shape("TW207", "a GAN loop whose inner loop over range() trains the critic: the outer loop is still per batch", d("""
        import torch
        def train(G, D, loader, opt_g, opt_d, device, n_critic=5):
            for real, _ in loader:
                real = real.to(device)
                for _ in range(n_critic):
                    d_loss = D(G(torch.randn(real.size(0), 64, device=device)).detach()).mean() - D(real).mean()
                    opt_d.zero_grad()
                    d_loss.backward()
                    opt_d.step()
                g_loss = -D(G(torch.randn(real.size(0), 64, device=device))).mean()
                opt_g.zero_grad()
                g_loss.backward()
                opt_g.step()
                print(g_loss.item())
    """), 14),
    Shape("TW207", "a meta-learning loop building each task's loader inside the pass: the meta step runs per task batch", d("""
        import torch
        from torch.utils.data import DataLoader
        def meta_train(model, tasks, meta_opt, inner_opt, device):
            for task in tasks:
                support_loader = DataLoader(task.support, batch_size=8)
                for x, y in support_loader:
                    inner = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
                    inner_opt.zero_grad()
                    inner.backward()
                    inner_opt.step()
                meta = torch.nn.functional.cross_entropy(model(task.qx.to(device)), task.qy.to(device))
                meta_opt.zero_grad()
                meta.backward()
                meta_opt.step()
                print(meta.item())
    """), 15),
]

# ------------------------------------------------------------ TW207 classes only inference and evaluation call
# A one-stage instance-segmentation model hands its raw outputs to a post-processing object (NMS,
# score thresholds: boolean-mask selections) only in the `else` arm of `if self.training:`; a
# calibration metric written as a loss module is built and called only in the evaluation
# function. Before round 15 their selections and tests were reported as reads of every forward.
_DETECT = """
    import torch

    class Detect(object):
        def __init__(self, thresh):
            self.thresh = thresh

        def __call__(self, scores, boxes):
            return self.nms(scores, boxes)

        def nms(self, scores, boxes):
            conf_mask = scores > self.thresh
            order = torch.arange(scores.size(0), device=boxes.device)
            return boxes, order[conf_mask]
"""
_YOLO_MODEL = """
    import torch
    import torch.nn as nn
    from detect import Detect

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(16, 5)
            self.detect = Detect(0.3)

        def forward(self, x):
            out = self.head(x)
            if self.training:
                return out
            {inference}
"""
_YOLO_TRAIN = """
    import torch
    from model import Net

    def main(loader):
        net = Net().cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        for x, y in loader:
            loss = (net(x.cuda()) - y.cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""
PROJECTS += [
    ProjectShape("TW207", "look-alike: a post-processing object only the inference arm of a forward calls", {
        "detect.py": d(_DETECT),
        "model.py": d(_YOLO_MODEL).format(inference="return self.detect(out[:, 0], out[:, 1:])"),
        "train.py": d(_YOLO_TRAIN),
    }),
    ProjectShape("TW207", "the same object called on every forward, training included: its selections run every step", {
        "detect.py": d(_DETECT),
        "model.py": d(_YOLO_MODEL).replace("        if self.training:\n            return out\n", "").format(
            inference="return self.detect(out[:, 0], out[:, 1:])"),
        "train.py": d(_YOLO_TRAIN).replace("loss = (net(x.cuda()) - y.cuda()).pow(2).mean()", "loss = net(x.cuda())[1].mean()"),
    }, (("detect.py", 13),)),
    ProjectShape("TW207", "look-alike: a calibration error written as a loss module, built and called only by the evaluation", {
        "calibration.py": d("""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            class ECELoss(nn.Module):
                def __init__(self, n_bins=15):
                    super().__init__()
                    self.edges = torch.linspace(0, 1, n_bins + 1)

                def forward(self, logits, labels):
                    conf, pred = F.softmax(logits, dim=1).max(1)
                    ece = torch.zeros(1, device=logits.device)
                    for lo, hi in zip(self.edges[:-1], self.edges[1:]):
                        in_bin = conf.gt(lo.item()) * conf.le(hi.item())
                        if in_bin.float().mean().item() > 0:
                            ece += (conf[in_bin].mean() - pred.eq(labels)[in_bin].float().mean()).abs()
                    return ece
        """),
        "evals.py": d("""
            import torch
            from calibration import ECELoss
            ece_criterion = ECELoss().to("cuda")

            def test_classifier(model, loader):
                model.eval()
                for x, y in loader:
                    out = model(x.cuda())
                    print(ece_criterion(out, y.cuda()).item())
        """),
        "train.py": d("""
            import torch
            from evals import test_classifier

            def main(model, loader, test_loader, opt):
                model = model.cuda()
                for epoch in range(10):
                    for x, y in loader:
                        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
                    test_classifier(model, test_loader)
        """),
    }),
]

# ------------------------------------------------------------ TW207 a label-smoothing loss's host round trip
# A person re-identification label-smoothing loss (copied into many projects) builds the one-hot
# targets on the CPU from the labels' .cpu() copy and moves them back with .cuda(): the labels
# come on the GPU, so the copy waits for it every step.
FIND += [
    Shape("TW207", "one-hot targets scattered on the CPU from the labels' .cpu() copy, moved back to the GPU", d("""
        import torch
        import torch.nn as nn
        class CrossEntropyLabelSmooth(nn.Module):
            def __init__(self, num_classes, epsilon=0.1, use_gpu=True):
                super().__init__()
                self.num_classes, self.epsilon, self.use_gpu = num_classes, epsilon, use_gpu
                self.logsoftmax = nn.LogSoftmax(dim=1)
            def forward(self, inputs, targets):
                log_probs = self.logsoftmax(inputs)
                targets = torch.zeros(log_probs.size()).scatter_(1, targets.unsqueeze(1).cpu(), 1)
                if self.use_gpu:
                    targets = targets.cuda()
                targets = (1 - self.epsilon) * targets + self.epsilon / self.num_classes
                return (-targets * log_probs).mean(0).sum()
    """), 10, path="loss.py"),
]
QUIET += [
    Shape("TW207", "look-alike: the labels copied to the host for a NumPy histogram the forward keeps there", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class Balanced(nn.Module):
            def forward(self, inputs, targets):
                counts = targets.cpu()
                hist = np.bincount(counts.numpy(), minlength=inputs.size(1))
                return torch.nn.functional.cross_entropy(inputs, targets), hist
    """), path="loss.py"),
]

# ------------------------------------------------------------ TW207 a mask selection with slices
# Open-set adaptation keeps the outputs of the samples predicted as known classes: a boolean mask
# in the first index, a slice after it.
FIND += [
    Shape("TW207", "outputs of the known-class samples selected with a mask and a slice every step", d("""
        import torch
        def adapt(net, loader, opt, labels_mem, n_known):
            net, labels_mem = net.cuda(), labels_mem.cuda()
            for x, idx in loader:
                out = net(x.cuda())
                pred = labels_mem[idx]
                known = out[pred < n_known, :]
                loss = -(known.softmax(1) * known.log_softmax(1)).sum(1).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 7),
]
QUIET += [
    Shape("TW207", "look-alike: rows picked by a permutation (an index tensor, not a mask) with a slice", d("""
        import torch
        def train(net, loader, opt):
            net = net.cuda()
            for x, y in loader:
                out = net(x.cuda())
                perm = torch.randperm(out.size(0), device=out.device)
                loss = (out[perm, :] - y.cuda()).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
]

# ------------------------------------------------------------ TW207 a progress print named for evaluation
# Keyword-spotting training prints accuracy and loss through `print_eval(...)` after every step;
# the helper only formats what it is handed (.item() of both), it evaluates nothing.
FIND += [
    Shape("TW207", "print_eval() of the step's scores and loss, a helper that reads them with .item()", d("""
        import torch
        def print_eval(name, scores, labels, loss):
            acc = (scores.argmax(1) == labels).float().mean()
            print(name, acc.item(), loss.item())
        def train(model, loader, opt):
            model.cuda()
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                scores = model(x)
                loss = torch.nn.functional.cross_entropy(scores, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                print_eval("train", scores, y, loss)
    """), 14),
]
QUIET += [
    Shape("TW207", "look-alike: an evaluation helper that runs the model itself in eval mode, called from the loop", d("""
        import torch
        def run_eval(model, x, y):
            model.eval()
            with torch.no_grad():
                acc = (model(x).argmax(1) == y).float().mean().item()
            model.train()
            return acc
        def train(model, loader, opt, val_x, val_y):
            model.cuda()
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
                run_eval(model, val_x.cuda(), val_y.cuda())
    """)),
]

# ------------------------------------------------------------ TW207 a step split between a backward method and its caller
# A translation toolkit's trainer runs the forward and backward pass in `_train_step(batch)` and
# steps the optimizer in the loop that calls it, after gradient accumulation; the method reads
# the reduced loss with .item(), and the loop reads the token counts a reduction helper put on
# the device.
_SPLIT = """
    import torch
    import torch.distributed as dist

    def ddp_reduce(value, device=None, dtype=None):
        if not torch.is_tensor(value):
            value = torch.tensor(value, device=device, dtype=dtype)
        if dist.is_initialized():
            dist.all_reduce(value)
        return value

    class Trainer:
        def __init__(self, model, opt, accumulate):
            self.model, self.opt, self.accumulate = model, opt, accumulate
            self.device = torch.device("cuda")
            self.tokens = 0

        def _train_step(self, batch):
            loss = self.model(batch.src.to(self.device), batch.trg.to(self.device))
            (loss / self.accumulate).backward()
            return ddp_reduce(loss).item()

        def train(self, batches):
            for i, batch in enumerate(batches):
                loss = self._train_step(batch)
                n = ddp_reduce(batch.ntokens, self.device, torch.long)
                self.tokens += n.item()
                if (i + 1) % self.accumulate == 0:
                    self.opt.step()
                    self.opt.zero_grad()
"""
FIND += [
    Shape("TW207", "the reduced loss read in the method that runs the backward pass, stepped by its caller's loop", d(_SPLIT), 20),
    Shape("TW207", "a token count a reduction helper made a tensor on the device, read every batch", d(_SPLIT), 26),
]
QUIET += [
    Shape("TW207", "look-alike: a backward method the loop calls only every 16 steps (lazy regularisation)", d("""
        import torch
        class Trainer:
            def __init__(self, model, opt):
                self.model, self.opt = model.cuda(), opt
            def _penalty(self, x):
                x.requires_grad_(True)
                out = self.model(x).sum()
                grad, = torch.autograd.grad(out, x, create_graph=True)
                penalty = grad.pow(2).mean()
                penalty.backward()
                return penalty.item()
            def train(self, loader):
                for i, (x, y) in enumerate(loader):
                    loss = torch.nn.functional.mse_loss(self.model(x.cuda()), y.cuda())
                    self.opt.zero_grad()
                    loss.backward()
                    if i % 16 == 0:
                        self._penalty(x.cuda())
                    self.opt.step()
    """)),
]

# ------------------------------------------------------------ TW207 a helper that trains in a loop of its own
# An actor-critic learner's train() (one step per call) calls `_train_critic(...)`, which steps
# the critic once per time step and reads its statistics there. Those reads are reported where
# they are; the call is not reported again as a helper that reads what it is handed.
PROJECTS += [
    ProjectShape("TW207", "reads in the critic's own training loop are reported there, not again at the call", {
        "learner.py": d("""
            import torch
            class Learner:
                def __init__(self, actor, critic, args):
                    self.actor, self.critic = actor.cuda(), critic.cuda()
                    self.opt = torch.optim.Adam(actor.parameters())
                    self.critic_opt = torch.optim.Adam(critic.parameters())
                def _train_critic(self, obs, targets):
                    stats = []
                    for t in range(obs.size(1)):
                        q = self.critic(obs[:, t])
                        loss = ((q - targets[:, t]) ** 2).mean()
                        self.critic_opt.zero_grad()
                        loss.backward()
                        self.critic_opt.step()
                        stats.append(loss.item())
                    return stats
                def train(self, batch):
                    obs, targets = batch["obs"].cuda(), batch["targets"].cuda()
                    stats = self._train_critic(obs, targets)
                    pg = -self.actor(obs).mean()
                    self.opt.zero_grad()
                    pg.backward()
                    self.opt.step()
                    return stats
        """),
    }, (("learner.py", 15),)),
]

# ------------------------------------------------------------ TW207 an input read on the host before it is moved
# A fine-tuning loop truncates the batch's sentences on the host (the helper reads the lengths
# with .item()) and only then moves the batch to the GPU: the read is of a CPU tensor. The token
# count read after the move is a read of every step.
_TRUNCATE = """
    import torch

    def truncate(x, lengths, max_len):
        if lengths.max().item() > max_len:
            x, lengths = x[:max_len].clone(), lengths.clamp(max=max_len)
        return x, lengths

    def to_cuda(*tensors):
        return [t.cuda() for t in tensors]

    def finetune(embedder, proj, batches, opt, max_len):
        words = 0
        for (x, lengths), y in batches:
            x, lengths = truncate(x, lengths, max_len)
            x, y, lengths = to_cuda(x, y, lengths)
            loss = torch.nn.functional.cross_entropy(proj(embedder(x, lengths)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            words += {count}
"""
QUIET += [
    Shape("TW207", "look-alike: the batch truncated by a helper reading its lengths before the loop moves it",
          d(_TRUNCATE).format(count="len(y)")),
]
FIND += [
    Shape("TW207", "the token count of the moved batch read every step, after the host-side truncation",
          d(_TRUNCATE).format(count="lengths.sum().item()"), 20),
]

# ------------------------------------------------------------ TW207 torch.equal of the forward's tensors
# Relative-position attention copied from an old release of torch's functional attention asks
# `torch.equal(query, key)` on every call to choose its projection path: a Python bool of two
# CUDA tensors, once per layer per step (torch itself now asks `query is key`).
_ATTN = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def attention_forward(query, key, value, w, b):
        {same}
        if same:
            q, k, v = F.linear(query, w, b).chunk(3, dim=-1)
        else:
            q, k, v = F.linear(query, w[:64], b[:64]), F.linear(key, w[64:128], b[64:128]), F.linear(value, w[128:], b[128:])
        return torch.softmax(q @ k.transpose(-2, -1), -1) @ v

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.w, self.b = nn.Parameter(torch.randn(192, 64)), nn.Parameter(torch.zeros(192))
        def forward(self, x, memory):
            return attention_forward(x, memory, memory, self.w, self.b)

    def train(model, loader, opt):
        model.cuda()
        for x, m, y in loader:
            loss = (model(x.cuda(), m.cuda()) - y.cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""
FIND += [
    Shape("TW207", "torch.equal(query, key) in an attention function a module's forward calls every step",
          d(_ATTN).format(same="same = torch.equal(query, key) and torch.equal(key, value)"), 6),
]
QUIET += [
    Shape("TW207", "look-alike: the same choice asked by identity (query is key), no read",
          d(_ATTN).format(same="same = query is key and key is value")),
    Shape("TW207", "look-alike: torch.equal in a check of tied weights run once at set-up", d("""
        import torch
        import torch.nn as nn
        class LM(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.emb, self.out = nn.Embedding(n, d), nn.Linear(d, n, bias=False)
                self.out.weight = self.emb.weight
            def forward(self, x):
                return self.out(self.emb(x))
        def build(n, d):
            model = LM(n, d).cuda()
            assert torch.equal(model.out.weight, model.emb.weight)
            return model
        def train(model, loader, opt):
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
]

# ------------------------------------------------------------ TW207 each parameter's gradient norm copied to the host
# A VQA trainer accumulates every parameter's gradient norm on the host after each step (copied
# with .cpu().data.numpy(), one wait per parameter), whether or not it logs them.
_GRADS = """
    import torch
    def train(net, loader, opt):
        net.cuda()
        named = list(net.named_parameters())
        norms = [0.0] * len(named)
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(net(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
            for i in range(len(named)):
                {read}
"""
FIND += [
    Shape("TW207", "torch.norm of each parameter's gradient copied to the host after every step",
          d(_GRADS).format(read="norms[i] += torch.norm(named[i][1].grad).cpu().data.numpy()"), 12),
]
QUIET += [
    Shape("TW207", "look-alike: the gradient norms summed on the device, no read",
          d(_GRADS).format(read="norms[i] = norms[i] + torch.norm(named[i][1].grad).detach()")),
]
