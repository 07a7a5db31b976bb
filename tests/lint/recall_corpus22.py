"""The recall corpus, round 12 part C2 (issue 22): the API and correctness rules (TW502, TW220,
TW401, TW509, TW503, TW103, TW107, TW105, TW506/TW507) on the classes sets 12-14 showed - each
written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW502 deprecated usages that warn when run (R4)
# Old optimizers and losses copied from PyTorch 0.x code: the scalar-first add_/addcmul_/addcdiv_
# overloads, size_average=/reduce=, reduction='elementwise_mean', softmax without dim.
FIND += [
    Shape("TW502", "an Adam copy: the moment update with the scalar-first add_ overload", d("""
        import torch
        def adam_step(p, grad, state, b1, b2):
            m, v = state["m"], state["v"]
            m.mul_(b1).add_(1 - b1, grad)
            v.mul_(b2).addcmul_(1 - b2, grad, grad)
    """), 4),
    Shape("TW502", "an Adam copy: addcmul_ with the scalar first", d("""
        import torch
        def adam_step(p, grad, state, b1, b2):
            v = state["v"]
            v.mul_(b2).addcmul_(1 - b2, grad, grad)
    """), 4),
    Shape("TW502", "RAdam's parameter step: addcdiv_ with a negative step size first", d("""
        import torch
        class RAdamish(torch.optim.Optimizer):
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        st = self.state[p]
                        denom = st["v"].sqrt().add_(group["eps"])
                        p.data.addcdiv_(-group["lr"] * st["scale"], st["m"], denom)
    """), 8),
    Shape("TW502", "plain SGD with weight decay written as add_(wd, p.data)", d("""
        import torch
        def sgd(params, lr, wd):
            for p in params:
                d_p = p.grad.data
                d_p.add_(wd, p.data)
                p.data.add_(-lr, d_p)
    """), 5),
    Shape("TW502", "a sequence loss with reduction='elementwise_mean' over several lines", d("""
        import torch.nn.functional as F
        def seq_loss(logits, gold, pad):
            return F.cross_entropy(
                logits, gold, ignore_index=pad,
                reduction='elementwise_mean')
    """), 3),
    Shape("TW502", "a summed criterion built with size_average=False", d("""
        import torch.nn as nn
        class Trainer:
            def __init__(self):
                self.crit = nn.NLLLoss(size_average=False, ignore_index=0)
    """), 4),
    Shape("TW502", "an element-wise loss kept per item with reduce=False", d("""
        import torch
        def per_item(pred, target):
            return torch.nn.functional.binary_cross_entropy(pred, target, reduce=False)
    """), 3),
    Shape("TW502", "a pointer-mixture evaluation: functional softmax with no dim", d("""
        import torch
        def mix(logits, ptr_scores, lam):
            vocab = torch.nn.functional.softmax(logits)
            return lam * vocab + (1 - lam) * ptr_scores
    """), 3),
    Shape("TW502", "a matching network: nn.Softmax() built without dim", d("""
        import torch.nn as nn
        class Matcher(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = nn.Softmax()
            def forward(self, s):
                return self.norm(s)
    """), 5),
    Shape("TW502", "class probabilities of a whole epoch: log_softmax with dim=None", d("""
        import torch.nn.functional as F
        def epoch_scores(outputs):
            return F.log_softmax(outputs, dim=None)
    """), 3),
]
QUIET += [
    Shape("TW502", "look-alike: the current overloads (alpha=/value= by keyword)", d("""
        import torch
        def adam_step(p, grad, m, v, b1, b2, lr, denom):
            m.mul_(b1).add_(grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            p.addcdiv_(m, denom, value=-lr)
            p.add_(grad)
    """)),
    Shape("TW502", "look-alike: an average meter's add(value, n) and a set's add", d("""
        import torch
        def log(meter, seen, loss, n):
            meter.add(loss.item(), n)
            seen.add(n)
    """)),
    Shape("TW502", "look-alike: softmax with the dim given positionally, and graph softmax of another library", d("""
        import torch.nn.functional as F
        from torch_geometric.utils import softmax
        def attend(scores, index):
            a = F.softmax(scores, 1)
            return softmax(a, index)
    """)),
    Shape("TW502", "look-alike: a project's own loss class with a reduce= option", d("""
        import torch
        class FocalLoss(torch.nn.Module):
            def __init__(self, reduce=True):
                super().__init__()
                self.reduce = reduce
        crit = FocalLoss(reduce=False)
    """)),
]

# ------------------------------------------------------------- TW502 the old weight-norm module's class
FIND += [
    Shape("TW502", "a cosine classifier importing the WeightNorm hook class", d("""
        import torch.nn as nn
        from torch.nn.utils.weight_norm import WeightNorm
        class CosineHead(nn.Module):
            def __init__(self, dim, n):
                super().__init__()
                self.fc = nn.Linear(dim, n, bias=False)
                WeightNorm.apply(self.fc, "weight", dim=0)
    """), 2),
]
QUIET += [
    Shape("TW502", "look-alike: the parametrization weight norm", d("""
        import torch.nn as nn
        from torch.nn.utils.parametrizations import weight_norm
        head = weight_norm(nn.Linear(8, 4))
    """)),
]

# ------------------------------------------------------------- TW502 async= of a project's own function
QUIET += [
    Shape("TW502", "look-alike: async= of a replay wrapper of the project (not torch's .cuda)", d("""
        import torch
        from replay import Wrapper, Uniform
        def config():
            return lambda: Wrapper(Uniform, {"size": 10}, async=True)
    """)),
]

# ------------------------------------------------------------- TW502 names reached through star imports
# An RL library built as a package of star imports: a network module does
# `import torch.nn.functional as F`, the package re-exports it, and every agent, head and example
# script uses F, torch and the schedulers without an import of its own.
_PKG_INIT = "from .net import *\nfrom .agents import *\n"
_NET = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class Body(nn.Module):
        def __init__(self, dim, gate=F.relu):
            super().__init__()
            self.fc = nn.Linear(dim, dim)
            self.gate = gate
        def forward(self, x):
            return self.gate(self.fc(x))
""")
_HEADS = d("""
    from .net import *
    class OptionHead(nn.Module):
        def __init__(self, body):
            super().__init__()
            self.body = body
            self.beta = nn.Linear(4, 2)
        def forward(self, x):
            return F.upsample(self.beta(self.body(x)), scale_factor=2)
""")
_AGENT = d("""
    from .net import *
    class Agent:
        def __init__(self, opt, total):
            self.sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / total)
            self.steps = 0
        def step(self):
            self.steps += 1
            self.sched.step(self.steps)
""")
_EXAMPLE = d("""
    from rl import *
    def make(dim):
        return Body(dim, gate=F.upsample_nearest)
""")
PROJECTS += [
    ProjectShape("TW502", "a package of star imports: F.upsample / F.upsample_nearest / scheduler.step(steps) without an import of torch", {
        "rl/__init__.py": _PKG_INIT, "rl/net.py": _NET, "rl/heads.py": _HEADS, "rl/agents.py": _AGENT,
        "examples.py": _EXAMPLE,
    }, (("rl/heads.py", 8), ("rl/agents.py", 8), ("examples.py", 3))),
    ProjectShape("TW502", "look-alike: the star-imported module binds F to its own helpers (__all__ leaves it out)", {
        "rl/__init__.py": _PKG_INIT, "rl/net.py": "__all__ = ['Body']\n" + _NET,
        "rl/heads.py": _HEADS.replace("F.upsample", "F.interpolate"), "rl/agents.py": _AGENT.replace("self.sched.step(self.steps)", "self.sched.step()"),
        "examples.py": _EXAMPLE.replace("from rl import *", "from rl import *\nimport helpers as F"),
    }),
]

# ------------------------------------------------------------- TW220 apex amp's calls after the import
# A competition pipeline: apex amp imported, then amp.initialize on the model and optimizer and
# amp.scale_loss around every backward.
FIND += [
    Shape("TW220", "apex amp.initialize with an opt level", d("""
        import torch
        from apex import amp
        def build(model, lr):
            opt = torch.optim.Adam(model.parameters(), lr=lr)
            model, opt = amp.initialize(model, opt, opt_level="O1")
            return model, opt
    """), 5),
    Shape("TW220", "apex amp.scale_loss around the backward", d("""
        import torch
        from apex import amp
        def step(model, opt, x, y):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            with amp.scale_loss(loss, opt) as scaled:
                scaled.backward()
            opt.step()
    """), 5),
    Shape("TW220", "apex imported as a package: apex.amp.initialize", d("""
        import apex
        def build(model, opt):
            return apex.amp.initialize(model, opt, opt_level="O2")
    """), 3),
]
QUIET += [
    Shape("TW220", "look-alike: a project module named amp with its own initialize", d("""
        import torch
        from utils import amp
        def build(model, opt):
            amp.initialize(model)
            with amp.scale_loss(1.0, opt) as s:
                pass
    """)),
]

# ------------------------------------------------------------- TW401 **kwargs that can only carry map_location
FIND += [
    Shape("TW401", "a perceptual-metric loader: kw = {}, map_location added on CPU, torch.load(path, **kw)", d("""
        import torch
        class Metric:
            def load(self, net, path, use_gpu):
                kw = {}
                if not use_gpu:
                    kw["map_location"] = "cpu"
                net.load_state_dict(torch.load(path, **kw), strict=False)
    """), 7),
]
PROJECTS += [
    ProjectShape("TW401", "an MPI loading helper: th.load(buf, **kwargs), every caller passes map_location only", {
        "pkg/dist_util.py": d("""
            import io
            import torch as th
            def load_state_dict(path, **kwargs):
                with open(path, "rb") as f:
                    data = f.read()
                return th.load(io.BytesIO(data), **kwargs)
        """),
        "pkg/train_util.py": d("""
            from . import dist_util
            def resume(model, path, dev):
                model.load_state_dict(dist_util.load_state_dict(path, map_location=dev))
        """),
        "sample.py": d("""
            from pkg import dist_util
            def main(model, args):
                model.load_state_dict(dist_util.load_state_dict(args.model_path, map_location="cpu"))
        """),
    }, (("pkg/dist_util.py", 6),)),
    ProjectShape("TW401", "look-alike: a caller hands weights_only through the helper's **kwargs", {
        "pkg/dist_util.py": d("""
            import io
            import torch as th
            def load_state_dict(path, **kwargs):
                with open(path, "rb") as f:
                    data = f.read()
                return th.load(io.BytesIO(data), **kwargs)
        """),
        "sample.py": d("""
            from pkg import dist_util
            def main(model, args):
                model.load_state_dict(dist_util.load_state_dict(args.model_path, map_location="cpu", weights_only=True))
        """),
    }),
]
QUIET += [
    Shape("TW401", "look-alike: a helper's **kwargs that nothing in view calls", d("""
        import torch
        def load_any(path, **kwargs):
            return torch.load(path, **kwargs)
    """)),
    Shape("TW401", "look-alike: the local dict is filled from the caller's options", d("""
        import torch
        def load(path, opts):
            kw = {"map_location": "cpu"}
            kw.update(opts)
            return torch.load(path, **kw)
    """)),
    Shape("TW401", "look-alike: the local dict sets weights_only itself", d("""
        import torch
        def load(path, gpu):
            kw = {"weights_only": True}
            if not gpu:
                kw["map_location"] = "cpu"
            return torch.load(path, **kw)
    """)),
]

# ------------------------------------------------------------- TW509 a builder taken from a local dict of torchvision builders
FIND += [
    Shape("TW509", "a depth encoder: resnet builders by depth in a dict, the flag passed positionally", d("""
        import torch.nn as nn
        import torchvision.models as models
        class Encoder(nn.Module):
            def __init__(self, depth, pretrained):
                super().__init__()
                builders = {18: models.resnet18, 34: models.resnet34, 50: models.resnet50}
                self.net = builders[depth](pretrained)
    """), 7),
    Shape("TW509", "a module-level table of torchvision backbones called with pretrained=True", d("""
        from torchvision import models
        BACKBONES = {"r18": models.resnet18, "mnv2": models.mobilenet_v2}
        def backbone(name):
            return BACKBONES[name](pretrained=True)
    """), 4),
]
QUIET += [
    Shape("TW509", "look-alike: a dict mixing a torchvision builder with the project's own", d("""
        import torchvision.models as models
        from nets import tiny_resnet
        def backbone(name, pretrained):
            table = {"tiny": tiny_resnet, "r18": models.resnet18}
            return table[name](pretrained)
    """)),
    Shape("TW509", "look-alike: a dict of torchvision builders called with weights=", d("""
        import torchvision.models as models
        def backbone(depth):
            table = {18: models.resnet18, 50: models.resnet50}
            return table[depth](weights="DEFAULT")
    """)),
]

# ------------------------------------------------------------- TW503 assignment to the method requires_grad_
FIND += [
    Shape("TW503", "a vocoder loader that means to freeze the model: model.requires_grad_ = False", d("""
        import torch
        def get_vocoder(model, path):
            model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
            model.eval()
            model.requires_grad_ = False
            return model
    """), 5),
    Shape("TW503", "a frozen teacher: self.teacher.requires_grad_ = False in __init__", d("""
        import torch.nn as nn
        class Distiller(nn.Module):
            def __init__(self, teacher, student):
                super().__init__()
                self.teacher, self.student = teacher, student
                self.teacher.requires_grad_ = False
    """), 6),
]
QUIET += [
    Shape("TW503", "look-alike: the method called, and the attribute assigned", d("""
        import torch
        def freeze(model, head):
            model.requires_grad_(False)
            for p in head.parameters():
                p.requires_grad = True
    """)),
]

# ------------------------------------------------------------- TW107 view(-1) of a transposed layout carried through eq and a slice
# The top-k accuracy helper of many training scripts: pred = pred.t(), correct = pred.eq(...),
# correct[:k].view(-1) - element-wise results keep the transposed strides, so the flatten fails
# for k > 1.
FIND += [
    Shape("TW107", "top-k accuracy: correct[:k].view(-1) after pred.t() and eq", d("""
        import torch
        def accuracy(output, target, topk=(1, 5)):
            _, pred = output.topk(max(topk), 1, True, True)
            pred = pred.t()
            correct = pred.eq(target.view(1, -1).expand_as(pred))
            res = []
            for k in topk:
                correct_k = correct[:k].view(-1).float().sum(0)
                res.append(correct_k * (100.0 / target.size(0)))
            return res
    """), 8),
    Shape("TW107", "a hit mask made in one expression from a transposed index tensor", d("""
        import torch
        def hits(ranked, gold, k):
            mask = ranked.t().eq(gold.unsqueeze(0))
            return mask[:k].view(-1).sum()
    """), 4),
]
QUIET += [
    Shape("TW107", "look-alike: the same helper with reshape", d("""
        import torch
        def accuracy(output, target, k):
            _, pred = output.topk(k, 1, True, True)
            pred = pred.t()
            correct = pred.eq(target.view(1, -1).expand_as(pred))
            return correct[:k].reshape(-1).float().sum(0)
    """)),
    Shape("TW107", "look-alike: made contiguous before the flatten", d("""
        import torch
        def accuracy(output, target, k):
            pred = output.topk(k, 1)[1].t()
            correct = pred.eq(target.view(1, -1)).contiguous()
            return correct[:k].view(-1).float().sum()
    """)),
    Shape("TW107", "look-alike: only the first row of the transposed result is flattened", d("""
        import torch
        def top1(output, target):
            pred = output.topk(5, 1)[1].t()
            correct = pred.eq(target.view(1, -1))
            return correct[:1].view(-1).float().sum()
    """)),
]

# ------------------------------------------------------------- TW107 a view that merges only dims the transpose left alone
QUIET += [
    Shape("TW107", "look-alike: char-CNN input, transpose of the last two dims, then view(-1, c, w) merges batch and words", d("""
        import torch
        import torch.nn as nn
        class CharEmb(nn.Module):
            def forward(self, x):
                x = self.emb(x)
                x = x.transpose(2, 3)
                return x.view(-1, self.dim, x.size(3)).unsqueeze(1)
    """)),
    Shape("TW107", "look-alike: heads of a 4-D tensor transposed at the back, batch and heads merged by a product", d("""
        import torch
        def fold(x, b, h, d, t):
            y = x.transpose(2, 3)
            return y.view(b * h, d, t)
    """)),
]

# ------------------------------------------------------------- TW506/TW507 whole numbers: counts, and rounded results
QUIET += [
    Shape("TW506", "look-alike: log of frame counts plus one (a duration target)", d("""
        import torch
        def duration_loss(log_pred, duration_targets, mask):
            target = torch.log(duration_targets.float() + 1)
            return ((log_pred - target) ** 2)[mask].mean()
    """)),
    Shape("TW506", "look-alike: log(1 + number of tokens), made by an integer sum", d("""
        import torch
        def length_bonus(mask):
            return torch.log(1 + mask.sum(-1).long())
    """)),
    Shape("TW507", "look-alike: predicted durations rounded to whole frames", d("""
        import torch
        def lengths(log_d, control):
            return torch.clamp(torch.round(torch.exp(log_d) - 1) * control, min=0)
    """)),
    Shape("TW507", "look-alike: exp(x) - 1 cast to an integer count", d("""
        import torch
        def counts(log_c):
            return (torch.exp(log_c) - 1).long()
    """)),
]

# ------------------------------------------------------------- TW105 a snippet that shows log(softmax) equals log_softmax
QUIET += [
    Shape("TW105", "look-alike: a learning snippet computing both and printing them", d("""
        import torch
        import torch.nn.functional as F
        def learn_log_softmax():
            x = torch.randn(4, 5)
            ls = F.log_softmax(x, dim=1)
            p = F.softmax(x, dim=1)
            manual = torch.log(p)
            print(ls, manual)
    """)),
]

# ------------------------------------------------------------- TW103 parts built by a factory passed in, wrapped modules, project module classes
FIND += [
    Shape("TW103", "few-shot template: the backbone comes from a factory handed to the constructor", d("""
        import torch.nn as nn
        class Template(nn.Module):
            def __init__(self, model_func, n_way):
                super().__init__()
                self.feature = model_func()
                self.n_way = n_way
            def embed(self, x):
                return self.feature.forward(x)
    """), 8),
    Shape("TW103", "a weight-dropping wrapper calls the module it wraps", d("""
        import torch
        class DropConnect(torch.nn.Module):
            def __init__(self, module, names, p=0.5):
                super().__init__()
                self.module = module
                self.names, self.p = names, p
            def forward(self, *args):
                self._drop_weights()
                return self.module.forward(*args)
    """), 9),
]
QUIET += [
    Shape("TW103", "look-alike: a module keeps a scheduler object declared as a plain type", d("""
        import torch.nn as nn
        from schedules import NoiseSchedule
        class Denoiser(nn.Module):
            def __init__(self, schedule: NoiseSchedule):
                super().__init__()
                self.schedule = schedule
            def forward(self, x, t):
                return x * self.schedule.forward(t)
    """)),
    Shape("TW103", "look-alike: a plain runner (no module) builds its part with a factory", d("""
        class Runner:
            def __init__(self, make):
                self.stage = make()
            def run(self, x):
                return self.stage.forward(x)
    """)),
]
_NETS = d("""
    import torch.nn as nn
    class RankingLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 1)
        def forward(self, d0, d1, judge):
            return (self.fc(d0 - d1) - judge).pow(2).mean()
""")
PROJECTS += [
    ProjectShape("TW103", "a plain metric wrapper sets up a module loss of another file in initialize()", {
        "metric/nets.py": _NETS,
        "metric/dist.py": d("""
            from . import nets
            class Dist:
                def initialize(self, train):
                    if train:
                        self.rank = nets.RankingLoss()
                        self.rank = self.rank.to("cuda")
                def backward(self, d0, d1, judge):
                    loss = self.rank.forward(d0, d1, judge)
                    loss.backward()
        """),
    }, (("metric/dist.py", 8),)),
    ProjectShape("TW103", "a MAML subclass in another module: the base's factory-built feature and a fast-weight linear", {
        "methods/template.py": d("""
            import torch.nn as nn
            class Template(nn.Module):
                def __init__(self, model_func, n_way):
                    super().__init__()
                    self.feature = model_func()
                    self.n_way = n_way
        """),
        "backbone.py": d("""
            import torch.nn as nn
            class LinearFW(nn.Linear):
                def forward(self, x):
                    return super().forward(x)
        """),
        "methods/maml.py": d("""
            import backbone
            from methods.template import Template
            class MAML(Template):
                def __init__(self, model_func, n_way):
                    super().__init__(model_func, n_way)
                    self.classifier = backbone.LinearFW(64, n_way)
                def forward(self, x):
                    out = self.feature.forward(x)
                    return self.classifier.forward(out)
        """),
    }, (("methods/maml.py", 8), ("methods/maml.py", 9))),
    ProjectShape("TW103", "look-alike: .forward() of a project class whose base is a plain class", {
        "metric/base.py": "class BaseModel():\n    def name(self):\n        return 'base'\n",
        "metric/dist.py": d("""
            from .base import BaseModel
            class DistModel(BaseModel):
                def forward(self, a, b):
                    return (a - b).abs().mean()
        """),
        "metric/__init__.py": d("""
            import torch
            from . import dist
            class Metric(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.model = dist.DistModel()
                def forward(self, a, b):
                    return self.model.forward(a, b)
        """),
    }),
]
QUIET += [
    Shape("TW103", "look-alike: a hybrid model calls forward() of the remote module it was handed (its RPC interface)", d("""
        import torch
        class Hybrid(torch.nn.Module):
            def __init__(self, remote_emb_module, rank):
                super().__init__()
                self.remote_emb_module = remote_emb_module
                self.fc = torch.nn.Linear(16, 8)
            def forward(self, idx, off):
                return self.fc(self.remote_emb_module.forward(idx, off))
    """)),
]
QUIET += [
    Shape("TW502", "look-alike: a wrapper with torch's loss signature hands size_average/reduce through as None", d("""
        import torch.nn.functional as F
        def smooth_l1(input, target, beta=1.0, size_average=None, reduce=None, reduction="mean"):
            if beta == 1.0:
                return F.smooth_l1_loss(input, target, size_average=size_average, reduce=reduce, reduction=reduction)
            return input
    """)),
]
