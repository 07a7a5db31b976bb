"""The recall corpus, fourth round: the classes a first look at eleven more fresh projects
(issue 22, third held-out set, now a tuning set) found missing or falsely reported - each written
in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists; the entries of one rule sit together.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW204
QUIET += [
    Shape("TW204", "speech synthesis: the evaluation copies one pinned batch, then breaks", d("""
        import torch
        eval_loader = torch.utils.data.DataLoader(eval_dataset, batch_size=1, num_workers=8, pin_memory=True)
        def evaluate(generator, eval_loader):
            generator.eval()
            with torch.no_grad():
                for batch_idx, (x, x_lengths, y) in enumerate(eval_loader):
                    x, x_lengths = x.cuda(0), x_lengths.cuda(0)
                    y = y.cuda(0)
                    x = x[:1]
                    break
                y_hat = generator.infer(x, x_lengths)
    """)),
]
FIND += [
    Shape("TW204", "a loop that breaks only on a condition still takes many batches", d("""
        import torch
        loader = torch.utils.data.DataLoader(dataset, batch_size=32, num_workers=8, pin_memory=True)
        for step, (x, y) in enumerate(loader):
            x = x.cuda()
            if step >= max_steps:
                break
    """), 4),
]

# ----------------------------------------------------------------------------------- TW502
FIND += [
    Shape("TW502", "time-series nets: the output function chosen as a reference to F.sigmoid", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Model(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.output = None
                if args.output_fun == 'sigmoid':
                    self.output = F.sigmoid
    """), 8),
    Shape("TW502", "the same with F.tanh in a table of activations", d("""
        import torch.nn.functional as F
        ACTIVATIONS = {"relu": F.relu, "tanh": F.tanh}
    """), 2),
    Shape("TW502", "segmentation losses: the nn.NLLLoss2d class", d("""
        from torch import nn
        class LossMulti:
            def __init__(self, nll_weight=None):
                self.nll_loss = nn.NLLLoss2d(weight=nll_weight)
    """), 4),
]
QUIET += [
    Shape("TW502", "references to the current functions and classes, and a tensor's own tanh method", d("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        ACTIVATIONS = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "relu": F.relu}
        loss = nn.NLLLoss(weight=None)
        def f(x):
            g = x.tanh
            return g() + x.sigmoid()
    """)),
]
