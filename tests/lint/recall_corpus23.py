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
    ProjectShape("TW402", "look-alike: the GPU-only test script restores weights shipped with the project (a name no save writes)", {
        "train.py": _SEG_TRAIN, "test.py": _SEG_TEST.replace("torch.load(args.model_path)", 'torch.load("weights/pspnet_voc.pth")'),
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
    ProjectShape("TW402", "a utils load helper restores the entry the training saves from the GPU (also for evaluate-only runs)", {
        "main.py": _CL_MAIN.replace("for x, y in loader:", "if args.eval_only:\n    utils.load_checkpoint(model, args.model_dir)\nfor x, y in loader:"),
        "utils.py": _CL_UTILS}, (("utils.py", 6),)),
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

# ------------------------------------------------------------- TW104 RL: evaluation action, the action of a step method
# An RL library: each agent's `eval_step(self, state)` runs its network and hands back host data
# (`to_np(...)`); its `step()` picks the exploration action with the network once per call (the
# environment stepped right after, the result unpacked as next_state, reward, done, info), and the
# update later in the same method rebinds `action` to the actor's output it backpropagates.
FIND += [
    Shape("TW104", "an agent's eval_step(state) returns to_np of its network's output", d("""
        from ..utils import *
        class TD3Agent(BaseAgent):
            def eval_step(self, state):
                state = self.config.state_normalizer(state)
                action = self.network(state)
                return to_np(action)
    """), 5, "agent.py"),
    Shape("TW104", "eval_step(state) takes the greedy action through NumPy and returns it in a list", d("""
        import numpy as np
        class QRAgent(BaseAgent):
            def eval_step(self, state):
                q = self.network(state)["quantile"].mean(-1)
                action = np.argmax(to_np(q).flatten())
                return [action]
    """), 4, "agent.py"),
    Shape("TW104", "step() picks the exploration action with the network; the update rebinds `action` and backpropagates", d("""
        import numpy as np
        class DDPGAgent(BaseAgent):
            def step(self):
                if self.total_steps < self.config.warm_up:
                    action = [self.task.action_space.sample()]
                else:
                    action = self.network(self.state)
                    action = to_np(action)
                    action += self.random_process.sample()
                next_state, reward, done, info = self.task.step(action)
                self.replay.feed(dict(state=self.state, action=action, reward=reward))
                self.state = next_state
                if self.replay.size() >= self.config.warm_up:
                    states = tensor(self.replay.sample().state)
                    action = self.network.actor(states)
                    policy_loss = -self.network.critic(states, action).mean()
                    policy_loss.backward()
                    self.network.actor_opt.step()
    """), 7, "agent.py"),
    Shape("TW104", "an actor's transition: q values made host data by a method of the class, then epsilon-greedy", d("""
        class DQNActor(BaseActor):
            def compute_q(self, prediction):
                q_values = to_np(prediction["q"])
                return q_values
            def _transition(self):
                with self.config.lock:
                    prediction = self._network(self.config.state_normalizer(self._state))
                q_values = self.compute_q(prediction)
                action = epsilon_greedy(self.epsilon, q_values)
                next_state, reward, done, info = self._task.step(action)
                entry = [self._state, action, reward, next_state, done, info]
                self._state = next_state
                return entry
    """), 7, "agent.py"),
]
QUIET += [
    Shape("TW104", "look-alike: a trainer's eval_step(self, batch) returns the loss tensor", d("""
        class Trainer:
            def eval_step(self, batch):
                out = self.model(batch["x"])
                return self.loss_fn(out, batch["y"])
    """)),
    Shape("TW104", "look-alike: the step's network output is stored in the rollout (its graph may be used)", d("""
        class A2CAgent(BaseAgent):
            def step(self):
                prediction = self.network(self.states)
                next_states, rewards, terminals, info = self.task.step(to_np(prediction["action"]))
                self.storage.feed(prediction)
                self.states = next_states
    """)),
    Shape("TW104", "look-alike: the exploration action feeds the update's backward in the same step", d("""
        class PGAgent(BaseAgent):
            def step(self):
                action = self.network(self.state)
                next_state, reward, done, info = self.task.step(to_np(action))
                loss = -(action * reward).mean()
                loss.backward()
                self.opt.step()
    """)),
]

# ------------------------------------------------------------- TW104 few-shot models that evaluate themselves
# Few-shot learning code: a model class (nn.Module) has its own `train_loop` and `test_loop`; the
# test loop counts correct answers per episode through `self.correct(x)`, which runs
# `self.set_forward(x)` (the forward over an episode's set); a baseline's test loop hands over to an
# `analysis_loop` that extracts features with `self.feature.forward(x)`. The test script scores
# saved features with `model.set_forward(z_all, is_feature=True)` in `feature_evaluation()`.
_FEWSHOT_TEMPLATE = d("""
    import numpy as np
    import torch.nn as nn
    from abc import abstractmethod
    class MetaTemplate(nn.Module):
        @abstractmethod
        def set_forward(self, x, is_feature):
            pass
        def correct(self, x):
            scores = self.set_forward(x)
            y_query = np.repeat(range(self.n_way), self.n_query)
            top = scores.data.topk(1, 1, True, True)[1].cpu().numpy()
            return float(np.sum(top[:, 0] == y_query)), len(y_query)
        def train_loop(self, epoch, train_loader, optimizer):
            for i, (x, _) in enumerate(train_loader):
                optimizer.zero_grad()
                loss = self.set_forward_loss(x)
                loss.backward()
                optimizer.step()
        def test_loop(self, test_loader):
            accs = []
            for i, (x, _) in enumerate(test_loader):
                right, count = self.correct(x)
                accs.append(right / count * 100)
            return np.mean(accs)
""")
_FEWSHOT_TRAIN = d("""
    from methods.template import MetaTemplate
    def train(base_loader, val_loader, model, optimizer, epochs):
        for epoch in range(epochs):
            model.train()
            model.train_loop(epoch, base_loader, optimizer)
            model.eval()
            acc = model.test_loop(val_loader)
""")
PROJECTS += [
    ProjectShape("TW104", "a model class's test_loop() runs self.correct(x), which runs self.set_forward(x)", {
        "methods/template.py": _FEWSHOT_TEMPLATE, "train.py": _FEWSHOT_TRAIN}, (("methods/template.py", 9),)),
    ProjectShape("TW104", "look-alike: the training script calls test_loop() under no_grad", {
        "methods/template.py": _FEWSHOT_TEMPLATE, "train.py": _FEWSHOT_TRAIN.replace(
            "        acc = model.test_loop(val_loader)", "        with torch.no_grad():\n            acc = model.test_loop(val_loader)")}),
]
FIND += [
    Shape("TW104", "a baseline's test_loop() hands over to analysis_loop(), which extracts features with self.feature.forward", d("""
        import torch.nn as nn
        from torch.autograd import Variable
        class BaselineTrain(nn.Module):
            def __init__(self, model_func):
                super().__init__()
                self.feature = model_func()
            def test_loop(self, val_loader):
                if self.DBval:
                    return self.analysis_loop(val_loader)
                return -1
            def analysis_loop(self, val_loader):
                feats = {}
                for x, y in val_loader:
                    out = self.feature.forward(Variable(x.cuda())).data.cpu().numpy()
                    feats.setdefault(int(y[0]), []).append(out)
                return feats
    """), 14),
    Shape("TW104", "feature_evaluation() scores an episode of saved features with model.set_forward", d("""
        import numpy as np
        import torch
        def feature_evaluation(cl_data_file, model, n_way=5, n_query=15):
            z_all = torch.from_numpy(np.array([cl_data_file[c][:20] for c in list(cl_data_file)[:n_way]]))
            model.n_query = n_query
            scores = model.set_forward(z_all, is_feature=True)
            return np.mean(scores.data.cpu().numpy().argmax(1) == np.repeat(range(n_way), n_query))
    """), 6),
    Shape("TW104", "a module method puts itself in eval mode and scores a dataset with self.forward", d("""
        import torch
        from torch import nn
        class MemoryBuffer(nn.Module):
            def construct_memory_set(self, dataset, n):
                mode = self.training
                self.eval()
                scores = []
                for data, _ in torch.utils.data.DataLoader(dataset, batch_size=128):
                    f = self.forward(data.to(next(self.parameters()).device))
                    scores.append(torch.softmax(f, -1).max(-1)[0].detach())
                self.train(mode=mode)
                return torch.cat(scores).topk(n)[1]
    """), 9),
]
QUIET += [
    Shape("TW104", "look-alike: set_forward_adaptation fine-tunes a classifier (backward inside)", d("""
        import torch
        import torch.nn as nn
        class MetaTemplate(nn.Module):
            def set_forward_adaptation(self, x):
                clf = nn.Linear(64, 5)
                opt = torch.optim.SGD(clf.parameters(), lr=0.01)
                for _ in range(100):
                    loss = nn.functional.cross_entropy(clf(x), self.y)
                    loss.backward()
                    opt.step()
                return clf(x)
            def test_loop(self, test_loader):
                return [self.set_forward_adaptation(x) for x, _ in test_loader]
    """)),
    Shape("TW104", "look-alike: an optimizer's Fisher estimate after model.eval() takes gradients through its own helper", d("""
        import torch
        class FROMP(torch.optim.Optimizer):
            def cac_grad(self, loss, outputs):
                return torch.autograd.grad(loss, outputs, retain_graph=True)
            def cac_jacobian(self, output, outputs):
                return [self.cac_grad(output[:, i].sum(), outputs) for i in range(output.shape[1])]
            def update_fisher(self, loader):
                self.model.eval()
                for data, _ in loader:
                    logits = self.model.forward(data)
                    jac = self.cac_jacobian(logits, self.outputs)
                    self.fisher += sum(j[0].pow(2).sum() for j in jac)
    """)),
]

# ------------------------------------------------------------- TW104 evaluation reached across files
# A time-series project whose runner's `evaluate()` (running.py) puts the model in eval mode and runs
# it; the training loop calls it under no_grad, the test-only path of main.py calls it bare. A helper
# module's feature extraction handed a network whose parameters were all frozen records nothing.
_RUNNING = d("""
    import torch
    def validate(val_evaluator, epoch):
        with torch.no_grad():
            metrics = val_evaluator.evaluate(epoch, keep_all=False)
        return metrics
    class BaseRunner:
        def evaluate(self, epoch_num=None, keep_all=True):
            raise NotImplementedError("override in a child class")
    class SupervisedRunner(BaseRunner):
        def evaluate(self, epoch_num=None, keep_all=True):
            self.model = self.model.eval()
            total = 0.0
            for X, y in self.dataloader:
                total += self.loss_module(self.model(X.to(self.device)), y.to(self.device)).sum()
            return {"loss": total}
""")
_MAIN_TEST_ONLY = d("""
    from running import SupervisedRunner, validate
    def main(config, model, test_loader, device, loss_module):
        if config["test_only"]:
            test_evaluator = SupervisedRunner(model, test_loader, device, loss_module)
            aggr_metrics_test = test_evaluator.evaluate(keep_all=True)
            print(aggr_metrics_test)
            return
""")
_UTILS_PRE = d("""
    import torch
    def preprocess(feature_extractor, dataset_list, batch=128):
        out = []
        for data in dataset_list:
            for x, y in torch.utils.data.DataLoader(data, batch_size=batch):
                out.append((feature_extractor(x).cpu(), y))
        return out
""")
_MAIN_FROZEN = d("""
    import torch
    import utils
    def run(args, train_datasets):
        feature_extractor = build_extractor(args)
        for param in feature_extractor.parameters():
            param.requires_grad = False
        feature_extractor.eval()
        train_datasets = utils.preprocess(feature_extractor, train_datasets, batch=args.batch)
        return train_datasets
""")
PROJECTS += [
    ProjectShape("TW104", "the test-only path calls the runner's evaluate() bare; the project wraps it in no_grad elsewhere", {
        "running.py": _RUNNING, "main.py": _MAIN_TEST_ONLY}, (("main.py", 5),)),
    ProjectShape("TW104", "look-alike: the test-only path calls evaluate() under no_grad too", {
        "running.py": _RUNNING, "main.py": _MAIN_TEST_ONLY.replace(
            "        aggr_metrics_test = test_evaluator.evaluate(keep_all=True)",
            "        with torch.no_grad():\n            aggr_metrics_test = test_evaluator.evaluate(keep_all=True)")}),
    ProjectShape("TW104", "a helper module's feature extraction handed a network whose parameters were all frozen", {
        "utils.py": _UTILS_PRE, "main.py": _MAIN_FROZEN}),
    ProjectShape("TW104", "look-alike: the same extraction when only the network's mode was switched", {
        "utils.py": _UTILS_PRE, "main.py": _MAIN_FROZEN.replace(
            "    for param in feature_extractor.parameters():\n        param.requires_grad = False\n",
            "    print(sum(p.numel() for p in feature_extractor.parameters()))\n")},
        (("main.py", 7),)),
]

# ------------------------------------------------------------- TW104 a model's sample() that decodes under no_grad itself
_VAE = d("""
    import torch
    from torch import nn
    class VAE(nn.Module):
        def sample(self, size):
            z = torch.randn(size, self.z_dim).to(self._device())
            with torch.no_grad():
                x = self.decode(z)
            return x
""")
_SHOW = d("""
    from models.vae import VAE
    def show_samples(model, size=32):
        model.eval()
        images = model.sample(size)
        return images.view(-1, 1, 28, 28).cpu()
""")
_SHOW_MAIN = "from eval.show import show_samples\nshow_samples(build_vae())\n"
PROJECTS += [
    ProjectShape("TW104", "an imported VAE's sample() decodes under no_grad itself", {
        "models/vae.py": _VAE, "eval/show.py": _SHOW, "main.py": _SHOW_MAIN}),
    ProjectShape("TW104", "look-alike: the project's sample() decodes with autograd on", {
        "models/vae.py": _VAE.replace("        with torch.no_grad():\n            x = self.decode(z)\n", "        x = self.decode(z)\n"),
        "eval/show.py": _SHOW, "main.py": _SHOW_MAIN}, (("eval/show.py", 4),)),
]
QUIET += [
    Shape("TW104", "a @torch.no_grad() extraction function that runs the global generator, called after .eval()", d("""
        import torch
        @torch.no_grad()
        def extract_features(generator, inception, batch_size, n_batches, device):
            feats = []
            for _ in range(n_batches):
                img = g(torch.randn(batch_size, 512, device=device))
                feats.append(inception(img)[0].cpu())
            return torch.cat(feats)
        if __name__ == "__main__":
            g = Generator(256).to("cuda")
            g.load_state_dict(torch.load(args.ckpt, map_location="cpu")["g_ema"])
            g.eval()
            inception = load_inception().eval()
            features = extract_features(g, inception, 64, 10, "cuda")
    """)),
]

# ------------------------------------------------------------- TW104 single runs of a script after .eval()
# A point-cloud viewer restores the trained weights and segments one shape; the `__main__` block of a
# segmentation model's file builds it, puts it in eval mode and runs a random input; a GAN projector
# optimises a latent through the frozen generator, then renders the final latent once more.
FIND += [
    Shape("TW104", "a viewer script restores the trained weights and runs the model once", d("""
        import argparse
        import torch
        opt = argparse.ArgumentParser().parse_args()
        state_dict = torch.load(opt.model, map_location="cpu")
        classifier = SegNet(k=state_dict["conv4.weight"].size(0))
        classifier.load_state_dict(state_dict)
        classifier.eval()
        point = torch.from_numpy(load_points(opt.idx)).unsqueeze(0)
        pred, _ = classifier(point)
        show(pred.data.max(2)[1].numpy())
    """), 9),
    Shape("TW104", "a model file's __main__ smoke test: model.eval(), then model(input)", d("""
        import torch
        import torch.nn as nn
        class PSPNet(nn.Module):
            def forward(self, x):
                return self.head(self.backbone(x))
        if __name__ == "__main__":
            x = torch.rand(4, 3, 473, 473)
            model = PSPNet()
            model.eval()
            print(model)
            output = model(x)
            print("PSPNet", output.size())
    """), 11),
    Shape("TW104", "a GAN projector renders the optimised latent after the loop through the frozen generator", d("""
        import torch
        if __name__ == "__main__":
            g_ema = Generator(256)
            g_ema.load_state_dict(torch.load(args.ckpt, map_location="cpu")["g_ema"])
            g_ema.eval()
            latent = mean_latent(g_ema).detach().clone().requires_grad_(True)
            optimizer = torch.optim.Adam([latent], lr=0.1)
            for i in range(1000):
                img, _ = g_ema([latent])
                loss = perceptual(img, target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            img_gen, _ = g_ema([latent.detach()])
            save_image(img_gen, "projected.png")
    """), 14),
]
QUIET += [
    Shape("TW104", "look-alike: a model file's __main__ runs the model without putting it in eval mode", d("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                return x
        if __name__ == "__main__":
            model = Net()
            print(model(torch.rand(1, 3, 32, 32)).shape)
    """)),
    Shape("TW104", "look-alike: the projector renders the final latent under no_grad", d("""
        import torch
        if __name__ == "__main__":
            g_ema = Generator(256)
            g_ema.eval()
            latent = torch.zeros(1, 512, requires_grad=True)
            optimizer = torch.optim.Adam([latent], lr=0.1)
            for i in range(1000):
                loss = perceptual(g_ema([latent])[0], target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            with torch.no_grad():
                img_gen, _ = g_ema([latent])
    """)),
    Shape("TW104", "look-alike: after the loop, the network being optimised runs again (it trains: its parameters are optimised)", d("""
        import torch
        net = Net()
        net.eval()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, y in loader:
            loss = (net(x) - y).pow(2).mean()
            loss.backward()
            optimizer.step()
        final = net(probe)
    """)),
]

# ------------------------------------------------------------- TW403 guards that are always on, a reversed device choice
# A language model's pointer-cache evaluation offers `--cuda` off (it maps the checkpoint to the CPU
# then) but its one-hot helper takes `cuda=True` and no call passes it. A depth trainer chooses
# `torch.device("cpu" if self.opt.no_cuda else "cuda")` and still builds a target with
# `torch.ones(mask.shape).cuda()` inside a loss call.
FIND += [
    Shape("TW403", "a helper's .cuda() guarded by a parameter that defaults to True and that no call passes", d("""
        import argparse
        import numpy as np
        import torch
        from torch.autograd import Variable
        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", action="store_false")
        args = parser.parse_args()
        def one_hot(idx, size, cuda=True):
            a = np.zeros((1, size), np.float32)
            a[0][idx] = 1
            v = Variable(torch.from_numpy(a))
            if cuda: v = v.cuda()
            return v
        def evaluate(targets, ntokens):
            return torch.cat([one_hot(t, ntokens) for t in targets])
        with open(args.save, "rb") as f:
            if not args.cuda:
                model = torch.load(f, map_location=lambda storage, loc: storage)
            else:
                model = torch.load(f)
    """), 12, "pointer.py"),
    Shape("TW403", "a factory moved with .cuda() inside a loss call, the device chosen as 'cpu' if no_cuda else 'cuda'", d("""
        import torch
        import torch.nn as nn
        class Trainer:
            def __init__(self, opt):
                self.opt = opt
                self.device = torch.device("cpu" if self.opt.no_cuda else "cuda")
            def compute_losses(self, outputs):
                mask = outputs["mask"]
                return 0.2 * nn.BCELoss()(mask, torch.ones(mask.shape).cuda())
    """), 9),
]
QUIET += [
    Shape("TW403", "look-alike: the caller passes the script's flag to the helper's cuda parameter", d("""
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", action="store_true")
        args = parser.parse_args()
        def one_hot(idx, size, cuda=True):
            v = torch.zeros(1, size)
            v[0][idx] = 1
            if cuda: v = v.cuda()
            return v
        codes = [one_hot(t, 100, args.cuda) for t in range(10)]
    """)),
    Shape("TW403", "look-alike: the parameter defaults to False (off unless the caller asks)", d("""
        import argparse
        import torch
        args = argparse.ArgumentParser().parse_args()
        def one_hot(idx, size, cuda=False):
            v = torch.zeros(1, size)
            if cuda: v = v.cuda()
            return v
        codes = [one_hot(t, 100) for t in range(10)]
    """)),
]
PROJECTS += [
    ProjectShape("TW403", "an inverse wavelet helper that nothing in the project calls (dead code, R5)", {
        "swagan.py": d("""
            import torch
            def iwt_init(x):
                h = torch.zeros([x.size(0), x.size(1) // 4, x.size(2) * 2, x.size(3) * 2]).float().cuda()
                h[:, :, 0::2, 0::2] = x[:, 0::4] - x[:, 1::4]
                return h
            class InverseHaar(torch.nn.Module):
                def forward(self, x):
                    return x
        """),
        "train.py": "import torch\nfrom swagan import InverseHaar\ndevice = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
                    "net = InverseHaar().to(device)\nprint(net(torch.zeros(1)))\n"}),
    ProjectShape("TW403", "look-alike: the same helper called by the model, in a project whose script falls back to the CPU", {
        "swagan.py": d("""
            import torch
            def iwt_init(x):
                h = torch.zeros([x.size(0), x.size(1) // 4, x.size(2) * 2, x.size(3) * 2]).float().cuda()
                h[:, :, 0::2, 0::2] = x[:, 0::4] - x[:, 1::4]
                return h
            class InverseHaar(torch.nn.Module):
                def forward(self, x):
                    return iwt_init(x)
        """),
        "train.py": "import torch\nfrom swagan import InverseHaar\ndevice = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
                    "net = InverseHaar().to(device)\nprint(net(torch.zeros(1)))\n"},
        (("swagan.py", 3),)),
]

# ------------------------------------------------------------- TW301 a random name for the run's output
# A time-series framework seeds torch, then names the experiment's output folder with a timestamp and
# three random characters drawn from Python's `random`: no draw the run computes with.
QUIET += [
    Shape("TW301", "three random characters appended to the output directory's name", d("""
        import os
        import random
        import string
        import torch
        def setup(config):
            torch.manual_seed(config["seed"])
            output_dir = os.path.join(config["output_dir"], config["experiment_name"])
            rand_suffix = "".join(random.choices(string.ascii_letters + string.digits, k=3))
            output_dir += "_" + config["stamp"] + "_" + rand_suffix
            os.makedirs(os.path.join(output_dir, "checkpoints"))
            return output_dir
    """)),
    Shape("TW301", "a random run tag used only in the checkpoint path", d("""
        import os
        import random
        import numpy as np
        np.random.seed(0)
        run_tag = random.randint(0, 9999)
        ckpt_path = os.path.join("runs", str(run_tag), "model.pt")
    """)),
]
FIND += [
    Shape("TW301", "look-alike: random strings drawn as training data (a synthetic copy task)", d("""
        import random
        import string
        import torch
        torch.manual_seed(0)
        samples = []
        for _ in range(1000):
            word = "".join(random.choices(string.ascii_lowercase, k=8))
            samples.append(word)
    """), 7),
]

# ------------------------------------------------------------- TW305 a misspelled flag; the flag set where __main__ runs main()
FIND += [
    Shape("TW305", "a seeding helper sets a misspelled cuDNN flag (cudnn.determinstic = True)", d("""
        import random
        import numpy as np
        import torch
        def set_random_seed(seed):
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            torch.backends.cudnn.determinstic = True
    """), 8),
    Shape("TW305", "the flag set in the __main__ block that runs the training's main()", d("""
        import torch
        def main():
            model = build()
            for x, y in loader:
                loss = model(x, y)
                loss.backward()
        if __name__ == "__main__":
            torch.backends.cudnn.benchmark = False
            torch.backends.cudnn.deterministic = True
            try:
                main()
            except KeyboardInterrupt:
                print("interrupted")
    """), 9),
]
QUIET += [
    Shape("TW305", "look-alike: a misspelled flag next to use_deterministic_algorithms(True)", d("""
        import torch
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.determinstic = True
    """)),
    Shape("TW305", "look-alike: a library module's __main__ smoke test sets the flag and prints a shape", d("""
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def forward(self, x):
                return x
        if __name__ == "__main__":
            torch.backends.cudnn.deterministic = True
            print(Block()(torch.zeros(1, 3)).shape)
    """)),
]

# ------------------------------------------------------------- TW405 processes started by hand, rendezvous in a helper
# A summarisation project starts one `torch.multiprocessing.get_context("spawn").Process` per GPU in
# its training script; each runs `distributed.multi_init(...)`, whose init_method is a hard-coded
# `tcp://localhost:10000`.
_DIST_HELPER = d("""
    import torch.distributed
    def multi_init(device_id, world_size, gpu_ranks):
        dist_init_method = "tcp://localhost:10000"
        torch.distributed.init_process_group(backend="nccl", init_method=dist_init_method,
                                             world_size=world_size, rank=gpu_ranks[device_id])
        return torch.distributed.get_rank()
""")
_PROC_TRAIN = d("""
    import torch
    import distributed
    def train_multi(args):
        mp = torch.multiprocessing.get_context("spawn")
        procs = []
        for i in range(args.world_size):
            procs.append(mp.Process(target=run, args=(args, i), daemon=True))
            procs[i].start()
        for p in procs:
            p.join()
    def run(args, device_id):
        gpu_rank = distributed.multi_init(device_id, args.world_size, args.gpu_ranks)
        train_single(args, device_id)
""")
PROJECTS += [
    ProjectShape("TW405", "a helper's hard-coded init_method for processes the training script starts by hand", {
        "distributed.py": _DIST_HELPER, "train.py": _PROC_TRAIN}, (("distributed.py", 3),)),
    ProjectShape("TW405", "look-alike: the helper reads the address from the environment (torchrun)", {
        "distributed.py": _DIST_HELPER.replace('"tcp://localhost:10000"', '"env://"'), "train.py": _PROC_TRAIN}),
    ProjectShape("TW405", "look-alike: the helper is only used by a script that torchrun launches", {
        "distributed.py": _DIST_HELPER,
        "train.py": "import distributed\ndef main(args):\n    distributed.multi_init(args.local_rank, args.world_size, args.ranks)\n"}),
]
FIND += [
    Shape("TW405", "a Process per GPU started in the same file that hard-codes the init_method", d("""
        import torch
        import torch.distributed as dist
        def run(rank, world):
            dist.init_process_group("nccl", init_method="tcp://127.0.0.1:23456", world_size=world, rank=rank)
        if __name__ == "__main__":
            ctx = torch.multiprocessing.get_context("spawn")
            procs = [ctx.Process(target=run, args=(r, 4)) for r in range(4)]
            for p in procs:
                p.start()
    """), 7),
]

# ------------------------------------------------------------- TW406 a sampler built in a helper, passes of an endless generator
_GAN_SAMPLER = d("""
    from torch.utils import data
    def data_sampler(dataset, shuffle, distributed):
        if distributed:
            return data.distributed.DistributedSampler(dataset, shuffle=shuffle)
        if shuffle:
            return data.RandomSampler(dataset)
        return data.SequentialSampler(dataset)
    def sample_data(loader):
        while True:
            for batch in loader:
                yield batch
    def train(args, loader, generator, g_optim):
        loader = sample_data(loader)
        for idx in range(args.iter):
            real_img = next(loader)
            loss = generator(real_img).mean()
            loss.backward()
            g_optim.step()
    if __name__ == "__main__":
        loader = data.DataLoader(dataset, batch_size=args.batch,
                                 sampler=data_sampler(dataset, shuffle=True, distributed=args.distributed), drop_last=True)
        train(args, loader, generator, g_optim)
""")
FIND += [
    Shape("TW406", "a DistributedSampler built in a helper called with shuffle=True; an endless generator's passes are the epochs",
          _GAN_SAMPLER, 4),
]
QUIET += [
    Shape("TW406", "look-alike: the helper is called with shuffle=False (evaluation order)", _GAN_SAMPLER.replace(
        "data_sampler(dataset, shuffle=True,", "data_sampler(dataset, shuffle=False,")),
]
