"""The recall corpus, round 14 part A: TW207, TW215 and TW217 classes the tuning sets 17 and 18
showed on their first looks - each written in our own words and reduced to its shape, with
look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.

Rounds 12 and 13 (``recall_corpus19.py``, ``recall_corpus24.py``) widened TW207 to loss helpers,
forward passes and loops that hand their step to a call; this round removes the false findings
those widenings made on code that does not run every step (a sink handed on at intervals, a flag
only a plotting script sets, a value cached on the first call, helpers only dead classes call)
and adds the per-step reads they still missed.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------ TW207 a logging sink handed on only at intervals
# A VAE family's loss objects take a dict to record statistics in; a base-class helper keeps the
# dict on every N-th training step and gives None otherwise, and every read sits under `if
# storer is not None:` - in the loss itself and in the helpers it hands the dict to. Before round
# 14 each of these reads (and the calls of the helpers) was reported as a read of every step.
_SINK = """
    import torch
    import torch.nn.functional as F

    def _recon_loss(x, x_hat, storer=None):
        loss = F.binary_cross_entropy(x_hat, x, reduction="sum") / x.size(0)
        if storer is not None:
            storer["recon"].append(loss.item())
        return loss

    def _kl_loss(mean, logvar, storer=None):
        kl = (-0.5 * (1 + logvar - mean.pow(2) - logvar.exp())).mean(0)
        total = kl.sum()
        if storer is not None:
            storer["kl"].append(total.item())
            for i in range(kl.size(0)):
                storer[f"kl_{{i}}"].append(kl[i].item())
        return total

    class SinkLoss:
        def __init__(self, every=50):
            self.n_steps = 0
            self.every = every

        def _keep(self, training, storer):
            if training:
                self.n_steps += 1
            if not training or self.n_steps % self.every == 1:
                storer = storer
            else:
                storer = None
            return storer

        def train_step(self, model, x, optimizer, storer):
            x = x.cuda()
            storer = {keep}
            x_hat, mean, logvar = model(x)
            rec = _recon_loss(x, x_hat, storer=storer)
            kl = _kl_loss(mean, logvar, storer)
            loss = rec + kl
            if storer is not None:
                storer["loss"].append(loss.item())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss
"""
QUIET += [
    Shape("TW207", "look-alike: a loss records statistics only when a helper keeps its sink (every 50th step)",
          d(_SINK.format(keep="self._keep(model.training, storer)"))),
    Shape("TW207", "look-alike: a logging flag bound to a modulo test, handed to the loss helper", d("""
        import torch
        def loss_terms(pred, target, verbose=False):
            mse = ((pred - target) ** 2).mean()
            if verbose:
                print("mse", mse.item())
            return mse
        def fit(model, loader, optimizer):
            for it, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                loss = loss_terms(model(x), y, verbose=it % 200 == 0)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """)),
]
FIND += [
    Shape("TW207", "the same loss with the sink kept on every step: the statistics are read every step",
          d(_SINK.format(keep="storer")), 41),
    Shape("TW207", "a loss helper handed the writer on every step reads its loss under `if writer is not None`", d("""
        import torch
        def loss_terms(pred, target, writer=None, step=0):
            mse = ((pred - target) ** 2).mean()
            if writer is not None:
                writer.add_scalar("mse", mse.item(), step)
            return mse
        def fit(model, loader, optimizer, writer):
            for it, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                loss = loss_terms(model(x), y, writer=writer, step=it)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """), 10),
]

# ------------------------------------------------------------ TW207 a forward's flag that only a plotting script sets
# A point-cloud autoencoder's forward takes `vis=False`; under `if vis:` it selects the visible
# and the masked points with the mask for a plot. Only the visualisation script (which runs no
# backward) passes vis=True; the training loop calls model(points). The selections under the flag
# were reported as every forward pass.
_VIS_MODEL = d("""
    import torch
    import torch.nn as nn
    class MaskedAE(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.enc = nn.Linear(3, dim)
            self.dec = nn.Linear(dim, 3)
        def forward(self, pts, vis=False):
            mask = torch.rand(pts.shape[:2], device=pts.device) > 0.4
            rec = self.dec(self.enc(pts * mask.unsqueeze(-1)))
            loss = ((rec - pts) ** 2).mean()
            if vis:
                shown = pts[~mask]
                rebuilt = rec[mask]
                return shown, rebuilt
            return loss
""")
_VIS_TRAIN = d("""
    import torch
    from model import MaskedAE
    def main(loader, epochs):
        net = MaskedAE(64).cuda()
        opt = torch.optim.Adam(net.parameters())
        for _ in range(epochs):
            for pts in loader:
                loss = net(pts.cuda(){flag})
                opt.zero_grad()
                loss.backward()
                opt.step()
""")
_VIS_PLOT = d("""
    import torch
    from model import MaskedAE
    def plot(net, loader):
        with torch.no_grad():
            for pts in loader:
                shown, rebuilt = net(pts.cuda(), vis=True)
                save(shown.cpu().numpy(), rebuilt.cpu().numpy())
""")
PROJECTS += [
    ProjectShape("TW207", "look-alike: selections under a forward's vis flag that only the plotting script sets", {
        "model.py": _VIS_MODEL, "train.py": _VIS_TRAIN.format(flag=""), "plot.py": _VIS_PLOT,
    }),
    ProjectShape("TW207", "the training loop itself passes vis=True: the selections run every step", {
        "model.py": _VIS_MODEL, "train.py": _VIS_TRAIN.format(flag=", vis=True"), "plot.py": _VIS_PLOT,
    }, (("model.py", 13), ("model.py", 14))),
]

# ------------------------------------------------------------ TW207 a value cached on the first call
# A data-aware initialisation module keeps whether it was initialised in a buffer (saved with the
# state dict) and reads it once into a Python attribute on its first call.
QUIET += [
    Shape("TW207", "look-alike: a buffer read once into a cached attribute on the first call", d("""
        import torch
        import torch.nn as nn
        DEVICE = "cuda"
        class LazyInit(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("_done", torch.tensor(0, dtype=torch.uint8))
                self._done_py = None
            def forward(self, x):
                if self._done_py is None:
                    self._done_py = bool(self._done.item())
                if not self._done_py:
                    self._done.fill_(1)
                    self._done_py = True
                return x
    """)),
]
FIND += [
    Shape("TW207", "the buffer read on every call (no cache)", d("""
        import torch
        import torch.nn as nn
        DEVICE = "cuda"
        class LazyInit(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("_done", torch.tensor(0, dtype=torch.uint8))
            def forward(self, x):
                if not bool(self._done.item()):
                    self._done.fill_(1)
                return x
    """), 9),
]

# ------------------------------------------------------------ TW207 helpers that only dead classes call
# A segmentation folder keeps two utility modules with the same sampling helpers; the model file
# imports one layer class of one of them, and the data set imports the NumPy sampler of the other.
# The torch samplers (boolean-mask writes every call) are called only by set-abstraction classes
# nothing builds, or by a grouping function nothing calls (ruling R5).
_SAMPLERS = """
    import torch
    import torch.nn as nn

    def far_sample(xyz, n):
        device = xyz.device
        B, N, _ = xyz.shape
        best = torch.ones(B, N).to(device) * 1e10
        far = torch.zeros(B, dtype=torch.long).to(device)
        rows = torch.arange(B).to(device)
        picked = []
        for _ in range(n):
            picked.append(far)
            c = xyz[rows, far, :].view(B, 1, 3)
            d = ((xyz - c) ** 2).sum(-1)
            mask = d < best
            best[mask] = d[mask]
            far = best.max(-1)[1]
        return torch.stack(picked, 1)

    def group(npoint, xyz):
        return far_sample(xyz, npoint)
"""
PROJECTS += [
    ProjectShape("TW207", "look-alike: mask selections in samplers only unbuilt classes or uncalled functions reach", {
        "utils_a.py": d(_SAMPLERS) + d("""
            class SetAbstraction(nn.Module):
                def forward(self, xyz):
                    return group(128, xyz)

            class Propagation(nn.Module):
                def forward(self, a, b):
                    return torch.cat([a, b], -1)
        """),
        "utils_b.py": d(_SAMPLERS) + d("""
            import numpy as np
            def fps_numpy(points, n):
                return points[np.random.choice(len(points), n)]
        """),
        "model.py": d("""
            import torch.nn as nn
            from utils_a import Propagation
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.prop = Propagation()
                def forward(self, a, b):
                    return self.prop(a, b)
        """),
        "data.py": d("""
            from utils_b import fps_numpy
            def load(points):
                return fps_numpy(points, 1024)
        """),
        "train.py": d("""
            import torch
            from model import Net
            from data import load
            def main(loader):
                net = Net().cuda()
                opt = torch.optim.SGD(net.parameters(), lr=0.1)
                for a, b in loader:
                    loss = net(a.cuda(), b.cuda()).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        """),
    }),
]
_SAMPLER_FILES = PROJECTS[-1].files
PROJECTS += [
    ProjectShape("TW207", "the model builds the set-abstraction layer: its sampler's selection runs every forward", {
        **_SAMPLER_FILES,
        "model.py": d("""
            import torch.nn as nn
            from utils_a import Propagation, SetAbstraction
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.sa = SetAbstraction()
                    self.prop = Propagation()
                def forward(self, a, b):
                    return self.prop(self.sa(a), b)
        """),
    }, (("utils_a.py", 16),)),
]

# ------------------------------------------------------------ TW207 reads in a periodic branch that is an update of its own
# Offline RL agents update the actor every other step (`if self.total_it % self.policy_freq ==
# 0:`) and log its loss inside that branch; a WGAN updates its generator every n_critic steps the
# same way. The branch runs a backward pass: it is the update of that network, and its reads
# happen on every such update - not once per log interval, as a modulo test otherwise says.
_DELAYED = """
    import torch
    import torch.nn.functional as F
    class TD3BC:
        def __init__(self, actor, critic, actor_opt, critic_opt, device="cuda", policy_freq=2):
            self.actor, self.critic = actor, critic
            self.actor_opt, self.critic_opt = actor_opt, critic_opt
            self.device, self.policy_freq, self.total_it = device, policy_freq, 0

        def train(self, batch):
            self.total_it += 1
            state, action, target_q = [b.to(self.device) for b in batch]
            log = {{}}
            critic_loss = F.mse_loss(self.critic(state, action), target_q)
            self.critic_opt.zero_grad()
            critic_loss.backward()
            self.critic_opt.step()
            if self.total_it % self.policy_freq == 0:
                q = self.critic(state, self.actor(state))
                actor_loss = -q.mean()
                {read}
                self.actor_opt.zero_grad()
                actor_loss.backward()
                self.actor_opt.step()
            return log
"""
FIND += [
    Shape("TW207", "the actor's loss read in the delayed-update branch (it runs a backward pass) every other step",
          d(_DELAYED.format(read='log["actor_loss"] = actor_loss.item()')), 20),
    Shape("TW207", "a WGAN's generator update every n_critic steps prints both losses", d("""
        import torch
        def train(gen, disc, loader, opt_g, opt_d, n_critic=5):
            for i, real in enumerate(loader):
                real = real.cuda()
                z = torch.randn(real.size(0), 100, device="cuda")
                d_loss = disc(gen(z).detach()).mean() - disc(real).mean()
                opt_d.zero_grad()
                d_loss.backward()
                opt_d.step()
                if i % n_critic == 0:
                    g_loss = -disc(gen(z)).mean()
                    opt_g.zero_grad()
                    g_loss.backward()
                    opt_g.step()
                    print("D %.4f G %.4f" % (d_loss.item(), g_loss.item()))
    """), 15),
]
QUIET += [
    Shape("TW207", "look-alike: a log interval nested in the update branch", d(_DELAYED.format(
        read='if self.total_it % 1000 == 0:\n                    log["actor_loss"] = actor_loss.item()'))),
    Shape("TW207", "look-alike: the accumulation branch steps the optimizer and reads the loss (no backward in it)", d("""
        import torch
        def train(model, loader, optimizer, criterion, accum=8):
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x.cuda()), y.cuda()) / accum
                loss.backward()
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
                    print(loss.item())
    """)),
]

# ------------------------------------------------------------ TW207 the temperature of a SAC-like agent
# Offline RL agents keep the entropy temperature as a device tensor on the agent (`self.log_alpha
# = torch.tensor([0.0], device=self.device, requires_grad=True)`, `self.alpha =
# self.log_alpha.exp().detach()`), or get it from a helper method that returns it beside its loss,
# and log `alpha.item()` with the step's other statistics - also in a loss method of the class that
# is handed the temperature. The statistics of the same dict were reported; the temperature was not.
_SAC = """
    import torch
    class Agent:
        def __init__(self, actor, critic, actor_opt, critic_opt, device="cuda"):
            self.actor, self.critic, self.device = actor, critic, device
            self.actor_opt, self.critic_opt = actor_opt, critic_opt
            self.log_alpha = torch.tensor([0.0], dtype=torch.float32, device=self.device, requires_grad=True)
            self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=3e-4)
            self.alpha = self.log_alpha.exp().detach()

        def _alpha_and_loss(self, obs, log_pi):
            alpha_loss = (-self.log_alpha * (log_pi + 1.0).detach()).mean()
            alpha = obs.new_tensor(1.0) * self.log_alpha.exp().detach()
            return alpha, alpha_loss

        def _q_update(self, obs, act, alpha, log):
            q = self.critic(obs, act)
            loss = ((q - alpha) ** 2).mean()
            self.critic_opt.zero_grad()
            loss.backward()
            self.critic_opt.step()
            log["alpha"] = {param_read}

        def update(self, batch):
            obs, act = batch[0].to(self.device), batch[1].to(self.device)
            pi, log_pi = self.actor(obs)
            alpha, alpha_loss = self._alpha_and_loss(obs, log_pi)
            self.alpha_opt.zero_grad()
            alpha_loss.backward()
            self.alpha_opt.step()
            self.alpha = self.log_alpha.exp().detach()
            log = {{"alpha_loss": alpha_loss.item()}}
            self._q_update(obs, act, alpha, log)
            log["temperature"] = {read}
            return log
"""
FIND += [
    Shape("TW207", "the agent's temperature attribute (made on the device) read every update",
          d(_SAC.format(param_read="0.0", read="self.alpha.item()")), 33),
    Shape("TW207", "the temperature a helper method returns beside its loss, read every update",
          d(_SAC.format(param_read="0.0", read="alpha.item()")), 33),
    Shape("TW207", "the temperature read in an update method the step hands it to",
          d(_SAC.format(param_read="alpha.item()", read="0.0")), 21),
    Shape("TW207", "a clipped Q value (torch.maximum of a critic output) read every update", d("""
        import torch
        def update(critic, opt, loader, lower, device):
            for obs, act in loader:
                obs, act = obs.to(device), act.to(device)
                q = (obs * act).sum(-1)
                q = torch.maximum(q, lower)
                loss = (q ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                print(q.mean().item())
    """), 11),
]
QUIET += [
    Shape("TW207", "look-alike: the helper method hands back a Python number beside its loss", d("""
        import torch
        class Agent:
            def __init__(self, critic, opt, device):
                self.critic, self.opt, self.device = critic, opt, device
            def _loss_and_count(self, obs, act):
                q = self.critic(obs, act)
                return (q ** 2).mean(), obs.size(0)
            def update(self, batch):
                obs, act = [b.to(self.device) for b in batch]
                loss, n = self._loss_and_count(obs, act)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                if int(n) > 0:
                    return n
    """)),
    Shape("TW207", "look-alike: a temperature kept as a Python float on the agent", d("""
        import torch
        class Agent:
            def __init__(self, critic, opt, device):
                self.critic, self.opt, self.device = critic, opt, device
                self.alpha = 0.2
            def update(self, batch):
                obs, act = [b.to(self.device) for b in batch]
                loss = (self.critic(obs, act) ** 2).mean() * self.alpha
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return {"alpha": float(self.alpha)}
    """)),
]

# ------------------------------------------------------------ TW207 a helper that reads only under a log interval of its own
# A PPO implementation repeats its actor update over several epochs of the collected batch; the
# update method logs its loss to the writer once every N calls (`if self.steps % N == 0:`). The
# call in the repeat loop was reported as a helper that reads what it is handed every step.
QUIET += [
    Shape("TW207", "look-alike: the update method the loop calls reads its loss only under its own modulo test", d("""
        import torch
        class PPO:
            def __init__(self, actor, opt, device="cuda"):
                self.actor, self.opt, self.device, self.steps = actor, opt, device, 0
            def update_actor(self, states, adv, writer):
                loss = -(self.actor(states) * adv).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                self.steps += 1
                if self.steps % 10 == 0:
                    writer.add_scalar("loss/actor", loss.item(), self.steps)
            def update(self, states, adv, writer):
                states, adv = states.to(self.device), adv.to(self.device)
                for _ in range(10):
                    self.update_actor(states, adv, writer)
    """)),
]

# ------------------------------------------------------------ TW215 apex's DistributedDataParallel, a wrapping helper, chunked batches
# Knowledge-enhanced BERT fine-tuning scripts wrap the model in apex's DistributedDataParallel
# (`from apex.parallel import DistributedDataParallel as DDP`) and accumulate gradients with
# `if (step + 1) % args.gradient_accumulation_steps == 0:` - apex all-reduces in every backward
# just like PyTorch's wrapper (its remedy is `model.disable_allreduce()` on the micro-steps). An
# image-classification trainer splits each batch into `subdivision` chunks and runs backward on
# every chunk before one optimizer step, with the model wrapped by a helper of its package
# (`model = apply_wrapper(config, model)`, whose body builds the DistributedDataParallel).
_APEX = """
    import torch
    def main(args, model, loader, optimizer):
        model.to("cuda")
        if args.local_rank != -1:
            from apex.parallel import DistributedDataParallel as DDP
            model = DDP(model{extra})
        for step, batch in enumerate(loader):
            batch = tuple(t.to("cuda") for t in batch)
            loss = model(*batch) / args.gradient_accumulation_steps
            if args.fp16:
                optimizer.backward(loss)
            else:
                loss.backward()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
"""
FIND += [
    Shape("TW215", "apex DistributedDataParallel, accumulation over gradient_accumulation_steps (one finding, the last backward)",
          d(_APEX.format(extra="")), 13),
]
QUIET += [
    Shape("TW215", "look-alike: the apex wrapper's all-reduce switched off on the micro-steps", d("""
        import torch
        def main(args, model, loader, optimizer):
            model.to("cuda")
            if args.local_rank != -1:
                from apex.parallel import DistributedDataParallel as DDP
                model = DDP(model)
            for step, batch in enumerate(loader):
                last = (step + 1) % args.gradient_accumulation_steps == 0
                if args.local_rank != -1:
                    model.enable_allreduce() if last else model.disable_allreduce()
                loss = model(*[t.to("cuda") for t in batch]) / args.gradient_accumulation_steps
                loss.backward()
                if last:
                    optimizer.step()
                    optimizer.zero_grad()
    """)),
]
_WRAPPER = d("""
    import torch.nn as nn
    def apply_wrapper(config, model):
        if config.distributed:
            model = nn.parallel.DistributedDataParallel(model, device_ids=[config.local_rank])
        return model
""")
_CHUNKS = """
    import torch
    from models import apply_wrapper
    def subdivide(data, targets, n):
        return data.chunk(n), targets.chunk(n)
    def train(config, model, loader, optimizer, loss_func):
        model = apply_wrapper(config, model.cuda())
        for data, targets in loader:
            data, targets = data.cuda(), targets.cuda()
            data_chunks, target_chunks = subdivide(data, targets, config.subdivision)
            optimizer.zero_grad()
            for x, y in zip(data_chunks, target_chunks):
                loss = loss_func(model(x), y)
                loss.backward()
                {inner_step}
            {outer_step}
"""
PROJECTS += [
    ProjectShape("TW215", "backward on every chunk of the batch, one step after the chunks, model wrapped by a package helper", {
        "models.py": _WRAPPER,
        "train.py": d(_CHUNKS.format(inner_step="", outer_step="optimizer.step()")),
    }, (("train.py", 13),)),
    ProjectShape("TW215", "look-alike: each chunk is a step of its own (the optimizer steps inside the chunk loop)", {
        "models.py": _WRAPPER,
        "train.py": d(_CHUNKS.format(inner_step="optimizer.step()", outer_step="pass")),
    }),
]

# ------------------------------------------------------------ TW207 a loss module named for its method, in a losses package
# A distillation zoo keeps one nn.Module per method in `kd_losses/` (`class RKD(nn.Module)`,
# `class PKT(nn.Module)`): not named "...Loss", but losses all the same, built by the trainer as
# `criterionKD = RKD(...)`. The relational loss normalises distances by the mean of the positive
# ones (`d[d > 0].mean()`), a selection whose size reaches the host every step.
_KD_TRAIN = d("""
    import torch
    from kd_losses.relational import Relational
    def main(student, teacher, loader, optimizer):
        criterion_kd = Relational(25.0)
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            fs, ft = student(x), teacher(x)
            loss = criterion_kd(fs, ft.detach())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")
_KD_LOSS = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class Relational(nn.Module):
        def __init__(self, w):
            super().__init__()
            self.w = w
        def forward(self, fs, ft):
            return self.w * self.dist_term(fs, ft)
        def dist_term(self, fs, ft):
            dt = torch.cdist(ft, ft)
            dt = dt / dt[dt > 0].mean()
            ds = torch.cdist(fs, fs)
            ds = ds / ds[ds > 0].mean()
            return F.smooth_l1_loss(ds, dt)
""")
PROJECTS += [
    ProjectShape("TW207", "a distillation loss module of a losses package selects the positive distances every step", {
        "kd_losses/__init__.py": "", "kd_losses/relational.py": _KD_LOSS, "train.py": _KD_TRAIN,
    }, (("kd_losses/relational.py", 12), ("kd_losses/relational.py", 14))),
    ProjectShape("TW207", "look-alike: the same module in a models package, used only to embed features for retrieval", {
        "nets/__init__.py": "", "nets/relational.py": _KD_LOSS.replace("return F.smooth_l1_loss(ds, dt)", "return ds, dt"),
        "search.py": d("""
            import torch
            from nets.relational import Relational
            def embed(model, loader):
                rel = Relational(1.0)
                with torch.no_grad():
                    return [rel(model(x.cuda()), model(x.cuda())) for x in loader]
        """),
    }),
]

# ------------------------------------------------------------ TW207 a policy distribution's log-probability and entropy
# An image-based actor-critic logs the actor's log-probability and entropy every update: both
# come from the distribution the actor network returned (`dist = self.actor(obs, std)`), which
# lives on the device with the network's outputs.
FIND += [
    Shape("TW207", "the log-probability and entropy of the actor's distribution read every update", d("""
        import torch
        class Agent:
            def __init__(self, actor, critic, opt, device="cuda"):
                self.actor, self.critic, self.opt, self.device = actor, critic, opt, device
            def update_actor(self, obs, std):
                obs = obs.to(self.device)
                dist = self.actor(obs, std)
                action = dist.sample()
                log_prob = dist.log_prob(action).sum(-1, keepdim=True)
                loss = -self.critic(obs, action).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return {"logprob": log_prob.mean().item(), "ent": dist.entropy().sum(-1).mean().item()}
    """), 14),
]

# ------------------------------------------------------------ TW207 accuracies summed across processes, and a synchronize under a setting
# An image-classification trainer sums its top-1/top-5 accuracies across processes with
# `dist.all_reduce(acc1, ...)` (only CUDA tensors go through NCCL) and then reads them with
# `.item()` every step; it then synchronizes the device under `if torch.cuda.is_available():` for
# nothing (no time measured per step, nothing read after it). A point-cloud trainer synchronizes
# under `if args.distributed:` right before its step reads, and reads an accuracy that its
# distributed branch hands to `reduce_tensor`.
_ACC = """
    import torch
    import torch.distributed as dist
    def train(model, loader, optimizer, criterion, compute_accuracy, distributed):
        for step, (x, y) in enumerate(loader):
            x, y = x.cuda(), y.cuda()
            out = model(x)
            loss = criterion(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            acc1, acc5 = compute_accuracy(out, y, topk=(1, 5))
            if distributed:
                dist.all_reduce(acc1, op=dist.ReduceOp.SUM)
                dist.all_reduce(acc5, op=dist.ReduceOp.SUM)
            top1 = acc1.item()
            top5 = acc5.item()
            {tail}
"""
FIND += [
    Shape("TW207", "accuracies all-reduced across processes, then read every step", d(_ACC.format(tail="pass")), 15),
    Shape("TW207", "a synchronize under `if torch.cuda.is_available():` every step, nothing read or timed after it",
          d(_ACC.format(tail="if torch.cuda.is_available():\n                torch.cuda.synchronize()")), 18),
    Shape("TW207", "a synchronize under `if args.distributed:` right before the step's reads (and an accuracy reduce_tensor takes)", d("""
        import time
        import torch
        def run_epoch(args, model, loader, optimizer, meter, writer, reduce_tensor):
            end = time.time()
            for i, (pts, label) in enumerate(loader):
                pts, label = pts.cuda(), label.cuda()
                loss, acc = model.module.get_loss_acc(model(pts), label)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                if args.distributed:
                    loss = reduce_tensor(loss, args)
                    acc = reduce_tensor(acc, args)
                if args.distributed:
                    torch.cuda.synchronize()
                writer.add_scalar("acc", acc.item(), i)
                meter.update(time.time() - end)
                end = time.time()
    """), 15),
]
QUIET += [
    Shape("TW207", "look-alike: the synchronize under a step-interval test (the timing of a logged step)", d("""
        import time
        import torch
        def train(model, loader, optimizer, criterion, meter):
            end = time.time()
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x.cuda()), y.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if step % 100 == 0:
                    torch.cuda.synchronize()
                    meter.update(time.time() - end)
                end = time.time()
    """)),
]

# ------------------------------------------------------------ TW207 a selection with a mask a method makes on the input's device
# A masked point-cloud encoder draws which groups to hide in a method that returns the mask on
# the centres' device (`mask.to(center.device)`), then keeps the visible centres with
# `center[~mask]`: the centres are only a parameter of forward, but a CUDA mask indexes CUDA
# tensors only, and the selection's size reaches the host every forward.
_MASKER = """
    import numpy as np
    import torch
    import torch.nn as nn
    DEVICE = "cuda"
    class MaskedEncoder(nn.Module):
        def __init__(self, ratio):
            super().__init__()
            self.ratio = ratio
            self.embed = nn.Linear(3, 64)
        def _draw_mask(self, center):
            B, G, _ = center.shape
            mask = np.random.rand(B, G) < self.ratio
            return {ret}
        def forward(self, center):
            hidden = self._draw_mask(center)
            visible = center[~hidden].reshape(center.shape[0], -1, 3)
            return self.embed(visible), hidden
"""
FIND += [
    Shape("TW207", "visible centres selected with a mask the encoder draws on their device",
          d(_MASKER.format(ret="torch.from_numpy(mask).to(center.device)")), 16),
]
QUIET += [
    Shape("TW207", "look-alike: the mask stays on the host (NumPy), the centres may be anywhere",
          d(_MASKER.format(ret="torch.from_numpy(mask)"))),
]

# ------------------------------------------------------------ TW207 a model class whose base class of another module does the moves
# A diffusion super-resolution trainer keeps its device handling in a `BaseModel` of another
# module (`set_device(x)` moves a batch dict with `.to(self.device)`); the subclass's
# `optimize_parameters()` runs the step on what `feed_data()` moved through that helper and logs
# `l_pix.item()` every step. Nothing in the subclass's own file names CUDA.
_BASE = d("""
    import torch
    class BaseModel:
        def __init__(self, opt):
            self.device = torch.device("cuda" if opt["gpu_ids"] else "cpu")
        def set_device(self, x):
            if isinstance(x, dict):
                return {k: v.to(self.device) for k, v in x.items()}
            return x.to(self.device)
""")
_SUB = d("""
    import torch
    from base_model import BaseModel
    class DDPM(BaseModel):
        def __init__(self, opt, net):
            super().__init__(opt)
            self.net = self.set_device(net)
            self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-4)
            self.log_dict = {}
        def feed_data(self, data):
            self.data = PLACED
        def optimize_parameters(self):
            self.opt.zero_grad()
            l_pix = self.net(self.data).mean()
            l_pix.backward()
            self.opt.step()
            self.log_dict["l_pix"] = l_pix.item()
""")
_SR_TRAIN = d("""
    from model import DDPM
    def main(opt, net, loader):
        diffusion = DDPM(opt, net)
        for step, batch in enumerate(loader):
            diffusion.feed_data(batch)
            diffusion.optimize_parameters()
""")
PROJECTS += [
    ProjectShape("TW207", "the step's loss read every step in a subclass whose base class (another module) moves the data", {
        "base_model.py": _BASE, "model.py": _SUB.replace("PLACED", "self.set_device(data)"), "train.py": _SR_TRAIN,
    }, (("model.py", 16),)),
]

# ------------------------------------------------------------ TW207 a count of positives bound to a name, then tested
# A one-stage detector's loss counts the positive anchors (`n = torch.sum(obj_mask)`) and tests the
# count (`if n != 0:`) before adding the box and class terms - every output level, every step.
# The test of a reduction written in the `if` itself was reported; through a name it was not.
_YOLO_LOSS = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class DetLoss(nn.Module):
        def forward(self, pred, target):
            obj_mask = target[..., 4] == 1
            {count}
            loss = F.binary_cross_entropy_with_logits(pred[..., 4], target[..., 4])
            if {test}:
                loss = loss + F.l1_loss(pred[..., :4] * obj_mask.unsqueeze(-1), target[..., :4] * obj_mask.unsqueeze(-1))
            return loss
    def train(model, loader, optimizer):
        criterion = DetLoss()
        for images, targets in loader:
            images, targets = images.cuda(), targets.cuda()
            loss = criterion(model(images), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
FIND += [
    Shape("TW207", "the number of positives bound to a name and tested in the loss's forward",
          d(_YOLO_LOSS.format(count="n = torch.sum(obj_mask)", test="n != 0")), 9),
]
QUIET += [
    Shape("TW207", "look-alike: the loss tests the batch size (a shape, no read)",
          d(_YOLO_LOSS.format(count="n = target.size(0)", test="n != 0"))),
]

# ------------------------------------------------------------ TW207 an agent's update() that runs its step methods, with a batch a helper placed
# An image-based actor-critic agent's `update(replay_iter, step)` draws a batch, has a helper of
# another module put it on the device (`utils.to_torch(batch, self.device)`), logs the batch's
# mean reward, and calls its two step methods (`self.update_critic(...)`, `self.update_actor(...)`,
# each a backward pass and an optimizer step). update() runs once per training step: its own read
# was not reported (only the step methods count as steps), and the helper's tensors were not known
# to be on the device. Its `metrics.update(...)` of a dict is no read.
_AGENT = d("""
    import torch
    import utils
    class Agent:
        def __init__(self, actor, critic, actor_opt, critic_opt, device="cuda"):
            self.actor, self.critic, self.device = actor, critic, device
            self.actor_opt, self.critic_opt = actor_opt, critic_opt
        def update_critic(self, obs, action, reward):
            loss = ((self.critic(obs, action) - reward) ** 2).mean()
            self.critic_opt.zero_grad()
            loss.backward()
            self.critic_opt.step()
            return {"critic_loss": loss.detach()}
        def update_actor(self, obs):
            loss = -self.critic(obs, self.actor(obs)).mean()
            self.actor_opt.zero_grad()
            loss.backward()
            self.actor_opt.step()
            return {"actor_loss": loss.detach()}
        def update(self, replay_iter, step):
            metrics = dict()
            obs, action, reward = utils.to_torch(next(replay_iter), self.device)
            metrics["batch_reward"] = READ
            metrics.update(self.update_critic(obs, action, reward))
            metrics.update(self.update_actor(obs.detach()))
            return metrics
""")
_UTILS = d("""
    import torch
    def to_torch(xs, device):
        return tuple(torch.as_tensor(x, device=device) for x in xs)
""")
PROJECTS += [
    ProjectShape("TW207", "the batch reward read in the agent's update(), which runs its two step methods every call", {
        "agent.py": _AGENT.replace("READ", "reward.mean().item()"), "utils.py": _UTILS,
    }, (("agent.py", 22),)),
    ProjectShape("TW207", "look-alike: update() keeps the reward on the device (metrics.update of a dict reads nothing)", {
        "agent.py": _AGENT.replace("READ", "reward.mean().detach()"), "utils.py": _UTILS,
    }),
]

# a guard for the interval sink: a helper that drops the sink ON the interval keeps it on every other step
FIND += [
    Shape("TW207", "a sink a helper drops only every 100th step is read on all the others", d("""
        import torch
        class Trainer:
            def __init__(self):
                self.n = 0
            def _skip_some(self, sink):
                self.n += 1
                if self.n % 100 == 0:
                    sink = None
                return sink
            def step(self, model, x, opt, sink):
                x = x.cuda()
                sink = self._skip_some(sink)
                loss = model(x).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if sink is not None:
                    sink.append(loss.item())
    """), 18),
]

# ------------------------------------------------- TW207 a training function imported under another name
# The lead's merge of rounds 14 A and C: a use of a helper only through an aliased import
# (`from helper.loops import train_vanilla as train`) is a use, also for the test that a name is used
# only in another module's dead code (the alias carries every call).
PROJECTS += [
    ProjectShape("TW207", "a per-step .item() in a training function another script imports under an alias", {
        "helper/__init__.py": "",
        "helper/loops.py": d("""
            import torch
            def train_vanilla(epoch, loader, model, criterion, optimizer):
                model.train()
                for x, y in loader:
                    x, y = x.cuda(), y.cuda()
                    loss = criterion(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    print(loss.item())
        """),
        "train_teacher.py": d("""
            from helper.loops import train_vanilla as train
            def main(model, loader, criterion, optimizer):
                for epoch in range(10):
                    train(epoch, loader, model, criterion, optimizer)
            if __name__ == "__main__":
                main(None, None, None, None)
        """),
    }, [("helper/loops.py", 10)]),
]
