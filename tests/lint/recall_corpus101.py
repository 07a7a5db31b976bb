"""The recall corpus, round 29 part E: global classes of sets 12-48 that TW205 still got wrong -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW205 host data standardized, then converted and moved
# Arithmetic on an array read from a file or returned by a routine (a slice standardized with the
# dataset's statistics, a matrix product of arrays a solver returned, a NumPy buffer scaled by the
# padding index and filled with a batch's tokens) is data that has to cross anyway: `torch.as_tensor`
# / `torch.tensor` of it is no CPU factory. (Seen in weather-forecast inference scripts, a
# continual-learning projection step and an NER batch iterator, sets 33, 37 and 48.)
QUIET += [
    Shape("TW205", "look-alike: a slice of a loaded array standardized in place and moved, per forecast", d("""
        import h5py
        import numpy as np
        import torch
        def rollout(model, path, starts, mu, sigma, device):
            series = h5py.File(path, "r")["fields"]
            for s in starts:
                window = series[s:s + 8]
                window = (window - mu) / sigma
                window = torch.as_tensor(window).to(device, dtype=torch.float)
                model(window)
    """)),
    Shape("TW205", "look-alike: a standardized slice converted inline, then moved under its name", d("""
        import numpy as np
        import torch
        def climatology(model, table, days, mean, std, device):
            for k in days:
                ref = torch.as_tensor((table[k:k + 4] - mean) / std)
                ref = ref.to(device)
                model(ref)
    """)),
    Shape("TW205", "look-alike: arrays a routine returned combined on the host and sent back", d("""
        import numpy as np
        import torch
        from scipy.optimize import nnls
        def project(grads, basis, device):
            for g in grads:
                coef = nnls(basis, g)[0]
                fixed = basis.T @ coef + g
                fixed = torch.tensor(fixed).float().to(device)
                yield fixed
    """)),
    Shape("TW205", "look-alike: a NumPy buffer scaled by the pad index and filled row by row with tokens", d("""
        import numpy as np
        import torch
        class Batches:
            def __init__(self, pad, device):
                self.pad, self.device = pad, device
            def iterate(self, sentences, size):
                for i in range(0, len(sentences), size):
                    chunk = sentences[i:i + size]
                    width = max(len(s) for s in chunk)
                    ids = self.pad * np.ones((len(chunk), width))
                    for j, s in enumerate(chunk):
                        ids[j][:len(s)] = s
                    ids = torch.tensor(ids, dtype=torch.long)
                    yield ids.to(self.device)
    """)),
]

# ------------------------------------------------------------- TW104 an evaluation that puts the model back in training mode
# A validation method that switches the model to eval(), runs it and restores train() before it
# returns, called only inside `with torch.no_grad():` by the training loop: autograd is off for the
# whole pass, the closing train() is no training. (Seen in a video-prediction trainer, set 39; the
# class - the caller turns autograd off - recurs in sets 40, 45, 47.)
QUIET += [
    Shape("TW104", "look-alike: validation method restoring train() and called only under no_grad", d("""
        import torch
        class Runner:
            def __init__(self, model, opt, loss):
                self.model, self.opt, self.loss = model, opt, loss
            def fit(self, train_dl, val_dl, epochs):
                for epoch in range(epochs):
                    for x, y in train_dl:
                        self.opt.zero_grad()
                        self.loss(self.model(x), y).backward()
                        self.opt.step()
                    with torch.no_grad():
                        print(self.validate(val_dl))
            def validate(self, dl):
                self.model.eval()
                total = 0.0
                for x, y in dl:
                    total += self.loss(self.model(x), y).item()
                self.model.train()
                return total
    """)),
    Shape("TW104", "look-alike: module-level evaluate() ending in net.train(), only called under no_grad", d("""
        import torch
        def evaluate(net, loader):
            net.eval()
            hits = 0
            for x, y in loader:
                hits += (net(x).argmax(1) == y).sum().item()
            net.train()
            return hits
        def main(net, opt, train_loader, val_loader):
            for x, y in train_loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x), y).backward()
                opt.step()
            with torch.no_grad():
                print(evaluate(net, val_loader))
    """)),
]

# ------------------------------------------------------------- TW104 a decoding method the project runs only under no_grad
# A model class with a decoding method (eval() and a loop of forward steps) that only an inference
# script calls - through a per-example helper that the script's main loop runs inside `with
# torch.no_grad():`. (Seen in a
# contrastive-search text generator, set 47; the class - the caller turns autograd off - recurs in
# sets 39, 40, 45.)
PROJECTS += [
    ProjectShape("TW104", "look-alike: decoding method called from another module only under no_grad", {
        "gen/model.py": d("""
            import torch
            from torch import nn
            class Writer(nn.Module):
                def __init__(self, vocab, dim):
                    super().__init__()
                    self.emb = nn.Embedding(vocab, dim)
                    self.out = nn.Linear(dim, vocab)
                def forward(self, ids):
                    return self.out(self.emb(ids))
                def greedy_decode(self, ids, steps):
                    self.eval()
                    for _ in range(steps):
                        nxt = self(ids)[:, -1].argmax(-1, keepdim=True)
                        ids = torch.cat([ids, nxt], 1)
                    return ids
        """),
        "gen/infer.py": d("""
            import torch
            from model import Writer
            def one_example(model, prompt, steps):
                return model.greedy_decode(prompt, steps).tolist()
            if __name__ == "__main__":
                model = Writer(100, 16)
                prompts = [torch.randint(0, 100, (1, 4)) for _ in range(3)]
                with torch.no_grad():
                    for p in prompts:
                        print(one_example(model, p, 8))
        """),
    }),
]
