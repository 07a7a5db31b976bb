"""The recall corpus, round 21 part B: TW402 and TW403 classes that the tuning sets 31 and 32
showed - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW403 a GPU count of zero is the CPU run (R17)
# Baseline scripts that take the number of GPUs as an option and move the network only when it is
# positive; the batches are then moved with a bare .cuda() in the loops.
_NETS = d("""
    import torch.nn as nn
    class WideNet(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.fc = nn.Linear(32, k)
        def forward(self, x):
            return self.fc(x)
""")
_COUNT_TRAIN = d("""
    import argparse
    import torch
    import torch.nn.functional as F
    from nets import WideNet
    parser = argparse.ArgumentParser()
    parser.add_argument("--ngpu", type=int, default=1, help="how many GPUs; 0 runs on the CPU")
    args = parser.parse_args()
    net = WideNet(10)
    if args.ngpu > 1:
        net = torch.nn.DataParallel(net, device_ids=list(range(args.ngpu)))
    if args.ngpu > 0:
        net.cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    def epoch(loader):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
_COUNT_SCORE = d("""
    import argparse
    import torch
    from nets import WideNet
    p = argparse.ArgumentParser()
    p.add_argument("--num_gpus", type=int, default=1)
    cfg = p.parse_args()
    model = WideNet(10)
    if cfg.num_gpus >= 1:  # zero: stay on the host
        model = model.cuda()
    def scores(loader):
        out = []
        with torch.no_grad():
            for batch, _ in loader:
                batch = batch.cuda()
                out.append(model(batch).softmax(1))
        return out
""")
PROJECTS += [
    ProjectShape("TW403", "--ngpu option, net moved under `if args.ngpu > 0:`, batches moved with a bare .cuda() in the loop",
                 {"nets.py": _NETS, "baseline.py": _COUNT_TRAIN}, (("baseline.py", 16), ("baseline.py", 16))),
    ProjectShape("TW403", "--num_gpus option with `>= 1` guarding the model move; the scoring loop hard-codes .cuda()",
                 {"nets.py": _NETS, "score.py": _COUNT_SCORE}, (("score.py", 14),)),
]
_COUNT_MULTI_ONLY = d("""
    import argparse
    import torch
    import torch.nn.functional as F
    from nets import WideNet
    parser = argparse.ArgumentParser()
    parser.add_argument("--ngpu", type=int, default=1)
    args = parser.parse_args()
    net = WideNet(10).cuda()
    if args.ngpu > 1:
        net = torch.nn.DataParallel(net, device_ids=list(range(args.ngpu)))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    def epoch(loader):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
_COUNT_SEED_ONLY = d("""
    import argparse
    import torch
    from nets import WideNet
    parser = argparse.ArgumentParser()
    parser.add_argument("--n_gpu", type=int, default=1)
    args = parser.parse_args()
    if args.n_gpu > 0:
        torch.cuda.manual_seed_all(0)
    net = WideNet(10).cuda()
    def run(loader):
        for x, _ in loader:
            net(x.cuda())
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: the GPU count only chooses DataParallel (> 1); the model always goes to CUDA",
                 {"nets.py": _NETS, "baseline.py": _COUNT_MULTI_ONLY}),
    ProjectShape("TW403", "look-alike: the count only guards seeding the GPUs, it moves nothing",
                 {"nets.py": _NETS, "baseline.py": _COUNT_SEED_ONLY}),
]

# ------------------------------------------------------------- TW403 a device chosen by a conditional of two devices
FIND += [
    Shape("TW403", "device = torch.device('cuda') if opt.use_gpu else torch.device('cpu'), then masks moved with .cuda()", d("""
        import torch
        from poem import Poet
        class Opt:
            use_gpu = True
        opt = Opt()
        def write(start):
            device = torch.device("cuda") if opt.use_gpu else torch.device("cpu")
            model = Poet().to(device)
            src = torch.tensor(start).to(device)
            mask = torch.ones(len(start), len(start))
            return model(src, mask.cuda())
        if __name__ == "__main__":
            write([1, 2, 3])
    """), 11),
]
QUIET += [
    Shape("TW403", "look-alike: the same choice, every tensor moved with .to(device)", d("""
        import torch
        from poem import Poet
        class Opt:
            use_gpu = True
        opt = Opt()
        def write(start):
            device = torch.device("cuda") if opt.use_gpu else torch.device("cpu")
            model = Poet().to(device)
            src = torch.tensor(start).to(device)
            mask = torch.ones(len(start), len(start))
            return model(src, mask.to(device))
        if __name__ == "__main__":
            write([1, 2, 3])
    """)),
]

# ------------------------------------------------------------- a collection whose distributed chapter hard-codes NCCL
# A book's code: one chapter runs NCCL on GPUs only, another falls back to the CPU by a use_gpu
# flag - and hard-codes .cuda() in one function. NCCL is that chapter's design, not the book's.
_CH_DIST = d("""
    import torch
    import torch.distributed as dist
    def main(rank):
        dist.init_process_group("nccl", rank=rank, world_size=2)
        model = torch.nn.Linear(4, 4).cuda(rank)
        x = torch.randn(8, 4).cuda(rank)
        loss = model(x).sum()
        loss.backward()
    if __name__ == "__main__":
        main(0)
""")
_CH_DIST2 = d("""
    import torch
    import torch.distributed as dist
    def run(rank):
        dist.init_process_group(backend="nccl", rank=rank, world_size=2)
        t = torch.ones(4).cuda(rank)
        dist.all_reduce(t)
    if __name__ == "__main__":
        run(0)
""")
_CH_POEM = d("""
    import torch
    from model import Poet
    class Config:
        use_gpu = True
        model_path = "checkpoints/poet.pth"
    opt = Config()
    def generate(**kwargs):
        device = torch.device("cuda") if opt.use_gpu else torch.device("cpu")
        model = Poet()
        model.load_state_dict(torch.load(opt.model_path))
        model.to(device)
        x = torch.zeros(1, 1).long().to(device)
        return model(x, torch.ones(1, 1).cuda())
    def train(**kwargs):
        device = torch.device("cuda") if opt.use_gpu else torch.device("cpu")
        model = Poet().to(device)
        optimizer = torch.optim.Adam(model.parameters())
        for _ in range(3):
            loss = model(torch.zeros(1, 1).long().to(device), None).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.save(model.state_dict(), opt.model_path)
    if __name__ == "__main__":
        import fire
        fire.Fire()
""")
_CH_MODEL = d("""
    import torch.nn as nn
    class Poet(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 8)
        def forward(self, x, mask):
            return self.emb(x)
""")
_BOOK = {"chapter7/dist_train.py": _CH_DIST, "chapter7/allreduce.py": _CH_DIST2,
         "chapter9/main.py": _CH_POEM, "chapter9/model.py": _CH_MODEL}
PROJECTS += [
    ProjectShape("TW403", "book chapters: NCCL in the distributed chapter, a use_gpu choice and a bare .cuda() in another",
                 _BOOK, (("chapter9/main.py", 13),)),
    ProjectShape("TW402", "the same book: generate() (a fire.Fire() command) restores the GPU-trained model without map_location",
                 _BOOK, (("chapter9/main.py", 10),)),
]
_ONE_DIST = {"dist_train.py": _CH_DIST, "allreduce.py": _CH_DIST2,
             "poem/main.py": _CH_POEM.replace("torch.ones(1, 1).cuda()", "None"), "poem/model.py": _CH_MODEL,
             "poem/extra.py": "import torch\nx = torch.zeros(2).cuda()\n"}
PROJECTS += [
    ProjectShape("TW403", "look-alike: NCCL at the top of the project (not a chapter of a collection): GPU-only as a whole",
                 _ONE_DIST),
]

# ------------------------------------------------------------- TW402 a model class that saves and restores itself
_BASIC = d("""
    import time
    import torch
    class BasicModule(torch.nn.Module):
        def load(self, path):
            self.load_state_dict(torch.load(path))
        def save(self, name=None):
            name = name or time.strftime("checkpoints/%m%d_%H%M.pth")
            torch.save(self.state_dict(), name)
            return name
""")
_BASIC_MAIN = d("""
    import torch
    from models.basic import BasicModule
    class Net(BasicModule):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)
    class Config:
        use_gpu = True
        load_path = None
    opt = Config()
    def train():
        device = torch.device("cuda") if opt.use_gpu else torch.device("cpu")
        model = Net()
        if opt.load_path:
            model.load(opt.load_path)
        model.to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            loss = model.fc(torch.randn(3, 4).to(device)).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.save()
    if __name__ == "__main__":
        train()
""")
_SHIPPED = d("""
    import torch
    class Backbone(torch.nn.Module):
        def load(self, path):
            self.load_state_dict(torch.load(path))
""")
PROJECTS += [
    ProjectShape("TW402", "BasicModule.load restores what its own save() wrote from the model on opt.device",
                 {"models/basic.py": _BASIC, "main.py": _BASIC_MAIN}, (("models/basic.py", 5),)),
    ProjectShape("TW402", "look-alike: a class that only loads (weights shipped with the project), it never saves itself",
                 {"models/basic.py": _SHIPPED, "main.py": _BASIC_MAIN.replace("BasicModule", "Backbone").replace(
                     "        model.save()\n", "").replace("models.basic import", "models.basic import")}),
]

# ------------------------------------------------------------- TW402 the sub-project's own save, not another folder's
# An old version of the code kept in its own folder: its training moves the net to the host
# before it writes the final weights; the new version elsewhere writes the same file name from
# the GPU. The old evaluation script reads the old training's file.
_OLD_TRAIN = d("""
    import os.path as osp
    import torch
    import torch.distributed as dist
    from net import SegNet
    def train(respth):
        net = SegNet().cuda()
        net = torch.nn.parallel.DistributedDataParallel(net)
        optim = torch.optim.SGD(net.parameters(), lr=0.01)
        for _ in range(10):
            loss = net(torch.randn(2, 3).cuda()).sum()
            optim.zero_grad()
            loss.backward()
            optim.step()
        save_pth = osp.join(respth, "final.pth")
        net.cpu()
        state = net.module.state_dict() if hasattr(net, "module") else net.state_dict()
        if dist.get_rank() == 0:
            torch.save(state, save_pth)
    if __name__ == "__main__":
        train("res")
""")
_OLD_EVAL = d("""
    import os.path as osp
    import torch
    from net import SegNet
    def evaluate(respth="res"):
        net = SegNet()
        net.load_state_dict(torch.load(osp.join(respth, "final.pth")))
        net.cuda()
        net.eval()
        return net
    if __name__ == "__main__":
        evaluate()
""")
_NEW_TRAIN = d("""
    import os.path as osp
    import torch
    from net import SegNet
    def main(out):
        net = SegNet().cuda()
        optim = torch.optim.SGD(net.parameters(), lr=0.01)
        for _ in range(10):
            loss = net(torch.randn(2, 3).cuda()).sum()
            optim.zero_grad()
            loss.backward()
            optim.step()
        torch.save(net.state_dict(), osp.join(out, "final.pth"))
    if __name__ == "__main__":
        main("res")
""")
_SEG = "import torch.nn as nn\nclass SegNet(nn.Module):\n    def forward(self, x):\n        return x\n"
PROJECTS += [
    ProjectShape("TW402", "look-alike: old/evaluate.py reads the file old/train.py writes after net.cpu() (state through a conditional)",
                 {"old/train.py": _OLD_TRAIN, "old/evaluate.py": _OLD_EVAL, "old/net.py": _SEG,
                  "tools/train.py": _NEW_TRAIN, "tools/net.py": _SEG}),
    ProjectShape("TW402", "the same evaluation beside a training that saves from the GPU in its own folder",
                 {"old/train.py": _NEW_TRAIN, "old/evaluate.py": _OLD_EVAL, "old/net.py": _SEG},
                 (("old/evaluate.py", 6),)),
]

# ------------------------------------------------------------- TW402 a GPU id named like a device flag
_GID_MAIN = d("""
    import os
    import torch
    from args import Args
    from train import train
    from model import RNN
    if __name__ == "__main__":
        args = Args()
        os.environ["CUDA_VISIBLE_DEVICES"] = str(args.cuda)
        rnn = RNN().cuda()
        train(args, rnn)
""")
_GID_ARGS = "class Args:\n    def __init__(self):\n        self.cuda = 1\n        self.load = False\n        self.path = 'model_save/'\n"
_GID_TRAIN = d("""
    import torch
    def train(args, rnn):
        if args.load:
            rnn.load_state_dict(torch.load(args.path + "rnn.dat"))
        opt = torch.optim.Adam(rnn.parameters())
        for _ in range(5):
            loss = rnn(torch.randn(2, 4).cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.save(rnn.state_dict(), args.path + "rnn.dat")
""")
_GID_MODEL = "import torch.nn as nn\nclass RNN(nn.Module):\n    def forward(self, x):\n        return x\n"
PROJECTS += [
    ProjectShape("TW402", "look-alike: args.cuda is the GPU id written into CUDA_VISIBLE_DEVICES; the resume in train() is GPU-only",
                 {"main.py": _GID_MAIN, "args.py": _GID_ARGS, "train.py": _GID_TRAIN, "model.py": _GID_MODEL}),
]
