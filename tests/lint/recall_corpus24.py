"""The recall corpus, round 13 part A: TW207, TW215 and TW217 classes the tuning sets 15 and 16
showed on their first looks (and round 12 left open) - each written in our own words and reduced
to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------ TW207 a synchronize before the step's reads
# A vision-transformer trainer synchronizes the device after every step and then reads the loss
# for its meters: the reads after it add no wait, the synchronize is where the step waits. It is
# reported there (before round 13 neither it nor the reads were: the reads count as "after a
# synchronize" and the synchronize as "followed by a read").
_SYNC_THEN_READ = """
    import time
    import torch
    def train_epoch(model, criterion, loader, optimizer, meters):
        end = time.time()
        for step, (images, labels) in enumerate(loader):
            images = images.cuda(non_blocking=True)
            labels = labels.cuda(non_blocking=True)
            loss = criterion(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch.cuda.synchronize()
            {read}
            meters["time"].update(time.time() - end)
            end = time.time()
"""
FIND += [
    Shape("TW207", "torch.cuda.synchronize() every step, then loss.item() into a meter (and a step timer)",
          d(_SYNC_THEN_READ.format(read='meters["loss"].update(loss.item(), images.size(0))')), 12),
    Shape("TW207", "a momentum-encoder update, then synchronize and a logger fed loss.item()", d("""
        import torch
        def train_one_epoch(student, teacher, loss_fn, loader, optimizer, logger, momentum):
            for it, crops in enumerate(loader):
                crops = [c.cuda(non_blocking=True) for c in crops]
                loss = loss_fn(student(crops), teacher(crops[:2]))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                with torch.no_grad():
                    for p_s, p_t in zip(student.parameters(), teacher.parameters()):
                        p_t.data.mul_(momentum).add_((1 - momentum) * p_s.detach().data)
                torch.cuda.synchronize()
                logger.update(loss=loss.item())
                logger.update(lr=optimizer.param_groups[0]["lr"])
    """), 12),
]
FIND += [  # (round 18: sets 22 and 26 count a synchronize that times every training step for a meter)
    Shape("TW207", "the synchronize is followed only by host values (the learning rate, a timer)",
          d(_SYNC_THEN_READ.format(read='meters["lr"].update(optimizer.param_groups[0]["lr"])')), 12),
]
FIND += [  # (round 31: was a look-alike; sets 46 and 50 count the timer's synchronize when the reads after it run only
    # under a print interval - it stalls every step, the reads every 50th)
    Shape("TW207", "the loss is read after the synchronize only under a print interval (the synchronize times the step)",
          d(_SYNC_THEN_READ.format(read='if step % 50 == 0:\n                print(loss.item())')), 12),
]

# ------------------------------------------------------------ TW207 the gradient scaler's scale read every step
# GradScaler.get_scale() reads the scale tensor with .item(), and so does its state_dict(): a
# mixed-precision trainer that logs the scale into a meter every step waits for the GPU there -
# also after a synchronize, since the read stays when the synchronize goes.
_SCALE = """
    import torch
    from torch.cuda.amp import GradScaler, autocast
    def train(model, loader, optimizer, meter, print_freq):
        scaler = GradScaler()
        for idx, (x, mask) in enumerate(loader):
            x, mask = x.cuda(non_blocking=True), mask.cuda(non_blocking=True)
            with autocast():
                loss = model(x, mask)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            {read}
"""
FIND += [
    Shape("TW207", "scaler.get_scale() fed to a meter every step",
          d(_SCALE.format(read="meter.update(scaler.get_scale())")), 13),
    Shape("TW207", "a scaler wrapper's state_dict()['scale'] read every step", d("""
        import torch
        def train_one_epoch(model, criterion, loader, optimizer, loss_scaler, meters):
            for idx, (samples, targets) in enumerate(loader):
                samples, targets = samples.cuda(non_blocking=True), targets.cuda(non_blocking=True)
                loss = criterion(model(samples), targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                scale_value = loss_scaler.state_dict()["scale"]
                meters["scale"].update(scale_value)
    """), 9),
]
QUIET += [
    Shape("TW207", "look-alike: the scale read under the print interval",
          d(_SCALE.format(read="if idx % print_freq == 0:\n                print(scaler.get_scale())"))),
    Shape("TW207", "look-alike: the scaler's state saved once after the epoch", d("""
        import torch
        from torch.cuda.amp import GradScaler
        def train(model, loader, optimizer, path):
            scaler = GradScaler()
            for x, y in loader:
                loss = model(x.cuda(), y.cuda())
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            torch.save({"model": model.state_dict(), "scale": scaler.state_dict()["scale"]}, path)
    """)),
]

# ------------------------------------------------------------ TW207/TW215 a scaler helper runs backward and step
# An ImageNet trainer hands the loss and the optimizer to a scaler helper of the project
# (`__call__` runs backward, clipping and the step when `update_grad` says so). The loop has no
# backward or step of its own, yet it is the training loop: its reads run every step; under DDP
# with accumulation the helper's backward all-reduces on every micro-step.
_HELPER_LOOP = """
    import torch
    def train_one_epoch(config, model, criterion, loader, optimizer, loss_scaler, meters):
        for idx, (samples, targets) in enumerate(loader):
            samples = samples.cuda(non_blocking=True)
            targets = targets.cuda(non_blocking=True)
            loss = criterion(model(samples), targets) / config.accum_steps
            grad_norm = loss_scaler(loss, optimizer, clip_grad=config.clip,
                                    parameters=model.parameters(), update_grad={update})
            if (idx + 1) % config.accum_steps == 0:
                optimizer.zero_grad()
            {read}
"""
FIND += [
    Shape("TW207", "the loss read every pass of a loop whose backward and step live in a scaler helper",
          d(_HELPER_LOOP.format(update="(idx + 1) % config.accum_steps == 0", read="meters['loss'].update(loss.item())")), 11),
]
QUIET += [
    Shape("TW207", "look-alike: the same loop reads the loss under a print interval",
          d(_HELPER_LOOP.format(update="True", read="if idx % config.print_freq == 0:\n                print(loss.item())"))),
]
_DDP_MAIN = """
    import torch
    from torch.nn.parallel import DistributedDataParallel
    from engine import train_one_epoch
    def main(config, model, loader, criterion, optimizer, loss_scaler):
        model = DistributedDataParallel(model.cuda(), device_ids=[config.local_rank])
        for epoch in range(config.epochs):
            train_one_epoch(config, model, criterion, loader, optimizer, loss_scaler, {{}})
"""
FIND += [
    Shape("TW215", "DDP file: a scaler helper backwards every micro-step, update_grad only every N",
          d(_DDP_MAIN.format() + _HELPER_LOOP.format(update="(idx + 1) % config.accum_steps == 0", read="pass")), 15),
    Shape("TW215", "DDP file: backward in the accumulation branch, the unconditional step in the other branch", d("""
        import torch
        from torch.nn.parallel import DistributedDataParallel
        def train(model, loader, optimizer, scaler, accum):
            model = DistributedDataParallel(model.cuda())
            for idx, (img, mask) in enumerate(loader):
                loss = model(img.cuda(non_blocking=True), mask.cuda(non_blocking=True))
                if accum > 1:
                    scaler.scale(loss / accum).backward()
                    if (idx + 1) % accum == 0:
                        scaler.step(optimizer)
                        scaler.update()
                        optimizer.zero_grad()
                else:
                    optimizer.zero_grad()
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
    """), 8),
]
QUIET += [
    Shape("TW215", "look-alike: the helper steps on every call (update_grad=True)",
          d(_DDP_MAIN.format() + _HELPER_LOOP.format(update="True", read="pass"))),
    Shape("TW215", "look-alike: the accumulating micro-steps run under model.no_sync()", d("""
        import contextlib
        import torch
        from torch.nn.parallel import DistributedDataParallel
        def train(model, loader, optimizer, loss_scaler, accum):
            model = DistributedDataParallel(model.cuda())
            for idx, (x, y) in enumerate(loader):
                last = (idx + 1) % accum == 0
                with contextlib.nullcontext() if last else model.no_sync():
                    loss = model(x.cuda(), y.cuda())
                    loss_scaler(loss, optimizer, update_grad=(idx + 1) % accum == 0)
    """)),
]

# ------------------------------------------------------------ TW217/TW207 training handed to a function per iteration
# An RL script collects a batch with its agent, then calls a function of the script that moves it
# to the device and runs a policy-gradient step of another module (`a2c_step`, `ppo_step` over
# minibatch ranges); the main loop empties the CUDA cache at the end of every iteration.
_RL_CORE = d("""
    import torch
    def policy_step(policy, value, optimizer_policy, optimizer_value, states, actions, returns, advantages):
        value_loss = (value(states) - returns).pow(2).mean()
        optimizer_value.zero_grad()
        value_loss.backward()
        optimizer_value.step()
        log_probs = policy.get_log_prob(states, actions)
        policy_loss = -(log_probs * advantages).mean()
        optimizer_policy.zero_grad()
        policy_loss.backward()
        optimizer_policy.step()
""")
_RL_MAIN = """
    import numpy as np
    import torch
    from core.pg import policy_step
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def update_params(batch):
        states = torch.from_numpy(np.stack(batch.state)).to(device)
        actions = torch.from_numpy(np.stack(batch.action)).to(device)
        returns = torch.from_numpy(np.stack(batch.ret)).to(device)
        advantages = torch.from_numpy(np.stack(batch.adv)).to(device)
        {update}

    def main_loop(agent, args):
        for i_iter in range(args.max_iter_num):
            batch, log = agent.collect_samples(args.min_batch_size)
            update_params(batch)
            if i_iter % args.log_interval == 0:
                print(i_iter, log["avg_reward"])
            torch.cuda.empty_cache()
"""
PROJECTS += [
    ProjectShape("TW217", "empty_cache() each iteration of a loop whose update function runs another module's policy step", {
        "core/pg.py": _RL_CORE,
        "examples/pg_gym.py": d(_RL_MAIN.format(
            update="policy_step(policy_net, value_net, opt_p, opt_v, states, actions, returns, advantages)")),
    }, (("examples/pg_gym.py", 19),)),
    ProjectShape("TW217", "the same, with the step repeated over minibatch ranges of the collected batch", {
        "core/pg.py": _RL_CORE,
        "examples/pg_gym.py": d(_RL_MAIN.format(
            update="for _ in range(4):\n            for i in range(len(states) // 64):\n"
                   "                sl = slice(i * 64, (i + 1) * 64)\n"
                   "                policy_step(policy_net, value_net, opt_p, opt_v, states[sl], actions[sl], returns[sl], advantages[sl])")),
    }, (("examples/pg_gym.py", 22),)),
    ProjectShape("TW217", "look-alike: empty_cache() once per epoch of a loop calling an epoch function of another module", {
        "engine.py": d("""
            import torch
            def train_epoch(model, loader, optimizer, criterion, device):
                for x, y in loader:
                    loss = criterion(model(x.to(device)), y.to(device))
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """),
        "train.py": d("""
            import torch
            from engine import train_epoch
            def main(model, loader, optimizer, criterion, args):
                for epoch in range(args.epochs):
                    train_epoch(model, loader, optimizer, criterion, "cuda")
                    torch.cuda.empty_cache()
        """),
    }),
]
FIND += [
    Shape("TW217", "torch reached through a star import: empty_cache() in the training loop", d("""
        from common import *
        def train(model, loader, optimizer):
            for x, y in loader:
                loss = model(x.cuda(), y.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                torch.cuda.empty_cache()
    """), 8),
]

# ------------------------------------------------------------ TW207 a method's loop around a step method of the class
# A trainer's fit() moves each batch to the device and hands it to its own step method (backward
# and step there); it counts the batch's tokens with .item() every pass.
_FIT = """
    import torch
    class Trainer:
        def fit(self, loader):
            tokens = 0
            for batch in loader:
                batch = {{k: v.to(self.device) for k, v in batch.items()}}
                {call}
                tokens += batch["mask"].sum().item()
            return tokens

        def train_step(self, batch):
            loss = self.model(**batch).loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

        def train_epoch(self, loader):
            for batch in loader:
                self.train_step(batch)
"""
FIND += [
    Shape("TW207", "a token count read every pass of a loop that calls the class's step method",
          d(_FIT.format(call="self.train_step(batch)")), 8),
]
QUIET += [
    Shape("TW207", "look-alike: the loop calls the class's epoch method (once per epoch, it loops itself)",
          d(_FIT.format(call="self.train_epoch([batch])"))),
]

# ------------------------------------------------------------ TW207 values computed from the step's tensors by project code
# A traffic forecaster's train() step computes its metrics with functions of the project's util
# module on the model's output and reads each with .item(); a segmentation module returns the
# loss and the pixel accuracy from one forward, and the loop reads the accuracy; a graph
# pre-training loop turns a submodule's scores into an accuracy with a dtype change.
PROJECTS += [
    ProjectShape("TW207", ".item() of a util metric of the model's output in the step method", {
        "util.py": d("""
            import torch
            def masked_mape(preds, labels, null_val):
                mask = (labels != null_val).float()
                return torch.mean(torch.abs(preds - labels) / labels * mask)
        """),
        "engine.py": d("""
            import torch
            import util
            class Trainer:
                def __init__(self, model, device):
                    self.model = model.to(device)
                    self.optimizer = torch.optim.Adam(self.model.parameters())
                def train(self, x, y):
                    self.optimizer.zero_grad()
                    out = self.model(x)
                    loss = torch.mean(torch.abs(out - y))
                    loss.backward()
                    self.optimizer.step()
                    mape = util.masked_mape(out, y, 0.0).item()
                    return loss.item(), mape
        """),
    }, (("engine.py", 13), ("engine.py", 14))),
    ProjectShape("TW207", "look-alike: the util metric works on NumPy copies made once per epoch", {
        "util.py": d("""
            import numpy as np
            def masked_mape(preds, labels, null_val):
                return np.mean(np.abs(preds - labels) / labels)
        """),
        "engine.py": d("""
            import numpy as np
            import torch
            import util
            def run(model, loader, optimizer, device):
                outs, ys = [], []
                for x, y in loader:
                    out = model(x.to(device))
                    loss = torch.mean(torch.abs(out - y.to(device)))
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    outs.append(out.detach())
                    ys.append(y)
                preds = torch.cat(outs).cpu().numpy()
                return util.masked_mape(preds, np.concatenate(ys), 0.0).item()
        """),
    }),
]
_SEG = """
    import torch
    def train(segmentation_module, iterator, optimizers, meters, iters):
        segmentation_module.cuda()
        for i in range(iters):
            batch = next(iterator)
            segmentation_module.zero_grad()
            loss, acc = {call}
            loss = loss.mean()
            loss.backward()
            for optimizer in optimizers:
                optimizer.step()
            meters["loss"].update(loss.data.item())
            meters["acc"].update(acc.data.item() * 100)
"""
FIND += [
    Shape("TW207", "the accuracy the segmentation module returns beside the loss, read every step",
          d(_SEG.format(call="segmentation_module(batch)")), 13),
    Shape("TW207", "an accuracy from a submodule's scores, cast with .to(torch.float32), read every step", d("""
        import torch
        def train(model, loader, optimizer, device):
            for batch in loader:
                batch = batch.to(device)
                emb = model.gnn(batch.x, batch.edge_index)
                pos = model.discriminator(emb, batch.summary)
                loss = model.loss(pos, torch.ones_like(pos))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                acc = torch.sum(pos > 0).to(torch.float32) / len(pos)
                total_acc += float(acc.detach().cpu().item())
    """), 12),
]
QUIET += [
    Shape("TW207", "look-alike: a loss function hands its statistics back already on the host",
          d(_SEG.format(call="compute_loss(segmentation_module, batch)").replace(
              "import torch\n", "import torch\n    from losses import compute_loss\n").replace(
              "meters[\"acc\"].update(acc.data.item() * 100)", "meters[\"acc\"].update(float(acc[0]))").replace(
              "meters[\"loss\"].update(loss.data.item())", "meters[\"loss\"].update(float(acc[1]))"))),
    Shape("TW207", "look-alike: the loss computed on the CPU by design (loss_device = torch.device('cpu'))", d("""
        import torch
        def train(model, loader, optimizer, vis):
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            loss_device = torch.device("cpu")
            for step, batch in enumerate(loader):
                embeds = model(torch.from_numpy(batch).to(device))
                embeds_loss = embeds.view(8, 10, -1).to(loss_device)
                loss, eer = model.loss(embeds_loss)
                model.zero_grad()
                loss.backward()
                optimizer.step()
                vis.update(loss.item(), eer, step)
    """)),
]

# ------------------------------------------------------------ TW207 a NaN test of the gradient norm through NumPy
# A speech synthesiser clips the gradients and tests the returned norm with np.isnan(norm.cpu())
# every step; NumPy comes through a star import of a display helper module.
FIND += [
    Shape("TW207", "np.isnan(grad_norm.cpu()) every step, numpy star-imported", d("""
        import torch
        from display_utils import *
        def train(model, loader, optimizer, clip):
            for texts, mels in loader:
                out = model(texts.cuda(), mels.cuda())
                loss = torch.nn.functional.l1_loss(out, mels.cuda())
                optimizer.zero_grad()
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                if np.isnan(grad_norm.cpu()):
                    print("grad_norm was NaN!")
                optimizer.step()
    """), 10),
]

# ------------------------------------------------------------ TW207 a module's buffer read on the host
# A contrastive memory keeps its settings in one registered buffer and reads them with
# self.params[k].item() in every forward; a synthesiser's get_step() returns its step buffer
# with .item() and the training loop calls it every step.
_MEMORY = """
    import torch
    from torch import nn
    class ContrastMemory(nn.Module):
        def __init__(self, size, k, t):
            super().__init__()
            self.register_buffer("params", torch.tensor([k, t, -1, -1]))
            self.register_buffer("memory", torch.rand(size, 128))
        def {method}(self, v, idx):
            k = int(self.params[0].item())
            t = self.params[1].item()
            weight = torch.index_select(self.memory, 0, idx.view(-1)).view(-1, k + 1, 128)
            return torch.exp(torch.bmm(weight, v.unsqueeze(2)) / t)
    model = ContrastMemory(100, 16, 0.07).cuda()
"""
FIND += [Shape("TW207", "self.params[0].item() of a registered buffer in forward()",
               d(_MEMORY.format(method="forward")), 9)]
QUIET += [Shape("TW207", "look-alike: the same reads in extra_repr() (printing the module)",
                d(_MEMORY.format(method="extra_repr")))]
_SYNTH_MODEL = """
    import torch
    from torch import nn
    class Synth(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(80, 80)
            {step}
        def forward(self, x):
            return self.net(x)
        def get_step(self):
            return {read}
"""
_SYNTH_TRAIN = d("""
    import torch
    from model import Synth
    def train(loader, save_every):
        model = Synth().cuda()
        optimizer = torch.optim.Adam(model.parameters())
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step = model.get_step()
            if step % save_every == 0:
                torch.save(model.state_dict(), "synth.pt")
""")
PROJECTS += [
    ProjectShape("TW207", "model.get_step() returning the step buffer's .item(), called every step", {
        "model.py": d(_SYNTH_MODEL.format(step='self.register_buffer("step", torch.zeros(1, dtype=torch.long))',
                                          read="self.step.data.item()")),
        "train.py": _SYNTH_TRAIN,
    }, (("train.py", 11),)),
    ProjectShape("TW207", "look-alike: get_step() returns a plain Python counter", {
        "model.py": d(_SYNTH_MODEL.format(step="self.step = 0", read="int(self.step)")),
        "train.py": _SYNTH_TRAIN,
    }),
]

# ------------------------------------------------------------ TW207 a step function that accumulates gradients
# A GAN's train(x, y) closure accumulates D's gradients over chunks of the batch in range()
# loops, steps D in a loop of critic steps, accumulates G's and steps G once; the losses it
# returns are read with .item() after G's step - once per call, every training step.
_GAN = """
    import torch
    def training_function(G, D, GD, z_, config):
        def train(x, y):
            x = torch.split(x, config["batch_size"])
            counter = 0
            for step_index in range(config["num_D_steps"]):
                D.optim.zero_grad()
                for accumulation_index in range({d_bound}):
                    D_fake, D_real = GD(z_.sample(), x[counter])
                    D_loss_real = torch.mean(torch.relu(1. - D_real))
                    D_loss_fake = torch.mean(torch.relu(1. + D_fake))
                    D_loss = (D_loss_real + D_loss_fake) / float(config["num_D_accumulations"])
                    D_loss.backward()
                    counter += 1
                D.optim.step()
            G.optim.zero_grad()
            for accumulation_index in range({g_bound}):
                G_loss = -torch.mean(GD(z_.sample(), None)) / float(config["num_G_accumulations"])
                G_loss.backward()
            G.optim.step()
            return {{"G_loss": float(G_loss.item()), "D_loss_real": float(D_loss_real.item())}}
        return train
"""
FIND += [
    Shape("TW207", "losses read after G's step in a GAN step closure that accumulates over range() loops",
          d(_GAN.format(d_bound='config["num_D_accumulations"]', g_bound='config["num_G_accumulations"]')) +
          "z = torch.zeros(4).cuda()\n", 21),
]
QUIET += [
    Shape("TW207", "look-alike: one step after accumulating over the whole data set (a full-batch epoch)",
          d(_GAN.format(d_bound="len(x)", g_bound="len(loader)")) + "z = torch.zeros(4).cuda()\n"),
]

# ------------------------------------------------------------ TW207 each selection of a loss is its own wait
# A variance-adaptor loss selects predictions and targets with the padding masks, line after
# line: each masked_select waits for the mask's count. Every line is reported (round 12 named
# the others in one finding).
FIND += [
    Shape("TW207", "the second masked_select of a loss module's forward", d("""
        import torch
        from torch import nn
        class VarianceLoss(nn.Module):
            def forward(self, pitch_pred, pitch_target, src_masks):
                src_masks = ~src_masks
                pitch_pred = pitch_pred.masked_select(src_masks)
                pitch_target = pitch_target.masked_select(src_masks)
                return nn.functional.mse_loss(pitch_pred, pitch_target)
        criterion = VarianceLoss()
        def train(model, loader, optimizer):
            for x, y, mask in loader:
                loss = criterion(model(x.cuda()), y.cuda(), mask.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """), 7),
]

# ------------------------------------------------------------ TW207 a per-parameter clipping helper of another module
# A self-supervised trainer clips each parameter's gradient with a helper of its utils module:
# it reads each norm with .item() and tests clip / (norm + eps) < 1 per parameter, every step.
_CLIP_UTILS = """
    import torch
    def clip_gradients(model, clip):
        norms = []
        for name, p in model.named_parameters():
            if p.grad is not None:
                param_norm = p.grad.data.norm(2)
                norms.append({read})
                clip_coef = clip / (param_norm + 1e-6)
                if clip_coef < 1:
                    p.grad.data.mul_(clip_coef)
        return norms
"""
_CLIP_MAIN = d("""
    import torch
    import utils
    def train_one_epoch(student, loss_fn, loader, optimizer, args):
        for it, images in enumerate(loader):
            images = [im.cuda(non_blocking=True) for im in images]
            loss = loss_fn(student(images))
            optimizer.zero_grad()
            loss.backward()
            if args.clip_grad:
                utils.clip_gradients(student, args.clip_grad)
            optimizer.step()
""")
PROJECTS += [
    ProjectShape("TW207", "clip_coef < 1 tested per parameter (and the norms read) in a clipping helper the step calls", {
        "utils.py": d(_CLIP_UTILS.format(read="param_norm.item()")), "main.py": _CLIP_MAIN,
    }, (("main.py", 10), ("utils.py", 7), ("utils.py", 9))),
]
QUIET += [
    Shape("TW207", "look-alike: `if dp is None` over each parameter's gradient in an optimizer's step()", d("""
        import torch
        class LARS(torch.optim.Optimizer):
            @torch.no_grad()
            def step(self):
                for g in self.param_groups:
                    for p in g["params"]:
                        dp = p.grad
                        if dp is None:
                            continue
                        p.add_(dp, alpha=-g["lr"])
    """)),
    Shape("TW207", "look-alike: per-parameter gradient norms logged only in debug mode", d("""
        import torch
        class Agent:
            def take_optimisation_step(self, optimizer, network, loss):
                optimizer.zero_grad()
                loss.backward()
                if self.debug_mode:
                    self.log_gradient_information(network)
                optimizer.step()

            def log_gradient_information(self, network):
                total_norm = 0
                for name, param in network.named_parameters():
                    param_norm = param.grad.data.norm(2)
                    total_norm += param_norm.item() ** 2
                self.logger.info("Gradient Norm {}".format(total_norm ** 0.5))
        net = torch.nn.Linear(2, 2).cuda()
    """)),
]

# ------------------------------------------------------------ TW207 an RL update loop around its own rollout
# An A2C agent's learn() collects a rollout by stepping its vector environment, bootstraps the
# last value on the host for its NumPy returns, and hands the batch to its own update method:
# the loop is the algorithm's collection loop, not a loop of training steps to sync-check.
QUIET += [
    Shape("TW207", "look-alike: the bootstrap value read for NumPy returns in a loop that steps the environment", d("""
        import numpy as np
        import torch
        class A2CAgent:
            def learn(self, num_updates):
                for update in range(num_updates):
                    mb_obs, mb_rewards = [], []
                    for step in range(self.nsteps):
                        with torch.no_grad():
                            _, pi = self.net(self._get_tensors(self.obs))
                        actions = torch.multinomial(pi, 1)
                        obs, rewards, dones, _ = self.envs.step(actions.squeeze(1).cpu().numpy())
                        mb_obs.append(np.copy(self.obs))
                        mb_rewards.append(rewards)
                        self.obs = obs
                    with torch.no_grad():
                        last_values, _ = self.net(self._get_tensors(self.obs))
                    returns = discount(np.asarray(mb_rewards), last_values.detach().cpu().numpy().squeeze())
                    self._update_network(np.asarray(mb_obs), returns)

            def _update_network(self, obs, returns):
                values, pi = self.net(self._get_tensors(obs))
                loss = (torch.tensor(returns, device="cuda") - values).pow(2).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
    """)),
]

# ------------------------------------------------------------ TW207 code nothing in the project runs (ruling R5)
# A course script keeps a second, never-called training function beside the one its main loop
# runs: per-step reads there never run. (A class of a module nothing imports is left alone: the
# module may be used from a notebook or by a library's users.)
_CHAR_RNN = d("""
    import torch
    model = CharRNN().cuda()
    optimizer = torch.optim.Adam(model.parameters())
    criterion = torch.nn.CrossEntropyLoss()

    def train(line):
        loss = 0
        for c in range(len(line) - 1):
            out = model(line[c].cuda())
            loss += criterion(out, line[c + 1].cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item() / len(line)

    def train_teacher_forcing(line):
        out = model(line[:-1].cuda())
        loss = criterion(out, line[1:].cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.data[0] / len(line)

    if __name__ == "__main__":
        for epoch in range(10):
            for line in lines:
                train(line)
""")
PROJECTS += [
    ProjectShape("TW207", "the read of the training function the script runs; the never-called variant stays quiet", {
        "char_rnn.py": _CHAR_RNN,
    }, (("char_rnn.py", 14),)),
]

# ------------------------------------------------------------ TW207 a device count used as a size, element by element
# A graph pre-training loop repeats each substructure's embedding by its context's size, taken
# from the moved batch one element at a time: each element is read on the host as a count.
_CONTEXT = """
    import torch
    def train(model, loader, optimizer, device):
        for step, batch in enumerate(loader):
            batch = batch.to(device)
            sub = model(batch.x, batch.edge_index)
            ctx_rep = model(batch.x_context, batch.edge_index_context)
            expanded = torch.cat([sub[i].repeat(({count}, 1)) for i in range(len(sub))], dim=0)
            loss = -torch.sum(expanded * ctx_rep, dim=1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
FIND += [Shape("TW207", "x[i].repeat((batch.context_size[i], 1)) for each i of the moved batch",
               d(_CONTEXT.format(count="batch.context_size[i]")), 7)]
QUIET += [Shape("TW207", "look-alike: the repeat counts come from a Python list of the config",
                d(_CONTEXT.format(count="args.repeats[i]")))]

# A captioning trainer synchronizes at the top of each iteration (to time the data loading), then
# runs the step and reads the loss: the backward pass queued after the synchronize is what the
# read waits for, so the read itself is reported.
FIND += [
    Shape("TW207", "loss.item() after the step, with the synchronize at the top of the iteration", d("""
        import time
        import torch
        def train(model, loader, optimizer, crit):
            for iteration, data in enumerate(loader):
                torch.cuda.synchronize()
                start = time.time()
                feats, labels = data["feats"].cuda(), data["labels"].cuda()
                optimizer.zero_grad()
                loss = crit(model(feats, labels), labels)
                loss.backward()
                optimizer.step()
                train_loss = loss.item()
                print("iter {} loss {:.3f} time {:.3f}".format(iteration, train_loss, time.time() - start))
    """), 12),
]

# ------------------------------------------------------------ TW215 the wrapping in one file, the accumulation in another
# A masked-autoencoder codebase wraps the model in DDP in main_pretrain.py and hands it to
# engine.train_one_epoch, whose loop accumulates through the scaler helper (update_grad every
# accum_iter micro-steps) or by hand, with no no_sync anywhere.
_ENGINE = """
    import torch
    def train_one_epoch(model, loader, optimizer, loss_scaler, accum_iter):
        for it, (samples, _) in enumerate(loader):
            loss = model(samples.cuda(non_blocking=True)) / accum_iter
            {body}
"""
_MAIN = """
    import torch
    from engine import train_one_epoch
    def main(args, model, loader, optimizer, loss_scaler):
        model = {wrap}
        for epoch in range(args.epochs):
            train_one_epoch(model, loader, optimizer, loss_scaler, args.accum_iter)
"""
_SCALER_BODY = "loss_scaler(loss, optimizer, parameters=model.parameters(), update_grad=(it + 1) % accum_iter == 0)"
PROJECTS += [
    ProjectShape("TW215", "engine loop accumulating through loss_scaler, called with the DDP model from main", {
        "engine.py": d(_ENGINE.format(body=_SCALER_BODY)),
        "main_pretrain.py": d(_MAIN.format(wrap="torch.nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[args.gpu])")),
    }, (("engine.py", 5),)),
    ProjectShape("TW215", "engine loop accumulating by hand, called with the DDP model from main", {
        "engine.py": d(_ENGINE.format(body="loss.backward()\n            if (it + 1) % accum_iter == 0:\n"
                                           "                optimizer.step()\n                optimizer.zero_grad()")),
        "main_pretrain.py": d(_MAIN.format(wrap="torch.nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[args.gpu])")),
    }, (("engine.py", 5),)),
    ProjectShape("TW215", "look-alike: the caller runs on one GPU (only an evaluation script elsewhere wraps in DDP)", {
        "engine.py": d(_ENGINE.format(body=_SCALER_BODY)),
        "main_pretrain.py": d(_MAIN.format(wrap="model.cuda()")),
        "eval_ddp.py": d("""
            import torch
            def evaluate(model, loader):
                model = torch.nn.parallel.DistributedDataParallel(model.cuda())
                with torch.no_grad():
                    return [model(x.cuda()) for x in loader]
        """),
    }),
]

# ------------------------------------------------------------ TW207 a stream loop handing each class's samples to a model method
# A continual-learning stream trains one generative model per class: for each class present in
# the moved batch it selects the class's samples and hands them to that model's train_a_batch()
# (every definition of which in the project runs backward and step). The membership test and
# the selection run every step; the device comes from the model's own _device() getter.
_STREAM_MODEL = d("""
    import torch
    class VAE(torch.nn.Module):
        def train_a_batch(self, x):
            self.optimizer.zero_grad()
            loss = self.loss_function(x, self(x))
            loss.backward()
            self.optimizer.step()
            return {"loss": loss.detach()}
""")
_STREAM_TRAIN = """
    import torch
    def train_on_stream(model, datastream, iters):
        for batch_id, (x, y) in enumerate(datastream, 1):
            x = x.to(model._device())
            y = y.to(model._device())
            for class_id in range(model.classes):
                {test}
                    x_to_use = x[y == class_id]
                    loss_dict = getattr(model, "vae{{}}".format(class_id)).train_a_batch(x_to_use)
"""
PROJECTS += [
    ProjectShape("TW207", "`if class_id in y:` and x[y == class_id] per class in a loop handing samples to train_a_batch()", {
        "models/vae.py": _STREAM_MODEL, "train_stream.py": d(_STREAM_TRAIN.format(test="if class_id in y:")),
    }, (("train_stream.py", 7), ("train_stream.py", 8))),
    ProjectShape("TW207", "look-alike: the same loop calls an evaluation method (named for no training)", {
        "models/vae.py": _STREAM_MODEL,
        "train_stream.py": d(_STREAM_TRAIN.format(test="if class_id in y:").replace(".train_a_batch(", ".score_batch(")),
    }),
]

# A look-alike of the membership test: a key looked up in the dict a prompt model returns.
QUIET += [
    Shape("TW207", "look-alike: 'reduce_sim' in outputs, a key of the dict the model returned", d("""
        import torch
        class Learner:
            def observe(self, inputs, labels):
                outputs = self.net(inputs.cuda(), return_outputs=True)
                loss = self.loss(outputs["logits"], labels.cuda())
                if "reduce_sim" in outputs:
                    loss = loss - 0.1 * outputs["reduce_sim"]
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return loss.detach()
    """)),
]

# ------------------------------------------------------------ TW207 tensors unpacked from a project function of the step's outputs
# ImageNet-style loops unpack top-1/top-5 precisions from an accuracy helper of the project fed
# the model's output, and read each with .item() for the meters; a segmentation loop unpacks
# intersection/union counts computed on the GPU and copies them to NumPy every step.
_ACC_UTILS = d("""
    def accuracy(output, target, topk=(1,)):
        maxk = max(topk)
        _, pred = output.topk(maxk, 1, True, True)
        correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
        return [correct[:k].reshape(-1).float().sum(0) * (100.0 / target.size(0)) for k in topk]
""")
_ACC_TRAIN = d("""
    import torch
    from utils import accuracy
    def train(loader, model, criterion, optimizer, top1):
        for i, (images, target) in enumerate(loader):
            images, target = images.cuda(non_blocking=True), target.cuda(non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            prec1, prec5 = {call}
            top1.update(prec1.item(), images.size(0))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")
PROJECTS += [
    ProjectShape("TW207", "prec1.item() of prec1, prec5 = accuracy(output, target, topk=(1, 5)) every step", {
        "utils.py": _ACC_UTILS, "train.py": _ACC_TRAIN.replace("{call}", "accuracy(output, target, topk=(1, 5))"),
    }, (("train.py", 9),)),
    ProjectShape("TW207", "look-alike: the precisions come back from a metric function named for computing statistics", {
        "utils.py": _ACC_UTILS.replace("def accuracy(", "def compute_stats(").replace("return [", "return [float(x) for x in ["
                                                                                                  ).rstrip("\n") + "]\n",
        "train.py": _ACC_TRAIN.replace("from utils import accuracy", "from utils import compute_stats").replace(
            "{call}", "compute_stats(output, target, topk=(1, 5))").replace("prec1.item()", "float(prec1)"),
    }),
]
