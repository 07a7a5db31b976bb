"""The recall corpus, round 25 part C: classes sets 39 and 40 showed for TW215 and TW403 - each
written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW215 the forward bypasses the DDP wrapper
# An RL fine-tuning loop that runs the policy through its `.module`: DDP's hooks never fire, the
# backward pass all-reduces nothing, so no_sync() would change nothing.
QUIET += [
    Shape("TW215", "look-alike: the loss comes from the unwrapped module (isinstance test)", d("""
        import torch
        from torch.nn.parallel import DistributedDataParallel
        def tune(policy, batches, opt, accum):
            policy = DistributedDataParallel(policy)
            for step, (x, r) in enumerate(batches):
                raw = policy.module if isinstance(policy, DistributedDataParallel) else policy
                loss = -(raw(x) * r).mean() / accum
                loss.backward()
                if (step + 1) % accum == 0:
                    opt.step()
                    opt.zero_grad()
    """)),
    Shape("TW215", "look-alike: two networks run through .module bound before the loop", d("""
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        def update(actor, critic, data, opt, k):
            actor, critic = DDP(actor), DDP(critic)
            a_raw = actor.module
            c_raw = critic.module
            for i, (s, adv, ret) in enumerate(data):
                loss = -(a_raw(s) * adv).mean() + ((c_raw(s) - ret) ** 2).mean()
                loss.backward()
                if i % k == 0:
                    opt.step()
    """)),
    Shape("TW215", "look-alike: model.module(x) called in the loop", d("""
        from torch.nn.parallel import DistributedDataParallel
        def fit(model, loader, opt, accum):
            model = DistributedDataParallel(model)
            for i, (x, y) in enumerate(loader):
                (model.module(x) - y).pow(2).mean().backward()
                if (i + 1) % accum == 0:
                    opt.step()
    """)),
]

# ------------------------------------------------------------- TW403 a trainer module chooses the run's device
# A template-style project: the entry script builds a Trainer whose _prepare_device falls back to
# the CPU (no GPU: n_gpu_use = 0) and places the model there; the decoding helpers the model
# imports hard-code .cuda(), and the base class dispatches to them by a built name.
_TRAINER = d("""
    import torch
    class Trainer:
        def __init__(self, model, n_gpu):
            self.device = self._prepare_device(n_gpu)
            self.model = model.to(self.device)
        def _prepare_device(self, n_gpu_use):
            if n_gpu_use > 0 and torch.cuda.device_count() == 0:
                n_gpu_use = 0
            return torch.device('cuda:0' if n_gpu_use > 0 else 'cpu')
        def run(self, batches):
            for x in batches:
                self.model(x.to(self.device), mode='sample')
""")
_BASE = d("""
    import torch.nn as nn
    class Decoder(nn.Module):
        def forward(self, *args, **kwargs):
            mode = kwargs.pop('mode', 'forward')
            return getattr(self, '_' + mode)(*args, **kwargs)
""")
_WORDS = d("""
    import torch
    from .base import Decoder
    class WordDecoder(Decoder):
        def _forward(self, x):
            return x
        def _sample(self, x):
            noise = torch.rand(x.shape).cuda()
            return x + noise
""")
_MAIN = d("""
    import argparse
    from parts.trainer import Trainer
    from parts.words import WordDecoder
    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument('--n_gpu', type=int, default=1)
        args = parser.parse_args()
        Trainer(WordDecoder(), args.n_gpu).run([])
    if __name__ == '__main__':
        main()
""")
PROJECTS += [
    ProjectShape("TW403", "a method reached by getattr(self, '_' + mode) in a project whose trainer falls back to the CPU",
                 {"parts/trainer.py": _TRAINER, "parts/base.py": _BASE, "parts/words.py": _WORDS, "parts/__init__.py": "",
                  "train.py": _MAIN}, (("parts/words.py", 7),)),
    ProjectShape("TW403", "look-alike: the same project with a trainer that only picks among GPUs",
                 {"parts/trainer.py": _TRAINER.replace("else 'cpu'", "else 'cuda:1'"), "parts/base.py": _BASE,
                  "parts/words.py": _WORDS, "parts/__init__.py": "", "train.py": _MAIN}),
]
