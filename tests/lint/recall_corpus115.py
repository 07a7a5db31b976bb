"""The recall corpus, round 33 part A: classes sets 59-62 still missed or reported wrongly for
TW502 (``volatile=`` on torch's Variable), TW116 (a guarded ``module.`` strip) and TW103 - each
written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW502 Variable(..., volatile=...)
# Pre-0.4 evaluation code: the flag is gone, warns on every call and turns nothing off (R34).
FIND += [
    Shape("TW502", "validation batch wrapped with volatile=True after model.eval()", d("""
        import torch
        from torch.autograd import Variable
        def validate(net, loader):
            net.eval()
            for x, y in loader:
                x = Variable(x.cuda(), volatile=True)
                out = net(x)
    """), 6),
    Shape("TW502", "recurrent hidden state built with volatile= taken from a training flag", d("""
        import torch
        from torch.autograd import Variable
        class Agent:
            def reset_hidden(self, training=True):
                self.h = (Variable(torch.zeros(1, 64), volatile=not training),
                          Variable(torch.zeros(1, 64), volatile=not training))
    """), 5),
    Shape("TW502", "second Variable of the same tuple on its own line", d("""
        import torch
        from torch.autograd import Variable
        class Agent:
            def reset_hidden(self, training=True):
                self.h = (Variable(torch.zeros(1, 64), volatile=not training),
                          Variable(torch.zeros(1, 64), volatile=not training))
    """), 6),
    Shape("TW502", "torch.autograd.Variable spelled out, flag on a continuation line", d("""
        import torch
        def next_values(batch, target_net):
            states = torch.autograd.Variable(torch.cat(batch),
                                             volatile=True)
            return target_net(states)
    """), 3),
    Shape("TW502", "a helper's own wrapper passes its flag on to Variable", d("""
        import torch
        from torch.autograd import Variable
        def to_var(x, volatile=False):
            if torch.cuda.is_available():
                x = x.cuda()
            return Variable(x, volatile=volatile)
    """), 6),
]
QUIET += [
    Shape("TW502", "look-alike: a project's own to_var(..., volatile=True) (its Variable call is elsewhere)", d("""
        import torch
        from utils import to_var
        def evaluate(net, loader):
            for x, y in loader:
                out = net(to_var(x, volatile=True))
    """)),
    Shape("TW502", "look-alike: a Variable class of another library with a volatile option", d("""
        import torch
        from tfvars import Variable
        counter = Variable(0, volatile=True)
    """)),
    Shape("TW502", "look-alike: torch's Variable without the flag (requires_grad= is current)", d("""
        import torch
        from torch.autograd import Variable
        def leaf(x):
            return Variable(x, requires_grad=True)
    """)),
    Shape("TW502", "look-alike: a project class named Variable defined in the file", d("""
        import torch
        class Variable:
            def __init__(self, value, volatile=False):
                self.value, self.volatile = value, volatile
        v = Variable(torch.zeros(3), volatile=True)
    """)),
]

# ------------------------------------------------------------- TW116 a strip under a flag set by a prefix test
# Checkpoint loaders that compare the first key of the checkpoint with the model's and strip
# (or add) the prefix only in the branch that found it: the guarded strip is the fix itself.
QUIET += [
    Shape("TW116", "look-alike: undo flag set only where the checkpoint's first key starts with module.", d("""
        import torch
        def load(model, path):
            sd = torch.load(path)["state_dict"]
            ckpt_keys = list(sd.keys())
            undo = False
            if ckpt_keys[0].startswith("module.") and not next(iter(model.state_dict())).startswith("module."):
                undo = True
            if undo:
                sd = {k[7:]: v for k, v in sd.items()}
            model.load_state_dict(sd)
    """)),
    Shape("TW116", "look-alike: strip flag computed by a prefix test over the keys", d("""
        import torch
        def load(model, state_dict):
            wrapped = all(k.startswith("module.") for k in state_dict)
            if wrapped:
                fixed = {}
                for k, v in state_dict.items():
                    fixed[k[7:]] = v
                state_dict = fixed
            model.load_state_dict(state_dict)
    """)),
]
FIND += [
    Shape("TW116", "strip flag taken from a command-line option, not from the keys", d("""
        import torch
        def load(model, args):
            sd = torch.load(args.ckpt)
            strip = args.multi_gpu
            if strip:
                sd = {k[7:]: v for k, v in sd.items()}
            model.load_state_dict(sd)
    """), 6),
    Shape("TW116", "strip flag set where the keys do NOT start with module.", d("""
        import torch
        def load(model, path):
            sd = torch.load(path)
            undo = False
            if not list(sd)[0].startswith("module."):
                undo = True
            if undo:
                sd = {k[7:]: v for k, v in sd.items()}
            model.load_state_dict(sd)
    """), 8),
]

# ------------------------------------------------------------- TW103 forward() of a loss handed to a step function
# Tutorial scripts: main() builds the model and a torch loss and hands both to train(), which
# calls loss.forward(out, y) - the loss module's hooks are skipped like any module's.
FIND += [
    Shape("TW103", "loss module passed by the same file's main() and called with .forward", d("""
        import torch
        def step(net, crit, opt, x, y):
            opt.zero_grad()
            out = net(x)
            cost = crit.forward(out, y)
            cost.backward()
            opt.step()
        def main():
            net = torch.nn.Linear(3, 1)
            crit = torch.nn.MSELoss()
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            step(net, crit, opt, torch.zeros(4, 3), torch.zeros(4, 1))
        main()
    """), 5),
]
QUIET += [
    Shape("TW103", "look-alike: a plain object with a forward() method handed to the same function", d("""
        import torch
        class Scorer:
            def forward(self, a, b):
                return (a - b).abs().mean()
        def step(net, crit, x, y):
            return crit.forward(net(x), y)
        def main():
            step(torch.nn.Linear(3, 1), Scorer(), torch.zeros(4, 3), torch.zeros(4, 1))
        main()
    """)),
]

# ------------------------------------------------------------- TW103 a stage built by the class's own builder method
# ResNeXt-style networks: __init__ assigns each stage from a method that stacks blocks into an
# nn.Sequential and returns it; forward() then calls the stages' forward() directly.
FIND += [
    Shape("TW103", "stage built by a helper method returning an nn.Sequential", d("""
        import torch.nn as nn
        class Wide(nn.Module):
            def __init__(self):
                super().__init__()
                self.stage_a = self.stack(16, 32, 3)
            def stack(self, c_in, c_out, n):
                seq = nn.Sequential()
                for i in range(n):
                    seq.add_module("b%d" % i, nn.Conv2d(c_in if i == 0 else c_out, c_out, 3, padding=1))
                return seq
            def forward(self, x):
                return self.stage_a.forward(x)
    """), 12),
]
QUIET += [
    Shape("TW103", "look-alike: the helper method returns a plain object with a forward()", d("""
        import torch.nn as nn
        class Runner:
            def forward(self, x):
                return x
        class Wide(nn.Module):
            def __init__(self):
                super().__init__()
                self.path = self.make_path()
            def make_path(self):
                return Runner()
            def forward(self, x):
                return self.path.forward(x)
    """)),
]
