"""The recall corpus, round 12 part D: classes the sets 12-14 (tuning sets of round 12) showed for
TW104, TW402, TW403, TW301, TW305, TW405 and TW406 - missed, or reported where the advice does not
apply (METHOD's Rulings R2, R5, R8 included) - each written in our own words and reduced to its
shape, with look-alikes. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW402 GPU-only projects: evaluation scripts, every rank (R2)
# A segmentation project written for GPUs only: its training script saves GPU state dicts, and its
# test script (trains nothing) restores the trained weights on whatever machine evaluates - also
# another GPU count, or none. A distributed training script that loads initial weights in every
# spawned worker restores all of them onto cuda:0.
_SEG_TRAIN = d("""
    import argparse
    import torch
    from nets import SegNet
    def main():
        args = argparse.ArgumentParser().parse_args()
        net = torch.nn.DataParallel(SegNet().cuda())
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        for images, masks in loader:
            loss = net(images.cuda(), masks.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.save({"state_dict": net.state_dict()}, args.save_path + "/last.pth")
""")
_SEG_TEST = d("""
    import argparse
    import torch
    from nets import SegNet
    def main():
        args = argparse.ArgumentParser().parse_args()
        net = torch.nn.DataParallel(SegNet().cuda())
        checkpoint = torch.load(args.model_path)
        net.load_state_dict(checkpoint["state_dict"])
        net.eval()
        with torch.no_grad():
            for images in loader:
                print(net(images.cuda()).argmax(1))
    if __name__ == "__main__":
        main()
""")
_SEG_DDP = d("""
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from nets import SegNet
    def worker(gpu, args):
        dist.init_process_group("nccl", init_method="env://", world_size=args.world, rank=gpu)
        torch.cuda.set_device(gpu)
        net = torch.nn.parallel.DistributedDataParallel(SegNet().cuda(), device_ids=[gpu])
        if args.weight:
            weights = torch.load(args.weight)
            net.load_state_dict(weights["state_dict"])
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        for images, masks in loader:
            loss = net(images.cuda(), masks.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
    if __name__ == "__main__":
        mp.spawn(worker, nprocs=4, args=(parse(),))
""")
_SEG_MODEL = "import torch.nn as nn\nclass SegNet(nn.Module):\n    pass\n"
PROJECTS += [
    ProjectShape("TW402", "GPU-only project: its test script restores the trained weights (R2)", {
        "train.py": _SEG_TRAIN, "test.py": _SEG_TEST, "nets.py": _SEG_MODEL}, (("test.py", 7),)),
    ProjectShape("TW402", "GPU-only project: a module-level demo restores the trained weights with parse_args()", {
        "train.py": _SEG_TRAIN, "nets.py": _SEG_MODEL, "demo.py": d("""
            import argparse
            import torch
            from nets import SegNet
            opt = argparse.ArgumentParser().parse_args()
            net = SegNet()
            net.cuda()
            net.load_state_dict(torch.load(opt.model))
            net.eval()
            for points in loader:
                print(net(points.cuda()))
        """)}, (("demo.py", 7),)),
    ProjectShape("TW402", "GPU-only project: every spawned rank of a distributed training script loads the weights", {
        "train.py": _SEG_DDP, "test.py": _SEG_TEST.replace("checkpoint = torch.load(args.model_path)",
                                                          "checkpoint = torch.load(args.model_path, map_location='cpu')"),
        "nets.py": _SEG_MODEL}, (("train.py", 10),)),
    ProjectShape("TW402", "look-alike: the GPU-only training script resumes its own checkpoint in one process", {
        "train.py": _SEG_TRAIN.replace("    for images, masks in loader:",
                                       "    net.load_state_dict(torch.load(args.resume)[\"state_dict\"])\n    for images, masks in loader:"),
        "test.py": _SEG_TEST.replace("torch.load(args.model_path)", "torch.load(args.model_path, map_location='cpu')"),
        "nets.py": _SEG_MODEL}),
    ProjectShape("TW402", "look-alike: only rank 0 of the distributed script loads the weights", {
        "train.py": _SEG_DDP.replace("    if args.weight:", "    if args.weight and gpu == 0:"),
        "nets.py": _SEG_MODEL}),
    ProjectShape("TW402", "look-alike: the test script of a GPU-only project whose training saves host tensors", {
        "train.py": _SEG_TRAIN.replace('torch.save({"state_dict": net.state_dict()}',
                                       'torch.save({"state_dict": net.module.cpu().state_dict()}'),
        "test.py": _SEG_TEST, "nets.py": _SEG_MODEL}),
]

# ------------------------------------------------------------- TW402 CPU-only scripts reading GPU checkpoints (R2)
# A GAN project: the training script saves a dict of GPU state dicts; a factorisation script with no
# device code at all reads one of its entries (`ckpt["g_ema"]`) and saves its own result on the
# host. A point-cloud viewer restores the trained state dict through a name (`state = torch.load(p)`).
_GAN_TRAIN = d("""
    import torch
    device = "cuda"
    g = Generator().to(device)
    g_ema = Generator().to(device)
    opt = torch.optim.Adam(g.parameters())
    for real in loader:
        loss = g(real.to(device)).mean()
        loss.backward()
        opt.step()
    torch.save({"g": g.state_dict(), "g_ema": g_ema.state_dict(), "args": args}, "ckpt/last.pt")
""")
PROJECTS += [
    ProjectShape("TW402", "a script with no device code reads one entry of the GPU training checkpoint", {
        "train.py": _GAN_TRAIN, "factorize.py": d("""
            import argparse
            import torch
            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("ckpt")
                args = p.parse_args()
                ckpt = torch.load(args.ckpt)
                mats = [v for k, v in ckpt["g_ema"].items() if "style" in k]
                basis = torch.svd(torch.cat(mats, 0)).V.to("cpu")
                torch.save({"basis": basis}, "basis.pt")
        """)}, (("factorize.py", 7),)),
    ProjectShape("TW402", "a viewer with no device code restores the GPU-trained state through a name", {
        "train.py": _GAN_TRAIN, "show.py": d("""
            import argparse
            import torch
            parser = argparse.ArgumentParser()
            parser.add_argument("--model")
            opt = parser.parse_args()
            state = torch.load(opt.model)
            g = Generator(size=state["conv.weight"].size(0))
            g.load_state_dict(state)
            g.eval()
        """)}, (("show.py", 6),)),
    ProjectShape("TW402", "look-alike: a GPU script reads back the basis the project saved with .to('cpu')", {
        "train.py": _GAN_TRAIN, "factorize.py": d("""
            import torch
            ckpt = torch.load("ckpt/last.pt", map_location="cpu")
            basis = torch.svd(ckpt["g_ema"]["w"]).V.to("cpu")
            torch.save({"ckpt": "ckpt/last.pt", "basis": basis}, "basis.pt")
        """), "apply.py": d("""
            import torch
            basis = torch.load("basis.pt")["basis"].to("cuda")
            g = Generator().to("cuda")
        """)}),
]

# ------------------------------------------------------------- TW402 load helpers with no device code
# A continual-learning benchmark that trains on the GPU or the CPU: its utils module (no device code)
# restores `checkpoint["state"]`, the entry the training saves from the model on the GPU. A
# molecule model's `from_pretrained(self, path)` restores the state of a submodule whose class the
# pretraining script builds on the device and saves.
_CL_MAIN = d("""
    import torch
    import utils
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Classifier().to(device)
    opt = torch.optim.Adam(model.parameters())
    for x, y in loader:
        loss = model(x.to(device), y.to(device))
        loss.backward()
        opt.step()
    utils.save_checkpoint(model, "store/models")
    utils.load_checkpoint(model, "store/models")
""")
_CL_UTILS = d("""
    import os
    import torch
    def save_checkpoint(model, model_dir):
        torch.save({"state": model.state_dict(), "name": model.name}, os.path.join(model_dir, "model.pt"))
    def load_checkpoint(model, model_dir):
        checkpoint = torch.load(os.path.join(model_dir, "model.pt"))
        model.load_state_dict(checkpoint["state"])
""")
_MOL_PRETRAIN = d("""
    import torch
    from model import GraphEncoder
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    encoder = GraphEncoder(5, 300).to(device)
    opt = torch.optim.Adam(encoder.parameters())
    for batch in loader:
        loss = encoder(batch.to(device)).sum()
        loss.backward()
        opt.step()
    torch.save(encoder.state_dict(), args.output + ".pth")
""")
_MOL_MODEL = d("""
    import torch
    import torch.nn as nn
    class GraphEncoder(nn.Module):
        pass
    class PropertyHead(nn.Module):
        def __init__(self, layers, dim):
            super().__init__()
            self.encoder = GraphEncoder(layers, dim)
        def from_pretrained(self, path):
            self.encoder.load_state_dict(torch.load(path))
""")
_MOL_FINETUNE = d("""
    import torch
    from model import PropertyHead
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    head = PropertyHead(5, 300)
    head.from_pretrained(args.input_model)
    head.to(device)
""")
PROJECTS += [
    ProjectShape("TW402", "a utils load helper restores the entry the training saves from the GPU", {
        "main.py": _CL_MAIN, "utils.py": _CL_UTILS}, (("utils.py", 6),)),
    ProjectShape("TW402", "a model's from_pretrained() restores the submodule class the pretraining saves from the GPU", {
        "pretrain.py": _MOL_PRETRAIN, "model.py": _MOL_MODEL, "finetune.py": _MOL_FINETUNE}, (("model.py", 10),)),
    ProjectShape("TW402", "look-alike: from_pretrained() of a submodule class the project never saves (shipped weights)", {
        "pretrain.py": _MOL_PRETRAIN.replace("torch.save(encoder.state_dict()", "torch.save(opt.state_dict()"),
        "model.py": _MOL_MODEL, "finetune.py": _MOL_FINETUNE}),
    ProjectShape("TW402", "look-alike: the load helper in a project that never runs on a GPU", {
        "main.py": _CL_MAIN.replace('"cuda" if torch.cuda.is_available() else ', ""), "utils.py": _CL_UTILS}),
]

# ------------------------------------------------------------- TW402 files that hold host data only
# A cached corpus read back in the branch beside the one that builds and saves it; a class that
# generates its NumPy trajectories with a helper and saves them; a script that saves after
# `model = model.cpu()` what another script of the project writes from the GPU under the same name.
FIND += [
    Shape("TW402", "look-alike: the cache's other branch computes features with the model (device tensors)", d("""
        import os
        import torch
        net = Encoder().cuda()
        if os.path.exists(args.cache):
            feats = torch.load(args.cache)
        else:
            feats = extract(net, loader)
            torch.save(feats, args.cache)
    """), 5),
]
QUIET += [
    Shape("TW402", "a language model's corpus cached under a hash of the data path", d("""
        import os
        import hashlib
        import torch
        import data
        model = RNNModel().cuda()
        fn = "corpus.{}.data".format(hashlib.md5(args.data.encode()).hexdigest())
        if os.path.exists(fn):
            corpus = torch.load(fn)
        else:
            corpus = data.Corpus(args.data)
            torch.save(corpus, fn)
    """)),
    Shape("TW402", "question answering: tokenised examples cached beside the data, in a class", d("""
        import os
        import torch
        class SQuAD:
            def __init__(self, args):
                self.device = torch.device("cuda")
                path = args.data + "/train_examples.pt"
                if os.path.exists(args.data + "/splits"):
                    examples = torch.load(path)
                else:
                    self.train = build_splits(args.data)
                    torch.save(self.train.examples, path)
    """)),
    Shape("TW402", "simulated trajectories made by a NumPy helper of the class, saved and loaded onto the device", d("""
        import os
        import numpy as np
        import torch
        class Hopper:
            def __init__(self, root, generate=False, device=torch.device("cpu")):
                self.file = os.path.join(root, "training.pt")
                if generate:
                    torch.save(self._simulate(100), self.file)
                self.data = torch.Tensor(torch.load(self.file)).to(device)
            def _simulate(self, n):
                out = np.zeros((n, 200, 14))
                for i in range(n):
                    out[i] = np.random.uniform(-1, 1, (200, 14))
                return out
    """)),
]
_GRAPH_TRANSDUCTIVE = d("""
    import torch
    def main(args):
        device = torch.device("cuda" if args.gpu >= 0 else "cpu")
        model = build(args).to(device)
        if not args.load_model:
            model = pretrain(model, device)
            model = model.cpu()
        if args.load_model:
            model.load_state_dict(torch.load("checkpoint.pt"))
        if args.save_model:
            torch.save(model.state_dict(), "checkpoint.pt")
        model = model.to(device)
""")
_GRAPH_INDUCTIVE = d("""
    import torch
    def main(args):
        device = torch.device("cuda" if args.gpu >= 0 else "cpu")
        model = build(args).to(device)
        if not args.load_model:
            model = pretrain(model, device)
        if args.load_model:
            model.load_state_dict(torch.load("checkpoint.pt"))
        if args.save_model:
            torch.save(model.state_dict(), "checkpoint.pt")
""")
PROJECTS += [
    ProjectShape("TW402", "a script that saves after model = model.cpu() reads back its own file; the sibling saves from the GPU", {
        "transductive.py": _GRAPH_TRANSDUCTIVE, "inductive.py": _GRAPH_INDUCTIVE}, (("inductive.py", 8),)),
]

# ------------------------------------------------------------- TW402 same-process reload, dead helpers (R5)
# A recommender trainer's test() reloads the best checkpoint its train() wrote; the entry script
# calls test() right after train(), in one process. A utils module keeps load helpers nothing calls.
_REC_TRAINER = d("""
    import os
    import torch
    class Trainer:
        def __init__(self, model, root):
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self.model, self.root = model.to(self.device), root
        def train(self):
            for epoch in range(10):
                self.train_one_epoch()
                self.validate()
        def train_one_epoch(self):
            loss = self.model(next(self.batches)).mean()
            loss.backward()
            self.optimizer.step()
        def test(self):
            best = torch.load(os.path.join(self.root, "models", "best_acc_model.pth")).get("model_state_dict")
            self.model.load_state_dict(best)
""")
_REC_MAIN = d("""
    from trainers import Trainer
    def run(args):
        trainer = Trainer(build(args), args.root)
        trainer.train()
        if input("test? ") == "y":
            trainer.test()
""")
_DEAD_UTILS = d("""
    import torch
    def batch_to_gpu(batch):
        return [t.cuda() for t in batch]
    def load_pretrained_weights(model, path):
        model.load_state_dict(torch.load(path))
""")
_DEAD_MAIN = d("""
    import torch
    import utils
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Recommender().to(device)
    for batch in loader:
        print(model(*utils.batch_to_gpu(batch)))
""")
PROJECTS += [
    ProjectShape("TW402", "a trainer's test() reloads the best checkpoint, called only right after train()", {
        "trainers.py": _REC_TRAINER, "main.py": _REC_MAIN}),
    ProjectShape("TW402", "look-alike: a test-only entry point calls test() without training first", {
        "trainers.py": _REC_TRAINER,
        "main.py": _REC_MAIN + "def evaluate(args):\n    Trainer(build(args), args.root).test()\n"},
        (("trainers.py", 16),)),
    ProjectShape("TW402", "a utils load helper that nothing in the project calls (dead code, R5)", {
        "main.py": _DEAD_MAIN, "utils.py": _DEAD_UTILS}),
    ProjectShape("TW402", "look-alike: the same helper called by the entry script", {
        "main.py": _DEAD_MAIN + "utils.load_pretrained_weights(model, args.weights)\n", "utils.py": _DEAD_UTILS},
        (("utils.py", 5),)),
]
