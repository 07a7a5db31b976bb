"""The recall corpus, round 19 part A: TW207 classes the 27th and 28th sets showed on their first
look - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet (or stay found). ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 a script that can only run on the CPU
# A graph auto-encoder script whose CUDA switch is written the wrong way round: `--no-cuda` is a
# store_true option with a true default, so no command line turns CUDA on and the device is always
# the CPU. Its per-step reads wait for no accelerator.
_NO_CUDA = d("""
    import argparse
    import torch
    from nets import GraphAE
    parser = argparse.ArgumentParser()
    parser.add_argument('--no-cuda', action='store_true', default=True, help='cuda is not used')
    parser.add_argument('--epochs', type=int, default=10)
    args = parser.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if args.cuda else "cpu")
    model = GraphAE().to(device)
    opt = torch.optim.Adam(model.parameters())

    def train(loader):
        stats = {"loss": 0.0}
        for nodes, adj in loader:
            nodes, adj = nodes.to(device), adj.to(device)
            opt.zero_grad()
            loss = model(nodes, adj).mean()
            loss.backward()
            opt.step()
            stats["loss"] += loss.item()
        return stats
""")
_FLAG_CUDA = d("""
    import argparse
    import torch
    import torch.nn as nn
    p = argparse.ArgumentParser()
    p.add_argument('--gpu', dest='use_gpu', action='store_false', default=False)
    opts = p.parse_args()
    use_gpu = opts.use_gpu
    net = nn.Linear(8, 2)
    if use_gpu:
        net = net.cuda()
        torch.cuda.manual_seed(0)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def fit(batches):
        for x, y in batches:
            if use_gpu:
                x, y = x.cuda(), y.cuda()
            loss = nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print("loss %.4f" % loss.item())
""")
QUIET += [
    Shape("TW207", "CPU-only script: --no-cuda is store_true with default=True, so the device is always the CPU", _NO_CUDA),
    Shape("TW207", "CPU-only script: a store_false GPU switch whose default is False gates every .cuda()", _FLAG_CUDA),
]
FIND += [
    Shape("TW207", "look-alike: the usual --no-cuda store_true without a default (CUDA unless the user opts out)",
          _NO_CUDA.replace(", default=True, help='cuda is not used'", ""), 21),
    Shape("TW207", "look-alike: the same switch, but the model is also put on the GPU unconditionally",
          _FLAG_CUDA.replace("    loss = nn.functional", "    x, y = x.cuda(), y.cuda()\n        loss = nn.functional"), 23),
    Shape("TW207", "look-alike: a store_true GPU switch with a false default (the user turns it on)",
          _FLAG_CUDA.replace("store_false", "store_true"), 22),
]

# ------------------------------------------------------------- TW207 a synchronize under an opt-in timing switch
# A dynamics benchmark times the forward pass only when `--time_exp` is given (default 0): it
# synchronizes before reading the clock, which the measurement needs; without the option nothing waits.
_TIMED = d("""
    import argparse
    import time
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument('--time_exp', type=int, default=0)
    args = parser.parse_args()
    spent = {"t": 0.0, "n": 0}

    def train(model, opt, loader, device):
        total = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            if args.time_exp:
                torch.cuda.synchronize()
                t0 = time.time()
            pred = model(x)
            if args.time_exp:
                torch.cuda.synchronize()
                spent["t"] += time.time() - t0
                spent["n"] += 1
            loss = ((pred - y) ** 2).mean()
            loss.backward()
            opt.step()
            total += loss.item()
        return total
""")
QUIET += [
    Shape("TW207", "look-alike (synchronize): opt-in timing switch with default 0 around the forward",
          _TIMED.replace("        total += loss.item()\n", "")),
]
FIND += [
    Shape("TW207", "the per-step loss.item() after the opt-in timing is still reported", _TIMED, 25),
    Shape("TW207", "look-alike: the timing switch is on by default (every step synchronizes)",
          _TIMED.replace("default=0", "default=1").replace("        total += loss.item()\n", ""), 15),
]

# ------------------------------------------------------------- TW207 a log interval that defaults to 1, joined with another test
# `if i % args.log_interval == 0 and args.model == "tfn":` with `--log_interval` defaulting to 1: the
# modulo part passes on every step; sibling scripts declare their own `--log_interval` for their own parsers.
_LOG_ONE = d("""
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument('--log_interval', type=int, default=1)
    parser.add_argument('--model', type=str, default='tfn')
    args = parser.parse_args()

    def train(model, opt, loader, device):
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % args.log_interval == 0 and args.model == "tfn":
                print("step %d loss %.5f" % (i, loss.item()))
""")
_SIBLING = d("""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument('--log_interval', type=int, default=50)
    args = parser.parse_args()
    for i in range(1000):
        if i % args.log_interval == 0:
            print(i)
""")
PROJECTS += [
    ProjectShape("TW207", "log_interval defaulting to 1 inside an `and` test, a sibling script with its own --log_interval",
                 {"main_dyn.py": _LOG_ONE, "main_chem.py": _SIBLING}, (("main_dyn.py", 16),)),
    ProjectShape("TW207", "look-alike: another module sets args.log_interval",
                 {"main_dyn.py": _LOG_ONE, "launch.py": "import main_dyn\nmain_dyn.args.log_interval = 100\n"}),
]

# ------------------------------------------------------------- TW207 a module class only an inference script builds
# A style-transfer project keeps two variants of its transform module under the same class name:
# `libs/mul.py` for training and `libs/multest.py` (masks resized with OpenCV) for the photo-real test
# script, which loads weights, moves it and calls it under no_grad at the top level. The test
# variant's sub-network reads masks every call; no training step runs it.
_MUL = d("""
    import cv2
    import torch
    import torch.nn as nn
    class Coder(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(8, 8, 3, 1, 1)
        def forward(self, x, masks):
            b, c, h, w = x.size()
            for i in range(len(masks)):
                m = cv2.resize(masks[i].numpy(), (w, h))
                m = torch.FloatTensor(m).long().view(-1)
                if torch.sum(m) >= 10:
                    idx = (m > 0).nonzero().squeeze(1)
                    x = x.view(c, -1).index_fill(1, idx.cuda(), 0.0).view(b, c, h, w)
            return self.conv(x)
    class Transform(nn.Module):
        def __init__(self):
            super().__init__()
            self.cnet = Coder()
            self.snet = Coder()
        def forward(self, c, s, cm, sm):
            return self.cnet(c, cm) + self.snet(s, sm)
""")
_MUL_TRAIN_LIB = d("""
    import torch.nn as nn
    class Coder(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(8, 8, 3, 1, 1)
        def forward(self, x):
            return self.conv(x)
    class Transform(nn.Module):
        def __init__(self):
            super().__init__()
            self.cnet = Coder()
        def forward(self, c, s):
            return self.cnet(c) + s
""")
_MUL_TRAIN = d("""
    import torch
    from libs.mul import Transform
    net = Transform().cuda()
    opt = torch.optim.Adam(net.parameters())
    for c, s in [(torch.randn(1, 8, 4, 4), torch.randn(1, 8, 4, 4))]:
        loss = net(c.cuda(), s.cuda()).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")
_MUL_TEST = d("""
    import torch
    from libs.multest import Transform
    net = Transform()
    net.load_state_dict(torch.load("t.pth"))
    net.cuda()
    with torch.no_grad():
        for c, s, cm, sm in []:
            out = net(c.cuda(), s.cuda(), cm, sm)
""")
PROJECTS += [
    ProjectShape("TW207", "look-alike: a same-named module class that only an inference script builds (its parts read masks)",
                 {"libs/multest.py": _MUL, "libs/mul.py": _MUL_TRAIN_LIB, "train.py": _MUL_TRAIN, "test_photo.py": _MUL_TEST}),
    ProjectShape("TW207", "look-alike kept found: the training script builds the test variant too",
                 {"libs/multest.py": _MUL, "libs/mul.py": _MUL_TRAIN_LIB, "test_photo.py": _MUL_TEST,
                  "train.py": _MUL_TRAIN.replace("libs.mul import", "libs.multest import").replace(
                      "net(c.cuda(), s.cuda())", "net(c.cuda(), s.cuda(), [], [])")},
                 (("libs/multest.py", 13), ("libs/multest.py", 14))),
]

# ------------------------------------------------------------- TW207 %-formatting of the step's tensors in a print
# Style-transfer and image-translation loops print `'loss: %.4f' % (it, loss, ...)` of the loss tensors on
# every iteration: `%f` calls float() on each, a host read per tensor.
_PCT = d("""
    import torch
    def train(net, opt, loader, device):
        for it, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            rec = (net(x) - y).abs().mean()
            loss = rec * 10
            opt.zero_grad()
            loss.backward()
            opt.step()
            print('iter %d loss %.4f rec %.4f lr %.6f' %
                  (it, loss, rec, opt.param_groups[0]['lr']))
""")
FIND += [
    Shape("TW207", "print of '%.4f' % (..., loss, ...) of the step's tensors every iteration", _PCT, 10),
    Shape("TW207", "the same with one tensor after %", _PCT.replace(
        "print('iter %d loss %.4f rec %.4f lr %.6f' %\n              (it, loss, rec, opt.param_groups[0]['lr']))",
        "print('loss %.4f' % loss)"), 10),
]
QUIET += [
    Shape("TW207", "look-alike: %-formatting of Python numbers read once per interval", _PCT.replace(
        "        print(", "        if it % 100 == 0:\n            print(").replace("              (it,", "                  (it,")),
    Shape("TW207", "look-alike: %-formatting of host numbers (the step count and the learning rate)", _PCT.replace(
        "(it, loss, rec, opt.param_groups[0]['lr'])", "(it, 0.0, 0.0, opt.param_groups[0]['lr'])")),
]
