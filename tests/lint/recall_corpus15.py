"""The recall corpus, round 10 part A: classes the tenth set (a tuning set since round 10) showed
in TW403, TW402, TW208, TW205 and TW209 - each written in our own words and reduced to its shape,
with look-alikes that must stay quiet (or stay reported). ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# --------------------------------------------------------------------- TW208 the gradient of a perturbed input
# An attack (or a saliency map) turns on the gradient of one input, backpropagates a loss and
# reads `x.grad` to step the input, zeroing it between steps: not the parameters' gradients.
_ATTACK = """
    import torch
    import torch.nn.functional as F
    class Strategy:
        def __init__(self, net, eps=0.05):
            self.net = net
            self.eps = eps
        def distance(self, image):
            {mark}
            delta = torch.zeros(x.shape)
            out = self.net(x + delta)
            label = out.argmax(1)
            for _ in range(10):
                loss = F.cross_entropy(out, label)
                loss.backward()
                delta += self.eps * torch.sign(x.grad.data)
                {zero}
                out = self.net(x + delta)
            return (delta * delta).sum()
"""
QUIET += [
    Shape("TW208", "BIM attack: x.requires_grad_(), then x.grad.data.zero_() between the input's steps",
          d(_ATTACK.format(mark="x = image.unsqueeze(0)\n            x.requires_grad_()", zero="x.grad.data.zero_()"))),
    Shape("TW208", "DeepFool-like: x.requires_grad = True on a clone, then x.grad.zero_()",
          d(_ATTACK.format(mark="x = image.clone().unsqueeze(0)\n            x.requires_grad = True", zero="x.grad.zero_()"))),
]
FIND += [
    Shape("TW208", "look-alike: the parameters' gradients zeroed by hand in the same attack loop",
          d(_ATTACK.format(mark="x = image.unsqueeze(0)\n            x.requires_grad_()",
                           zero="for p in self.net.parameters():\n                    p.grad.zero_()")), 18),
    Shape("TW208", "look-alike: another tensor's requires_grad_() does not cover the zeroed one",
          d(_ATTACK.format(mark="x = image.unsqueeze(0)\n            image.requires_grad_()", zero="x.grad.zero_()")), 17),
]

# --------------------------------------------------------------------- TW403 `assert cuda` is no CPU path
# A project whose training scripts assert a GPU and initialise NCCL is GPU-only by design, also in
# an evaluation module that hard-codes "cuda": `assert torch.cuda.is_available()` demands the GPU,
# it does not check for one.
_GPU_TRAIN = d("""
    import os
    import torch
    import torch.distributed as dist
    assert torch.cuda.is_available()
    dist.init_process_group(backend="nccl")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    model = build().cuda()
    for step in range(100):
        loss = model(next_batch()).mean()
        loss.backward()
""")
_EVAL = d("""
    import torch
    import torch.distributed as dist
    def score(model, items):
        correct = 0
        for seq in items:
            logits = model(seq.inputs.to(device="cuda"))
            correct += int(logits.argmax(-1).eq(seq.target.to(device="cuda")).all())
        total = torch.tensor([correct], device="cuda")
        dist.all_reduce(total)
        return total.item()
""")
PROJECTS += [
    ProjectShape("TW403", "speedrun records assert a GPU and use NCCL; the eval module hard-codes cuda", {
        "records/a/train.py": _GPU_TRAIN, "records/b/train.py": _GPU_TRAIN, "evals/score.py": _EVAL}),
    ProjectShape("TW403", "look-alike: a real GPU check elsewhere in the project keeps the eval module's findings", {
        "records/a/train.py": _GPU_TRAIN.replace("assert torch.cuda.is_available()",
                                                 'device = "cuda" if torch.cuda.is_available() else "cpu"'),
        "evals/score.py": _EVAL}, (("evals/score.py", 6), ("evals/score.py", 7), ("evals/score.py", 8))),
]
