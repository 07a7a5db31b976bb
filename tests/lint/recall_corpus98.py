"""The recall corpus, round 29 part B: TW207 false findings of sets 12-48 that recur across projects -
host reads a host-only library needs (R9: a QP solver, a superpixel segmentation, a speech quality
score whose result the step moves back and trains with), and values lint took for device tensors
though they are on the host (a star-imported helper's NumPy mean, a NumPy mask unpacked from a
helper, a loss computed on the CPU from a model output copied there). Each written in our own words
and reduced to its shape: look-alikes that must stay quiet (one project keeps its true
finding at the helper's call).
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 a host-only library's round trip (R9)
# Continual learning projects the new gradient onto the old tasks' with a QP solver on the host;
# speech GANs train a discriminator to predict a perceptual score computed by a C library in worker
# processes; optical-flow training draws occlusion masks from superpixels. Each copies the step's
# tensors to the host, runs the library, and moves the answer back into the step.
QUIET += [
    Shape("TW207", "look-alike: gradients copied to the host for scipy's nnls, the solution copied back into .grad", d("""
        import torch
        from scipy.optimize import nnls
        def fit(net, opt, loader, memory_grads, device):
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(net(x), y)
                loss.backward()
                grads = torch.zeros(sum(p.numel() for p in net.parameters()), 2, device=device)
                grads[:, 0] = torch.cat([p.grad.view(-1) for p in net.parameters()])
                grads[:, 1] = memory_grads
                past = grads[:, 1:].cpu().t().numpy()
                now = grads[:, 0].cpu().numpy()
                weights, _ = nnls(past.T, now)
                fixed = now + past.T @ weights
                fixed_t = torch.from_numpy(fixed).float().to(device)
                start = 0
                for p in net.parameters():
                    n = p.numel()
                    p.grad.copy_(fixed_t[start:start + n].view_as(p))
                    start += n
                opt.step()
    """)),
]
_SCORES = d("""
    import numpy as np
    import torch
    from joblib import Parallel, delayed
    from pystoi import stoi

    def one_score(ref, est):
        return stoi(ref, est, 16000)

    def batch_scores(refs, ests):
        vals = Parallel(n_jobs=4)(delayed(one_score)(r, e) for r, e in zip(refs, ests))
        return torch.tensor(np.asarray(vals), dtype=torch.float32)
""")
_GAN_LOOP = d("""
    import torch
    import torch.nn.functional as F
    from quality.scores import batch_scores

    def train(gen, disc, opt_g, opt_d, loader, device):
        for noisy, clean in loader:
            noisy, clean = noisy.to(device), clean.to(device)
            enhanced = gen(noisy)
            opt_g.zero_grad()
            g_loss = F.l1_loss(enhanced, clean)
            g_loss.backward()
            opt_g.step()
            refs, ests = list(clean.cpu().numpy()), list(enhanced.detach().cpu().numpy())
            target = batch_scores(refs, ests)
            opt_d.zero_grad()
            d_loss = F.mse_loss(disc(enhanced.detach()).flatten(), target.to(device))
            d_loss.backward()
            opt_d.step()
""")
_SEGMENTS = d("""
    import numpy as np
    import torch
    from skimage.segmentation import felzenszwalb

    def segment_masks(images, scale=100):
        arrays = images.detach().cpu().numpy().transpose(0, 2, 3, 1)
        out = []
        for img in arrays:
            seg = felzenszwalb(img, scale=scale)
            pick = np.random.randint(0, seg.max() + 1)
            out.append(seg == pick)
        return torch.from_numpy(np.stack(out)).unsqueeze(1)
""")
_FLOW_LOOP = d("""
    import torch
    from aug.segments import segment_masks

    def train(net, opt, loader):
        for frames in loader:
            frames = frames.cuda()
            occluder = segment_masks(frames[:, 3:]).type_as(frames)
            flow = net(frames * (1 - occluder))
            loss = flow.abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "look-alike: a speech quality score computed in worker processes on host copies, the discriminator's target",
                 {"quality/scores.py": _SCORES, "quality/__init__.py": "", "train.py": _GAN_LOOP}),
    ProjectShape("TW207", "look-alike: superpixel occlusion masks drawn on the host by another module, moved back with type_as",
                 {"aug/segments.py": _SEGMENTS, "aug/__init__.py": "", "train.py": _FLOW_LOOP}),
]

_INLINE_SCORES = d("""
    import numpy as np
    import torch
    from joblib import Parallel, delayed
    from pystoi import stoi

    def critic_loss(critic, clean, est):
        got = Parallel(n_jobs=2)(delayed(stoi)(c, e, 16000) for c, e in zip(clean.cpu().numpy(), est.detach().cpu().numpy()))
        wanted = torch.tensor(np.asarray(got), dtype=torch.float32).to("cuda")
        return torch.nn.functional.mse_loss(critic(est.detach()).flatten(), wanted)
""")
_INLINE_LOOP = d("""
    from metrics.critic import critic_loss

    def train(gen, critic, opt, loader):
        for noisy, clean in loader:
            noisy, clean = noisy.cuda(), clean.cuda()
            est = gen(noisy)
            loss = critic_loss(critic, clean, est)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "look-alike: a loss helper of another module scores host copies in worker processes and moves the scores back",
                 {"metrics/critic.py": _INLINE_SCORES, "metrics/__init__.py": "", "train.py": _INLINE_LOOP}),
]

# ------------------------------------------------------------- TW207 host values taken for device tensors
# A segmentation trainer logs a metric a star-imported helper computes with NumPy; a masked-item
# recommender selects with a NumPy mask its own helper made; a text recogniser copies the network's
# output to the host and computes its CTC loss there.
_METRIC_HELPERS = d("""
    import numpy as np

    def overlap_on_batch(masks, preds):
        scores = []
        for m, p in zip(masks, preds):
            m = m.cpu().numpy() > 0
            p = p.detach().cpu().numpy() > 0.5
            scores.append((m & p).sum() / max((m | p).sum(), 1))
        return np.mean(scores)
""")
_SEG_LOOP = d("""
    import torch
    from metric_helpers import *

    def run_epoch(net, opt, loader, criterion, writer, epoch):
        for i, (imgs, masks) in enumerate(loader):
            imgs, masks = imgs.cuda(), masks.cuda()
            preds = net(imgs)
            loss = criterion(preds, masks)
            opt.zero_grad()
            loss.backward()
            opt.step()
            overlap = overlap_on_batch(masks, preds)
            writer.add_scalar("train/overlap", overlap, epoch * len(loader) + i)
""")
PROJECTS += [
    ProjectShape("TW207", "a star-imported helper returns np.mean of its scores: its call reads (line 12), add_scalar of the mean does not",
                 {"metric_helpers.py": _METRIC_HELPERS, "train.py": _SEG_LOOP}, (('metric_helpers.py', 6), ('metric_helpers.py', 7), ('train.py', 12),)),
]
QUIET += [
    Shape("TW207", "look-alike: a NumPy mask unpacked from the trainer's own helper selects the masked positions", d("""
        import numpy as np
        import torch
        import torch.nn.functional as F

        class ClozeTrainer:
            def __init__(self, net, n_items):
                self.net = net.cuda()
                self.n_items = n_items
                self.opt = torch.optim.Adam(self.net.parameters())

            def hide(self, seq):
                shown = seq.copy()
                hidden = np.zeros_like(shown)
                hidden[:, ::3] = 1
                answers = shown[:, ::3].reshape(-1)
                shown[:, ::3] = self.n_items
                return shown, hidden, answers

            def cloze_loss(self, states, hidden, answers):
                picked = states[hidden > 0]
                logits = picked @ self.net.items.weight.t()
                return F.cross_entropy(logits, torch.from_numpy(answers).cuda())

            def fit(self, batches):
                for seq in batches:
                    shown, hidden, answers = self.hide(seq)
                    states = self.net(torch.from_numpy(shown).cuda())
                    loss = self.cloze_loss(states, hidden, answers)
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
    """)),
    Shape("TW207", "look-alike: the CTC loss computed on the CPU from the network's output copied there", d("""
        import torch
        def train(crnn, opt, loader, codec, device, meter):
            ctc = torch.nn.CTCLoss(zero_infinity=True)
            for images, words in loader:
                images = images.to(device)
                log_probs = crnn(images).log_softmax(2).cpu()
                targets, target_lens = codec.encode(words)
                input_lens = torch.full((images.size(0),), log_probs.size(0), dtype=torch.long)
                loss = ctc(log_probs, targets, input_lens, target_lens)
                opt.zero_grad()
                loss.backward()
                opt.step()
                meter.update(loss.item(), images.size(0))
    """)),
]
