"""The recall corpus, round 19 part D: classes the twenty-seventh and twenty-eighth sets (the tuning
sets of round 19) still missed or reported falsely - each written in our own words and reduced to
its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW502 calls through a name a `from` import binds
# A VQA model wraps every linear layer in the old weight norm, imported by name from its module or
# from the package; each call warns (the import line is reported too).
FIND += [
    Shape("TW502", "weight_norm imported from its module, called on each linear layer of an MLP", d("""
        import torch.nn as nn
        from torch.nn.utils.weight_norm import weight_norm
        class Head(nn.Module):
            def __init__(self, sizes):
                super().__init__()
                blocks = []
                for a, b in zip(sizes, sizes[1:]):
                    blocks.append(weight_norm(nn.Linear(a, b), dim=None))
                self.body = nn.Sequential(*blocks)
    """), 8),
    Shape("TW502", "weight_norm imported from nn.utils under another name, called for a vocoder conv", d("""
        from torch import nn
        from torch.nn.utils import weight_norm as wn
        class Post(nn.Module):
            def __init__(self, ch):
                super().__init__()
                self.conv = wn(nn.Conv1d(ch, 1, 7, padding=3))
    """), 6),
    Shape("TW502", "an nn.init function without the underscore imported by name, called in an init helper", d("""
        import torch.nn as nn
        from torch.nn.init import kaiming_normal
        def init_weights(net):
            for m in net.modules():
                if isinstance(m, nn.Conv2d):
                    kaiming_normal(m.weight)
    """), 6),
]
QUIET += [
    Shape("TW502", "look-alike: the parametrizations weight norm called by name", d("""
        import torch.nn as nn
        from torch.nn.utils.parametrizations import weight_norm
        layer = weight_norm(nn.Linear(4, 4))
    """)),
]
# the import line is reported (with its fix), the calls of a name bound again are not
PROJECTS += [
    ProjectShape("TW502", "look-alike: the file defines its own weight_norm after importing torch's", {"net.py": d("""
        import torch.nn as nn
        from torch.nn.utils import weight_norm
        def weight_norm(module):
            return module
        layer = weight_norm(nn.Linear(4, 4))
    """)}, (("net.py", 2),)),
    ProjectShape("TW502", "look-alike: a local variable of the same name holds a project helper", {"net.py": d("""
        import torch.nn as nn
        from torch.nn.utils import weight_norm
        from mynorm import spectral
        def build(kind):
            weight_norm = spectral if kind == "sn" else (lambda m: m)
            return weight_norm(nn.Linear(4, 4))
    """)}, (("net.py", 2),)),
]

# ------------------------------------------------------------- TW501 an import of a module PyTorch deleted
# A style-transfer or graph project ships an old cffi CUDA extension: its build script imports
# create_extension and the generated package imports _wrap_function, both from torch.utils.ffi.
FIND += [
    Shape("TW501", "build script of an old cffi extension", d("""
        import os
        import torch
        from torch.utils.ffi import create_extension
        here = os.path.dirname(__file__)
        ext = create_extension("_ext.lib", headers=["src/lib.h"], sources=["src/lib.c"], with_cuda=torch.cuda.is_available())
        if __name__ == "__main__":
            ext.build()
    """), 3),
    Shape("TW501", "generated wrapper package of a cffi extension", d("""
        from torch.utils.ffi import _wrap_function
        from ._kernels import lib as _lib, ffi as _ffi
        __all__ = []
        for _name in dir(_lib):
            globals()[_name] = _wrap_function(getattr(_lib, _name), _ffi)
    """, ), 1, "_ext/kernels/__init__.py"),
    Shape("TW501", "the ffi module imported from torch.utils", d("""
        from torch.utils import ffi
        extension = ffi.create_extension("roi", headers=[], sources=[])
    """), 1),
    Shape("TW501", "old Lua-style modules of torch.legacy", d("""
        import torch
        import torch.legacy.nn as lnn
        block = lnn.SpatialConvolution(3, 16, 3, 3)
    """), 2),
]
QUIET += [
    Shape("TW501", "look-alike: cffi itself and a project module named ffi", d("""
        from cffi import FFI
        from .ffi import load_kernels
        from utils.ffi import wrap
        builder = FFI()
    """)),
    Shape("TW501", "look-alike: the cpp_extension replacement", d("""
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension
        ext = CUDAExtension("roi", ["roi.cpp", "roi_kernel.cu"])
    """)),
    Shape("TW501", "look-alike: torch._six imported under a try that falls back", d("""
        try:
            from torch._six import with_metaclass
        except ImportError:
            from six import with_metaclass
    """)),
]

# ------------------------------------------------------------- TW511 a deeper torchvision submodule under its own name
# A face detector imports torchvision's detection helpers and its private model utilities as
# `import torchvision.models.X as X`: the same binding as `from torchvision.models import X`.
FIND += [
    Shape("TW511", "the detection backbone helpers imported under their own name", d("""
        import torch.nn as nn
        import torchvision.models.detection.backbone_utils as backbone_utils
        class Detector(nn.Module):
            pass
    """), 2),
    Shape("TW511", "torchvision's model utilities imported under their own name", d("""
        import torchvision.models._utils as _utils
        def body(backbone):
            return _utils.IntermediateLayerGetter(backbone, {"layer2": 1, "layer3": 2})
    """), 1),
    Shape("TW511", "torchvision.ops imported as ops", d("""
        import torch
        import torchvision.ops as ops
        keep = ops.nms(torch.rand(4, 4), torch.rand(4), 0.5)
    """), 2),
]
QUIET += [
    Shape("TW511", "look-alike: submodules bound to other names (the set-15/25 ruling)", d("""
        import torchvision.utils as vutils
        import torchvision.datasets as dset
        import torchvision.models.detection.backbone_utils as bb
        import torchvision.transforms.functional as TF
    """)),
    Shape("TW511", "look-alike: the from form and a plain dotted import", d("""
        import torchvision.models.detection
        from torchvision.models import _utils
        from torchvision.models.detection import backbone_utils
    """)),
]

# ------------------------------------------------------------- TW201 one training setup, reported once
# An instance-segmentation script wraps its model in DataParallel and then its loss module too, so
# the loss runs per GPU as well: one setup, reported at the model's wrapper. A BERT-style Trainer
# wraps the model in train() (reported) and again in eval(), where the wrapper is only handed to
# an evaluate callback inside `torch.no_grad()`.
_SEG_TRAIN = d("""
    import torch
    from models import get_model
    from criterions import EmbeddingLoss
    device = torch.device("cuda")
    model = torch.nn.DataParallel(get_model("erfnet")).to(device)
    criterion = EmbeddingLoss(n_sigma=2)
    criterion = torch.nn.DataParallel(criterion).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
    for sample in loader:
        out = model(sample["image"].to(device))
        loss = criterion(out, sample["instance"], sample["label"]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")
_BERT_TRAINER = d("""
    import torch
    import torch.nn as nn
    class Trainer:
        def __init__(self, model, data_iter, optimizer, device):
            self.model, self.data_iter, self.optimizer, self.device = model, data_iter, optimizer, device
        def train(self, get_loss, data_parallel=True):
            self.model.train()
            model = self.model.to(self.device)
            if data_parallel:
                model = nn.DataParallel(model)
            for batch in self.data_iter:
                batch = [t.to(self.device) for t in batch]
                self.optimizer.zero_grad()
                loss = get_loss(model, batch).mean()
                loss.backward()
                self.optimizer.step()
        def eval(self, evaluate, data_parallel=True):
            self.model.eval()
            model = self.model.to(self.device)
            if data_parallel:
                model = nn.DataParallel(model)
            results = []
            for batch in self.data_iter:
                batch = [t.to(self.device) for t in batch]
                with torch.no_grad():
                    accuracy, result = evaluate(model, batch)
                results.append(result)
            return results
""")
PROJECTS += [
    ProjectShape("TW201", "the loss module wrapped in DataParallel after the model: reported once, at the model",
                 {"train.py": _SEG_TRAIN}, (("train.py", 5),)),
    ProjectShape("TW201", "a trainer's eval() hands its wrapper to a callback under no_grad: only train()'s wrapper",
                 {"trainer.py": _BERT_TRAINER, "classify.py": d("""
                     from trainer import Trainer
                     def main(model, it, opt):
                         t = Trainer(model, it, opt, "cuda")
                         t.train(lambda m, b: m(*b))
                         t.eval(lambda m, b: (0.0, m(*b)))
                 """)}, (("trainer.py", 10),)),
]
FIND += [
    Shape("TW201", "a lone loss wrapper (no model wrapper beside it) is still reported", d("""
        import torch
        import torch.nn as nn
        def fit(model, loader, loss_module):
            criterion = nn.DataParallel(loss_module)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                criterion(model(x), y).mean().backward()
                opt.step()
        fit(Net(), [], Loss())
    """), 4),
]

# ------------------------------------------------------------- TW208 the gradient of an input, read as a result
# An autograd tutorial builds a Jacobian one column per backward pass: it makes the input a leaf
# with `requires_grad=True`, reads `x.grad` into the matrix and zeroes it between passes. No
# parameter is trained; a hand-written gradient-descent loop on such a tensor still counts.
QUIET += [
    Shape("TW208", "Jacobian of a Variable input, one column per backward, at module level", d("""
        import torch
        from torch.autograd import Variable
        x = Variable(torch.FloatTensor([[2, 1]]), requires_grad=True)
        y = torch.mm(x, torch.FloatTensor([[1, 2], [3, 4]]))
        jac = torch.zeros(2, 2)
        y.backward(torch.FloatTensor([[1, 0]]), retain_graph=True)
        jac[:, 0] = x.grad.data
        x.grad.data.zero_()
        y.backward(torch.FloatTensor([[0, 1]]))
        jac[:, 1] = x.grad.data
    """)),
    Shape("TW208", "per-output input sensitivities of a model, the input made with requires_grad=True", d("""
        import torch
        def sensitivities(model, sample):
            inp = torch.tensor(sample, requires_grad=True)
            out = model(inp)
            rows = []
            for k in range(out.shape[-1]):
                out[..., k].sum().backward(retain_graph=True)
                rows.append(inp.grad.clone())
                inp.grad.zero_()
            return torch.stack(rows)
    """)),
]
FIND += [
    Shape("TW208", "a weight made with requires_grad=True and updated by hand each step", d("""
        import torch
        w = torch.randn(3, requires_grad=True)
        for x, y in pairs:
            loss = ((x @ w) - y).pow(2).mean()
            loss.backward()
            w.data = w.data - 0.01 * w.grad.data
            w.grad.data.zero_()
    """), 7),
    Shape("TW208", "a bias tensor made with requires_grad=True and handed to an optimizer", d("""
        import torch
        b = torch.zeros(4, requires_grad=True)
        opt = torch.optim.SGD([b], lr=0.1)
        def step(loss):
            loss.backward()
            opt.step()
            b.grad.zero_()
        step(b.sum())
    """), 7),
]

# ------------------------------------------------------------- TW506 log(1 + x) in code nothing runs
# A vendored Lovasz-loss module keeps a stable BCE module whose only user is a helper nothing
# imports; the training code imports only the hinge loss. Precision advice is about what runs.
_LOVASZ = d("""
    import torch
    def lovasz_hinge(logits, labels):
        return (logits * labels).mean()
    class StableBCE(torch.nn.Module):
        def forward(self, x, target):
            neg_abs = -x.abs()
            return (x.clamp(min=0) - x * target + (1 + neg_abs.exp()).log()).mean()
    def binary_xloss(logits, labels):
        return StableBCE()(logits, labels.float())
""")
_LOVASZ_TRAIN = d("""
    from lovasz import lovasz_hinge
    def train_step(out, labels, opt):
        loss = lovasz_hinge(out, labels)
        loss.backward()
        opt.step()
""")
PROJECTS += [
    ProjectShape("TW506", "look-alike: log(1 + exp(-|x|)) in a loss only an unused helper builds",
                 {"lovasz.py": _LOVASZ, "train.py": _LOVASZ_TRAIN}),
    ProjectShape("TW506", "the same loss imported and used by the training step is reported",
                 {"lovasz.py": _LOVASZ, "train.py": _LOVASZ_TRAIN.replace("import lovasz_hinge", "import binary_xloss as lovasz_hinge")},
                 (("lovasz.py", 7),)),
]

# ------------------------------------------------------------- TW220 apex amp's internals set by hand
# A fine-grained classifier trains with apex amp and then sets apex's internal loss scale by hand.
FIND += [
    Shape("TW220", "apex amp's internal loss scaler set by hand after initialize", d("""
        import torch
        from apex import amp
        def setup(model, optimizer):
            model, optimizer = amp.initialize(model, optimizer, opt_level="O2")
            amp._amp_state.loss_scalers[0]._loss_scale = 2 ** 20
            return model, optimizer
    """), 5),
    Shape("TW220", "apex amp told to run a function in fp32", d("""
        import torch
        import apex.amp as amp
        amp.register_float_function(torch, "sigmoid")
    """), 3),
]
QUIET += [
    Shape("TW220", "look-alike: a project's own amp helper module", d("""
        import torch
        from utils import amp
        amp._state.scale = 2 ** 16
        amp.register_float_function(torch, "sigmoid")
    """)),
]

# ------------------------------------------------------------- TW209 a biased conv joined with a pool, then BatchNorm
# ENet-style downsampling: a strided biased conv and a max-pool run side by side, their outputs are
# joined along the channels and normalised together: each of the conv's channels is still
# normalised on its own, so its bias is cancelled.
FIND += [
    Shape("TW209", "conv and pool joined with torch.cat along the channels, then the block's BatchNorm", d("""
        import torch
        import torch.nn as nn
        class Down(nn.Module):
            def __init__(self, cin, cout):
                super().__init__()
                self.conv = nn.Conv2d(cin, cout - cin, 3, stride=2, padding=1)
                self.pool = nn.MaxPool2d(2, 2)
                self.bn = nn.BatchNorm2d(cout)
            def forward(self, x):
                y = torch.cat([self.conv(x), self.pool(x)], 1)
                return torch.relu(self.bn(y))
    """), 6),
    Shape("TW209", "the conv's output bound to a name, padded pool beside it, joined with dim=1", d("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Reduce(nn.Module):
            def __init__(self, cin, cout):
                super().__init__()
                self.branch = nn.Conv2d(cin, cout - cin, 3, 2, 1, bias=True)
                self.pool = nn.MaxPool2d(2, stride=2)
                self.norm = nn.BatchNorm2d(cout, eps=1e-3)
            def forward(self, inp):
                a = self.pool(inp)
                b = self.branch(inp)
                a = F.pad(a, [0, b.size(3) - a.size(3), 0, b.size(2) - a.size(2)])
                return self.norm(torch.cat([b, a], dim=1))
    """), 7),
]
QUIET += [
    Shape("TW209", "look-alike: the join is along another axis (time), not the channels", d("""
        import torch
        import torch.nn as nn
        class Stack(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.conv = nn.Conv1d(c, c, 3, padding=1)
                self.bn = nn.BatchNorm1d(c)
            def forward(self, x, memory):
                return self.bn(torch.cat([self.conv(x), memory], 2))
    """)),
    Shape("TW209", "look-alike: the joined conv has no bias", d("""
        import torch
        import torch.nn as nn
        class Down(nn.Module):
            def __init__(self, cin, cout):
                super().__init__()
                self.conv = nn.Conv2d(cin, cout - cin, 3, stride=2, padding=1, bias=False)
                self.pool = nn.MaxPool2d(2, 2)
                self.bn = nn.BatchNorm2d(cout)
            def forward(self, x):
                return self.bn(torch.cat([self.conv(x), self.pool(x)], 1))
    """)),
]

# ------------------------------------------------------------- TW102 a model whose forward ends in log_softmax, then cross-entropy
# A tutorial tagger returns `F.log_softmax(...)` from forward and trains with nn.CrossEntropyLoss:
# log-softmax applied twice.
FIND += [
    Shape("TW102", "a tagger's forward returns log_softmax; the script applies CrossEntropyLoss to its output", d("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Tagger(nn.Module):
            def __init__(self, n_word, n_tag):
                super().__init__()
                self.emb = nn.Embedding(n_word, 64)
                self.out = nn.Linear(64, n_tag)
            def forward(self, words):
                y = F.log_softmax(self.out(self.emb(words)), dim=1)
                return y
        model = Tagger(100, 10)
        if torch.cuda.is_available():
            model = model.cuda()
        criterion = nn.CrossEntropyLoss()
        for words, tags in data:
            out = model(words)
            loss = criterion(out, tags)
            loss.backward()
    """), 18),
]
QUIET += [
    Shape("TW102", "look-alike: forward returns log_softmax only in evaluation, logits in training", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 3)
            def forward(self, x):
                if self.training:
                    return self.fc(x)
                return F.log_softmax(self.fc(x), dim=1)
        net = Net()
        loss = F.cross_entropy(net(x), y)
    """)),
    Shape("TW102", "look-alike: a log_softmax model trained with NLLLoss", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Net(nn.Module):
            def forward(self, x):
                return F.log_softmax(x, dim=1)
        net = Net()
        crit = nn.NLLLoss()
        loss = crit(net(x), y)
    """)),
]
