"""The recall corpus, third round: the classes a first look at twelve more fresh projects
(issue 22, second held-out set) found missing or falsely reported - each written in our own words
and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these
to its lists; the entries of one rule sit together.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- evaluation scripts named test_*.py
_EVAL_SCRIPT = d("""
    import argparse
    import torch
    from model import get_model
    def test(model, loader):
        correct = 0
        for points, target in loader:
            points, target = points.cuda(), target.cuda()
            pred = model(points)
            correct += (pred.argmax(1) == target).sum().item()
        return correct
    def main(args):
        classifier = get_model().cuda()
        checkpoint = torch.load("checkpoints/best_model.pth")
        classifier.load_state_dict(checkpoint["model_state_dict"])
        classifier.eval()
        loader = torch.utils.data.DataLoader(dataset, batch_size=24, num_workers=4)
        print(test(classifier, loader))
""")
FIND += [
    Shape("TW401", "point-cloud zoos: the evaluation script is called test_classification.py; it is no unit test",
          _EVAL_SCRIPT, 13, "test_classification.py"),
    Shape("TW203", "point-cloud zoos: the test loader of an evaluation script named test_partseg.py",
          _EVAL_SCRIPT, 16, "test_partseg.py"),
]
_UNIT_TEST = d("""
    import torch
    import pytest
    from model import get_model
    def test_forward_shape():
        loader = torch.utils.data.DataLoader(dataset, batch_size=2)
        state = torch.load("tiny.pth")
        model = get_model()
        out = model(next(iter(loader))[0])
        assert out.shape == (2, 10)
""")
_UNIT_TEST_NO_IMPORT = d("""
    import torch
    from model import get_model
    def test_checkpoint_round_trip(tmp_path):
        model = get_model()
        torch.save(model.state_dict(), tmp_path / "m.pt")
        state = torch.load(tmp_path / "m.pt")
        assert state.keys() == model.state_dict().keys()
""")
QUIET += [
    Shape("TW203", "a real unit test file (imports pytest) keeps the test-file exemption", _UNIT_TEST,
          path="test_model.py"),
    Shape("TW401", "a unit test file without a framework import: test functions that assert", _UNIT_TEST_NO_IMPORT,
          path="test_checkpoint.py"),
    Shape("TW205", "course checkers: problem_unittests.py with test_* functions that assert", d("""
        import numpy as np
        import torch
        def test_generator(Generator):
            z = torch.from_numpy(np.random.uniform(-1, 1, size=(50, 25))).float()
            if torch.cuda.is_available():
                z = z.cuda()
            assert Generator(25)(z).shape == (50, 3, 32, 32)
    """), path="problem_unittests.py"),
    Shape("TW401", "files under tests/ are tests whatever they contain", d("""
        import torch
        state = torch.load("fixture.pth")
    """), path="tests/make_fixture.py"),
]

# ----------------------------------------------------------------------------------- TW104
FIND += [
    Shape("TW104", "detection repos: test_net(net, dataset, ...) in eval.py runs the whole test set after net.eval() "
          "in the caller, with autograd on", d("""
        import torch
        def test_net(save_folder, net, cuda, dataset, thresh):
            boxes = []
            for i in range(len(dataset)):
                x = dataset.pull_item(i)
                if cuda:
                    x = x.cuda()
                detections = net(x).data
                boxes.append(detections)
            return boxes
        if __name__ == "__main__":
            net = build_ssd("test")
            net.load_state_dict(torch.load(args.trained_model))
            net.eval()
            test_net(args.save_folder, net, args.cuda, dataset, 0.05)
    """), 8, "eval.py"),
]
QUIET += [
    Shape("TW104", "model zoos: a parameterless smoke test() that prints an output shape", d("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                return x
        def test():
            net = Net()
            net.eval()
            for size in (32, 64):
                y = net(torch.randn(1, 3, size, size))
                print(y.size())
    """), path="resnet.py"),
    Shape("TW104", "a test_* helper with asserts in a library file is a unit test", d("""
        import torch
        def test_inference(model, batches):
            model.eval()
            for x in batches:
                y = model(x)
                assert torch.isfinite(y).all()
    """), path="checks.py"),
]

# ----------------------------------------------------------------------------------- TW403
_CPU_FLAG = d("""
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_cpu", action="store_true")
    args = parser.parse_args()
    classifier = get_model()
    if not args.use_cpu:
        classifier = classifier.cuda()
    for points, target in loader:
        if not args.use_cpu:
            points, target = points.cuda(), target.cuda()
        vote_pool = torch.zeros(target.size(0), 40).cuda()
""")
FIND += [
    Shape("TW403", "point-cloud scripts: an unconditional .cuda() breaks the CPU path that --use_cpu offers",
          _CPU_FLAG, 12),
]
QUIET += [
    Shape("TW403", "point-cloud scripts: moves under `if not args.use_cpu:` are the user's choice",
          _CPU_FLAG.replace("    vote_pool = torch.zeros(target.size(0), 40).cuda()\n", "")),
    Shape("TW403", "moves under a `cpu` flag spelled as a plain name", d("""
        import torch
        cpu = False
        model = Net()
        if not cpu:
            model.cuda()
    """)),
]

# ----------------------------------------------------------------------------------- TW402
_PINNED_DDP = d("""
    import os
    import torch
    import torch.distributed as dist
    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus
    dist.init_process_group("nccl")
    model = get_model().cuda()
    state = torch.load("last.pth")
""")
FIND += [
    Shape("TW402", "a distributed GPU-only script: every process would restore onto the saving GPU", _PINNED_DDP, 7),
    Shape("TW402", "an evaluation script with a CPU flag loads the GPU-trained checkpoint without map_location", d("""
        import torch
        model = get_model()
        if not args.use_cpu:
            model = model.cuda()
        checkpoint = torch.load("log/best_model.pth")
        model.load_state_dict(checkpoint["model_state_dict"])
    """), 5, "evaluate.py"),
    Shape("TW402", "a GPU check whose CPU branch does not map either (round 4: reported in the CPU branch, where it fails)", d("""
        import torch
        if torch.cuda.is_available():
            state = torch.load(path)
        else:
            state = torch.load(path)
        model.cuda()
    """), 5),
]
QUIET += [
    Shape("TW402", "GAN checkpoints: the load in the CUDA branch of is_available() whose else maps to the CPU", d("""
        import torch
        class CheckpointIO:
            def load(self, fname):
                if torch.cuda.is_available():
                    module_dict = torch.load(fname)
                else:
                    module_dict = torch.load(fname, map_location=torch.device("cpu"))
                return module_dict
        net = Net().cuda()
    """)),
    Shape("TW402", "point-cloud training: a GPU-only script that picks its one GPU resumes its own checkpoint", d("""
        import os
        import torch
        os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu
        classifier = get_model().cuda()
        criterion = get_loss().cuda()
        try:
            checkpoint = torch.load(str(exp_dir) + "/checkpoints/best_model.pth")
            classifier.load_state_dict(checkpoint["model_state_dict"])
        except Exception:
            start_epoch = 0
        for points, target in loader:
            points, target = points.float().cuda(), target.long().cuda()
    """)),
]

# ----------------------------------------------------------------------------------- TW301
PROJECTS += [
    ProjectShape("TW301", "GAN repos: the entry point seeds torch and imports the data module, which shuffles with "
                 "Python's random", {
        "main.py": d("""
            import torch
            from core.data_loader import get_train_loader
            torch.manual_seed(777)
            loader = get_train_loader("data/train")
        """),
        "core/data_loader.py": d("""
            import random
            def get_train_loader(root):
                fnames = sorted(list_files(root))
                return random.sample(fnames, len(fnames))
        """),
    }, (("core/data_loader.py", 4),)),
    ProjectShape("TW301", "course collections: a notebook that seeds nothing is not on another notebook's path", {
        "sentiment/solution.py": d("""
            import numpy as np
            import torch
            np.random.seed(1)
            torch.manual_seed(1)
            weights = np.random.normal(0.0, 1.0, (10, 2))
        """),
        "word2vec/skip_grams.py": d("""
            import random
            words = [w for w in words if random.random() < 0.5]
        """),
    }),
    ProjectShape("TW301", "Kaggle solutions: a per-call seed option of an inference method is not the project's seed", {
        "kernel_utils.py": d("""
            import numpy as np
            class VideoReader:
                def read_frames(self, path, num_frames, jitter=0, seed=None):
                    if jitter > 0:
                        np.random.seed(seed)
                        offsets = np.random.randint(-jitter, jitter, num_frames)
                    return offsets
        """),
        "predict.py": d("""
            import random
            from kernel_utils import VideoReader
            reader = VideoReader()
            picked = random.choice(videos)
        """),
    }),
]
QUIET += [
    Shape("TW301", "model zoos: the random input of a __main__ smoke test", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        np.random.seed(0)
        class UNet(nn.Module):
            def forward(self, x):
                return x
        if __name__ == "__main__":
            net = UNet().eval()
            with torch.no_grad():
                print(net(torch.rand(4, 3, 224, 224)).shape)
    """), path="zoo/unet.py"),
]

# ------------------------------------------------------------------------ TW202 / TW103 demo code
FIND += [
    Shape("TW202", "tutorials: a loader looked at with next(iter(...)) and then trained on", d("""
        import torch
        from torchvision import datasets, transforms
        trainset = datasets.MNIST("data", download=True, transform=transforms.ToTensor())
        trainloader = torch.utils.data.DataLoader(trainset, batch_size=64, shuffle=True)
        dataiter = iter(trainloader)
        images, labels = next(dataiter)
        for images, labels in trainloader:
            loss = model(images).sum()
    """), 4),
    Shape("TW103", "a model file's __main__ block that trains is no smoke test", d("""
        import torch
        import torch.nn as nn
        class C3D(nn.Module):
            def forward(self, x):
                return x
        if __name__ == "__main__":
            net = C3D()
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            for step in range(10):
                outputs = net.forward(torch.rand(1, 3, 16, 112, 112))
                outputs.sum().backward()
                opt.step()
    """), 10),
]
QUIET += [
    Shape("TW202", "tutorials: a loader only stepped with next() on an iterator to show a batch", d("""
        import torch
        from torchvision import datasets, transforms
        trainset = datasets.MNIST("data", download=True, transform=transforms.ToTensor())
        trainloader = torch.utils.data.DataLoader(trainset, batch_size=64, shuffle=True)
        dataiter = iter(trainloader)
        images, labels = next(dataiter)
        print(images.shape)
    """)),
    Shape("TW202", "point-cloud datasets: the __main__ smoke test of a dataset module prints batch shapes", d("""
        import numpy as np
        from torch.utils.data import Dataset
        class ModelNetDataLoader(Dataset):
            def __getitem__(self, index):
                return np.loadtxt(self.paths[index]), 0
        if __name__ == "__main__":
            import torch
            data = ModelNetDataLoader("/data/modelnet40/", split="train")
            loader = torch.utils.data.DataLoader(data, batch_size=12, shuffle=True)
            for point, label in loader:
                print(point.shape)
                print(label.shape)
    """), path="data_utils/ModelNetDataLoader.py"),
    # (the C3D __main__ smoke test calling net.forward moved to recall_corpus62.py: reported under ruling R15)
]

# ----------------------------------------------------------------------------------- TW207
_PPO_UPDATE = d("""
    import torch
    class PPO:
        def update(self, rollouts):
            for sample in rollouts.batches():
                loss = self.actor_critic.evaluate(sample)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.total += loss.item()
""")
PROJECTS += [
    ProjectShape("TW207", "RL algorithms: the update() method's module is imported by the script that moves to the GPU", {
        "algo/ppo.py": _PPO_UPDATE,
        "main.py": d("""
            import torch
            from algo.ppo import PPO
            device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
            agent = PPO(actor_critic.to(device))
            for j in range(num_updates):
                agent.update(rollouts)  # (a method nothing calls is dead code: ruling R5)
        """),
    }, (("algo/ppo.py", 9),)),
    ProjectShape("TW207", "courses: a CPU-only helper module that no GPU notebook imports", {
        "intro/fc_model.py": _PPO_UPDATE,
        "cnn/cifar_solution.py": d("""
            import torch
            model = Net().cuda()
            for x, y in loader:
                loss = model(x.cuda()).sum()
        """),
    }),
]

# --------------------------------------------------------------------------------------- singles
FIND += [
    Shape("TW406", "speech synthesis: the training sampler of the epoch loop never gets set_epoch", d("""
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        def train(trainset, valset, epochs):
            train_sampler = DistributedSampler(trainset)
            loader = DataLoader(trainset, sampler=train_sampler, batch_size=8)
            for epoch in range(epochs):
                for batch in loader:
                    step(batch)
                validate(valset)
        def validate(valset):
            with torch.no_grad():
                val_sampler = DistributedSampler(valset)
                for batch in DataLoader(valset, sampler=val_sampler):
                    evaluate(batch)
    """), 4),
    Shape("TW404", "the variable set after set_device in the same branch", d("""
        import os
        import torch
        if args.distributed:
            torch.cuda.set_device(args.local_rank)
            os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu
    """), 5),
    Shape("TW101", "tutorials: the training total appended each epoch still holds graphs", d("""
        import torch
        for e in range(epochs):
            running_loss = 0
            for images, labels in trainloader:
                loss = criterion(model(images), labels)
                loss.backward()
                optimizer.step()
                running_loss += loss
            train_losses.append(running_loss / len(trainloader))
    """), 8),
    Shape("TW203", "a collate_fn that stacks tensors still needs pinning", d("""
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(dataset, batch_size=8, num_workers=4, collate_fn=lambda b: torch.stack(b))
        for x in loader:
            out = model(x.cuda())
    """), 3),
    Shape("TW201", "DataParallel around a network that is put in eval mode and then trained again", d("""
        import torch
        import torch.nn as nn
        net = nn.DataParallel(Net().eval())
        net.train()
        opt = torch.optim.Adam(net.parameters())
    """), 3),
]
QUIET += [
    Shape("TW406", "speech synthesis: a validation DistributedSampler rebuilt on every validate() call", d("""
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        def train(trainset, valset, epochs):
            for epoch in range(epochs):
                validate(valset)
        def validate(valset):
            with torch.no_grad():
                val_sampler = DistributedSampler(valset)
                for batch in DataLoader(valset, sampler=val_sampler):
                    evaluate(batch)
    """)),
    Shape("TW404", "Kaggle training: set_device when distributed, CUDA_VISIBLE_DEVICES otherwise", d("""
        import os
        import torch
        if args.distributed:
            torch.cuda.set_device(args.local_rank)
            torch.distributed.init_process_group(backend="nccl", init_method="env://")
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu
    """)),
    Shape("TW101", "tutorials: the test total summed under no_grad is appended each epoch", d("""
        import torch
        for e in range(epochs):
            for images, labels in trainloader:
                loss = criterion(model(images), labels)
                loss.backward()
                optimizer.step()
            test_loss = 0
            with torch.no_grad():
                for images, labels in testloader:
                    test_loss += criterion(model(images), labels)
            test_losses.append(test_loss / len(testloader))
    """)),
    Shape("TW203", "face detection: a loader of PIL frames with an identity collate_fn", d("""
        from torch.utils.data import DataLoader
        detector = FaceDetector(device="cuda:0")
        loader = DataLoader(VideoDataset(videos), batch_size=1, num_workers=4, collate_fn=lambda x: x)
        for item in loader:
            video, indices, frames = item[0]
            boxes = detector.detect(frames)
    """)),
    Shape("TW201", "GANs: DataParallel around a landmark network put in eval mode before it is wrapped", d("""
        import torch.nn as nn
        def build_model(args):
            fan = nn.DataParallel(FAN(fname_pretrained=args.wing_path).eval())
            fan.get_heatmap = fan.module.get_heatmap
            return fan
    """)),
]

# ----------------------------------------------------------------------------------- TW205
FIND += [
    Shape("TW205", "GAN model zoos: a typed legacy constructor of a range moved to the input's device every forward", d("""
        import torch
        import torch.nn as nn
        class MappingNetwork(nn.Module):
            def forward(self, z, y):
                out = self.shared(z)
                idx = torch.LongTensor(range(y.size(0))).to(y.device)
                return out[idx, y]
    """), 6),
    Shape("TW205", "speech models: a BoolTensor of the input's size filled and moved under `if x.is_cuda:`", d("""
        import torch
        import torch.nn as nn
        class MaskConv(nn.Module):
            def forward(self, x, lengths):
                for module in self.seq_module:
                    x = module(x)
                    mask = torch.BoolTensor(x.size()).fill_(0)
                    if x.is_cuda:
                        mask = mask.cuda()
                    x = x.masked_fill(mask, 0)
                return x
    """), 9),
    Shape("TW205", "point-cloud STNs: an identity from NumPy, reshaped, moved in a separate statement every forward", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        from torch.autograd import Variable
        class STN3d(nn.Module):
            def forward(self, x):
                batchsize = x.size()[0]
                x = self.fc3(x)
                iden = Variable(torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32))).view(1, 9).repeat(
                    batchsize, 1)
                if x.is_cuda:
                    iden = iden.cuda()
                return x + iden
    """), 12),
    Shape("TW205", "point-cloud losses: rows of an identity picked on the host, then moved", d("""
        import torch
        def to_categorical(y, num_classes):
            new_y = torch.eye(num_classes)[y.cpu().data.numpy(),]
            if y.is_cuda:
                return new_y.cuda()
            return new_y
    """), 5),
    Shape("TW205", "point-cloud sampling: factories before the loop of a helper that a forward pass calls", d("""
        import torch
        import torch.nn as nn
        def farthest_point_sample(xyz, npoint):
            device = xyz.device
            B, N, C = xyz.shape
            centroids = torch.zeros(B, npoint, dtype=torch.long).to(device)
            for i in range(npoint):
                centroids[:, i] = i
            return centroids
        class SetAbstraction(nn.Module):
            def forward(self, xyz):
                return farthest_point_sample(xyz, 512)
    """), 6),
    Shape("TW205", "DCGAN notebooks: latent noise drawn with NumPy every step, then moved", d("""
        import numpy as np
        import torch
        for epoch in range(epochs):
            for real_images, _ in train_loader:
                z = np.random.uniform(-1, 1, size=(batch_size, z_size))
                z = torch.from_numpy(z).float()
                z = z.cuda()
                fake_images = G(z)
    """), 7),
]
QUIET += [
    Shape("TW205", "vocoders: audio read from a file and converted with a legacy constructor has to cross anyway", d("""
        import torch
        with torch.no_grad():
            for i, name in enumerate(filelist):
                wav, sr = load_wav(name)
                wav = torch.FloatTensor(wav).to(device)
                audio = generator(wav)
    """)),
    Shape("TW205", "a helper that loops, called once per epoch by the training function, allocates once per call", d("""
        import torch
        def vali(model, loader, device, B, C):
            dec_inp = torch.zeros((B, 96, C)).float().to(device)
            for x in loader:
                model(x, dec_inp)
        def train(model, loader, opt, device):
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x).sum()
                    loss.backward()
                    opt.step()
                vali(model, loader, device, 32, 7)
    """)),
]

# ---------------------------------------------------------------------------- TW209 / TW502 / TW513
PROJECTS += [
    ProjectShape("TW209", "speech synthesis: the project's ConvNorm wrapper (a biased Conv1d) before BatchNorm1d", {
        "layers.py": d("""
            import torch
            class ConvNorm(torch.nn.Module):
                def __init__(self, in_channels, out_channels, kernel_size=1, bias=True, w_init_gain="linear"):
                    super().__init__()
                    self.conv = torch.nn.Conv1d(in_channels, out_channels, kernel_size=kernel_size, bias=bias)
                def forward(self, signal):
                    return self.conv(signal)
        """),
        "model.py": d("""
            import torch.nn as nn
            from layers import ConvNorm
            class Postnet(nn.Module):
                def __init__(self, n_mel, dim):
                    super().__init__()
                    self.convolutions = nn.ModuleList()
                    self.convolutions.append(nn.Sequential(ConvNorm(n_mel, dim, kernel_size=5), nn.BatchNorm1d(dim)))
                    self.convolutions.append(nn.Sequential(ConvNorm(dim, dim, kernel_size=5, bias=False), nn.BatchNorm1d(dim)))
        """),
    }, (("model.py", 7),)),
]
FIND += [
    Shape("TW209", "point-cloud set abstraction: ModuleList pairs used as bn(conv(x))", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class SetAbstraction(nn.Module):
            def __init__(self, in_channel, mlp):
                super().__init__()
                self.mlp_convs = nn.ModuleList()
                self.mlp_bns = nn.ModuleList()
                last = in_channel
                for out_channel in mlp:
                    self.mlp_convs.append(nn.Conv2d(last, out_channel, 1))
                    self.mlp_bns.append(nn.BatchNorm2d(out_channel))
                    last = out_channel
            def forward(self, x):
                for i, conv in enumerate(self.mlp_convs):
                    bn = self.mlp_bns[i]
                    x = F.relu(bn(conv(x)))
                return x
    """), 10),
    Shape("TW209", "point-cloud set abstraction (multi-scale): local ModuleLists appended to self lists", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class SetAbstractionMsg(nn.Module):
            def __init__(self, in_channel, mlp_list):
                super().__init__()
                self.conv_blocks = nn.ModuleList()
                self.bn_blocks = nn.ModuleList()
                for mlp in mlp_list:
                    convs = nn.ModuleList()
                    bns = nn.ModuleList()
                    for out_channel in mlp:
                        convs.append(nn.Conv2d(in_channel, out_channel, 1))
                        bns.append(nn.BatchNorm2d(out_channel))
                    self.conv_blocks.append(convs)
                    self.bn_blocks.append(bns)
            def forward(self, x, i):
                for j in range(len(self.conv_blocks[i])):
                    conv = self.conv_blocks[i][j]
                    bn = self.bn_blocks[i][j]
                    x = F.relu(bn(conv(x)))
                return x
    """), 12),
    Shape("TW502", "segmentation solvers: F.upsample", d("""
        import torch.nn.functional as F
        SR_probs = F.upsample(SR, scale_factor=2)
    """), 2),
    Shape("TW502", "detection training: the non-underscore init function", d("""
        import torch.nn.init as init
        def xavier(param):
            init.xavier_uniform(param)
    """), 3),
    Shape("TW502", "hand-made DDP: the dist.reduce_op alias", d("""
        import torch.distributed as dist
        def reduce_tensor(tensor, n_gpus):
            rt = tensor.clone()
            dist.all_reduce(rt, op=dist.reduce_op.SUM)
            return rt / n_gpus
    """), 4),
    Shape("TW513", "graph recommenders: the typed sparse constructors", d("""
        import torch
        graph = torch.sparse.FloatTensor(index.t(), data, torch.Size([n, n]))
    """), 2),
]
QUIET += [
    Shape("TW209", "ModuleList pairs whose convolutions have no bias", d("""
        import torch.nn as nn
        class SetAbstraction(nn.Module):
            def __init__(self, mlp):
                super().__init__()
                self.mlp_convs = nn.ModuleList()
                self.mlp_bns = nn.ModuleList()
                for c in mlp:
                    self.mlp_convs.append(nn.Conv2d(c, c, 1, bias=False))
                    self.mlp_bns.append(nn.BatchNorm2d(c))
            def forward(self, x):
                for i, conv in enumerate(self.mlp_convs):
                    x = self.mlp_bns[i](conv(x))
                return x
    """)),
    Shape("TW502", "the current names stay quiet", d("""
        import torch
        import torch.nn as nn
        import torch.distributed as dist
        y = torch.sigmoid(x)
        nn.init.xavier_uniform_(w)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    """)),
]

# ----------------------------------------------------------------------------------- TW104 again
FIND += [
    Shape("TW104", "course notebooks: the final test loop after the per-epoch validation is its own evaluation", d("""
        import torch
        for epoch in range(1, n_epochs + 1):
            model.train()
            for data, target in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(data), target)
                loss.backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                for data, target in valid_loader:
                    valid_loss = criterion(model(data), target)
        model.eval()
        for data, target in test_loader:
            output = model(data)
            loss = criterion(output, target)
    """), 15),
]

# ----------------------------------------------------------------------------------- TW204
FIND += [
    Shape("TW204", "detection training: batches read with next(batch_iterator) from a pinned loader", d("""
        import torch
        data_loader = torch.utils.data.DataLoader(dataset, 32, num_workers=4, shuffle=True, pin_memory=True)
        batch_iterator = iter(data_loader)
        for iteration in range(max_iter):
            try:
                images, targets = next(batch_iterator)
            except StopIteration:
                batch_iterator = iter(data_loader)
                images, targets = next(batch_iterator)
            images = images.cuda()
            targets = [ann.cuda() for ann in targets]
    """), 10),
]
QUIET += [
    Shape("TW204", "next(batch_iterator) of a loader that is not pinned", d("""
        import torch
        data_loader = torch.utils.data.DataLoader(dataset, 32, num_workers=4, shuffle=True)
        batch_iterator = iter(data_loader)
        for iteration in range(max_iter):
            images, targets = next(batch_iterator)
            images = images.cuda()
    """)),
]

# ----------------------------------------------------------------------------------- TW207 again
FIND += [
    Shape("TW207", "old detection repos: loss.data[0], the pre-0.4 .item(), every step", d("""
        import torch
        net = net.cuda()
        for iteration in range(max_iter):
            images, targets = next(batch_iterator)
            out = net(images.cuda())
            loss_l, loss_c = criterion(out, targets)
            loss = loss_l + loss_c
            loss.backward()
            optimizer.step()
            loc_loss += loss_l.data[0]
    """), 10),
    Shape("TW207", "Kaggle pipelines: torch.cuda.synchronize() after every optimizer step", d("""
        import torch
        model = model.cuda()
        for i, sample in enumerate(loader):
            imgs = sample["image"].cuda()
            loss = criterion(model(imgs), sample["labels"].cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch.cuda.synchronize()
    """), 9),
]
QUIET += [
    Shape("TW207", "a benchmark loop synchronizes to time each step", d("""
        import time
        import torch
        model = model.cuda()
        for x, y in loader:
            start = time.perf_counter()
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    """)),
]
FIND += [
    Shape("TW207", "speech synthesis: the gradient norm formatted into the per-step print", d("""
        import math
        import time
        import torch
        model = model.cuda()
        for i, batch in enumerate(train_loader):
            loss = criterion(model(batch[0].cuda()), batch[1].cuda())
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            print("Train loss {:.6f} Grad Norm {:.6f}".format(loss_value, grad_norm))
    """), 10),
]
QUIET += [
    Shape("TW207", "a flag computed with math.isnan is a Python bool, not a tensor condition", d("""
        import math
        import torch
        model = model.cuda()
        for i, batch in enumerate(train_loader):
            loss = criterion(model(batch[0].cuda()), batch[1].cuda())
            loss.backward()
            is_overflow = math.isnan(total)
            optimizer.step()
            if not is_overflow and rank == 0:
                save(model)
    """)),
]

# ----------------------------------------------------------------------------------- TW203
PROJECTS += [
    ProjectShape("TW203", "speech recognition: a DataLoader subclass of another module, built without pin_memory", {
        "loader/data_loader.py": d("""
            from torch.utils.data import DataLoader
            class AudioDataLoader(DataLoader):
                def __init__(self, *args, **kwargs):
                    super().__init__(*args, **kwargs)
                    self.collate_fn = _collate_fn
            class PinnedAudioLoader(DataLoader):
                def __init__(self, *args, **kwargs):
                    super().__init__(*args, pin_memory=True, **kwargs)
        """),
        "testing.py": d("""
            import torch
            from loader.data_loader import AudioDataLoader, PinnedAudioLoader
            def evaluate(cfg, dataset, model):
                device = torch.device("cuda" if cfg.cuda else "cpu")
                test_loader = AudioDataLoader(dataset, batch_size=cfg.batch_size, num_workers=4)
                other_loader = PinnedAudioLoader(dataset, batch_size=cfg.batch_size, num_workers=4)
                for inputs, targets in test_loader:
                    out = model(inputs.to(device))
        """),
    }, (("testing.py", 5),)),
]
FIND += [
    Shape("TW205", "GAN sampling: a list comprehension of torch.tensor(int) moved to the device", d("""
        import torch
        def debug_image(nets, x_src, device, N):
            y_trg_list = [torch.tensor(y).repeat(N).to(device) for y in range(5)]
            return [nets.generator(x_src, y) for y in y_trg_list]
    """), 3),
]
FIND += [
    Shape("TW207", "GANs: a loss function of the file returns its terms .item()'d for logging, called every step", d("""
        import torch
        import torch.nn.functional as F
        def compute_d_loss(nets, x_real, y_org):
            out = nets.discriminator(x_real, y_org)
            loss_real = F.binary_cross_entropy_with_logits(out, torch.ones_like(out))
            loss = loss_real
            return loss, {"real": loss_real.item()}
        def train(nets, loader, opt, device):
            for x_real, y_org in loader:
                x_real, y_org = x_real.to(device), y_org.to(device)
                d_loss, d_logs = compute_d_loss(nets, x_real, y_org)
                opt.zero_grad()
                d_loss.backward()
                opt.step()
    """), 7),
]
QUIET += [
    Shape("TW207", "the same loss function called only under a periodic test", d("""
        import torch
        import torch.nn.functional as F
        def compute_d_loss(nets, x_real, y_org):
            out = nets.discriminator(x_real, y_org)
            loss_real = F.binary_cross_entropy_with_logits(out, torch.ones_like(out))
            return loss_real, {"real": loss_real.item()}
        def train(nets, loader, opt, device):
            for i, (x_real, y_org) in enumerate(loader):
                x_real, y_org = x_real.to(device), y_org.to(device)
                loss = nets.discriminator(x_real, y_org).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if i % 100 == 0:
                    _, logs = compute_d_loss(nets, x_real, y_org)
    """)),
]
FIND += [
    Shape("TW207", "contrastive learning: boolean-mask selection in the loss method the step calls every step", d("""
        import torch
        class SimCLR:
            def info_nce_loss(self, features):
                labels = torch.cat([torch.arange(self.batch_size) for i in range(2)], dim=0)
                labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float().to(self.device)
                similarity = torch.matmul(features, features.T)
                mask = torch.eye(labels.shape[0], dtype=torch.bool).to(self.device)
                labels = labels[~mask].view(labels.shape[0], -1)
                return similarity, labels
            def train(self, loader):
                for images, _ in loader:
                    images = images.to(self.device)
                    features = self.model(images)
                    logits, labels = self.info_nce_loss(features)
                    loss = self.criterion(logits, labels)
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
    """), 8),
]
QUIET += [
    Shape("TW207", "a loss function with a mask that only an evaluation calls", d("""
        import torch
        def masked_loss(pred, gold, pad):
            non_pad_mask = gold.ne(pad)
            return pred.masked_select(non_pad_mask).sum()
        def evaluate(model, loader, device):
            with torch.no_grad():
                for x, y in loader:
                    total = masked_loss(model(x.to(device)), y.to(device), 0)
    """)),
]
PROJECTS += [
    ProjectShape("TW301", "speech synthesis: a random phase in a helper no file of the project calls (a notebook does)", {
        "train.py": d("""
            import torch
            from audio_processing import dynamic_range_compression
            torch.manual_seed(1234)
            mel = dynamic_range_compression(spec)
        """),
        "audio_processing.py": d("""
            import numpy as np
            def dynamic_range_compression(x):
                return np.log(np.clip(x, 1e-5, None))
            def griffin_lim(magnitudes, n_iters=30):
                angles = np.angle(np.exp(2j * np.pi * np.random.rand(*magnitudes.shape)))
                return angles
            def augment(x):
                return x + np.random.rand(*x.shape)
        """),
        "data.py": d("""
            from audio_processing import augment
            def load(x):
                return augment(x)
        """),
    }, (("audio_processing.py", 8),)),
]
PROJECTS += [
    ProjectShape("TW207", "point-cloud sampling: a boolean-mask assignment on a device tensor in a helper a forward "
                 "pass calls (the training script moves to the GPU)", {
        "models/utils.py": d("""
            import torch
            import torch.nn as nn
            def farthest_point_sample(xyz, npoint):
                device = xyz.device
                B, N, C = xyz.shape
                distance = torch.ones(B, N, device=device) * 1e10
                for i in range(npoint):
                    dist = torch.sum((xyz - xyz[:, :1]) ** 2, -1)
                    mask = dist < distance
                    distance[mask] = dist[mask]
                return distance
            class SetAbstraction(nn.Module):
                def forward(self, xyz):
                    return farthest_point_sample(xyz, 512)
        """),
        "train.py": d("""
            import torch
            from models.utils import SetAbstraction
            model = SetAbstraction().cuda()
            for points, target in loader:
                loss = model(points.cuda()).sum()
                loss.backward()
                optimizer.step()
        """),
    }, (("models/utils.py", 10),)),
]
QUIET += [
    Shape("TW207", "a mask used at set-up, in __init__, is no per-step sync", d("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                w = torch.ones(n, n, device="cuda")
                mask = w > 0
                w[mask] = 0
                self.register_buffer("w", w)
            def forward(self, x):
                return x @ self.w
    """)),
]
FIND += [
    Shape("TW201", "Kaggle pipelines: main() wraps the model, puts it in eval mode after each epoch and trains it "
          "through the file's train_epoch()", d("""
        import torch
        from torch.nn import DataParallel
        def train_epoch(model, loader, optimizer):
            model.train()
            for x, y in loader:
                loss = model(x.cuda()).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        def main(model, loader, optimizer, epochs):
            model = DataParallel(model).cuda()
            for epoch in range(epochs):
                train_epoch(model, loader, optimizer)
                model = model.eval()
    """), 11),
]
