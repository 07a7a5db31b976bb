"""The recall corpus, round 7 part B: classes the sixth set (a tuning set since round 7) missed -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW204 loaders kept elsewhere
# Pinned loaders built where the copying loop cannot name them: by a function of another module
# (the training script never says "loader" or "pin_memory"), in a dict comprehension iterated by
# key, or stored as a dict item and drawn with next()/__next__().
_BUILDERS = d("""
    from torch.utils.data import DataLoader
    def get_sets(path, batch_size):
        train = DataLoader(Clips(path, "train"), batch_size=batch_size, shuffle=True, num_workers=2, pin_memory={pin})
        test = DataLoader(Clips(path, "test"), batch_size=1, num_workers=1, pin_memory={pin})
        return train, test
""")
_SCRIPT = d("""
    import torch
    from data.sets import get_sets
    def run_epochs(model, opt, train_set, epochs):
        device = next(model.parameters()).device
        for epoch in range(epochs):
            for i, (x, y) in enumerate(train_set, 1):
                x, y = x.to(device), y.to(device)
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
    def main(model, opt, path):
        train_set, test_set = get_sets(path, 32)
        run_epochs(model, opt, train_set, 10)
""")
PROJECTS += [
    ProjectShape("TW204", "a vocoder's loaders returned by a data module's function; the script names neither loader nor pin_memory", {
        "data/sets.py": _BUILDERS.format(pin="True"),
        "train.py": _SCRIPT,
    }, (("train.py", 7), ("train.py", 7))),
    ProjectShape("TW204", "look-alike: the data module's loaders are not pinned", {
        "data/sets.py": _BUILDERS.format(pin="False"),
        "train.py": _SCRIPT,
    }),
]
_SPLITS = """
    import torch
    from torch.utils.data import DataLoader
    loaders = {{split: DataLoader(folders[split], batch_size=32, shuffle=True, num_workers=2{pin})
               for split in ["train", "val"]}}
    def train(model, opt, epochs):
        for epoch in range(epochs):
            for phase in ["train", "val"]:
                for step, batch in enumerate(loaders[phase]):
                    images, labels = batch
                    images = images.cuda()
                    loss = torch.nn.functional.cross_entropy(model(images), labels.cuda())
"""
_EXTRA = """
    extra = {{}}
    extra["aux"] = DataLoader(aux_folder, batch_size=16, shuffle=True, drop_last=True{pin})
    aux_iter = enumerate(extra["aux"])
    def step(model):
        for epoch in range(10):
            try:
                _, batch = aux_iter.__next__()
            except StopIteration:
                aux_iter = enumerate(extra["aux"])
                _, batch = aux_iter.__next__()
            first, second = batch
            first = first.cuda().detach()
            model(first, second)
"""
FIND += [
    Shape("TW204", "re-identification: loaders built in a dict comprehension, the loop iterates loaders[phase]",
          d(_SPLITS.format(pin=", pin_memory=True")), 10),
    Shape("TW204", "an extra loader stored as a dict item, drawn with it.__next__() from enumerate(...) inside the loop",
          "import torch\nfrom torch.utils.data import DataLoader\n" + d(_EXTRA.format(pin=", pin_memory=True")), 14),
    Shape("TW204", "a dict literal of pinned loaders, a batch drawn with next(iter(loaders['train'])) every step", d("""
        import torch
        from torch.utils.data import DataLoader
        loaders = {"train": DataLoader(train_set, batch_size=8, pin_memory=True),
                   "val": DataLoader(val_set, batch_size=8, pin_memory=True)}
        for it in range(1000):
            x, y = next(iter(loaders["train"]))
            x = x.to("cuda")
    """), 7),
]
QUIET += [
    Shape("TW204", "the dict comprehension's loaders are not pinned (another loader of the file is)",
          d(_SPLITS.format(pin="") + "    side = DataLoader(other, batch_size=4, pin_memory=True)\n")),
    Shape("TW204", "the drawn dict item is unpinned while another item of the dict is pinned", (
        "import torch\nfrom torch.utils.data import DataLoader\n" + d(_EXTRA.format(pin=""))
        + 'extra["main"] = DataLoader(main_folder, batch_size=16, pin_memory=True)\n')),
    Shape("TW204", "copies with non_blocking=True from the pinned dict comprehension",
          d(_SPLITS.format(pin=", pin_memory=True").replace("images.cuda()", "images.cuda(non_blocking=True)").replace(
              "labels.cuda()", "labels.cuda(non_blocking=True)"))),
]

# ----------------------------------------------------------------------------------- TW205 per-batch legacy and one-hot
# Replay minibatches copied into a typed legacy tensor and then to the device every update; legacy
# constructors of sizes zeroed and moved per batch or per loss call (also in a make_* helper a
# loss's forward calls); a one-hot filled in on the host and moved in the next statement.
_AGENT = """
    import torch
    import torch.nn.functional as F
    class Agent:
        def __init__(self, critic, device):
            self.critic = critic.to(device)
            self.device = device
        def update(self, memory, batch_size):
            states, actions, rewards = {draw}
            states = torch.FloatTensor(states).to(self.device)
            actions = torch.FloatTensor(actions).to(self.device)
            rewards = torch.FloatTensor(rewards).to(self.device).unsqueeze(1)
            loss = F.mse_loss(self.critic(states, actions), rewards)
            loss.backward()
"""
# The replay minibatches: Round 13 (sets 15 and 16, which count host data that has to cross anyway - env observations,
# NumPy batches - as no TW205 pitfall): `torch.as_tensor(x, device=...)` copies the same data from the host,
# so these are look-alikes now (recall_corpus26 has the class).
QUIET += [
    Shape("TW205", "look-alike (round 13): soft actor-critic's replay minibatch copied with FloatTensor(...).to(device)",
          d(_AGENT.format(draw="memory.sample(batch_size=batch_size)"))),
    Shape("TW205", "look-alike (round 13): a DQN's transitions, FloatTensor(np.array(batch.state)).to(device)", d("""
        import numpy as np
        import torch
        def optimize(policy, replay_buffer, opt, device):
            for step in range(100):
                batch = replay_buffer.sample(64)
                state = torch.FloatTensor(np.array(batch.state)).to(device)
                q = policy(state).max(1)[0].mean()
                q.backward()
                opt.step()
    """)),
]
FIND += [
    Shape("TW205", "re-identification features: torch.FloatTensor(n, opt.dim).zero_().cuda() for every test batch", d("""
        import torch
        def extract(model, loader, opt):
            feats = []
            for img, label in loader:
                n, c, h, w = img.size()
                ff = torch.FloatTensor(n, opt.dim).zero_().cuda()
                ff += model(img.cuda())
                feats.append(ff)
            return feats
    """), 6),
    Shape("TW205", "a segmentation loss's make_one_hot: FloatTensor(sizes...).zero_().to(labels.device), called by forward", d("""
        import torch
        import torch.nn as nn
        def make_one_hot(labels, classes):
            one_hot = torch.FloatTensor(labels.size()[0], classes, labels.size()[2], labels.size()[3]).zero_().to(labels.device)
            return one_hot.scatter_(1, labels.data, 1)
        class DiceLoss(nn.Module):
            def forward(self, output, target):
                target = make_one_hot(target.unsqueeze(dim=1), classes=output.size()[1])
                return 1 - (output.softmax(1) * target).sum() / target.sum()
    """), 4),
    Shape("TW205", "label smoothing: torch.zeros(size).scatter_(...) on the host, then targets = targets.cuda() in the next statement", d("""
        import torch
        import torch.nn as nn
        class SmoothCE(nn.Module):
            def __init__(self, epsilon=0.1, use_gpu=True):
                super().__init__()
                self.epsilon = epsilon
                self.use_gpu = use_gpu
            def forward(self, inputs, targets):
                log_probs = inputs.log_softmax(1)
                targets = torch.zeros(log_probs.size()).scatter_(1, targets.unsqueeze(1).data.cpu(), 1)
                if self.use_gpu: targets = targets.cuda()
                return (-targets * log_probs).mean(0).sum()
    """), 11),
]
QUIET += [
    Shape("TW205", "the environment's random action (env.action_space.sample()) is not a replay minibatch",
          d(_AGENT.format(draw="env.action_space.sample(), 0, 0"))),
    Shape("TW205", "the replay minibatch converted with torch.as_tensor(..., device=...) (one copy)",
          d(_AGENT.format(draw="memory.sample(batch_size=batch_size)").replace(
              "torch.FloatTensor(states).to(self.device)", "torch.as_tensor(states, dtype=torch.float32, device=self.device)").replace(
              "torch.FloatTensor(actions).to(self.device)", "torch.as_tensor(actions, dtype=torch.float32, device=self.device)").replace(
              "torch.FloatTensor(rewards).to(self.device)", "torch.as_tensor(rewards, dtype=torch.float32, device=self.device)"))),
    Shape("TW205", "a legacy constructor of data read from a file (one argument, not filled), moved per batch", d("""
        import numpy as np
        import torch
        def run(model, names):
            for name in names:
                wav = np.load(name)
                x = torch.FloatTensor(wav).cuda()
                model(x)
    """)),
    Shape("TW205", "a make_* helper that only set-up code calls (the model's __init__)", d("""
        import torch
        import torch.nn as nn
        def make_table(n, dim):
            return torch.FloatTensor(n, dim).zero_().cuda()
        class Lookup(nn.Module):
            def __init__(self, n, dim):
                super().__init__()
                self.table = make_table(n, dim)
            def forward(self, idx):
                return self.table[idx]
    """)),
    Shape("TW205", "an init_hidden() that only a generate() method calls, outside its loop (once per request)", d("""
        import torch
        import torch.nn as nn
        class Vocoder(nn.Module):
            def __init__(self, hidden_size):
                super().__init__()
                self.hidden_size = hidden_size
                self.cell = nn.GRUCell(1, hidden_size)
            def forward(self, x, h):
                return self.cell(x, h)
            def generate(self, steps):
                with torch.no_grad():
                    hidden = self.init_hidden()
                    x = torch.zeros(1, 1, device=hidden.device)
                    for _ in range(steps):
                        hidden = self.cell(x, hidden)
                return hidden
            def init_hidden(self, batch_size=1):
                return torch.zeros(batch_size, self.hidden_size).cuda()
    """)),
]

# ----------------------------------------------------------------------------------- TW109 freeze without requires_grad
# Lead's decision (round 7): a model's freeze_bn() that only calls .eval() on its BatchNorm layers
# is half a freeze even when re-applied after model.train(): the affine weight and bias keep
# requires_grad and reach the optimizer.
_SEG_MODEL = d("""
    import torch.nn as nn
    from torchvision import models
    class PSPNet(nn.Module):
        def __init__(self, num_classes, freeze_bn=False):
            super().__init__()
            self.backbone = models.resnet50(weights=None)
            self.head = nn.Conv2d(2048, num_classes, 1)
            if freeze_bn:
                self.freeze_bn()
        def forward(self, x):
            return self.head(self.backbone(x))
        def freeze_bn(self):
            for module in self.modules():
                if isinstance(module, nn.BatchNorm2d): module.eval()
""")
_SEG_TRAINER = d("""
    import torch
    class Trainer:
        def __init__(self, model, config, loader):
            self.model = model
            self.config = config
            self.loader = loader
            params = filter(lambda p: p.requires_grad, self.model.parameters())
            self.optimizer = torch.optim.SGD(params, lr=0.01)
        def _train_epoch(self, epoch):
            self.model.train()
            if self.config["freeze_bn"]:
                self.model.freeze_bn()
            for data, target in self.loader:
                loss = torch.nn.functional.cross_entropy(self.model(data), target)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
""")


def _unused(text: str, call: str) -> str:
    assert call in text
    return text.replace(call, "")


PROJECTS += [
    ProjectShape("TW109", "a segmentation model's freeze_bn() (eval only), re-applied by the trainer of another module after model.train()", {
        "models/pspnet.py": _SEG_MODEL,
        "trainer.py": _SEG_TRAINER,
    }, (("models/pspnet.py", 14),)),
    ProjectShape("TW109", "look-alike: the model's freeze_bn() also turns requires_grad off", {
        "models/pspnet.py": _SEG_MODEL.replace(
            "if isinstance(module, nn.BatchNorm2d): module.eval()",
            "if isinstance(module, nn.BatchNorm2d):\n                module.eval()\n                module.requires_grad_(False)"),
        "trainer.py": _SEG_TRAINER,
    }),
    ProjectShape("TW109", "look-alike: an FCN on VGG16 (no BatchNorm anywhere) that offers the same freeze_bn()", {
        "models/pspnet.py": _SEG_MODEL.replace("models.resnet50(weights=None)", "models.vgg16(weights=None).features"),
        "trainer.py": _SEG_TRAINER,
    }),
    ProjectShape("TW109", "look-alike: a freeze_bn() that nothing in the project calls", {
        "models/pspnet.py": _unused(_SEG_MODEL, "        if freeze_bn:\n            self.freeze_bn()\n"),
        "trainer.py": _unused(_SEG_TRAINER, '        if self.config["freeze_bn"]:\n            self.model.freeze_bn()\n'),
    }),
]
FIND += [
    Shape("TW109", "a detector's freeze_bn() called after model.train() in the same script every epoch", d("""
        import torch
        import torch.nn as nn
        class Detector(nn.Module):
            def freeze_bn(self):
                for layer in self.modules():
                    if isinstance(layer, nn.BatchNorm2d):
                        layer.eval()
        model = Detector()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-5)
        for epoch in range(10):
            model.train()
            model.freeze_bn()
            train_one_epoch(model, optimizer)
    """), 7),
]
QUIET += [
    Shape("TW109", "the same detector with FrozenBatchNorm2d layers (nothing put in eval)", d("""
        import torch
        import torch.nn as nn
        from torchvision.ops import FrozenBatchNorm2d
        class Detector(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = FrozenBatchNorm2d(64)
        model = Detector()
        for epoch in range(10):
            model.train()
            train_one_epoch(model)
    """)),
    Shape("TW109", "the detector's freeze_bn() also freezes weight and bias", d("""
        import torch
        import torch.nn as nn
        class Detector(nn.Module):
            def freeze_bn(self):
                for layer in self.modules():
                    if isinstance(layer, nn.BatchNorm2d):
                        layer.eval()
                        for p in layer.parameters():
                            p.requires_grad = False
        model = Detector()
        for epoch in range(10):
            model.train()
            model.freeze_bn()
            train_one_epoch(model)
    """)),
]

# ----------------------------------------------------------------------------------- TW509 builders chosen by name
# A backbone option picks the torchvision builder with getattr; the old flag passed by keyword or
# positionally (also a plain builder given the flag's variable).
FIND += [
    Shape("TW509", "a GCN's backbone: getattr(torchvision.models, backbone)(pretrained=False)", d("""
        import torch.nn as nn
        import torchvision
        class Encoder(nn.Module):
            def __init__(self, backbone="resnet50"):
                super().__init__()
                net = getattr(torchvision.models, backbone)(pretrained=False)
                self.stem = nn.Sequential(net.conv1, net.bn1, net.relu)
    """), 6),
    Shape("TW509", "a PSPNet's backbone: getattr(models, backbone)(pretrained) with the flag positional", d("""
        import torch.nn as nn
        from torchvision import models
        class Encoder(nn.Module):
            def __init__(self, backbone="densenet201", pretrained=True):
                super().__init__()
                net = getattr(models, backbone)(pretrained)
                self.features = net.features
    """), 6),
    Shape("TW509", "an FCN on VGG: models.vgg16(pretrained) given the constructor's flag", d("""
        import torch.nn as nn
        from torchvision import models
        class FCN(nn.Module):
            def __init__(self, pretrained=True):
                super().__init__()
                self.features = models.vgg16(pretrained).features
    """), 6),
]
QUIET += [
    Shape("TW509", "the builder chosen by name with weights=", d("""
        import torchvision
        def encoder(backbone, weights=None):
            return getattr(torchvision.models, backbone)(weights=weights)
    """)),
    Shape("TW509", "getattr on the project's own models module with a pretrained flag", d("""
        import my_models
        def encoder(backbone, pretrained=True):
            return getattr(my_models, backbone)(pretrained)
    """)),
    Shape("TW509", "positional arguments that are not the flag (get_model's name, a builder of the project's layers)", d("""
        from torchvision import models
        def encoder(name, cfg):
            features = models.vgg.make_layers(cfg)
            return models.get_model(name, weights=None), getattr(models, name)(num_classes=10), features
    """)),
]

# ----------------------------------------------------------------------------------- TW201 DataParallel by hand
# replicate/scatter/parallel_apply/gather written out in a helper (here or in another module),
# called in the training step when several GPUs are visible.
_HAND_DP = d("""
    import torch
    def spread_forward(model, *inputs):
        devices = list(range(torch.cuda.device_count()))
        replicas = torch.nn.parallel.replicate(model, devices)
        chunks = torch.nn.parallel.scatter(inputs, devices)
        outputs = torch.nn.parallel.parallel_apply(replicas[:len(chunks)], chunks)
        return torch.nn.parallel.gather(outputs, devices[0])
""")
_VOCODER_STEP = d("""
    import torch
    import torch.nn.functional as F
    from utils import spread_forward
    def train_loop(model, optimizer, loader, device):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            if device.type == "cuda" and torch.cuda.device_count() > 1:
                y_hat = spread_forward(model, x)
            else:
                y_hat = model(x)
            loss = F.cross_entropy(y_hat, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")
PROJECTS += [
    ProjectShape("TW201", "a vocoder's workaround helper in utils (replicate/scatter/parallel_apply/gather) called in the training step", {
        "utils/__init__.py": _HAND_DP,
        "train.py": _VOCODER_STEP,
    }, (("train.py", 8),)),
    ProjectShape("TW201", "look-alike: the helper only used to generate, under no_grad", {
        "utils/__init__.py": _HAND_DP,
        "generate.py": d("""
            import torch
            from utils import spread_forward
            def generate(model, batches):
                outs = []
                with torch.no_grad():
                    for x in batches:
                        outs.append(spread_forward(model, x.cuda()))
                return outs
        """),
    }),
    ProjectShape("TW201", "look-alike: a helper that only gathers outputs (no replicas, no parallel_apply)", {
        "utils/__init__.py": d("""
            import torch
            def spread_forward(model, *inputs):
                return torch.nn.parallel.gather([model(*inputs)], 0)
        """),
        "train.py": _VOCODER_STEP,
    }),
]
FIND += [
    Shape("TW201", "the hand-written DataParallel defined and used in the same training script", _HAND_DP + d("""
        def train(model, loader, opt):
            for x, y in loader:
                out = spread_forward(model, x.cuda())
                loss = torch.nn.functional.mse_loss(out, y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 10),
]

# ----------------------------------------------------------------------------------- TW104 helpers elsewhere, acting
# After model.eval(), a function of another module runs the model it is handed with autograd on;
# an agent's select_action() runs its policy every environment step and returns host data.
_METRICS = d("""
    import numpy as np
    import torch
    def metrics(model, test_loader, top_k):
        hits = []
        for user, item, label in test_loader:
            predictions = model(user.cuda(), item.cuda())
            _, indices = torch.topk(predictions, top_k)
            hits.append(int(item[0].item() in item[indices].tolist()))
        return np.mean(hits)
""")
_NCF_MAIN = d("""
    import torch
    import evaluate
    from model import NCF
    model = NCF(100, 50).cuda()
    opt = torch.optim.Adam(model.parameters())
    for epoch in range(20):
        model.train()
        for user, item, label in train_loader:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model(user, item), label)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        hr = evaluate.metrics(model, test_loader, 10)
""")
PROJECTS += [
    ProjectShape("TW104", "recommendation: model.eval() then evaluate.metrics(model, ...) of another module runs it without no_grad", {
        "evaluate.py": _METRICS,
        "main.py": _NCF_MAIN,
    }, (("main.py", 14),)),
    ProjectShape("TW104", "look-alike: the other module's helper runs the model under no_grad", {
        "evaluate.py": _METRICS.replace("def metrics(", "@torch.no_grad()\ndef metrics("),
        "main.py": _NCF_MAIN,
    }),
    ProjectShape("TW104", "look-alike: the helper only reads the model's parameters (no forward pass)", {
        "evaluate.py": d("""
            def metrics(model, test_loader, top_k):
                return sum(p.numel() for p in model.parameters())
        """),
        "main.py": _NCF_MAIN,
    }),
]
_AGENT_ACT = """
    import torch
    from model import GaussianPolicy
    class SAC:
        def __init__(self, num_inputs, num_actions, device):
            self.policy = GaussianPolicy(num_inputs, num_actions).to(device)
            self.policy_optim = torch.optim.Adam(self.policy.parameters(), lr=3e-4)
            self.device = device
        def select_action(self, state, evaluate=False):
            state = torch.as_tensor(state, dtype=torch.float32, device=self.device).unsqueeze(0)
            if evaluate is False:
                action, _, _ = self.policy.sample(state)
            else:
                _, _, action = self.policy.sample(state)
            return {ret}
"""
FIND += [
    Shape("TW104", "soft actor-critic: select_action() runs self.policy.sample(state) with autograd on, returns numpy",
          d(_AGENT_ACT.format(ret="action.detach().cpu().numpy()[0]")), 11),
    Shape("TW104", "a DDPG agent's act(): self.actor(state) then .cpu().data.numpy()", d("""
        import torch
        from networks import Actor
        class Agent:
            def __init__(self, state_size, action_size, device):
                self.actor = Actor(state_size, action_size).to(device)
                self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=1e-4)
            def act(self, state):
                state = torch.from_numpy(state).float().unsqueeze(0)
                action = self.actor(state)
                return action.cpu().data.numpy()
    """), 9),
]
QUIET += [
    Shape("TW104", "select_action() that keeps the graph (returns the tensor and its log-probability for REINFORCE)",
          d(_AGENT_ACT.format(ret="action"))),
    Shape("TW104", "select_action() under torch.no_grad()",
          d(_AGENT_ACT.format(ret="action.detach().cpu().numpy()[0]").replace(
              "def select_action(", "@torch.no_grad()\n        def select_action("))),
]

# ----------------------------------------------------------------------------------- TW405 f-string rendezvous
FIND += [
    Shape("TW405", "linear evaluation: args.dist_url = f'tcp://localhost:{random port}', mp.spawn, init_method=args.dist_url", d("""
        import random
        import torch
        def main(args):
            args.rank = 0
            args.dist_url = f"tcp://localhost:{random.randrange(49152, 65535)}"
            args.world_size = torch.cuda.device_count()
            torch.multiprocessing.spawn(main_worker, (args,), args.world_size)
        def main_worker(gpu, args):
            torch.distributed.init_process_group(backend="nccl", init_method=args.dist_url,
                                                 world_size=args.world_size, rank=args.rank + gpu)
    """), 7),
]
QUIET += [
    Shape("TW405", "the address comes from a --dist-url option (its default is configuration), no address made in code", d("""
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--dist-url", default="tcp://localhost:10001")
        def main():
            args = parser.parse_args()
            torch.multiprocessing.spawn(main_worker, (args,), torch.cuda.device_count())
        def main_worker(gpu, args):
            torch.distributed.init_process_group(backend="nccl", init_method=args.dist_url, world_size=2, rank=gpu)
    """)),
    Shape("TW405", "an f-string tcp address logged, with workers that rendezvous through torchrun's environment", d("""
        import torch
        def main(args):
            url = f"tcp://{args.host}:{args.port}"
            print("serving metrics at", url)
            torch.multiprocessing.spawn(worker, (args,), 2)
        def worker(rank, args):
            run(rank, args)
    """)),
]

# ----------------------------------------------------------------------------------- TW209 through a Sequential
_BOTTLENECK = """
    import torch.nn as nn
    class Bottleneck(nn.Module):
        def __init__(self, c, asymmetric=False):
            super().__init__()
            if asymmetric:
                self.conv2 = nn.Sequential(
                    nn.Conv2d(c, c, kernel_size=(1, 5), padding=(0, 2), bias=False),
                    nn.BatchNorm2d(c),
                    nn.PReLU(),
                    nn.Conv2d(c, c, kernel_size=(5, 1), padding=(2, 0){bias}),
                )
            else:
                self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
        def forward(self, x):
            x = self.conv2(x)
            return self.bn2(x)
"""
FIND += [
    Shape("TW209", "ENet's asymmetric bottleneck: a Sequential ending with a biased Conv2d, then self.bn2 in forward",
          d(_BOTTLENECK.format(bias="")), 10),
]
QUIET += [
    Shape("TW209", "the Sequential's last convolution has bias=False", d(_BOTTLENECK.format(bias=", bias=False"))),
    Shape("TW209", "a Sequential that ends with an activation after the biased convolution",
          d(_BOTTLENECK.format(bias="").replace("(2, 0)),\n", "(2, 0)),\n            nn.ReLU(),\n"))),
]

# ----------------------------------------------------------------------------------- TW402 optimizer state in a helper
_RESTORE = d("""
    import torch
    def restore_checkpoint(model, optimizer, paths):
        model.load(paths["w"])
        optimizer.load_state_dict(torch.load(paths["o"]{extra}))
""")
_TTS_TRAIN = d("""
    import argparse
    import torch
    from utils.checkpoints import restore_checkpoint
    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--force_cpu", action="store_true")
        args = parser.parse_args()
        device = torch.device("cuda") if not args.force_cpu and torch.cuda.is_available() else torch.device("cpu")
        model = Vocoder().to(device)
        optimizer = torch.optim.Adam(model.parameters())
        restore_checkpoint(model, optimizer, {"w": "w.pyt", "o": "o.pyt"})
""")
PROJECTS += [
    ProjectShape("TW402", "a vocoder's checkpoint helper: optimizer.load_state_dict(torch.load(path)) in a module naming no device", {
        "utils/checkpoints.py": _RESTORE.format(extra=""),
        "train.py": _TTS_TRAIN,
    }, (("utils/checkpoints.py", 4),)),
    ProjectShape("TW402", "look-alike: the helper loads the optimizer state with map_location", {
        "utils/checkpoints.py": _RESTORE.format(extra=", map_location='cpu'"),
        "train.py": _TTS_TRAIN,
    }),
    ProjectShape("TW402", "look-alike: a project that never names CUDA (CPU training)", {
        "utils/checkpoints.py": _RESTORE.format(extra=""),
        "train.py": _TTS_TRAIN.replace('torch.device("cuda") if not args.force_cpu and torch.cuda.is_available() else ', ""),
    }),
]
QUIET += [
    Shape("TW205", "a make_* helper that a module's build_* method calls (set-up, not a forward pass)", d("""
        import torch
        import torch.nn as nn
        def make_mask(n):
            return torch.ones(n, n).tril().cuda()
        class Decoder(nn.Module):
            def build_masks(self, sizes):
                self.masks = [make_mask(n) for n in sizes]
            def forward(self, x):
                return x * self.masks[0]
    """)),
]
