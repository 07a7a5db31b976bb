"""The recall corpus, round 13 part C1: the bulk rules TW205, TW209 and TW513 on the classes that
sets 15 and 16 (the tuning sets of round 13) missed or reported falsely - each written in our own
words and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds
these to its lists.

TW205's false findings of both sets were tensors that are not made anew where they are used:
data that starts on the host and has to cross anyway (an observation, a string's character
codes, weights a host routine computed, a target filled in per sample from a batch's metadata),
and allocations that do not repeat (a store made on the first batch only, a helper run once per
setting of a script). The project shapes below keep a true neighbour next to each look-alike, so
that the class is removed without losing the pitfall beside it.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW205 the caller's data put in a list
# Agents wrap the observation they are handed in a list (`[state]`) or a NumPy array to add the
# batch dimension; the observation has to cross to the device whatever makes the tensor. A number
# handed in the same way (a cutoff used as a slice bound) is still a value the device could make.
PROJECTS += [
    ProjectShape("TW205", "an agent's observation wrapped in a list or np.array (quiet); a cutoff number wrapped the same way (found)",
                 {"agent.py": d("""
                     import numpy as np
                     import torch
                     class Agent:
                         def pick(self, state=None):
                             if state is None:
                                 state = self.state
                             state = torch.FloatTensor([state]).to(self.device)
                             return self.actor(state)
                         def greedy(self, state=None):
                             if isinstance(state, int):
                                 state = np.array([state])
                             state = torch.from_numpy(state).float().unsqueeze(0).to(self.device)
                             return self.q(state).argmax()
                     def precision_at(scores, labels, ks):
                         out = {}
                         for k in ks:
                             top = labels.gather(1, scores.topk(k).indices)
                             out[k] = top.sum(1) / torch.Tensor([k]).to(labels.device)
                         return out
                     def ratio(hits, k):
                         return hits[:, :k].sum(1) / torch.Tensor([k]).to(hits.device)
                 """)},
                 (("agent.py", 18), ("agent.py", 21))),
]

# ------------------------------------------------------------- TW205 a list built item by item from data
# A character model turns its input string into codes; a prioritised replay memory computes the
# importance weights of a sampled batch in Python. Each list is made from the items of data the
# function was given: converting it is the transfer the data needs. A list made from a range,
# and the items of a device tensor read back one by one, are still made on the host for nothing.
PROJECTS += [
    ProjectShape("TW205", "character codes of a string and weights computed from sampled entries (quiet); a range and a "
                 "device tensor's items read back (found)",
                 {"helpers.py": d("""
                     import torch
                     def encode(text, eos=False):
                         codes = [ord(ch) for ch in text]
                         if eos:
                             codes.append(1)
                         return torch.LongTensor(codes).cuda()
                     class Memory:
                         def weights(self, entries):
                             raw = [(self.total / e.priority) ** self.beta for e in entries]
                             top = max(raw)
                             scaled = [w / top for w in raw]
                             return torch.tensor(scaled).float().to(self.device)
                     def positions(n, device):
                         return torch.LongTensor([i * 2 for i in range(n)]).to(device)
                     def remap(y, table, device):
                         return torch.tensor([table[v.item()] for v in y]).to(device)
                     def train(model, loader, table, device):
                         for x, y in loader:
                             model(x.to(device), positions(8, device), remap(y.to(device), table, device)).backward()
                 """)},
                 (("helpers.py", 14), ("helpers.py", 16))),
]

# ------------------------------------------------------------- TW205 a target filled in per sample from metadata
# A speech synthesiser makes its stop-token target as ones, writes the zeros of each sample up to
# that sample's length (read from the dataset's metadata) in a loop over the batch, then moves
# it: the pattern is the batch's data. A constant column written once, before the move, is not.
PROJECTS += [
    ProjectShape("TW205", "a stop-token target written per sample in a loop over the batch (quiet); a constant column (found)",
                 {"train.py": d("""
                     import torch
                     def train(model, loader, dataset, opt, device):
                         for texts, mels, idx in loader:
                             stop = torch.ones(mels.shape[0], mels.shape[2])
                             for j, k in enumerate(idx):
                                 stop[j, :int(dataset.meta[k][4]) - 1] = 0
                             stop = stop.to(device)
                             loops = torch.zeros(texts.size(0), 2)
                             loops[:, 0] = 4
                             loops = loops.to(device)
                             loss = model(texts.to(device), mels.to(device), stop, loops)
                             opt.zero_grad()
                             loss.backward()
                             opt.step()
                 """)},
                 (("train.py", 10),)),
]

# ------------------------------------------------------------- TW205 a store made on the first batch only
# Feature extraction for a k-NN evaluation sizes its store from the first batch: `features = None`
# before the loop, `if features is None:` inside it. A hidden state filled in when the caller gives
# none runs on every forward.
PROJECTS += [
    ProjectShape("TW205", "a feature store made under `if features is None:` in the batch loop (quiet); a hidden state "
                 "made when none is given, every forward (found)",
                 {"extract.py": d("""
                     import torch
                     import torch.nn as nn
                     @torch.no_grad()
                     def extract_features(model, loader):
                         features = None
                         for samples, index in loader:
                             feats = model(samples.cuda(non_blocking=True))
                             if features is None:
                                 features = torch.zeros(len(loader.dataset), feats.shape[-1])
                                 features = features.cuda(non_blocking=True)
                             features.index_copy_(0, index.cuda(), feats)
                         return features
                     class Decoder(nn.Module):
                         def forward(self, x, h=None):
                             if h is None:
                                 h = torch.zeros(1, x.size(0), 256)
                                 h = h.cuda()
                             return self.rnn(x, h)
                 """)},
                 (("extract.py", 17),)),
]

# ------------------------------------------------------------- TW205 once per setting
# Evaluation and conversion scripts loop over a few settings - the k of a k-NN classifier given on
# the command line, the resolutions of a dict written in the script - and call a helper per setting
# that allocates before its own loop, or draws one sample grid. Once per setting, not per batch.
PROJECTS += [
    ProjectShape("TW205", "a helper called per k of a command-line list of ints, and per resolution of a constant dict "
                 "(quiet); the same helper called per batch (found)",
                 {"eval_knn.py": d("""
                     import argparse
                     import torch
                     def knn(train_features, test_features, k, num_classes=1000):
                         one_hot = torch.zeros(k, num_classes).to(train_features.device)
                         for idx in range(0, test_features.size(0), 100):
                             sim = test_features[idx:idx + 100] @ train_features.t()
                             one_hot.zero_()
                         return one_hot
                     if __name__ == "__main__":
                         parser = argparse.ArgumentParser()
                         parser.add_argument("--nb_knn", default=[10, 20], nargs="+", type=int)
                         args = parser.parse_args()
                         for k in args.nb_knn:
                             print(knn(train_f, test_f, k))
                 """), "convert.py": d("""
                     import torch
                     DEVICE = "cuda"
                     Z_DIMS = {128: 120, 256: 140, 512: 128}
                     RESOLUTIONS = list(Z_DIMS)
                     def sample_grid(G, batch_size):
                         z = torch.randn(batch_size, G.dim_z).to(DEVICE)
                         return G(z)
                     if __name__ == "__main__":
                         for res in RESOLUTIONS:
                             G = convert(res)
                             sample_grid(G, 16)
                 """), "probe.py": d("""
                     import torch
                     def knn(train_features, test_features, k, num_classes=1000):
                         one_hot = torch.zeros(k, num_classes).to(train_features.device)
                         for idx in range(0, test_features.size(0), 100):
                             one_hot.zero_()
                         return one_hot
                     def run(loader, bank):
                         for x, _ in loader:
                             knn(bank, x.cuda(), 20)
                 """)},
                 (("probe.py", 3),)),
]

# ------------------------------------------------------------- TW205 a device that is the CPU by construction
# A speaker encoder computes its loss on the CPU: `__init__(self, device, loss_device)` keeps
# `self.loss_device`, which the training script and the inference module both construct as
# `torch.device("cpu")`. `.to(self.loss_device)` of a new tensor moves nothing. A module of the
# same form that some construction gives a GPU keeps the finding.
_ENCODER = d("""
    import numpy as np
    import torch
    import torch.nn as nn
    class SpeakerEncoder(nn.Module):
        def __init__(self, device, loss_device):
            super().__init__()
            self.loss_device = loss_device
            self.lstm = nn.LSTM(40, 256, 3).to(device)
        def similarity(self, embeds):
            n, m = embeds.shape[:2]
            sim = torch.zeros(n, m, n).to(self.loss_device)
            labels = torch.from_numpy(np.repeat(np.arange(n), m)).long().to(self.loss_device)
            return sim, labels
    class Scorer(nn.Module):
        def __init__(self, score_device):
            super().__init__()
            self.score_device = score_device
        def forward(self, x):
            return x + torch.zeros(x.size(1)).to(self.score_device)
""")
_ENCODER_TRAIN = d("""
    import torch
    from encoder.model import SpeakerEncoder, Scorer
    def train(loader):
        device = torch.device("cuda")
        loss_device = torch.device("cpu")
        model = SpeakerEncoder(device, loss_device)
        scorer = Scorer(device)
        for batch in loader:
            model.similarity(scorer(model(batch.to(device))).to(loss_device))
""")
_ENCODER_INFER = d("""
    import torch
    from encoder.model import SpeakerEncoder, Scorer
    def load(path, device):
        return SpeakerEncoder(device, torch.device("cpu")), Scorer("cpu")
""")
PROJECTS += [
    ProjectShape("TW205", "a loss device that every construction of the module sets to the CPU (quiet); a score device "
                 "one construction sets to the GPU (found)",
                 {"encoder/model.py": _ENCODER, "encoder/train.py": _ENCODER_TRAIN, "encoder/inference.py": _ENCODER_INFER},
                 (("encoder/model.py", 19),)),
]

# ------------------------------------------------------------- TW205 imported, its call commented out (ruling R5)
# An audio-tagging script imports a FLOP counter with its other utilities and has the call
# commented out; the script picks its model class with eval(model_type), so an import alone may
# be a use - but a commented-out call of that very name says this one is not. The helper next to
# it, imported and called, stays reported.
_TAGGING_UTILS = d("""
    import torch
    def count_flops(model, audio_length):
        device = next(model.parameters()).device
        dummy = torch.rand(1, audio_length).to(device)
        return model(dummy)
    def time_forward(model, audio_length):
        device = next(model.parameters()).device
        dummy = torch.rand(1, audio_length).to(device)
        return model(dummy)
""")
_TAGGING_MAIN = d("""
    import torch
    from models import Cnn14, Cnn6
    from pytorch_utils import (count_parameters, count_flops,
        time_forward)
    def train(args):
        Model = eval(args.model_type)
        model = Model(classes_num=527).cuda()
        # flops = count_flops(model, 32000)
        for step in range(args.steps):
            time_forward(model, 32000)
""")
_TAGGING_MODELS = d("""
    import torch
    import torch.nn as nn
    class Cnn14(nn.Module):
        def forward(self, x):
            return x + torch.zeros(x.size(1)).to(x.device)
    class Cnn6(nn.Module):
        def forward(self, x):
            return x * torch.ones(x.size(1)).to(x.device)
""")
PROJECTS += [
    ProjectShape("TW205", "a helper imported but only called in a comment (quiet); the one beside it called, and the "
                 "models only imported but picked by eval(model_type) (found)",
                 {"pytorch/pytorch_utils.py": _TAGGING_UTILS, "pytorch/main.py": _TAGGING_MAIN,
                  "pytorch/models.py": _TAGGING_MODELS},
                 (("pytorch/models.py", 5), ("pytorch/models.py", 8), ("pytorch/pytorch_utils.py", 8))),
]

# ------------------------------------------------------------- TW513 and TW205 through star imports
# An RL library keeps `LongTensor = torch.LongTensor` (and its NumPy import) in a utilities module
# that every script star-imports; a traffic-forecasting test script gets `torch` itself only from
# `from model import *`. The constructors are the legacy ones all the same, and a permutation
# drawn with NumPy and converted with one every optimisation epoch is made on the host for nothing.
_RL_UTILS_INIT = d("""
    from utils.torch import *
    from utils.tools import *
""")
_RL_UTILS_TORCH = d("""
    import numpy as np
    import torch
    LongTensor = torch.LongTensor
    DoubleTensor = torch.DoubleTensor
    zeros = torch.zeros
""")
_RL_UTILS_TOOLS = d("""
    class FloatTensor:
        def __init__(self, *values):
            self.values = values
""")
_RL_PPO = d("""
    import math
    from utils import *
    def update_params(states, returns, device, epochs, batch):
        for _ in range(epochs):
            perm = np.arange(states.shape[0])
            np.random.shuffle(perm)
            perm = LongTensor(perm).to(device)
            states, returns = states[perm].clone(), returns[perm].clone()
            row = FloatTensor(1.0, 2.0)
        return DoubleTensor(states.shape[0], 1)
""")
_FORECAST_MODEL = d("""
    import torch
    import torch.nn as nn
    class gwnet(nn.Module):
        def forward(self, x):
            return x
""")
_FORECAST_TEST = d("""
    import argparse
    from model import *
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=str, default="cuda:0")
    args = parser.parse_args()
    device = torch.device(args.device)
    model = gwnet().to(device)
    for x, y in loader:
        testx = torch.Tensor(x).to(device)
        print(model(testx))
""")
_STAR_FILES = {"utils/__init__.py": _RL_UTILS_INIT, "utils/torch.py": _RL_UTILS_TORCH, "utils/tools.py": _RL_UTILS_TOOLS,
               "examples/ppo_gym.py": _RL_PPO, "model.py": _FORECAST_MODEL, "test.py": _FORECAST_TEST}
PROJECTS += [
    ProjectShape("TW513", "typed constructors under names a star import hands on (LongTensor = torch.LongTensor in a "
                 "utilities module; torch itself from `from model import *`); a project class named FloatTensor stays quiet",
                 _STAR_FILES, (("examples/ppo_gym.py", 7), ("examples/ppo_gym.py", 10), ("test.py", 9))),
    ProjectShape("TW205", "a NumPy permutation (np from a star import) shuffled in place, converted with the star-imported "
                 "LongTensor and moved every optimisation epoch", _STAR_FILES, (("examples/ppo_gym.py", 7),)),
]

# ------------------------------------------------------------- TW209 a named convolution in a list of layers
# The VGG builder of a distillation zoo binds `conv2d = nn.Conv2d(...)` and, when batch norm is
# asked for, adds `[conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]` in one statement; the
# builder is called with the model's own flag, which the `*_bn` constructors turn on.
FIND += [
    Shape("TW209", "VGG _make_layers: layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU()] under `if batch_norm:`", d("""
        import torch.nn as nn
        class VGG(nn.Module):
            def __init__(self, cfg, batch_norm=False):
                super().__init__()
                self.features = self._make_layers(cfg, batch_norm)
            @staticmethod
            def _make_layers(cfg, batch_norm=False, in_channels=3):
                layers = []
                for v in cfg:
                    if v == "M":
                        layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
                    else:
                        conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
                        if batch_norm:
                            layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                        else:
                            layers += [conv2d, nn.ReLU(inplace=True)]
                        in_channels = v
                return nn.Sequential(*layers)
        def vgg11_bn(**kwargs):
            return VGG([64, "M", 128], batch_norm=True, **kwargs)
    """), 13),
]
QUIET += [
    Shape("TW209", "look-alike: the builder's flag is never turned on, and a named conv without bias", d("""
        import torch.nn as nn
        def make_layers(cfg, batch_norm=False):
            layers, c = [], 3
            for v in cfg:
                conv2d = nn.Conv2d(c, v, kernel_size=3, padding=1)
                if batch_norm:
                    layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                else:
                    layers += [conv2d, nn.ReLU(inplace=True)]
                plain = nn.Conv2d(v, v, 3, padding=1, bias=False)
                layers += [plain, nn.BatchNorm2d(v)]
                c = v
            return nn.Sequential(*layers)
        features = make_layers([64, 128])
    """)),
]

# ------------------------------------------------------------- TW209 a BatchNorm chosen by a conditional expression
# A feature translator writes `nn.BatchNorm2d(c) if use_bn else nn.Sequential()` right after each
# biased convolution of its `nn.Sequential`; `use_bn` is on by default.
FIND += [
    Shape("TW209", "nn.Sequential(conv, nn.BatchNorm2d(c) if use_bn else nn.Sequential(), ...) with use_bn=True by default", d("""
        import torch.nn as nn
        class Translator(nn.Module):
            def __init__(self, cin, cout, use_bn=True):
                super().__init__()
                self.encoder = nn.Sequential(
                    nn.Conv2d(cin, cout, 3, 1, 1),
                    nn.BatchNorm2d(cout) if use_bn else nn.Sequential(),
                    nn.LeakyReLU(0.1, inplace=True),
                )
    """), 6),
]
QUIET += [
    Shape("TW209", "look-alike: the same translator with use_bn off by default, and an identity in both branches", d("""
        import torch.nn as nn
        class Translator(nn.Module):
            def __init__(self, cin, cout, use_bn=False, slim=True):
                super().__init__()
                self.encoder = nn.Sequential(
                    nn.Conv2d(cin, cout, 3, 1, 1),
                    nn.BatchNorm2d(cout) if use_bn else nn.Sequential(),
                    nn.Conv2d(cout, cout, 3, 1, 1),
                    nn.Identity() if slim else nn.ReLU(),
                )
    """)),
]

# ------------------------------------------------------------- TW209 a head's list of layers, its flag set where it is built
# A self-distillation head starts its MLP as `layers = [nn.Linear(in_dim, hidden_dim)]` (in the
# else of `if nlayers == 1:`) and appends BatchNorm1d under `if use_bn:` - off by default, but the
# training script builds the head with `use_bn=args.use_bn_in_head`. A head nobody builds with the
# flag stays quiet.
_HEADS = d("""
    import torch.nn as nn
    class ProjHead(nn.Module):
        def __init__(self, in_dim, out_dim, use_bn=False, nlayers=3, hidden_dim=2048):
            super().__init__()
            if nlayers == 1:
                self.mlp = nn.Linear(in_dim, out_dim)
            else:
                layers = [nn.Linear(in_dim, hidden_dim)]
                if use_bn:
                    layers.append(nn.BatchNorm1d(hidden_dim))
                layers.append(nn.GELU())
                for _ in range(nlayers - 2):
                    layers.append(nn.Linear(hidden_dim, hidden_dim))
                    if use_bn:
                        layers.append(nn.BatchNorm1d(hidden_dim))
                    layers.append(nn.GELU())
                layers.append(nn.Linear(hidden_dim, out_dim))
                self.mlp = nn.Sequential(*layers)
    class PlainHead(nn.Module):
        def __init__(self, in_dim, out_dim, use_bn=False):
            super().__init__()
            layers = [nn.Linear(in_dim, out_dim)]
            if use_bn:
                layers.append(nn.BatchNorm1d(out_dim))
            self.mlp = nn.Sequential(*layers)
""")
_HEAD_MAIN = d("""
    import argparse
    from heads import ProjHead, PlainHead
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_bn_in_head", default=False, type=bool)
    args = parser.parse_args()
    student = ProjHead(384, 65536, use_bn=args.use_bn_in_head)
    teacher = ProjHead(384, 65536, args.use_bn_in_head)
    probe = PlainHead(384, 10)
""")
PROJECTS += [
    ProjectShape("TW209", "an MLP head's list of Linear and optional BatchNorm1d, the flag passed where the head is built "
                 "(another module); a head built without it stays quiet",
                 {"heads.py": _HEADS, "main.py": _HEAD_MAIN}, (("heads.py", 8), ("heads.py", 13))),
]

# ------------------------------------------------------------- TW513 a constructor picked from a dict of them
# Segmentation projects keep an old copy of PyTorch's DataLoader whose collate converts NumPy
# scalars with `numpy_type_map[elem.dtype.name](values)`, the dict mapping dtype names to the
# typed constructors. A dict of dtypes, or one of the classes only looked up for a type test, is fine.
FIND += [
    Shape("TW513", "vendored DataLoader collate: numpy_type_map[elem.dtype.name](list(map(py_type, batch)))", d("""
        import torch
        numpy_type_map = {
            "float64": torch.DoubleTensor,
            "float32": torch.FloatTensor,
            "int64": torch.LongTensor,
        }
        def default_collate(batch):
            elem = batch[0]
            py_type = float if elem.dtype.name.startswith("float") else int
            return numpy_type_map[elem.dtype.name](list(map(py_type, batch)))
    """), 10),
]
QUIET += [
    Shape("TW513", "look-alike: a dict of dtypes handed to torch.tensor, and a dict of classes for a type test", d("""
        import torch
        dtypes = {"float64": torch.float64, "int64": torch.int64}
        kinds = {"float": torch.FloatTensor, "long": torch.LongTensor}
        def collate(batch):
            elem = batch[0]
            assert isinstance(elem, kinds["float"])
            return torch.tensor(batch, dtype=dtypes[elem.dtype.name])
    """)),
]

# ------------------------------------------------------------- TW205 a helper's new index tensor indexes a device tensor
# Graph pre-training shifts the context representations by one within the batch to make negative
# pairs: `rep[cycle_index(len(rep), i + 1)]`, where the helper returns `torch.arange(num) + shift`
# made on the CPU - copied to the representations' device every step. Reported where it is made.
PROJECTS += [
    ProjectShape("TW205", "a helper returning a CPU arange, used to index the model's output every step (found); the same "
                 "helper indexing a CPU table (quiet)",
                 {"pretrain_contextpred.py": d("""
                     import torch
                     def cycle_index(num, shift):
                         arr = torch.arange(num) + shift
                         arr[-shift:] = torch.arange(shift)
                         return arr
                     def shifted_rows(num):
                         return torch.arange(num) + 1
                     def train(model, loader, optimizer, device, neg_samples):
                         table = torch.randn(100, 8)
                         for step, batch in enumerate(loader):
                             batch = batch.to(device)
                             rep = model(batch.x, batch.edge_index)
                             neg = torch.cat([rep[cycle_index(len(rep), i + 1)] for i in range(neg_samples)], dim=0)
                             prior = table[shifted_rows(10)]
                             loss = (rep * neg[:len(rep)]).sum() + prior.sum()
                             optimizer.zero_grad()
                             loss.backward()
                             optimizer.step()
                 """)},
                 (("pretrain_contextpred.py", 3),)),
]

# ------------------------------------------------------------- TW205 init_* helpers a per-example training step calls
# Course code trains an RNN one example at a time: `def train(line)` runs the backward pass and
# the optimizer step itself, and starts with `hidden = model.init_hidden()`, whose zeros are made
# on the CPU and moved - every step, here or from another module. An `init_hidden()` called once
# per epoch, before the loop over batches, is set-up.
FIND += [
    Shape("TW205", "char RNN: init_hidden() makes zeros and .cuda() them; train(line) calls it every example", d("""
        import torch
        import torch.nn as nn
        class RNN(nn.Module):
            def init_hidden(self):
                if torch.cuda.is_available():
                    hidden = torch.zeros(self.n_layers, 1, self.hidden_size).cuda()
                else:
                    hidden = torch.zeros(self.n_layers, 1, self.hidden_size)
                return hidden
        def train(line):
            hidden = decoder.init_hidden()
            loss = 0
            for c in range(len(line)):
                output, hidden = decoder(line[c], hidden)
                loss += criterion(output, line[c])
            decoder.zero_grad()
            loss.backward()
            optimizer.step()
            return loss.item()
        for epoch in range(10):
            for i, (lines, _) in enumerate(loader):
                train(lines[0])
    """), 6),
]
_S2S_MODELS = d("""
    import torch
    import torch.nn as nn
    def cuda_variable(tensor):
        if torch.cuda.is_available():
            return tensor.cuda()
        return tensor
    class EncoderRNN(nn.Module):
        def init_hidden(self):
            return cuda_variable(torch.zeros(self.n_layers, 1, self.hidden_size))
    class LanguageModel(nn.Module):
        def init_state(self, bsz):
            return cuda_variable(torch.zeros(self.n_layers, bsz, self.hidden_size))
""")
_S2S_TRAIN = d("""
    from seq2seq_models import EncoderRNN, LanguageModel, cuda_variable
    def train(src, target):
        encoder_hidden = encoder.init_hidden()
        out, hidden = encoder(src, encoder_hidden)
        loss = criterion(out, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    def train_epoch(lm, loader):
        state = lm.init_state(32)
        for x, y in loader:
            out, state = lm(x, state)
            loss = criterion(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    for epoch in range(5):
        for src, target in loader:
            train(src, target)
        train_epoch(lm, loader)
    encoder, lm = EncoderRNN(), LanguageModel()
""")
PROJECTS += [
    ProjectShape("TW205", "an encoder's init_hidden() a per-example step of another module calls (found); a language "
                 "model's init_state() called once per epoch before the batch loop (quiet)",
                 {"seq2seq_models.py": _S2S_MODELS, "train_seq2seq.py": _S2S_TRAIN}, (("seq2seq_models.py", 9),)),
]

# ------------------------------------------------------------- TW205 a constant tuple kept on self, converted per call
# A detector keeps the normalisation of its box offsets as tuples (`loc_normalize_mean=(0., 0., 0.,
# 0.)`, a default of `__init__`) and converts them with `t.Tensor(...).cuda()` for every image it
# predicts. Converted once in `__init__`, or kept from a parameter with no default, they are quiet.
FIND += [
    Shape("TW205", "predict(): t.Tensor(self.loc_normalize_mean).cuda() per image, the tuple a default of __init__", d("""
        import torch as t
        import torch.nn as nn
        class FasterRCNN(nn.Module):
            def __init__(self, head, loc_normalize_mean=(0., 0., 0., 0.), loc_normalize_std=(0.1, 0.1, 0.2, 0.2)):
                super().__init__()
                self.head = head
                self.loc_normalize_mean = loc_normalize_mean
                self.loc_normalize_std = loc_normalize_std
            def predict(self, imgs):
                out = []
                for img in imgs:
                    loc = self.head(img)
                    mean = t.Tensor(self.loc_normalize_mean).cuda().repeat(self.n_class)[None]
                    std = t.Tensor(self.loc_normalize_std).cuda().repeat(self.n_class)[None]
                    out.append(loc * std + mean)
                return out
    """), 13),
]
QUIET += [
    Shape("TW205", "look-alike: the tuple converted once in __init__, and a table handed in without a default", d("""
        import torch
        import torch.nn as nn
        class Normalizer(nn.Module):
            def __init__(self, mean=(0.485, 0.456, 0.406), table=None, scale=None):
                super().__init__()
                self.mean_t = torch.tensor(mean).cuda()
                self.table = table
                self.scale = scale
            def forward(self, x):
                return (x - self.mean_t) * torch.tensor(self.table).to(x.device)
    """)),
]

# ------------------------------------------------------------- TW205 moved by a helper of another module
# A segmentation project copies everything to its GPU with `async_copy_to(obj, dev)` - a function of
# a utilities package (`obj.cuda(dev, non_blocking=True)`), re-exported by two `__init__.py`. Its
# evaluation makes the zero score map of every image on the CPU and hands it over. A helper that
# only converts (`as_numpy`), and the copy made once before the loop, stay quiet.
_SEG_DP = d("""
    import collections
    import torch
    def async_copy_to(obj, dev, main_stream=None):
        if torch.is_tensor(obj):
            v = obj.cuda(dev, non_blocking=True)
            return v
        elif isinstance(obj, collections.abc.Mapping):
            return {k: async_copy_to(o, dev, main_stream) for k, o in obj.items()}
        return obj
""")
_SEG_UTILS = d("""
    def as_numpy(obj):
        return obj.cpu().numpy()
""")
_SEG_EVAL = d("""
    import torch
    from seg.lib.nn import async_copy_to
    from seg.lib.utils import as_numpy
    def evaluate(module, loader, num_class, gpu):
        weights = async_copy_to(torch.ones(num_class), gpu)
        for batch in loader:
            size = batch["seg_label"].shape
            scores = torch.zeros(1, num_class, size[0], size[1])
            scores = async_copy_to(scores, gpu)
            for img in batch["img_data"]:
                scores = scores + module(async_copy_to(img, gpu)) * weights
            pred = as_numpy(torch.zeros(3).long())
""")
PROJECTS += [
    ProjectShape("TW205", "a zero score map per image handed to async_copy_to, a mover of a utilities package re-exported "
                 "by its __init__ (found); a converter and a copy before the loop (quiet)",
                 {"seg/__init__.py": "", "seg/lib/__init__.py": "",
                  "seg/lib/nn/__init__.py": "from .parallel import async_copy_to\n",
                  "seg/lib/nn/parallel/__init__.py": "from .data_parallel import async_copy_to\n",
                  "seg/lib/nn/parallel/data_parallel.py": _SEG_DP,
                  "seg/lib/utils.py": _SEG_UTILS, "eval.py": _SEG_EVAL},
                 (("eval.py", 8),)),
]
FIND += [
    Shape("TW205", "infomax: summary[cycle_index(n, 1)] where summary is pooled from a submodule's output on the moved batch", d("""
        import torch
        def cycle_index(num, shift):
            arr = torch.arange(num) + shift
            arr[-shift:] = torch.arange(shift)
            return arr
        def train(args, model, device, loader, optimizer):
            for step, batch in enumerate(loader):
                batch = batch.to(device)
                node_emb = model.gnn(batch.x, batch.edge_index, batch.edge_attr)
                summary_emb = torch.sigmoid(model.pool(node_emb, batch.batch))
                shifted = summary_emb[cycle_index(len(summary_emb), 1)]
                loss = model.loss(model.discriminator(node_emb, shifted[batch.batch]))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """), 3),
]
QUIET += [
    Shape("TW205", "look-alike: the shifted rows of a table computed on the host from the loader's CPU batch", d("""
        import numpy as np
        import torch
        def cycle_index(num, shift):
            return torch.arange(num) + shift
        def collect(model, loader):
            out = []
            for batch in loader:
                stats = np.asarray(batch.numpy())
                table = torch.from_numpy(stats.mean(0))
                out.append(table[cycle_index(len(table), 1)])
            return out
    """)),
]

# ------------------------------------------------------------- TW205 observations and replay minibatches
# RL agents convert the observation they are handed (`torch.FloatTensor(state).to(device)` in
# get_action) and the minibatch their replay memory returns (`state, action, reward = buffer.sample(n)`
# then `torch.FloatTensor(state).to(device)`): data from the environment that has to cross, a copy
# `torch.as_tensor(..., device=...)` would make from the host just the same (set 16 counted them no
# pitfall). The zeros made for the update every step are still found.
PROJECTS += [
    ProjectShape("TW205", "an agent's observation and its replay minibatch converted with typed constructors (quiet); "
                 "a zero tensor made and moved every update (found)",
                 {"sac.py": d("""
                     import numpy as np
                     import torch
                     device = torch.device("cuda")
                     class ReplayBuffer:
                         def sample(self, batch_size):
                             batch = [self.buffer[i] for i in np.random.randint(0, len(self.buffer), batch_size)]
                             state, action, reward = map(np.stack, zip(*batch))
                             return state, action, reward
                     class Agent:
                         def get_action(self, state):
                             state = torch.FloatTensor(state).unsqueeze(0).to(device)
                             return self.policy(state).detach().cpu().numpy()[0]
                         def update(self, batch_size):
                             state, action, reward = self.replay_buffer.sample(batch_size)
                             state = torch.FloatTensor(state).to(device)
                             action = torch.FloatTensor(action).to(device)
                             reward = torch.FloatTensor(reward).unsqueeze(1).to(device)
                             done = torch.zeros(batch_size, 1).to(device)
                             loss = ((self.q(state, action) - reward - done) ** 2).mean()
                             self.optimizer.zero_grad()
                             loss.backward()
                             self.optimizer.step()
                 """)},
                 (("sac.py", 18),)),
]
