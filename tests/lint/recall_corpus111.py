"""The recall corpus, round 32 part A: TW104 evaluations whose model lint could not see - a
parameterless ``test()`` over a module-level network (also one defined under ``if __name__ ==
"__main__":``) or over a network of its enclosing function (a closure), and an evaluation function
running a method of the project's model class that runs the network (``model.calculate_loss(x)``).
Each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 test() over a global or enclosing model
# Course scripts and small trainers: the network is built at module level (or in main(), with
# test() a closure over it), test() puts it in eval mode and scores the test split with autograd on.
# (Seen in a graph-network trainer, set 57; a ResNeXt CIFAR script, set 58; a GCN lesson, set 46.)
FIND += [
    Shape("TW104", "parameterless test() over a module-level network, one full-batch pass, called by the script", d("""
        import torch
        import torch.nn.functional as F
        feats = torch.randn(50, 8)
        ys = torch.randint(0, 3, (50,))
        clf = torch.nn.Linear(8, 3)
        opt = torch.optim.SGD(clf.parameters(), lr=0.1)
        def fit():
            clf.train()
            opt.zero_grad()
            F.cross_entropy(clf(feats), ys).backward()
            opt.step()
        def test():
            clf.eval()
            logits = clf(feats)
            print("acc", (logits.argmax(1) == ys).float().mean().item())
        fit()
        test()
    """), 14),
    Shape("TW104", "test() nested in main() over main's network (a closure), looping over the test loader", d("""
        import torch
        def main(loader):
            encoder = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.ReLU())
            score = {}
            def test():
                encoder.eval()
                total = 0.0
                for xb in loader:
                    total += float(encoder(xb).sum())
                score["test"] = total
            for epoch in range(3):
                test()
            return score
    """), 9),
    Shape("TW104", "test() defined under the __main__ guard over the network built there", d("""
        import torch
        if __name__ == "__main__":
            cnn = torch.nn.Conv2d(3, 4, 3)
            batches = [torch.randn(2, 3, 8, 8) for _ in range(4)]
            def test():
                cnn.eval()
                n = 0
                for b in batches:
                    n += cnn(b).numel()
                return n
            print(test())
    """), 9),
]
QUIET += [
    Shape("TW104", "look-alike: test() over a global network that takes input gradients (saliency)", d("""
        import torch
        clf = torch.nn.Linear(8, 3)
        def test():
            clf.eval()
            x = torch.randn(4, 8).requires_grad_()
            clf(x).max(1)[0].sum().backward()
            return x.grad.abs()
        test()
    """)),
    Shape("TW104", "look-alike: test() over a global network, already under no_grad", d("""
        import torch
        clf = torch.nn.Linear(8, 3)
        data = [torch.randn(4, 8) for _ in range(3)]
        def test():
            clf.eval()
            with torch.no_grad():
                for x in data:
                    print(clf(x).argmax(1))
        test()
    """)),
    Shape("TW104", "look-alike: nested test() inside a pytest test function", d("""
        import torch
        def test_eval_mode_is_deterministic():
            net = torch.nn.Dropout(0.5)
            def test():
                net.eval()
                x = torch.ones(3)
                for _ in range(2):
                    assert torch.equal(net(x), x)
            test()
    """)),
    Shape("TW104", "look-alike: closure test() that nothing calls and no loop - a single pass in dead code", d("""
        import torch
        clf = torch.nn.Linear(8, 3)
        def test():
            clf.eval()
            print(clf(torch.ones(1, 8)))
    """)),
]

# ------------------------------------------------------------- TW104 a project model method that runs the network
# An evaluation module handed the model: after model.eval() it calls model.calculate_loss(x) /
# model.reconstruct(x), methods the project's model classes define by running self.forward or their
# submodules. (Seen in a VAE prior study's evaluation module, set 58; a GAN inpainting validator's
# model.process(), set 22.)
PROJECTS += [
    ProjectShape("TW104", "evaluation module running the model's own loss method after eval()", {
        "vae/nets.py": d("""
            import torch
            from torch import nn
            class Base(nn.Module):
                def score(self, x):
                    return 0.0
            class AE(Base):
                def __init__(self):
                    super().__init__()
                    self.enc = nn.Linear(10, 2)
                    self.dec = nn.Linear(2, 10)
                def forward(self, x):
                    return self.dec(self.enc(x))
                def score(self, x):
                    return ((self.forward(x) - x) ** 2).mean()
                def total_score(self, xs):
                    return sum(float(self.score(x)) for x in xs)
        """),
        "vae/evaluate.py": d("""
            def run_eval(model, loader):
                model.eval()
                out = 0.0
                for x in loader:
                    out += float(model.score(x))
                return out, model.total_score(list(loader))
        """),
        "vae/main.py": d("""
            import torch
            from nets import AE
            from evaluate import run_eval
            net = AE()
            print(run_eval(net, [torch.randn(4, 10)]))
        """),
    }, (("vae/evaluate.py", 5), ("vae/evaluate.py", 6))),
    ProjectShape("TW104", "look-alike: the model's method only applies a loss module to outputs", {
        "pc/nets.py": d("""
            from torch import nn
            class Rec(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Linear(3, 3)
                    self.loss = nn.MSELoss()
                def forward(self, x):
                    return self.body(x)
                def get_err(self, x, y):
                    return self.loss(x, y)
        """),
        "pc/infer.py": d("""
            import torch
            from nets import Rec
            def evaluate(model, loader):
                model.eval()
                errs = []
                for x in loader:
                    with torch.no_grad():
                        y = model(x)
                    errs.append(float(model.get_err(x, y)))
                return errs
            print(evaluate(Rec(), [torch.randn(2, 3)]))
        """),
    }),
]
