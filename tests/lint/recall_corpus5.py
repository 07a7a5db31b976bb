"""The recall corpus, fifth round: the classes a first look at seven more fresh projects
(issue 22, fourth held-out set, now a tuning set) found missing or falsely reported - each written
in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists; the entries of one rule sit together.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW502
FIND += [
    Shape("TW502", "segmentation decoders: F.upsample to the skip connection's size", d("""
        import torch
        import torch.nn.functional as F
        def decode(center, enc4):
            return torch.cat([center, F.upsample(enc4, center.size()[2:], mode='bilinear')], 1)
    """), 4),
    Shape("TW502", "a refinement head: F.upsample_bilinear", d("""
        from torch.nn import functional as F
        def refine(brm, a, b):
            return brm(F.upsample_bilinear(a, b.size()[2:]) + b)
    """), 3),
    Shape("TW502", "F.upsample_nearest through the full module path", d("""
        import torch
        def up(x):
            return torch.nn.functional.upsample_nearest(x, scale_factor=2)
    """), 3),
    Shape("TW502", "a model module calls init.xavier_uniform on a name it never imports (a sibling module does)", d("""
        import torch
        import torch.nn as nn
        def conv_init(m):
            if m.__class__.__name__.find('Conv') != -1:
                init.xavier_uniform(m.weight, gain=2 ** 0.5)
    """), 5),
    Shape("TW502", "the same with init.constant on the bias", d("""
        import torch.nn as nn
        def conv_init(m):
            if isinstance(m, nn.Conv2d):
                init.constant(m.bias, 0)
    """), 4),
]
QUIET += [
    Shape("TW502", "the current spellings: F.interpolate, nn.Upsample, and init functions with the underscore", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.nn import init
        up = nn.Upsample(scale_factor=2, mode='nearest')
        def decode(x, skip):
            init.xavier_uniform_(skip)
            return F.interpolate(x, skip.size()[2:], mode='bilinear', align_corners=False)
    """)),
    Shape("TW502", "a project's own init module or object named init, and a file that never imports torch", d("""
        import torch
        import mylib.init as init
        def setup(m):
            init.xavier_uniform(m.weight)
    """)),
    Shape("TW502", "a parameter called init", d("""
        import torch
        def setup(m, init):
            init.constant(m.bias, 0)
    """)),
    Shape("TW502", "a star import may bind init", d("""
        import torch
        from mylib.weights import *
        def setup(m):
            init.normal(m.weight)
    """)),
    Shape("TW502", "a file that never imports torch", d("""
        import numpy as np
        def setup(m):
            init.normal(m.weight)
    """)),
    Shape("TW502", "an upsample method of the project's own object", d("""
        import torch
        def decode(self, x):
            return self.upsample(x) + self.decoder.upsample_bilinear(x)
    """)),
]

# ----------------------------------------------------------------------------------- TW403/TW402
# A vocoder: the training script moves everything with .cuda() and resumes its own checkpoints;
# only the inference module (which trains nothing) picks "cuda" or "cpu".
_VOC_TRAIN = d("""
    import torch
    from vocoder.modules import Generator
    def main(args):
        netG = Generator().cuda()
        optG = torch.optim.Adam(netG.parameters())
        if args.load_path:
            netG.load_state_dict(torch.load(args.load_path + "/netG.pt"))
        for x in loader:
            x = x.cuda()
            loss = netG(x).mean()
            optG.zero_grad()
            loss.backward()
            optG.step()
""")
_VOC_INFER = d("""
    import torch
    from vocoder.modules import Generator
    def default_device():
        return "cuda" if torch.cuda.is_available() else "cpu"
    def load_model(path, device=default_device()):
        net = Generator().to(device)
        net.load_state_dict(torch.load(path, map_location=device))
        return net
""")
_VOC_MODULES = "import torch.nn as nn\nclass Generator(nn.Module):\n    pass\n"
_VOC = {"scripts/train.py": _VOC_TRAIN, "vocoder/interface.py": _VOC_INFER, "vocoder/modules.py": _VOC_MODULES}
_VOC_FINETUNE = d("""
    import torch
    from vocoder.modules import Generator
    def main(args):
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        netG = Generator().to(dev)
        netG.load_state_dict(torch.load(args.load_path + "/netG.pt", map_location=dev))
        optG = torch.optim.Adam(netG.parameters())
        for x in loader:
            loss = netG(x.to(dev)).mean()
            loss.backward()
""")
_VOC_BOTH = {**_VOC, "scripts/finetune.py": _VOC_FINETUNE}
PROJECTS += [
    ProjectShape("TW403", "vocoder: the CPU fallback is in the inference module only; the training script is GPU-only",
                 _VOC),
    ProjectShape("TW402", "the same vocoder resuming its own checkpoints in the GPU-only training script", _VOC),
    ProjectShape("TW403", "the same vocoder whose second training script falls back: the hard-coded one breaks it" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]",
                 _VOC_BOTH, ()),
    ProjectShape("TW402", "the same: the resume load in the hard-coded script needs map_location", _VOC_BOTH,
                 (("scripts/train.py", 7),)),
]

# ----------------------------------------------------------------------------------- TW205
_BUFFER = d("""
    import numpy as np
    import torch
    class ReplayBuffer(object):
        def __init__(self, state_dim, device, max_size=100000):
            self.device = device
            self.state = np.zeros((max_size, state_dim))
            self.reward = np.zeros((max_size, 1))
            self.size = 0
        def sample(self, batch_size):
            ind = np.random.randint(0, self.size, size=batch_size)
            return (
                torch.FloatTensor(self.state[ind]).to(self.device),
                torch.FloatTensor(self.reward[ind]).to(self.device),
            )
""")
_AGENT = d("""
    import torch
    class Agent(object):
        def __init__(self, actor, device):
            self.actor, self.device = actor, device
        def select_action(self, state):
            state = torch.FloatTensor(state.reshape(1, -1)).to(self.device)
            return self.actor(state).cpu().data.numpy().flatten()
        def train(self, replay_buffer, iterations, batch_size=100):
            for it in range(iterations):
                state, reward = replay_buffer.sample(batch_size)
                loss = (self.actor(state) - reward).pow(2).mean()
                self.actor_optimizer.zero_grad()
                loss.backward()
                self.actor_optimizer.step()
""")
# Round 13 (sets 15 and 16, which count host data that has to cross anyway - env observations,
# NumPy batches - as no TW205 pitfall): `torch.as_tensor(x, device=...)` copies the same data from the host,
# so these are look-alikes now (recall_corpus26 has the class).
PROJECTS += [
    ProjectShape("TW205", "look-alike (round 13): offline RL's replay buffer sample() building each minibatch with "
                 "FloatTensor(self.x[ind]).to(device), and the agent's select_action converting state.reshape(1, -1)",
                 {"utils.py": _BUFFER, "agent.py": _AGENT}),
    ProjectShape("TW205", "the same buffer whose sample() only a one-off script calls (no training step)", {
        "utils.py": _BUFFER,
        "inspect_buffer.py": "import utils\nbuf = utils.ReplayBuffer(3, 'cuda')\nprint(buf.sample(4))\n"}),
]
QUIET += [
    Shape("TW205", "a dataset's __getitem__ converts one stored row (no move), and a free function named sample", d("""
        import torch
        class Rows(torch.utils.data.Dataset):
            def __getitem__(self, i):
                return torch.FloatTensor(self.x[i])
        def sample(self, ind):
            return torch.FloatTensor(self.x[ind]).to(self.device)
    """)),
    Shape("TW205", "an agent converting what it stored, not the observation it was given", d("""
        import torch
        class Agent(object):
            def select_action(self, state):
                last = torch.FloatTensor(self.last_state.reshape(1, -1)).to(self.device)
                return self.actor(last)
    """)),
]

# ----------------------------------------------------------------------------------- TW209
_CONV_HELPER = d("""
    import torch.nn as nn
    import torch.nn.functional as F
    def conv3x3(in_planes, out_planes, stride=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=True)
    class BasicBlock(nn.Module):
        def __init__(self, in_planes, planes, stride=1):
            super().__init__()
            self.conv1 = conv3x3(in_planes, planes, stride)
            self.bn1 = nn.BatchNorm2d(planes)
        def forward(self, x):
            return F.relu(self.bn1(self.conv1(x)))
""")
FIND += [
    Shape("TW209", "wide ResNets: a conv3x3 helper returning a biased convolution, followed by BatchNorm in forward",
          _CONV_HELPER, 8),
    Shape("TW209", "a helper whose bias parameter defaults to True, in a Sequential before BatchNorm", d("""
        import torch.nn as nn
        def conv(cin, cout, bias=True):
            return nn.Conv2d(cin, cout, 3, padding=1, bias=bias)
        stem = nn.Sequential(conv(3, 16), nn.BatchNorm2d(16), nn.ReLU())
    """), 4),
]
QUIET += [
    Shape("TW209", "the helper without a bias", _CONV_HELPER.replace("bias=True", "bias=False")),
    Shape("TW209", "a helper called with bias=False, and a helper that does more than return the convolution", d("""
        import torch.nn as nn
        def conv(cin, cout, bias=True):
            return nn.Conv2d(cin, cout, 3, padding=1, bias=bias)
        def conv_bn(cin, cout):
            layer = nn.Conv2d(cin, cout, 3, bias=False)  # (a biased one bound here would be a pair of its own)
            return nn.Sequential(layer, nn.BatchNorm2d(cout))
        stem = nn.Sequential(conv(3, 16, bias=False), nn.BatchNorm2d(16), conv_bn(16, 32), nn.BatchNorm2d(32))
    """)),
]

# ----------------------------------------------------------------------------------- TW110
_LAYER_BENCH = d("""
    import time
    import torch
    def test_attention_layer(args, n):
        layer = Attention(args).to(args.device)
        optimizer = torch.optim.Adam(layer.parameters(), 1e-4)
        x = torch.ones(4, n, args.d_model, device=args.device)
        start = time.time()
        for i in range(1000):
            loss = layer(x).pow(2).mean()
            loss.backward()
            optimizer.step()
        print('average time: {} s'.format((time.time() - start) / 1000))
""")
QUIET += [
    Shape("TW110", "long-sequence forecasting: a layer's speed benchmark repeats one step on the same input between two timer reads",
          _LAYER_BENCH),
]
FIND += [
    Shape("TW110", "the same loop where the iteration picks the data: a training loop that is also timed",
          _LAYER_BENCH.replace("loss = layer(x)", "loss = layer(x[i % 4])"), 8),
    Shape("TW110", "the same loop in a training function (not a benchmark)",
          _LAYER_BENCH.replace("def test_attention_layer", "def train_layer"), 8),
    Shape("TW110", "the same benchmark without a timer read after the loop",
          _LAYER_BENCH.replace("print('average time: {} s'.format((time.time() - start) / 1000))", "print(loss)"), 8),
]

# ----------------------------------------------------------------------------------- TW202/TW203
_DUMP = d("""
    import torch
    from torch.utils.data import DataLoader
    class Clips(torch.utils.data.Dataset):
        def __getitem__(self, i):
            return torch.load(self.files[i])
    def main(args):
        train_loader = DataLoader(Clips(), batch_size=16, num_workers=4, pin_memory=True)
        test_loader = DataLoader(Clips(), batch_size=1)
        references = []
        for i, x_t in enumerate(test_loader):
            x_t = x_t.cuda()
            references.append(fft(x_t).detach())
            if i == args.n_test_samples - 1:
                break
        for epoch in range(args.epochs):
            for x in train_loader:
                loss = net(x.cuda()).mean()
                loss.backward()
""")
_DUMP_IN_EPOCHS = _DUMP.replace("""    for i, x_t in enumerate(test_loader):
        x_t = x_t.cuda()
        references.append(fft(x_t).detach())
        if i == args.n_test_samples - 1:
            break
    for epoch in range(args.epochs):
""", """    for epoch in range(args.epochs):
        for i, x_t in enumerate(test_loader):
            x_t = x_t.cuda()
            references.append(fft(x_t).detach())
            if i == args.n_test_samples - 1:
                break
""")
QUIET += [
    Shape("TW202", "vocoder: the test loader feeds the first n reference clips once, before training", _DUMP),
    Shape("TW203", "the same loader: nothing to pin for a few clips taken once", _DUMP),
]
FIND += [
    Shape("TW202", "the same first-n loop run every epoch", _DUMP_IN_EPOCHS, 8),
    Shape("TW203", "the same first-n loop run every epoch feeds the GPU every epoch", _DUMP_IN_EPOCHS, 8),
    Shape("TW202", "a loop over the loader that trains until a step budget", _DUMP.replace(
        "references.append(fft(x_t).detach())", "net(x_t).mean().backward()"), 8),
]

# ----------------------------------------------------------------------------------- TW201
_TEST_ONLY = d("""
    import sys
    import torch
    if args.testOnly:
        net = torch.load('./checkpoint/best.t7')['net']
        if use_cuda:
            net.cuda()
            net = torch.nn.DataParallel(net, device_ids=range(torch.cuda.device_count()))
        net.eval()
        with torch.no_grad():
            for inputs, targets in testloader:
                correct += net(inputs.cuda()).argmax(1).eq(targets.cuda()).sum().item()
        sys.exit(0)
    net = Net().cuda()
    def train(epoch):
        net.train()
        for inputs, targets in trainloader:
            outputs = net(inputs.cuda())
            loss = criterion(outputs, targets.cuda())
            loss.backward()
            optimizer.step()
    for epoch in range(epochs):
        train(epoch)
""")
QUIET += [
    Shape("TW201", "wide ResNets: DataParallel in the --testOnly branch, which evaluates and exits", _TEST_ONLY),
]
FIND += [
    Shape("TW201", "the same branch when it does not end the program (training follows with this wrapper)",
          _TEST_ONLY.replace("    sys.exit(0)\n", ""), 7),
    Shape("TW201", "the same branch when it fine-tunes before exiting", _TEST_ONLY.replace(
        "    net.eval()\n", "    criterion(net(x), y).backward()\n    net.eval()\n"), 7),
]
