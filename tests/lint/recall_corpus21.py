"""The recall corpus, round 12 part C1: the bulk rules TW205, TW209 and TW513 on the classes that
sets 12-14 (the tuning sets of round 12) missed or reported falsely - each written in our own
words and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds
these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW513 through a name for the torch module
# Beam-search helpers of translation models keep `torch.cuda if cuda else torch` and call the
# typed constructors on it.
FIND += [
    Shape("TW513", "beam search state: the module picked by a flag and kept on self", d("""
        import torch
        class Hypotheses:
            def __init__(self, width, pad, on_gpu=False):
                self.backend = torch.cuda if on_gpu else torch
                self.scores = self.backend.FloatTensor(width).zero_()
                self.tokens = [self.backend.LongTensor(width).fill_(pad)]
    """), 5),
    Shape("TW513", "a local name for the module, then a typed constructor of sizes", d("""
        import torch
        def fresh_state(n, dim, use_cuda):
            T = torch.cuda if use_cuda else torch
            return T.FloatTensor(n, dim).zero_()
    """), 4),
]
QUIET += [
    Shape("TW513", "look-alike: a project module held on self that has its own FloatTensor", d("""
        import torch
        import fakebackend
        class Holder:
            def __init__(self):
                self.backend = fakebackend
                self.values = self.backend.FloatTensor(3)
    """)),
    Shape("TW513", "look-alike: the module alias only names the class in a type test", d("""
        import torch
        class Checker:
            def __init__(self, cuda):
                self.tt = torch.cuda if cuda else torch
            def ok(self, x):
                return isinstance(x, self.tt.FloatTensor)
    """)),
]

# ------------------------------------------------------------- TW513 with no argument
# An empty tensor made with the legacy constructor: an accumulator for torch.cat, or a template
# whose only use is `.new_tensor(...)`.
FIND += [
    Shape("TW513", "an empty accumulator grown with torch.cat over a loop", d("""
        import torch
        def stack_all(chunks):
            out = torch.Tensor()
            for c in chunks:
                out = torch.cat((out, c))
            return out
    """), 3),
    Shape("TW513", "a legacy constructor used only as a template for new_tensor", d("""
        import torch
        def as_device_tensor(values, device):
            return torch.Tensor().new_tensor(values, device=device)
    """), 3),
    Shape("TW513", "typed empty tensors kept for a learning-rate plot", d("""
        import torch
        class Plot:
            def reset(self):
                self.steps = torch.LongTensor()
                self.rates = torch.FloatTensor()
    """), 4),
]
QUIET += [
    Shape("TW513", "look-alike: the modern empty factories, and the class itself as a type", d("""
        import torch
        out = torch.empty(0)
        ids = torch.empty(0, dtype=torch.long)
        kind = torch.FloatTensor
        def check(x):
            return isinstance(x, (torch.Tensor, kind))
    """)),
]

# ------------------------------------------------------------- TW209 nn.Linear before BatchNorm1d (ruling R3)
# Recommenders and point-cloud networks: a fully connected layer with its bias, normalised
# right away over the same features.
FIND += [
    Shape("TW209", "MLP tower built in a loop: Linear then BatchNorm1d appended to a list", d("""
        import torch
        class Tower(torch.nn.Module):
            def __init__(self, width, sizes, p):
                super().__init__()
                blocks = []
                for size in sizes:
                    blocks.append(torch.nn.Linear(width, size))
                    blocks.append(torch.nn.BatchNorm1d(size))
                    blocks.append(torch.nn.ReLU())
                    width = size
                self.body = torch.nn.Sequential(*blocks)
    """), 7),
    Shape("TW209", "point-cloud head: bn(fc(x)) in forward over attributes made in __init__", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Head(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.fc1 = nn.Linear(1024, 256)
                self.fc2 = nn.Linear(256, k)
                self.norm1 = nn.BatchNorm1d(256)
            def forward(self, x):
                x = F.relu(self.norm1(self.fc1(x)))
                return self.fc2(x)
    """), 6),
]
QUIET += [
    Shape("TW209", "look-alike: Linear without bias before BatchNorm1d, and Linear before LayerNorm", d("""
        import torch.nn as nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(64, 32, bias=False)
                self.bn = nn.BatchNorm1d(32)
                self.proj = nn.Linear(32, 32)
                self.ln = nn.LayerNorm(32)
            def forward(self, x):
                return self.ln(self.proj(self.bn(self.fc(x))))
    """)),
    Shape("TW209", "look-alike: an activation between the Linear and the BatchNorm1d", d("""
        import torch.nn as nn
        layers = []
        layers.append(nn.Linear(8, 8))
        layers.append(nn.ReLU())
        layers.append(nn.BatchNorm1d(8))
        net = nn.Sequential(*layers)
    """)),
]

# ------------------------------------------------------------- TW209 a list of layers handed to Sequential
# Few-shot backbones keep their layers in a list (to initialise them) and build the trunk with
# nn.Sequential(*list); the convolution may be a fast-weight subclass for MAML.
FIND += [
    Shape("TW209", "conv block: [self.C, self.BN, self.relu] passed as nn.Sequential(*list)", d("""
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, cin, cout):
                super().__init__()
                self.C = nn.Conv2d(cin, cout, 3, padding=1)
                self.BN = nn.BatchNorm2d(cout)
                self.relu = nn.ReLU(inplace=True)
                self.layers = [self.C, self.BN, self.relu]
                for layer in self.layers:
                    init_layer(layer)
                self.trunk = nn.Sequential(*self.layers)
    """), 5),
    Shape("TW209", "fast-weight subclasses of Conv2d and BatchNorm2d chosen by a class flag", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class FastConv(nn.Conv2d):
            def __init__(self, cin, cout, k, stride=1, padding=0, bias=True):
                super().__init__(cin, cout, k, stride=stride, padding=padding, bias=bias)
                self.weight.fast = None
            def forward(self, x):
                if self.weight.fast is not None:
                    return F.conv2d(x, self.weight.fast, self.bias, stride=self.stride, padding=self.padding)
                return super().forward(x)
        class FastBN(nn.BatchNorm2d):
            def forward(self, x):
                w = self.weight.fast if self.weight.fast is not None else self.weight
                return F.batch_norm(x, None, None, w, self.bias, training=True)
        class Block(nn.Module):
            meta = False
            def __init__(self, cin, cout):
                super().__init__()
                if self.meta:
                    self.conv = FastConv(cin, cout, 3, padding=1)
                    self.norm = FastBN(cout)
                else:
                    self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
                    self.norm = nn.BatchNorm2d(cout)
            def forward(self, x):
                out = self.conv(x)
                out = self.norm(out)
                return F.relu(out)
    """), 20),
]
QUIET += [
    Shape("TW209", "look-alike: the list puts a ReLU between the conv and the BatchNorm", d("""
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.C = nn.Conv2d(c, c, 3)
                self.BN = nn.BatchNorm2d(c)
                self.layers = [self.C, nn.ReLU(), self.BN]
                self.trunk = nn.Sequential(*self.layers)
    """)),
    Shape("TW209", "look-alike: a Conv2d subclass that always drops the bias", d("""
        import torch.nn as nn
        class Masked(nn.Conv2d):
            def __init__(self, cin, cout, k, bias=True):
                super().__init__(cin, cout, k, bias=False)
        class Block(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.conv = Masked(c, c, 3)
                self.bn = nn.BatchNorm2d(c)
            def forward(self, x):
                return self.bn(self.conv(x))
    """)),
]

# ------------------------------------------------------------- TW209 the bias is a parameter that defaults to True
# Layer wrappers of continual-learning code: `bias=bias` with `bias=True` by default, and the
# BatchNorm applied to the convolution's output when the block has one.
FIND += [
    Shape("TW209", "conv wrapper: bias=bias (True by default) and an optional BatchNorm in forward", d("""
        import torch.nn as nn
        class ConvUnit(nn.Module):
            def __init__(self, cin, cout, stride=1, batch_norm=True, bias=True):
                super().__init__()
                self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=bias)
                if batch_norm:
                    self.bn = nn.BatchNorm2d(cout)
            def forward(self, x):
                return self.bn(self.conv(x)) if hasattr(self, "bn") else self.conv(x)
    """), 5),
]
QUIET += [
    Shape("TW209", "look-alike: bias=bias where the parameter defaults to False, or has no default", d("""
        import torch.nn as nn
        class ConvUnit(nn.Module):
            def __init__(self, cin, cout, use_bias, bias=False):
                super().__init__()
                self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=bias)
                self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=use_bias)
                self.bn = nn.BatchNorm2d(cout)
                self.bn2 = nn.BatchNorm2d(cout)
            def forward(self, x):
                return self.bn2(self.conv2(self.bn(self.conv(x))))
    """)),
]
FIND += [
    Shape("TW209", "a BatchNorm2d subclass whose own forward still calls F.batch_norm", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class MetaBN(nn.BatchNorm2d):
            def forward(self, x, params=None):
                w = self.weight if params is None else params["weight"]
                return F.batch_norm(x, self.running_mean, self.running_var, w, self.bias, self.training)
        stem = nn.Sequential(nn.Conv2d(3, 32, 3), MetaBN(32), nn.ReLU())
    """), 7),
]

# ------------------------------------------------------------- TW205 the device from a helper call
# Continual-learning and latent-ODE code ask a method or a helper for the device:
# `.to(self._device())`, `.to(get_device(t))`.
FIND += [
    Shape("TW205", "Fisher estimation: a label per class moved with .to(self._device())", d("""
        import torch
        import torch.nn.functional as F
        class Learner(torch.nn.Module):
            def _device(self):
                return next(self.parameters()).device
            def fisher(self, loader):
                for x, y in loader:
                    out = self(x.to(self._device()))
                    for c in range(out.shape[1]):
                        label = torch.LongTensor([c]).to(self._device())
                        F.cross_entropy(out, label).backward(retain_graph=True)
    """), 10),
    Shape("TW205", "a likelihood helper: zeros moved to get_device(data) in its per-dimension loop", d("""
        import torch
        def get_device(t):
            return t.device if t.is_cuda else torch.device("cpu")
        def masked_log_lik(data, mask):
            res = []
            for i in range(data.size(0)):
                if mask[i].sum() == 0:
                    res.append(torch.zeros([1]).to(get_device(data)).squeeze())
            return res
    """), 8),
    Shape("TW205", "a VAE's replay sampler: randn moved to model._device() every training step", d("""
        import torch
        class VAE(torch.nn.Module):
            def _device(self):
                return next(self.parameters()).device
            def forward(self, x):
                z = torch.randn(x.size(0), 32).to(self._device())
                return self.decoder(z)
    """), 6),
]
QUIET += [
    Shape("TW205", "look-alike: .to(self._dtype()) is a cast, and a move to the device once in __init__", d("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self, dev):
                super().__init__()
                self.scale = torch.ones(8).to(get_device(dev))
            def forward(self, x):
                return x.to(self._dtype()) * torch.ones(8).to(self._dtype())
    """)),
]

# ------------------------------------------------------------- TW205 episode labels made with np.repeat
# Few-shot learners rebuild the episode's labels with NumPy every episode; continual learners
# broadcast a task id to the batch.
FIND += [
    Shape("TW205", "episode labels np.repeat(range(n_way), n_query), moved on the next line", d("""
        import numpy as np
        import torch
        from torch.autograd import Variable
        class ProtoNet(torch.nn.Module):
            def set_forward_loss(self, x):
                y_query = torch.from_numpy(np.repeat(range(self.n_way), self.n_query))
                y_query = Variable(y_query.cuda())
                return self.loss_fn(self.set_forward(x), y_query)
    """), 7),
    Shape("TW205", "a task id broadcast to the batch with np.repeat, then .to(device)", d("""
        import numpy as np
        import torch
        def train_a_batch(model, x, y, task, device):
            task_ids = torch.tensor(np.repeat(task - 1, x.size(0))).to(device)
            loss = model.loss(x, y, task_ids)
            loss.backward()
    """), 4),
]
QUIET += [
    Shape("TW205", "look-alike: np.repeat of the input's features (data that has to cross anyway)", d("""
        import numpy as np
        import torch
        def forward_batch(model, feats, k, device):
            rep = torch.from_numpy(np.repeat(feats, k, axis=0)).to(device)
            return model(rep)
    """)),
]

# ------------------------------------------------------------- TW205 in a collate function
# Irregular time-series loaders pad every batch in a collate function that allocates the padded
# tensors on the CPU and moves them, before the loop that fills them in.
FIND += [
    Shape("TW205", "a collate function allocates the padded batch, moves it, then fills it", d("""
        import torch
        def variable_time_collate_fn(batch, device, dim):
            times = torch.unique(torch.cat([b[1] for b in batch]))
            values = torch.zeros([len(batch), len(times), dim]).to(device)
            for i, (rid, tt, vals) in enumerate(batch):
                values[i, :len(tt)] = vals
            return times, values
    """), 4),
]
QUIET += [
    Shape("TW205", "look-alike: a vocabulary builder allocating once before its loop", d("""
        import torch
        def build_counts(corpus, size, device):
            counts = torch.zeros(size).to(device)
            for sentence in corpus:
                for w in sentence:
                    counts[w] += 1
            return counts
    """)),
]

# ------------------------------------------------------------- TW205 data from outside, not made
# Converting data that starts on the host is the copy it has to make: values parsed from the
# file a parser reads, a score a host routine computed, the items of a CPU label tensor, a
# caller's list of weights.
QUIET += [
    Shape("TW205", "look-alike: a dataset parser converting each parsed CSV line", d("""
        import os
        import torch
        class Activity:
            def process(self, folder):
                for name in os.listdir(folder):
                    with open(os.path.join(folder, name)) as f:
                        for line in f.readlines():
                            rid, tag, t, a, b, c = line.strip().split(",")
                            vec = torch.Tensor((float(a), float(b), float(c))).to(self.device)
                            self.rows.append(vec)
    """)),
    Shape("TW205", "look-alike: a parser collecting parsed times per record, then moving them", d("""
        import torch
        def read_records(paths, device):
            records = []
            for path in paths:
                with open(path) as f:
                    times = [0.]
                    for line in f.readlines()[1:]:
                        times.append(float(line.split(",")[0]))
                records.append(torch.tensor(times).to(device))
            return records
    """)),
    Shape("TW205", "look-alike: a distance computed by a host routine, wrapped and moved per call", d("""
        import torch
        from torch.autograd import Variable
        import metrics
        class L2Lab(torch.nn.Module):
            def forward(self, a, b):
                value = metrics.l2(metrics.to_lab(a), metrics.to_lab(b)).astype("float")
                out = Variable(torch.Tensor((value,)))
                if self.use_gpu:
                    out = out.cuda()
                return out
    """)),
    Shape("TW205", "look-alike: the labels of a CPU batch remapped in Python, then moved", d("""
        import numpy as np
        import torch
        class Learner(torch.nn.Module):
            def fisher(self, loader, allowed):
                for x, y in loader:
                    label = [int(np.where(i == allowed)[0][0]) for i in y.numpy()]
                    label = torch.LongTensor(label).to(self._device())
                    self.nll(self(x), label).backward()
    """)),
    Shape("TW205", "look-alike: a caller's list of weights copied into a tensor", d("""
        import torch
        def weighted_average(t, weights=None, dim=0):
            if weights is None:
                return t.mean(dim)
            w = torch.tensor([w for w in weights]).to(t.device)
            return (w * t).mean(dim)
    """)),
]
FIND += [
    Shape("TW205", "lengths appended as shapes in a length regulator, then LongTensor(list).to(device)", d("""
        import torch
        import torch.nn as nn
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        class LengthRegulator(nn.Module):
            def LR(self, x, duration):
                out, lens = list(), list()
                for b, d in zip(x, duration):
                    e = self.expand(b, d)
                    out.append(e)
                    lens.append(e.shape[0])
                return pad(out), torch.LongTensor(lens).to(device)
    """), 11),
]

# ------------------------------------------------------------- TW205 dead code (ruling R5)
# A metrics module the trainer imports keeps an old helper nobody calls; a layers module keeps an
# attention class nobody builds, whose forward is the only caller of a mask helper. Neither runs.
_METRICS = d("""
    import torch
    def recall(scores, labels, k):
        cut = (-scores).argsort(dim=1)[:, :k]
        hit = labels.gather(1, cut)
        return hit.sum(1) / torch.min(torch.Tensor([k]).to(hit.device), labels.sum(1))
    def hits_at(scores, labels, k):
        cut = (-scores).argsort(dim=1)[:, :k]
        return labels.gather(1, cut).sum(1) / torch.Tensor([k]).to(labels.device)
""")
_LAYERS = d("""
    import torch
    import torch.nn as nn
    def length_mask(lengths, max_len):
        return torch.arange(0, max_len).type_as(lengths).repeat(lengths.numel(), 1).lt(lengths.unsqueeze(1))
    class OldAttention(nn.Module):
        def forward(self, q, k, lengths):
            scores = q @ k.transpose(1, 2)
            return scores.masked_fill(~length_mask(lengths, k.size(1)).unsqueeze(1), -1e9)
    class FeedForward(nn.Module):
        def forward(self, x):
            return x + torch.zeros(x.size(-1)).to(x.device)
""")
_TRAINER = d("""
    from metrics import hits_at
    from layers import FeedForward
    def evaluate(model, loader):
        ff = FeedForward()
        for scores, labels in loader:
            print(hits_at(ff(scores), labels, 10))
""")
PROJECTS += [
    ProjectShape("TW205", "a helper nobody calls and a class nobody builds stay quiet; their used neighbours are found",
                 {"metrics.py": _METRICS, "layers.py": _LAYERS, "trainer.py": _TRAINER},
                 (("metrics.py", 8), ("layers.py", 11))),
]

# ------------------------------------------------------------- TW205 a factory wrapped in math, then moved
# Timestep embeddings take exp() of a scaled arange; a span mask multiplies ones by -inf; ranking
# metrics take log2 of an arange stored just before.
FIND += [
    Shape("TW205", "timestep embedding: th.exp(-math.log(p) * th.arange(half) / half).to(t.device)", d("""
        import math
        import torch as th
        def timestep_embedding(timesteps, dim, max_period=10000):
            half = dim // 2
            freqs = th.exp(
                -math.log(max_period) * th.arange(start=0, end=half, dtype=th.float32) / half
            ).to(device=timesteps.device)
            args = timesteps[:, None].float() * freqs[None]
            return th.cat([th.cos(args), th.sin(args)], dim=-1)
        class Net(th.nn.Module):
            def forward(self, x, t):
                return self.body(x, timestep_embedding(t, 128))
    """), 5),
    Shape("TW205", "span mask: (torch.ones(n, n) * float('-inf')).to(device) per evaluation batch", d("""
        import torch
        def evaluate(model, loader, device):
            for batch in loader:
                p1, p2 = model(batch)
                n = p1.size(1)
                mask = (torch.ones(n, n) * float("-inf")).to(device).tril(-1)
                print((p1.unsqueeze(2) + p2.unsqueeze(1) + mask).max())
    """), 6),
    Shape("TW205", "ranking metric: log2 of an arange stored just before, moved to the scores' device", d("""
        import torch
        def ndcg_at(scores, labels, ks):
            out = {}
            for k in ks:
                hits = labels.gather(1, (-scores).argsort(dim=1)[:, :k]).float()
                position = torch.arange(2, 2 + k)
                weights = 1 / torch.log2(position.float())
                out[k] = (hits * weights.to(hits.device)).sum(1).mean()
            return out
    """), 8),
]
QUIET += [
    Shape("TW205", "look-alike: exp() of a device tensor and a factory scaled by a device tensor", d("""
        import torch
        def embed(t, half):
            scale = t.new_tensor(2.0)
            freqs = torch.exp(t * torch.arange(half, device=t.device)).to(t.device)
            return freqs * scale
    """)),
]

# ------------------------------------------------------------- TW205 a constant written in before the move
# Graph layers build the self-loop edge features as zeros, write the bond type into one column,
# and move them to the edge features' device, in every forward of every layer.
FIND += [
    Shape("TW205", "self-loop edge features: zeros, a constant column, then .to(edge_attr.device)", d("""
        import torch
        class GINConv(torch.nn.Module):
            def forward(self, x, edge_index, edge_attr):
                loops = torch.zeros(x.size(0), 2)
                loops[:, 0] = 4
                loops = loops.to(edge_attr.device).to(edge_attr.dtype)
                edge_attr = torch.cat((edge_attr, loops), dim=0)
                return self.propagate(edge_index, x=x, edge_attr=edge_attr)
    """), 6),
    Shape("TW205", "a NumPy one-hot filled in, returned moved to the device the caller asked for", d("""
        import numpy as np
        import torch
        def to_one_hot(y, classes, device=None):
            c = np.zeros(shape=[len(y), classes], dtype="float32")
            c[range(len(y)), y] = 1.
            c = torch.from_numpy(c)
            return c if device is None else c.to(device)
        class Gate(torch.nn.Module):
            def forward(self, x, task):
                return x * self.fc(to_one_hot(task, self.n, device=x.device))
    """), 7),
]

# ------------------------------------------------------------- TW205 made by a helper of another module
# Label helpers in a utils module: a one-hot made with torch.zeros(...).scatter_, moved by the
# caller; a one-hot made in NumPy from labels pulled off the device, then moved back.
_ONE_HOT_UTILS = d("""
    import numpy as np
    import torch
    def one_hot(y, num_class):
        return torch.zeros((len(y), num_class)).scatter_(1, y.unsqueeze(1), 1)
    def to_one_hot(y, classes):
        c = np.zeros(shape=[len(y), classes], dtype="float32")
        c[range(len(y)), y] = 1.
        return torch.from_numpy(c)
    def match(cost):
        from scipy.optimize import linear_sum_assignment
        rows, cols = linear_sum_assignment(cost.numpy())
        return torch.as_tensor(cols)
""")
_ONE_HOT_MODEL = d("""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.autograd import Variable
    import utils
    from utils import to_one_hot
    class MatchingNet(torch.nn.Module):
        def set_forward(self, z_support, z_query):
            y_s = torch.from_numpy(np.repeat(range(self.n_way), self.n_support))
            Y_S = Variable(utils.one_hot(y_s, self.n_way)).cuda()
            return self.logprobs(z_query, z_support, Y_S)
        def train_a_batch(self, x, y):
            y_hat = self(x)
            targets = to_one_hot(y.cpu(), y_hat.size(1)).to(y.device)
            loss = F.binary_cross_entropy_with_logits(y_hat, targets)
            order = utils.match(loss.detach().cpu()).to(loss.device)
            return loss, order
""")
PROJECTS += [
    ProjectShape("TW205", "one-hot helpers of a utils module: torch.zeros(...).scatter_ returned, NumPy one-hot of labels "
                 "pulled off the device (a scipy matcher's result stays quiet)",
                 {"utils.py": _ONE_HOT_UTILS, "model.py": _ONE_HOT_MODEL},
                 (("model.py", 10), ("model.py", 14))),
]

# ------------------------------------------------------------- TW205 a model class whose nn.Module base is in another module
# Continual learners derive every model from a base class (itself an nn.Module) kept in another
# module; their methods run in the model's computation every step.
_LEARNER_BASE = d("""
    import torch.nn as nn
    class ContinualLearner(nn.Module):
        def _device(self):
            return next(self.parameters()).device
""")
_COND_VAE = d("""
    import torch
    from models.learner import ContinualLearner
    class CondVAE(ContinualLearner):
        def log_p_z(self, z, y):
            modes = list()
            for i in range(len(y)):
                modes.append(list(range(3 * i, 3 * i + 3)))
            index = torch.LongTensor(modes).to(self._device())
            return z.gather(1, index)
""")
_PLAIN_BASE = d("""
    class Sampler:
        def __init__(self, n):
            self.n = n
""")
_PLAIN_CHILD = d("""
    import torch
    from models.sampler import Sampler
    class Uniform(Sampler):
        def table(self, device):
            w = torch.ones(self.n).to(device)
            for i in range(self.n):
                w[i] = 1.0 / self.n
            return w
""")
PROJECTS += [
    ProjectShape("TW205", "a method of a model whose nn.Module base is imported from another module of the project",
                 {"models/learner.py": _LEARNER_BASE, "models/cond_vae.py": _COND_VAE,
                  "models/sampler.py": _PLAIN_BASE, "models/uniform.py": _PLAIN_CHILD},
                 (("models/cond_vae.py", 8),)),
]

# ------------------------------------------------------------- TW205 copies no .to() spells
# Extractive summarisers pick sentence vectors with a CPU arange as the row index of the encoder's
# output; detection losses write a CPU tensor of a feature map's shape into a gain vector made on
# the targets' device. PyTorch copies the new tensor across first, every time.
FIND += [
    Shape("TW205", "a CPU arange indexes the encoder output in forward", d("""
        import torch
        import torch.nn as nn
        class ExtSummarizer(nn.Module):
            def __init__(self, device):
                super().__init__()
                self.bert = nn.TransformerEncoder(nn.TransformerEncoderLayer(768, 8), 6)
                self.head = nn.Linear(768, 1)
                self.to(device)
            def forward(self, src, clss):
                top_vec = self.bert(src)
                sents = top_vec[torch.arange(top_vec.size(0)).unsqueeze(1), clss]
                return self.head(sents)
    """), 11),
    Shape("TW205", "a CPU tensor of a shape written into a gain vector made on the targets' device", d("""
        import torch
        def build_targets(p, targets, model):
            targets = targets.to(p[0].device)
            gain = torch.ones(7, device=targets.device)
            out = []
            for i, layer in enumerate(model.yolo_layers):
                gain[2:6] = torch.tensor(p[i].shape)[[3, 2, 3, 2]]
                out.append(targets * gain)
            return out
    """), 7),
]
QUIET += [
    Shape("TW205", "look-alike: the index made on the output's device, and a CPU table indexed on the CPU", d("""
        import torch
        import torch.nn as nn
        class Picker(nn.Module):
            def forward(self, x, idx):
                h = self.enc(x)
                rows = h[torch.arange(h.size(0), device=h.device), idx]
                table = torch.zeros(10, 3)
                return rows, table[torch.arange(3)]
        net = Picker().cuda()
    """)),
]

# ------------------------------------------------------------- TW205 Python values converted on every call
# Diffusion losses convert a variance that may be a Python number; augmentation converts its
# filter taps, a constant tuple given as the default of a parameter; schedule helpers convert the
# NumPy schedule an object set once in __init__, on every call.
FIND += [
    Shape("TW205", "th.tensor(x).to(t) in the branch where x is not a tensor", d("""
        import torch as th
        def normal_kl(mean1, logvar1, mean2, logvar2):
            tensor = None
            for obj in (mean1, logvar1, mean2, logvar2):
                if isinstance(obj, th.Tensor):
                    tensor = obj
                    break
            logvar1, logvar2 = [x if isinstance(x, th.Tensor) else th.tensor(x).to(tensor) for x in (logvar1, logvar2)]
            return 0.5 * (-1.0 + logvar2 - logvar1 + th.exp(logvar1 - logvar2))
        def prior_bpd(qt_mean, qt_log_variance):
            return normal_kl(mean1=qt_mean, logvar1=qt_log_variance, mean2=0.0, logvar2=0.0)
    """), 8),
    Shape("TW205", "filter taps: a module-level tuple as a parameter's default, converted per call", d("""
        import torch
        import torch.nn.functional as F
        SYM6 = (0.015, -0.011, -0.139, 0.433, 0.738, 0.331)
        def random_apply_affine(img, p, kernel=SYM6):
            kernel = torch.as_tensor(kernel).to(img)
            return F.conv2d(img, kernel.view(1, 1, 1, -1).expand(img.size(1), 1, 1, -1), groups=img.size(1))
        def augment(img, p):
            return random_apply_affine(img, p)
    """), 5),
    Shape("TW205", "a NumPy schedule set in __init__, converted and copied by a helper on every call", d("""
        import numpy as np
        import torch as th
        class Diffusion:
            def __init__(self, betas):
                self.alphas_cumprod = np.cumprod(1.0 - betas)
                self.sqrt_alphas_cumprod = np.sqrt(self.alphas_cumprod)
            def q_sample(self, x, t, noise):
                return _extract(self.sqrt_alphas_cumprod, t, x.shape) * x + _extract(1.0 - self.alphas_cumprod, t, x.shape) * noise
        def _extract(arr, timesteps, shape):
            res = th.from_numpy(arr).to(device=timesteps.device)[timesteps].float()
            while len(res.shape) < len(shape):
                res = res[..., None]
            return res.expand(shape)
    """), 10),
]
QUIET += [
    Shape("TW205", "look-alike: the tensor branch, a default the caller overrides, a table a caller computes per call", d("""
        import numpy as np
        import torch
        TAPS = (0.25, 0.5, 0.25)
        def blur(img, kernel=TAPS):
            return torch.as_tensor(kernel).to(img)
        def run(img, k):
            return blur(img, k)
        def scale(x, s):
            return x * (s if isinstance(s, torch.Tensor) else 1.0)
        def pick(arr, t):
            return torch.from_numpy(arr).to(t.device)[t]
        class User:
            def step(self, t, losses):
                return pick(np.asarray(losses), t)
    """)),
]

# ------------------------------------------------------------- TW205 moved in one branch, used in the other
# Meta-learners make the episode labels, then either one-hot them (MSE loss) or move them as they
# are (cross-entropy): the use in the `if` branch is not a use before the move in the `else`.
FIND += [
    Shape("TW205", "labels moved in the else branch after a one-hot in the if branch", d("""
        import numpy as np
        import torch
        from torch.autograd import Variable
        class RelationNet(torch.nn.Module):
            def set_forward_loss(self, x):
                y = torch.from_numpy(np.repeat(range(self.n_way), self.n_query))
                scores = self.set_forward(x)
                if self.loss_type == "mse":
                    y_oh = one_hot(y, self.n_way)
                    return self.loss_fn(scores, Variable(y_oh.cuda()))
                else:
                    y = Variable(y.cuda())
                    return self.loss_fn(scores, y)
    """), 12),
    Shape("TW205", "zeros plus a NaN tensor made in a collate function, moved on the next line", d("""
        import torch
        def patient_collate_fn(batch, device):
            labels = torch.zeros(len(batch), 1) + torch.tensor(float("nan"))
            labels = labels.to(device=device)
            for i, (rid, tt, vals, lab) in enumerate(batch):
                labels[i] = lab
            return labels
    """), 4),
]

# ------------------------------------------------------------- TW205 set-up helpers called from other modules
# A Kaggle pipeline's factory module builds the weighted loss; the training function calls it once
# before its epoch loop and the validation function once: one allocation per run.
_FACTORY = d("""
    import torch
    import torch.nn as nn
    def get_loss(cfg):
        return getattr(nn, cfg.loss.name)(weight=torch.FloatTensor([2, 1, 1, 1, 1, 1]).cuda(), **cfg.loss.params)
""")
_MAIN = d("""
    import factory
    def run_nn(model, loader, criterion, optim):
        for x, y in loader:
            optim.zero_grad()
            criterion(model(x.cuda()), y.cuda()).backward()
            optim.step()
    def train(cfg, model, loader, optim):
        criterion = factory.get_loss(cfg)
        for epoch in range(cfg.epochs):
            run_nn(model, loader, criterion, optim)
    def valid(cfg, model, loader):
        criterion = factory.get_loss(cfg)
        return [criterion(model(x.cuda()), y.cuda()) for x, y in loader]
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: a loss factory that the training and validation functions call once each",
                 {"factory.py": _FACTORY, "main.py": _MAIN}),
]

# ------------------------------------------------------------- TW205 NumPy one-hot per token, legacy round trip
# A pointer-cache evaluation builds a NumPy one-hot per target token (`a[0][idx] = 1`) and moves it;
# a test-time augmentation flips the model's output in NumPy and sends it back with a typed constructor.
FIND += [
    Shape("TW205", "one-hot per token: np.zeros, a[0][idx] = 1, Variable(from_numpy), then .cuda()", d("""
        import numpy as np
        import torch
        from torch.autograd import Variable
        def one_hot(idx, size, cuda=True):
            a = np.zeros((1, size), np.float32)
            a[0][idx] = 1
            v = Variable(torch.from_numpy(a))
            if cuda: v = v.cuda()
            return v
        def evaluate(model, data, targets, n):
            for t in targets:
                history = one_hot(t, n)
    """), 8),
    Shape("TW205", "a model's output flipped in NumPy and sent back with torch.FloatTensor(...).cuda()", d("""
        import numpy as np
        import torch
        def tta(model, loader):
            for x in loader:
                out = model(x.cuda())
                flipped = torch.FloatTensor(np.flip(out.cpu().numpy(), 3).copy()).cuda()
                print((out + flipped).mean())
    """), 6),
]
QUIET += [
    Shape("TW205", "look-alike: probabilities that may come as a NumPy array, converted when they are not a tensor", d("""
        import torch
        class BufferData(torch.utils.data.Dataset):
            def set_probs(self, probs):
                if not isinstance(probs, torch.Tensor):
                    probs = torch.tensor(probs)
                self.probs = probs.to(self.data.device)
        def refit(dataset, gmm, feats):
            dataset.set_probs(gmm.predict_proba(feats)[:, 0])
    """)),
]

# ------------------------------------------------------------- TW205 once-per-task hooks of continual learners
# Continual-learning frameworks derive every method from a base model (an nn.Module kept in
# another module): `begin_task`/`end_task` and the helpers only they call run once per task,
# not in the step - while `observe` and what it calls run every step.
_CL_BASE = d("""
    import torch.nn as nn
    class ContinualModel(nn.Module):
        def __init__(self, device):
            super().__init__()
            self.device = device
""")
_CL_MODEL = d("""
    import torch
    import torch.nn as nn
    from models.utils.continual_model import ContinualModel
    class Pairs(torch.utils.data.Dataset):
        def __init__(self, data, device):
            self.data = data.to(device)
            self.probs = (torch.ones(len(data)) / len(data)).to(device)
    class Learner(ContinualModel):
        def begin_task(self, dataset):
            weight = torch.zeros(self.num_classes)
            weight[dataset.classes] = 1
            self.loss = nn.CrossEntropyLoss(weight=weight.to(self.device))
        def end_task(self, dataset):
            self.grads.append(torch.zeros(self.n_params).to(self.device))
            self.refit()
        def refit(self):
            fit = Pairs(self.buffer.examples, self.device)
            return fit
        def observe(self, inputs, labels):
            batch = Pairs(inputs, self.device)
            idx = torch.arange(len(inputs)).to(self.device)
            return self.loss(self.net(batch.data[idx]), labels)
""")
PROJECTS += [
    ProjectShape("TW205", "a continual learner: its per-task hooks are set-up, its observe() is per step",
                 {"models/utils/continual_model.py": _CL_BASE, "models/learner.py": _CL_MODEL},
                 (("models/learner.py", 7), ("models/learner.py", 21))),
]

# ------------------------------------------------------------- TW209 ModuleList MLP: the first Linear meets the norm
# GIN layers keep an MLP's Linears and BatchNorms in two ModuleLists and pair them in a loop that
# leaves the last Linear (the output) without a norm: the hidden Linears are the pitfall.
_GIN_MLP = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class MLP(nn.Module):
        def __init__(self, num_layers, input_dim, hidden_dim, output_dim):
            super().__init__()
            self.num_layers = num_layers
            self.linears = torch.nn.ModuleList()
            self.batch_norms = torch.nn.ModuleList()
            self.linears.append(nn.Linear(input_dim, hidden_dim))
            for layer in range(num_layers - 2):
                self.linears.append(nn.Linear(hidden_dim, hidden_dim))
            self.linears.append(nn.Linear(hidden_dim, output_dim))
            for layer in range(num_layers - 1):
                self.batch_norms.append(nn.BatchNorm1d(hidden_dim))
        def forward(self, x):
            h = x
            for i in range(self.num_layers - 1):
                h = F.relu(self.batch_norms[i](self.linears[i](h)))
            return self.linears[-1](h)
""")
PROJECTS += [
    ProjectShape("TW209", "GIN MLP: Linears and BatchNorm1d paired from two ModuleLists (the output Linear has no norm)",
                 {"gin_layer.py": _GIN_MLP}, (("gin_layer.py", 10),)),
]
