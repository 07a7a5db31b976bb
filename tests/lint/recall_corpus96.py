"""The recall corpus, round 28 part D: classes sets 45-46 showed lint missing for TW205 - a
tensor matched to a row picked and reshaped from a batch (``e = out[i].unsqueeze(0)``), and a
one-number index tensor made each batch from a task number the function uses as an index -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW205 .type_as(a row of a batch, reshaped)
# A beam search that walks the batch one utterance at a time, takes a row of the encoder output
# and reshapes it, then starts each hypothesis with a CPU token tensor retyped to that row.
FIND += [
    Shape("TW205", "start token made on the CPU and moved by type_as of a reshaped batch row", d("""
        import torch
        import torch.nn as nn
        class Decoder(nn.Module):
            def decode(self, memory):
                found = []
                for b in range(memory.size(0)):
                    row = memory[b].unsqueeze(0)
                    seq = torch.ones(1, 1).fill_(1).type_as(row).long()
                    found.append(self.step(seq, row))
                return found
    """), 8),
    Shape("TW205", "hypothesis grown per beam step on the CPU, retyped to a viewed row", d("""
        import torch
        class Searcher:
            def run(self, enc, width):
                for n in range(enc.size(0)):
                    ctx = enc[n].view(1, -1)
                    for k in range(width):
                        grown = torch.zeros(1, k + 2).type_as(ctx)
                        self.score(grown, ctx)
    """), 7),
]
QUIET += [
    Shape("TW205", "look-alike: a token tensor made with the row's device, then cast", d("""
        import torch
        import torch.nn as nn
        class Decoder(nn.Module):
            def decode(self, memory):
                found = []
                for b in range(memory.size(0)):
                    row = memory[b].unsqueeze(0)
                    seq = torch.ones(1, 1, device=row.device).long()
                    found.append(self.step(seq, row))
                return found
    """)),
    Shape("TW205", "look-alike: the row is of a table made on the CPU, so nothing moves", d("""
        import torch
        def tiles(n, width):
            table = torch.zeros(n, 4)
            out = []
            for b in range(n):
                row = table[b].unsqueeze(0)
                out.append(torch.ones(1, width).type_as(row))
            return out
    """)),
]

# ------------------------------------------------------------- TW205 [task] turned into a tensor per batch
# A continual-learning trainer that hands the task number to the model as a one-element tensor,
# made on the CPU and moved every batch; the same function picks the task's head with outputs[t].
FIND += [
    Shape("TW205", "task number wrapped in a LongTensor and moved with .cuda() every batch", d("""
        import torch
        class Learner:
            def fit_epoch(self, t, x, y):
                for i in range(0, x.size(0), self.bs):
                    task = torch.LongTensor([t]).cuda()
                    outputs = self.model(task, x[i:i + self.bs])
                    loss = self.crit(outputs[t], y[i:i + self.bs])
                    loss.backward()
    """), 5),
    Shape("TW205", "head id turned into a tensor per evaluation batch, moved to the device", d("""
        import torch
        def evaluate(model, head, batches, device):
            total = 0
            for xb, yb in batches:
                hid = torch.LongTensor([head]).to(device)
                preds = model(xb.to(device), hid)[head]
                total += (preds.argmax(1) == yb.to(device)).sum().item()
            return total
    """), 5),
]
QUIET += [
    Shape("TW205", "look-alike: an observation wrapped in a list and moved each step (data crosses anyway)", d("""
        import torch
        class Agent:
            def act(self, state):
                for _ in range(4):
                    s = torch.FloatTensor([state]).cuda()
                    q = self.net(s)
                return q.argmax().item()
    """)),
    Shape("TW205", "look-alike: the task tensor made once before the batch loop", d("""
        import torch
        class Learner:
            def fit_epoch(self, t, x, y):
                for i in range(0, x.size(0), self.bs):
                    outputs = self.model(x[i:i + self.bs])
                    loss = self.crit(outputs[t], y[i:i + self.bs])
                    loss.backward()
                task = torch.LongTensor([t]).cuda()
                return task
    """)),
]
