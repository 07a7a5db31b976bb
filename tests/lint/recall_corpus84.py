"""The recall corpus, round 26 part A: TW104 classes sets 38 and 42 showed - a function that runs a
network with autograd on and hands back only host data (NumPy, numbers, text), so nothing can ever
use the graph it records - each written in our own words and reduced to its shape, with look-alikes
that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 a model's scoring method returns NumPy
# A knowledge-graph model whose ranking method looks embeddings up and returns the scores as a NumPy
# array; a tester of another module calls it per batch.
_KG_MODEL = d("""
    import torch
    import torch.nn as nn
    from .base import Base

    class Bilinear(Base):
        def __init__(self, n_ent, n_rel, dim=50):
            super().__init__()
            self.ent = nn.Embedding(n_ent, dim)
            self.rel = nn.Embedding(n_rel, dim)

        def forward(self, heads, rels, tails):
            return (self.ent(heads) * self.rel(rels) * self.ent(tails)).sum(-1)

        def rank_scores(self, heads, rels, tails):
            h = self.ent(heads)
            r = self.rel(rels)
            t = self.ent(tails)
            scores = -(h * r * t).sum(-1)
            return scores.cpu().data.numpy()
""")
_KG_BASE = d("""
    import torch.nn as nn

    class Base(nn.Module):
        def rank_scores(self, heads, rels, tails):
            raise NotImplementedError
""")
_KG_TESTER = d("""
    import torch
    import numpy as np

    class Ranker:
        def __init__(self, model, batches):
            self.model, self.batches = model, batches

        def run(self):
            ranks = []
            for h, r, t in self.batches:
                s = self.model.rank_scores(torch.from_numpy(h), torch.from_numpy(r), torch.from_numpy(t))
                ranks.append(np.argsort(s)[0])
            return np.mean(ranks)
""")
_KG_MAIN = "from kg.models.bilinear import Bilinear\nfrom kg.ranker import Ranker\nprint(Ranker(Bilinear(10, 2), []).run())\n"

# ------------------------------------------------------------- TW104 an agent's bonus computed to NumPy
# An exploration agent (no module) whose curiosity bonus runs a frozen target and a predictor network of
# a module class defined in another file, and returns the squared error as a NumPy array every rollout step.
_CURIOUS_NETS = d("""
    import torch.nn as nn

    class Novelty(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fixed = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 32))
            self.learner = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 32))
""")
_CURIOUS_AGENT = d("""
    import torch
    from nets import Novelty

    class Explorer:
        def __init__(self, d):
            self.novelty = Novelty(d)
            self.opt = torch.optim.Adam(self.novelty.learner.parameters())

        def bonus(self, obs):
            obs = torch.as_tensor(obs, dtype=torch.float32)
            a = self.novelty.fixed(obs)
            b = self.novelty.learner(obs)
            err = (a - b).pow(2).mean(1)
            return err.data.cpu().numpy()

        def fit(self, obs):
            loss = (self.novelty.fixed(obs).detach() - self.novelty.learner(obs)).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
""")
_CURIOUS_RUN = d("""
    import numpy as np
    from agent import Explorer

    agent = Explorer(4)
    for step in range(1000):
        r = agent.bonus(np.random.rand(8, 4))
        print(r.mean())
""")

PROJECTS += [
    ProjectShape("TW104", "an nn.Module's ranking method (base class in another file) returns its scores as NumPy", {
        "kg/models/bilinear.py": _KG_MODEL, "kg/models/base.py": _KG_BASE, "kg/ranker.py": _KG_TESTER, "run.py": _KG_MAIN,
    }, (("kg/models/bilinear.py", 15), ("kg/models/bilinear.py", 16), ("kg/models/bilinear.py", 17))),
    ProjectShape("TW104", "look-alike: the tester calls the ranking method under no_grad", {
        "kg/models/bilinear.py": _KG_MODEL, "kg/models/base.py": _KG_BASE, "run.py": _KG_MAIN,
        "kg/ranker.py": _KG_TESTER.replace("            s = self.model", "            with torch.no_grad():\n"
                                           "                s = self.model"),
    }),
    ProjectShape("TW104", "an agent's curiosity bonus runs two networks of a project module class and returns NumPy", {
        "nets.py": _CURIOUS_NETS, "agent.py": _CURIOUS_AGENT, "run.py": _CURIOUS_RUN,
    }, (("agent.py", 11), ("agent.py", 12))),
    ProjectShape("TW104", "look-alike: the bonus method keeps the error on the agent for its update", {
        "nets.py": _CURIOUS_NETS, "run.py": _CURIOUS_RUN,
        "agent.py": _CURIOUS_AGENT.replace("        return err.data", "        self.last_err = err\n        return err.data"),
    }),
]

# ------------------------------------------------------------- TW104 sample-by-sample synthesis returning NumPy
# An autoregressive audio model whose synthesis method puts itself in eval mode and feeds each sample
# back through a helper method that runs its layers; the samples are gathered in a NumPy array.
FIND += [
    Shape("TW104", "a module's synthesis loop calls a layer-running helper per sample and returns NumPy", d("""
        import numpy as np
        import torch
        import torch.nn as nn

        class Autoregressive(nn.Module):
            def __init__(self, k=256):
                super().__init__()
                self.k = k
                self.inp = nn.Conv1d(k, 32, 1)
                self.out = nn.Conv1d(32, k, 1)

            def body(self, x):
                return self.out(torch.relu(self.inp(x)))

            def forward(self, x):
                return self.body(x)

            def synthesize(self, n):
                self.eval()
                x = torch.zeros(1, self.k, 1)
                samples = np.array([])
                for _ in range(n):
                    logits = self.body(x).squeeze()
                    p = torch.softmax(logits, 0).cpu().data.numpy()
                    s = np.random.choice(self.k, p=p)
                    samples = np.append(samples, s)
                    x = torch.zeros(1, self.k, 1)
                    x[0, s, 0] = 1.0
                self.train()
                return samples / self.k

        if __name__ == "__main__":
            print(Autoregressive().synthesize(100))
    """), 23),
]

# ------------------------------------------------------------- TW104 a search function that returns text
# A module-level greedy/beam search handed the model: a helper encodes the source and returns the
# encoder state to it; the search returns the decoded words joined into a string.
_SEARCH = d("""
    import torch
    import torch.nn.functional as F

    def prime(src, model, start):
        memory = model.encoder(src)
        first = model.decoder(torch.full((1, 1), start), memory)
        return memory, first.argmax(-1)

    def greedy_search(src, model, vocab, max_len=50):
        memory, ys = prime(src, model, vocab.start)
        for _ in range(max_len):
            logits = model.decoder(ys, memory)
            nxt = F.softmax(logits[:, -1], -1).argmax(-1, keepdim=True)
            ys = torch.cat([ys, nxt], 1)
        return " ".join(vocab.words[i] for i in ys[0].tolist())
""")
_SEARCH_SCRIPT = d("""
    import torch
    from search import greedy_search

    def main(model, vocab, sentences):
        model.eval()
        for s in sentences:
            print(greedy_search(s, model, vocab))
""")
PROJECTS += [
    ProjectShape("TW104", "a translate script runs a search of another module that returns text; its helper encodes", {
        "search.py": _SEARCH, "translate.py": _SEARCH_SCRIPT,
    }, (("search.py", 5), ("search.py", 6), ("search.py", 12))),
    ProjectShape("TW104", "look-alike: the script calls the search under no_grad", {
        "search.py": _SEARCH,
        "translate.py": _SEARCH_SCRIPT.replace("        print(greedy", "        with torch.no_grad():\n"
                                               "            print(greedy"),
    }),
]

# ------------------------------------------------------------- look-alikes: the graph is used or kept
QUIET += [
    Shape("TW104", "look-alike: REINFORCE keeps each step's log-probability on the policy, returns the action number", d("""
        import torch
        from torch.distributions import Categorical

        class Agent:
            def __init__(self, policy):
                self.policy = policy
                self.log_probs = []

            def choose(self, state):
                probs = self.policy(torch.as_tensor(state))
                m = Categorical(probs)
                a = m.sample()
                self.log_probs.append(m.log_prob(a))
                return a.item()
    """)),
    Shape("TW104", "look-alike: a training step that backpropagates and returns the loss as a number", d("""
        import torch

        class Learner:
            def __init__(self, model):
                self.model = model
                self.opt = torch.optim.SGD(model.parameters(), 0.1)

            def fit_batch(self, x, y):
                loss = torch.nn.functional.mse_loss(self.model(x), y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return loss.item()
    """)),
    Shape("TW104", "look-alike: an on-policy act() returns the action and its log-probability tensor", d("""
        import torch

        class Actor:
            def __init__(self, net):
                self.net = net

            def act(self, obs):
                dist = torch.distributions.Normal(self.net(torch.as_tensor(obs)), 1.0)
                a = dist.sample()
                return a.cpu().numpy(), dist.log_prob(a).sum()
    """)),
    Shape("TW104", "look-alike: the scoring method is decorated with no_grad", d("""
        import torch
        import torch.nn as nn

        class Scorer(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 1)

            @torch.no_grad()
            def score(self, x):
                return self.lin(x).cpu().numpy()

        print(Scorer().score(torch.zeros(2, 8)))
    """)),
    Shape("TW104", "look-alike: a scikit-learn model named model, its predictions turned into an array", d("""
        import numpy as np
        import torch
        from sklearn.linear_model import LogisticRegression

        class Probe:
            def __init__(self):
                self.model = LogisticRegression()

            def labels(self, feats):
                return np.asarray(self.model.predict(feats))

        print(Probe().labels(torch.zeros(2, 3).numpy()))
    """)),
    Shape("TW104", "look-alike: the outputs go to a writer of another object before the number is returned", d("""
        import torch

        class Monitor:
            def __init__(self, model, sink):
                self.model, self.sink = model, sink

            def probe(self, x):
                out = self.model(x)
                self.sink.record(out)
                return out.mean().item()
    """)),
]
