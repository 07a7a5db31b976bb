"""The recall corpus, round 18 part D: classes the twenty-fifth and twenty-sixth sets (the tuning sets
of round 18) still missed for TW402, TW203, TW204, TW103, TW104, TW109, TW404, TW405 and TW506 -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW506 the in-place logarithm
# A numerically careful inverse hyperbolic function that works on a double copy in place:
# `torch.log_(1 + z)` (the function form) or `(1 + z).log_()` (the method form).
FIND += [
    Shape("TW506", "torch.log_(1 + z) inside an autograd Function's forward", d("""
        import torch
        class Atanh(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                z = x.double()
                return (torch.log_(1 + z).sub_(torch.log_(1 - z))).mul_(0.5).to(x.dtype)
    """), 6),
    Shape("TW506", "(z + 1).log_() as a tensor method on a fresh sum", d("""
        import torch
        def softplus_inv(z):
            return (z + 1).log_()
    """), 3),
]
QUIET += [
    Shape("TW506", "look-alike: torch.log_ of a value that is not one plus something", d("""
        import torch
        def entropy(p):
            return -(p * torch.log_(p.clamp(min=1e-12))).sum()
    """)),
    Shape("TW506", "look-alike: log_ of one plus a count", d("""
        import torch
        def damp(counts):
            return (counts.float() + 1).log_()
    """)),
]

# ------------------------------------------------------------- TW103 a part only the subclasses build
# An abstract graph encoder/decoder base (an nn.Module) whose shared method runs `self.layers.forward(x)`
# or `self.head.forward(x)`, while only its concrete subclasses in the same file assign the part.
FIND += [
    Shape("TW103", "abstract encoder base: self.stack.forward(...) built as nn.Sequential by every subclass", d("""
        import torch.nn as nn
        class BaseEncoder(nn.Module):
            def __init__(self, curv):
                super().__init__()
                self.curv = curv
            def encode(self, feats, graph):
                if self.takes_graph:
                    out, _ = self.stack.forward((feats, graph))
                else:
                    out = self.stack.forward(feats)
                return out
        class Plain(BaseEncoder):
            def __init__(self, curv, dims):
                super().__init__(curv)
                self.stack = nn.Sequential(*[nn.Linear(a, b) for a, b in zip(dims, dims[1:])])
                self.takes_graph = False
        class Graph(BaseEncoder):
            def __init__(self, curv, dims):
                super().__init__(curv)
                self.stack = nn.Sequential(GraphLayer(dims[0], dims[1]))
                self.takes_graph = True
    """), 10),
    Shape("TW103", "decoder base: self.head.forward(x) where the subclasses build a project layer", d("""
        from torch import nn
        from layers import GraphConv, Dense
        class Readout(nn.Module):
            def decode(self, x, adj):
                return self.head.forward(x)
        class ConvReadout(Readout):
            def __init__(self, d, k):
                super().__init__()
                self.head = GraphConv(d, k)
        class DenseReadout(ConvReadout):
            def __init__(self, d, k):
                super().__init__(d, k)
                self.head = Dense(d, k)
    """), 5),
]
QUIET += [
    Shape("TW103", "look-alike: the subclasses hand in a plain callable under the same name", d("""
        import torch.nn as nn
        class Base(nn.Module):
            def run(self, x):
                return self.engine.forward(x)
        class Exported(Base):
            def __init__(self, session):
                super().__init__()
                self.engine = session
    """)),
    Shape("TW103", "look-alike: a base whose subclasses build the part with a factory function", d("""
        import torch.nn as nn
        from backends import make_runner
        class Base(nn.Module):
            def run(self, x):
                return self.runner.forward(x)
        class Child(Base):
            def __init__(self, cfg):
                super().__init__()
                self.runner = make_runner(cfg)
    """)),
    Shape("TW103", "look-alike: a plain base class (no nn.Module) whose subclasses build a wrapper", d("""
        class Predictor:
            def predict(self, x):
                return self.backend.forward(x)
        class OnnxPredictor(Predictor):
            def __init__(self, path):
                self.backend = OrtSession(path)
    """)),
]

# ------------------------------------------------------------- TW103 a project loss class under a lower-case name
# A depth-estimation script builds its loss from the project's `class scale_inv_loss(nn.Module)` (reached
# through an import or a star import) and calls `.forward(...)` on it every step.
_LOWER_LOSS = d("""
    import torch
    import torch.nn as nn
    class scale_inv_loss(nn.Module):
        def __init__(self, focus):
            super().__init__()
            self.focus = focus
        def forward(self, est, gt, mask):
            d = torch.log(est[mask]) - torch.log(gt[mask])
            return torch.sqrt((d ** 2).mean() - self.focus * d.mean() ** 2) * 10.0
""")
_LOWER_MAIN = d("""
    import torch
    from depthnet import *

    def main(args, model, loader, opt):
        crit = scale_inv_loss(focus=args.focus)
        for img, gt in loader:
            est = model(img.cuda())
            loss = crit.forward(est, gt.cuda(), gt.cuda() > 0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW103", "a project nn.Module loss with a lower-case class name, reached by a star import",
                 {"depthnet.py": _LOWER_LOSS, "train.py": _LOWER_MAIN}, (("train.py", 8),)),
    ProjectShape("TW103", "look-alike: the lower-case name is also a function of the project",
                 {"depthnet.py": _LOWER_LOSS, "helpers.py": "def scale_inv_loss(focus):\n    return Wrapped(focus)\n",
                  "train.py": _LOWER_MAIN.replace("from depthnet import *", "from helpers import *")}),
]

# ------------------------------------------------------------- TW402 a script's top level, device from the model module
# A summariser whose model module picks `DEVICE = cuda if available else cpu`; the evaluation and the
# training scripts import it and only write `.to(DEVICE)` in their functions, then, in `__main__`,
# load the training status (a dict pickled beside the optimizer) and the whole pickled model.
_S2S_MODEL = d("""
    import torch
    import torch.nn as nn
    DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    class Summarizer(nn.Module):
        def __init__(self, vocab):
            super().__init__()
            self.vocab = vocab
            self.enc = nn.GRU(128, 128)
""")
_S2S_TRAIN = d("""
    import argparse
    import torch
    from torch import optim
    from model import DEVICE, Summarizer

    def train(model, batches, prefix, status=None):
        model.to(DEVICE)
        opt = status["opt"] if status else optim.Adam(model.parameters())
        for epoch in range(10):
            for x in batches:
                loss = model(x.to(DEVICE)).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
            torch.save(model, "%s.%02d.pt" % (prefix, epoch))
            torch.save({"epoch": epoch, "best_epoch": epoch, "opt": opt}, prefix + ".status.pt")

    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--resume")
        args = p.parse_args()
        status = torch.load(args.resume)
        net = torch.load("%s.%02d.pt" % (args.resume[:-10], status["epoch"]))
        train(net, [], "runs/s2s", status)
""")
_S2S_TEST = d("""
    import argparse
    import torch
    from model import DEVICE
    from data import load_vocab

    def evaluate(model, batches):
        with torch.no_grad():
            return [model(x.to(DEVICE)) for x in batches]

    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--prefix")
        args = p.parse_args()
        status = torch.load(args.prefix + ".status.pt")
        m = torch.load("%s.%02d.pt" % (args.prefix, status["best_epoch"]))
        m.eval()
        vocab = torch.load(args.prefix + ".vocab")
        evaluate(m, [])
""")
_S2S_DATA = d("""
    import torch
    def save_vocab(words, path):
        torch.save(words, path)
""")
PROJECTS += [
    ProjectShape("TW402", "__main__ loads of a status dict saved beside the optimizer and of a pickled model, device from the model module",
                 {"model.py": _S2S_MODEL, "train.py": _S2S_TRAIN, "test.py": _S2S_TEST, "data.py": _S2S_DATA},
                 (("test.py", 14), ("test.py", 15), ("train.py", 22), ("train.py", 23))),
    ProjectShape("TW402", "look-alike: the same scripts in a project that never names CUDA",
                 {"model.py": _S2S_MODEL.replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'torch.device("cpu")'),
                  "data.py": _S2S_DATA, "train.py": _S2S_TRAIN, "test.py": _S2S_TEST}),
    ProjectShape("TW402", "look-alike: only the pickled vocabulary is loaded at the top level",
                 {"model.py": _S2S_MODEL, "data.py": _S2S_DATA, "train.py": _S2S_TRAIN.replace(
                     '    status = torch.load(args.resume)\n    net = torch.load("%s.%02d.pt" % (args.resume[:-10], status["epoch"]))\n'
                     '    train(net, [], "runs/s2s", status)', '    vocab = torch.load(args.resume + ".vocab")\n'
                     '    train(Summarizer(vocab), [], "runs/s2s")')}),
]

# ------------------------------------------------------------- TW402 an evaluation script builds the model from the checkpoint
# A super-resolution project keeps the model's spec and weights in one checkpoint; its test and demo
# scripts build the network from it (`make(ckpt["model"], load_sd=True).cuda()`).
_SR_TRAIN = d("""
    import torch
    import models
    def main(cfg, loader):
        model = models.make(cfg["model"]).cuda()
        opt = torch.optim.Adam(model.parameters())
        for x, y in loader:
            loss = (model(x.cuda()) - y.cuda()).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        spec = cfg["model"]
        spec["sd"] = model.state_dict()
        torch.save({"model": spec, "epoch": 1}, "save/epoch-last.pth")
""")
_SR_TEST = d("""
    import argparse
    import torch
    import models
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--model")
        args = p.parse_args()
        spec = torch.load(args.model)["model"]
        net = models.make(spec, load_sd=True).cuda()
        print(net(torch.rand(1, 3, 8, 8).cuda()).shape)
""")
_SR_DEMO = d("""
    import argparse
    import torch
    import models
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--model")
        args = p.parse_args()
        net = models.make(torch.load(args.model)["model"], load_sd=True).cuda()
        print(net(torch.rand(1, 3, 8, 8).cuda()).shape)
""")
PROJECTS += [
    ProjectShape("TW402", "test and demo scripts of a GPU-only project build the model from its checkpoint",
                 {"train.py": _SR_TRAIN, "test.py": _SR_TEST, "demo.py": _SR_DEMO},
                 (("demo.py", 8), ("test.py", 8))),
    ProjectShape("TW402", "look-alike: the training script's own resume of a GPU-only project",
                 {"train.py": "import os\n" + _SR_TRAIN.replace('    model = models.make(cfg["model"]).cuda()\n',
                                                '    os.environ["CUDA_VISIBLE_DEVICES"] = cfg["gpu"]\n'
                                                '    model = models.make(torch.load(cfg["resume"])["model"], load_sd=True).cuda()\n')}),
    ProjectShape("TW402", "look-alike: a demo that turns loaded data into a tensor and moves it",
                 {"train.py": _SR_TRAIN,
                  "demo.py": _SR_DEMO.replace('net = models.make(torch.load(args.model)["model"], load_sd=True).cuda()',
                                              'net = torch.tensor(torch.load(args.model)).cuda()')}),
]

# ------------------------------------------------------------- TW402 every rank reloads rank 0's best model
# An accelerate/DDP trainer saves the best model on the main process only and, after training, every
# process reloads it for the final test: each rank restores rank 0's CUDA tensors onto rank 0's GPU.
FIND += [
    Shape("TW402", "DDP trainer: rank 0 saves the best model, every rank reloads it for the final test", d("""
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        def train_model(net, opt, loader, dev_loader, path, epochs, rank):
            dist.init_process_group("nccl")
            model = DDP(net.cuda(rank), device_ids=[rank])
            best = -1
            for epoch in range(epochs):
                for x, y in loader:
                    loss = model(x.cuda(rank), y.cuda(rank))
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                score = evaluate(model, dev_loader)
                if score > best and rank == 0:
                    best = score
                    torch.save(model.module.state_dict(), path)
            model.module.load_state_dict(torch.load(path))
            return evaluate(model, dev_loader)
    """), 18),
]
QUIET += [
    Shape("TW402", "look-alike: a single-process trainer reloading its own best model on the GPU", d("""
        import torch
        def train_model(model, opt, loader, path, epochs):
            model.cuda()
            for epoch in range(epochs):
                for x, y in loader:
                    loss = model(x.cuda(), y.cuda())
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                torch.save(model.state_dict(), path)
            model.load_state_dict(torch.load(path))
            return model
    """)),
]

# ------------------------------------------------------------- TW204 batch parts copied one by one
# A world-model trainer maps a lambda over a nested batch read with next() from a pinned loader;
# a video classifier loops over the clips of each pinned batch and copies each one.
FIND += [
    Shape("TW204", "a lambda mapped over a batch taken with next() from a pinned loader", d("""
        import torch
        from torch.utils.data import DataLoader
        from tools import map_structure
        def run(data, model, opt, device, steps):
            it = iter(DataLoader(data, batch_size=None, num_workers=4, pin_memory=True))
            for step in range(steps):
                batch, wid = next(it)
                obs = map_structure(batch, lambda x: x.to(device))
                loss = model(obs)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 8),
    Shape("TW204", "tree_map of a lambda over each batch of a pinned loader loop", d("""
        import torch
        from torch.utils.data import DataLoader
        from torch.utils._pytree import tree_map
        def fit(ds, model, opt):
            loader = DataLoader(ds, batch_size=32, pin_memory=True, num_workers=4)
            for batch in loader:
                batch = tree_map(lambda t: t.cuda(), batch)
                loss = model(**batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 7),
    Shape("TW204", "a loop over the clips of each pinned batch copies each clip", d("""
        import torch
        from torch.utils.data import DataLoader
        def test(model, ds, device):
            loader = DataLoader(ds, batch_size=8, pin_memory=True, num_workers=4)
            model.eval()
            with torch.no_grad():
                for clips, labels in loader:
                    labels = labels.to(device)
                    outs = []
                    for clip in clips:
                        outs.append(model(clip.to(device)))
                    acc = (torch.stack(outs).mean(0).argmax(1) == labels).float().mean()
    """), 11),
]
QUIET += [
    Shape("TW204", "look-alike: a lambda mapped over the model's state, not a batch", d("""
        import torch
        from torch.utils.data import DataLoader
        from tools import map_structure
        def run(data, model, state, device, steps):
            it = iter(DataLoader(data, batch_size=None, pin_memory=True))
            for step in range(steps):
                state = map_structure(state, lambda x: x.to(device))
                batch = next(it)
                model(batch.to(device, non_blocking=True), state)
    """)),
    Shape("TW204", "look-alike: a loop over a range inside the pinned batch loop copies a fresh tensor", d("""
        import torch
        from torch.utils.data import DataLoader
        def fit(ds, model, device, masks):
            loader = DataLoader(ds, batch_size=8, pin_memory=True)
            for x in loader:
                x = x.to(device, non_blocking=True)
                for k in range(3):
                    m = masks[k].to(device)
                    model(x * m)
    """)),
    Shape("TW204", "look-alike: the clips of an unpinned loader's batches", d("""
        import torch
        from torch.utils.data import DataLoader
        def test(model, ds, device):
            loader = DataLoader(ds, batch_size=8, num_workers=4)
            for clips, labels in loader:
                for clip in clips:
                    model(clip.to(device))
    """)),
]

# ------------------------------------------------------------- TW203 a dev loader handed on to the evaluation
# A tagger's main() builds train/dev/test loaders and hands all three to train_model(), which loops over
# the training one itself and hands the dev and test loaders on to evaluate_model(), which moves each batch.
_TAGGER = d("""
    import torch
    from torch.utils.data import DataLoader

    def evaluate_model(cfg, model, loader, name):
        model.eval()
        with torch.no_grad():
            for batch in loader:
                model.decode(batch.words.to(cfg.device), batch.lens.to(cfg.device))

    def train_model(cfg, epochs, train_loader, dev_loader, test_loader):
        model = Tagger(cfg).to(cfg.device)
        opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
        for epoch in range(epochs):
            model.train()
            for batch in train_loader:
                loss = model(batch.words.to(cfg.device), batch.labels.to(cfg.device))
                opt.zero_grad()
                loss.backward()
                opt.step()
            evaluate_model(cfg, model, dev_loader, "dev")
            evaluate_model(cfg, model, test_loader, "test")

    def main(cfg, train_set, dev_set, test_set):
        train_loader = DataLoader(train_set, batch_size=cfg.bs, shuffle=True, pin_memory=True, collate_fn=train_set.collate)
        dev_loader = DataLoader(dev_set, batch_size=cfg.bs, collate_fn=dev_set.collate)
        test_loader = DataLoader(test_set, batch_size=cfg.bs, collate_fn=test_set.collate)
        train_model(cfg, cfg.epochs, train_loader, dev_loader, test_loader)
""")
PROJECTS += [
    ProjectShape("TW203", "dev and test loaders handed through the training function to the evaluation function",
                 {"trainer.py": _TAGGER, "config.py": 'DEFAULT_DEVICE = "cuda:0"\n'}, (("trainer.py", 25), ("trainer.py", 26))),
    ProjectShape("TW203", "look-alike: the training function only logs the dev loader's size",
                 {"trainer.py": _TAGGER.replace('        evaluate_model(cfg, model, dev_loader, "dev")\n        evaluate_model(cfg, model, test_loader, "test")\n',
                                                '        report(len(dev_loader), len(test_loader))\n'),
                  "config.py": 'DEFAULT_DEVICE = "cuda:0"\n'}),
]

# ------------------------------------------------------------- TW203 a wrapper class keeps the loader for the scripts
# A depth-estimation data module: `class DepthLoader` builds `self.data = DataLoader(...)` for each mode
# (pinned for training, pin_memory=False or nothing for the evaluation modes); the training and test
# scripts build `DepthLoader(args, "online_eval").data` / `DepthLoader(args, "test").data` and move
# every batch to the GPU.
_DEPTH_DATA = d("""
    import torch
    from torch.utils.data import DataLoader

    class DepthLoader(object):
        def __init__(self, args, mode):
            if mode == "train":
                self.data = DataLoader(Frames(args, mode), args.bs, shuffle=True, num_workers=4, pin_memory=True)
            elif mode == "online_eval":
                self.data = DataLoader(Frames(args, mode), 1, shuffle=False, num_workers=1, pin_memory=False)
            elif mode == "test":
                self.data = DataLoader(Frames(args, mode), 1, shuffle=False, num_workers=1)
""")
_DEPTH_TRAIN = d("""
    import torch
    from data import DepthLoader

    def main(args, model, opt):
        train = DepthLoader(args, "train").data
        val = DepthLoader(args, "online_eval").data
        model.cuda()
        for sample in train:
            loss = model(sample["image"].cuda(non_blocking=True)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            for sample in val:
                model(sample["image"].cuda())
""")
_DEPTH_TEST = d("""
    import torch
    from data import DepthLoader

    def test(args, model):
        loader = DepthLoader(args, "test").data
        model.cuda().eval()
        with torch.no_grad():
            for sample in loader:
                model(sample["image"].cuda())
""")
_DEPTH_EXPORT = d("""
    import numpy as np
    from data import DepthLoader

    def export(args):
        for sample in DepthLoader(args, "test").data:
            np.save(sample["path"][0], sample["image"].numpy())
""")
PROJECTS += [
    ProjectShape("TW203", "evaluation-mode loaders of a wrapper class whose users move the batches to the GPU",
                 {"data.py": _DEPTH_DATA, "train.py": _DEPTH_TRAIN, "test.py": _DEPTH_TEST},
                 (("data.py", 9), ("data.py", 11))),
    ProjectShape("TW203", "look-alike: the test mode is also read by an export script that runs on the CPU",
                 {"data.py": _DEPTH_DATA.replace("pin_memory=False", "pin_memory=True"), "train.py": _DEPTH_TRAIN,
                  "test.py": _DEPTH_TEST, "export.py": _DEPTH_EXPORT}),
]

# ------------------------------------------------------------- TW104 following the called method
# A reading-comprehension trainer validates with `model.predict(batch)`, where the reader class the
# script imports runs its network under `with torch.no_grad():` inside predict - another class of the
# project (a serving wrapper the script never names) has a `predict` without it.
_READER = d("""
    import torch
    class Reader(object):
        def __init__(self, net):
            self.net = net
        def predict(self, ex):
            self.net.eval()
            with torch.no_grad():
                s, e = self.net(*ex[:5])
            return s.cpu(), e.cpu()
""")
_SERVING = d("""
    class Service(object):
        def __init__(self, reader):
            self.reader = reader
        def predict(self, question, doc):
            return self.predict_batch([(question, doc)])[0]
        def predict_batch(self, pairs):
            return [self.reader.predict(self.encode(q, d)) for q, d in pairs]
""")
_VALIDATE = d("""
    import torch
    from reader import Reader
    def validate(loader, model):
        hits = 0
        for ex in loader:
            s, e = model.predict(ex)
            hits += int((s.argmax(1) == ex[-2]).sum())
        return hits
    def main(args, loader):
        model = Reader.load(args.checkpoint)
        return validate(loader, model)
""")
PROJECTS += [
    ProjectShape("TW104", "look-alike: predict() of the class the script imports runs under no_grad",
                 {"reader.py": _READER, "serving.py": _SERVING, "train.py": _VALIDATE}),
]

# ------------------------------------------------------------- TW104 a predictor put in eval mode by its constructor
# A tagger's predictor class restores the model and calls `self.model.eval()` in `__init__`; its
# `predict_insts` runs `self.model.decode(words=..., lens=...)` (keyword arguments only) with autograd on.
_PREDICTOR = d("""
    import torch
    from tagger.model import Tagger
    class TagPredictor:
        def __init__(self, path, conf):
            self.conf = conf
            self.model = Tagger(conf)
            self.model.load_state_dict(torch.load(path, map_location="cpu"))
            self.model.eval()
        def predict_insts(self, batch):
            scores, ids = self.model.decode(words=batch.words, lens=batch.lens)
            return [self.conf.labels[i] for i in ids[0].tolist()]
""")
_TAGGER_MODEL = d("""
    import torch.nn as nn
    class Tagger(nn.Module):
        def __init__(self, conf):
            super().__init__()
            self.emb = nn.Embedding(conf.vocab, 64)
        def forward(self, words, lens, labels):
            return self.emb(words).sum()
        def decode(self, words, lens):
            return self.emb(words).max(-1)
""")
PROJECTS += [
    ProjectShape("TW104", "a keyword-only decode() of a model the predictor's constructor put in eval mode",
                 {"predictor.py": _PREDICTOR, "tagger/model.py": _TAGGER_MODEL}, (("predictor.py", 10),)),
    ProjectShape("TW104", "look-alike: the model class has no decode() any more (the call fails first)",
                 {"predictor.py": _PREDICTOR,
                  "tagger/model.py": _TAGGER_MODEL.replace("    def decode(self, words, lens):\n        return self.emb(words).max(-1)\n", "")}),
]

# ------------------------------------------------------------- TW405 rendezvous made on the spot, launchers by hand
# A depth trainer draws a port at random and formats `tcp://node:port` before mp.spawn; a
# self-supervised project's main.py starts one Python multiprocessing.Process per GPU whose target
# calls a helper module's init_distributed(), which hard-codes MASTER_ADDR and the port.
FIND += [
    Shape("TW405", "tcp:// address formatted with .format from a random port before mp.spawn", d("""
        import numpy as np
        import torch.distributed as dist
        import torch.multiprocessing as mp
        def worker(gpu, args):
            dist.init_process_group(backend="nccl", init_method=args.dist_url, world_size=args.world_size, rank=gpu)
        def main(args):
            port = np.random.randint(15000, 15025)
            args.dist_url = "tcp://{}:{}".format(args.node, port)
            mp.spawn(worker, nprocs=args.ngpus, args=(args,))
    """), 9),
]
_JEPA_DIST = d("""
    import os
    import torch
    import torch.distributed as dist

    def init_distributed(port=40112, rank_and_world_size=(None, None)):
        rank, world_size = rank_and_world_size
        os.environ["MASTER_ADDR"] = "localhost"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group(backend="nccl", world_size=world_size, rank=rank)
        return world_size, rank
""")
_JEPA_MAIN = d("""
    import multiprocessing as mp
    from utils.distributed import init_distributed
    from train import main as app_main

    def process_main(rank, world_size):
        init_distributed(rank_and_world_size=(rank, world_size))
        app_main()

    if __name__ == "__main__":
        mp.set_start_method("spawn")
        for rank in range(4):
            mp.Process(target=process_main, args=(rank, 4)).start()
""")
PROJECTS += [
    ProjectShape("TW405", "a helper's hard-coded MASTER_ADDR for workers a Python multiprocessing launcher starts",
                 {"utils/distributed.py": _JEPA_DIST, "main.py": _JEPA_MAIN, "train.py": "def main():\n    pass\n"},
                 (("utils/distributed.py", 7),)),
    ProjectShape("TW405", "look-alike: the same helper used only by a torchrun-launched script",
                 {"utils/distributed.py": _JEPA_DIST,
                  "train.py": "from utils.distributed import init_distributed\ndef main():\n    init_distributed()\n"}),
    ProjectShape("TW405", "look-alike: a data-preparation pool of Python processes, no rendezvous",
                 {"prep.py": d("""
                     import multiprocessing as mp
                     import os
                     def shard(i):
                         os.environ["OMP_NUM_THREADS"] = "1"
                     if __name__ == "__main__":
                         for i in range(4):
                             mp.Process(target=shard, args=(i,)).start()
                 """)}),
]
QUIET += [
    Shape("TW405", "look-alike: a --dist-url option's default formatted once, torchrun-style launch", d("""
        import argparse
        import torch.distributed as dist
        p = argparse.ArgumentParser()
        p.add_argument("--dist-url", default="tcp://{}:{}".format("127.0.0.1", 23456))
        args = p.parse_args()
        dist.init_process_group("nccl", init_method=args.dist_url)
    """)),
]

# ------------------------------------------------------------- TW109 a BatchNorm setter another module applies
# A depth network module defines `def bn_like_tf(m)` that puts BatchNorm2d layers in eval mode and
# sets `m.requires_grad = True` on the module (a plain attribute: the parameters keep training); the
# training script hands it to `model.apply(...)` when an option asks for it.
_BN_NET = d("""
    import torch.nn as nn
    def bn_like_tf(m):
        if isinstance(m, nn.BatchNorm2d):
            m.track_running_stats = True
            m.eval()
            m.requires_grad = True
    class DepthNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(8)
""")
_BN_MAIN = d("""
    import torch
    import depthnet
    def main(args):
        model = depthnet.DepthNet().cuda()
        if args.bn_no_track_stats:
            model.apply(depthnet.bn_like_tf)
        return model
""")
PROJECTS += [
    ProjectShape("TW109", "a BatchNorm eval-setter that another module hands to model.apply",
                 {"depthnet.py": _BN_NET, "train.py": _BN_MAIN}, (("depthnet.py", 5),)),
    ProjectShape("TW109", "look-alike: the setter also turns the parameters' requires_grad off",
                 {"depthnet.py": _BN_NET.replace("        m.requires_grad = True\n",
                                                 "        m.weight.requires_grad = False\n        m.bias.requires_grad = False\n"),
                  "train.py": _BN_MAIN}),
    ProjectShape("TW109", "look-alike: nothing applies the setter",
                 {"depthnet.py": _BN_NET, "train.py": _BN_MAIN.replace("        model.apply(depthnet.bn_like_tf)\n", "        model.eval()\n")}),
]
