"""The recall corpus: for every rule, the code shapes lint must find, as seen in real projects
(each written here in our own words, reduced to the shape), and the look-alikes that must stay
quiet. ``test_recall_corpus.py`` runs them all; ``benchmarks/lint_corpus.py --recall`` prints
recall per rule. Precision work that loses a shape fails the tests.

The corpus is the positive cases of ``lint_cases.POSITIVE`` (one or more per rule) plus the
shapes below, which are the classes found missing or falsely reported on fresh projects
(issue 22). A :class:`Shape` is one file; a :class:`ProjectShape` is several files linted as
one project (facts that live in another module: a pinned loader built in ``data.py``, the
seeding in ``train.py``, a GPU-only helper).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from recall_shapes import ProjectShape, Shape, d


FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW513
FIND += [
    Shape("TW513", "noisy-net layers of RL agents: parameters made with a typed constructor", d("""
        import torch
        import torch.nn as nn
        class NoisyLinear(nn.Module):
            def __init__(self, n_in, n_out):
                super().__init__()
                self.weight_mu = nn.Parameter(torch.FloatTensor(n_out, n_in))
    """), 6),
    Shape("TW513", "GAN scripts: a device-dependent alias of the typed constructors", d("""
        import torch
        cuda = torch.cuda.is_available()
        Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
        for imgs, _ in loader:
            valid = Tensor(imgs.size(0), 1).fill_(1.0)
    """), 5),
    Shape("TW513", "RL rollouts: NumPy observations turned into tensors each step", d("""
        import torch
        for step in range(100):
            obs, reward, done, info = env.step(action)
            obs_t = torch.FloatTensor(obs).to(device)
    """), 4),
    Shape("TW513", "index tensors of a data pipeline", d("""
        import torch
        def encode(tokens):
            return torch.LongTensor(tokens)
    """), 3),
    Shape("TW513", "masks on the GPU built with a cuda typed constructor", d("""
        import torch
        mask = torch.cuda.ByteTensor(batch, length).zero_()
    """), 2),
]
QUIET += [
    Shape("TW513", "type checks and casts name the classes without calling them", d("""
        import torch
        if isinstance(x, torch.FloatTensor):
            y = x.type(torch.cuda.FloatTensor)
        dtype = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    """)),
    Shape("TW513", "a local class that happens to be called Tensor", d("""
        class Tensor:
            def __init__(self, *a):
                self.a = a
        t = Tensor(1, 2)
    """)),
]

# ----------------------------------------------------------------------------------- TW305
FIND += [
    Shape("TW305", "RL single-file scripts: the cuDNN flag follows a command-line option that defaults to True", d("""
        import torch
        from dataclasses import dataclass
        @dataclass
        class Args:
            torch_deterministic: bool = True
        args = Args()
        torch.manual_seed(1)
        torch.backends.cudnn.deterministic = args.torch_deterministic
    """), 8),
    Shape("TW305", "a config flag, through an alias of cudnn", d("""
        from torch.backends import cudnn
        def setup(cfg):
            cudnn.deterministic = cfg.DETERMINISTIC
            cudnn.benchmark = not cfg.DETERMINISTIC
    """), 3),
]
QUIET += [
    Shape("TW305", "the flag switched off, or the full switch used next to it", d("""
        import torch
        torch.backends.cudnn.deterministic = False
        def seed(args):
            torch.backends.cudnn.deterministic = args.deterministic
            torch.use_deterministic_algorithms(args.deterministic)
    """)),
]

# ----------------------------------------------------------------------------------- TW509
QUIET += [
    Shape("TW509", "model zoos supporting old torchvision: pretrained= only in the TypeError fallback", d("""
        import torchvision
        def backbone():
            try:
                return torchvision.models.resnet50(weights="IMAGENET1K_V1")
            except TypeError:
                return torchvision.models.resnet50(pretrained=True)
    """)),
    Shape("TW509", "a version test picks the argument", d("""
        import torchvision
        if torchvision.__version__ >= "0.13":
            net = torchvision.models.vgg16(weights="DEFAULT")
        else:
            net = torchvision.models.vgg16(pretrained=True)
    """)),
]
FIND += [
    Shape("TW509", "the same call without a fallback around it", d("""
        import torchvision
        def backbone():
            try:
                return torchvision.models.resnet50(pretrained=True)
            except RuntimeError:
                return None
    """), 4),
]

# ----------------------------------------------------------------------------------- TW406
FIND += [
    Shape("TW406", "DDP tutorials: sampler, loader and epoch loop all in main(), the loader wrapped in enumerate/tqdm", d("""
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        from tqdm import tqdm
        def main(rank, world_size):
            sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank)
            loader = DataLoader(train_set, batch_size=32, sampler=sampler)
            for epoch in range(10):
                for i, (x, y) in enumerate(tqdm(loader)):
                    loss = model(x).sum()
                    loss.backward()
    """), 5),
]
QUIET += [
    Shape("TW406", "the loader goes to a training function of another module", d("""
        from torch.utils.data import DataLoader, DistributedSampler
        from engine import train_one_epoch
        def main():
            sampler = DistributedSampler(train_set)
            loader = DataLoader(train_set, sampler=sampler)
            for epoch in range(10):
                train_one_epoch(model, loader, epoch)
    """)),
]

# ----------------------------------------------------------------------------------- TW101
FIND += [
    Shape("TW101", "DDP training functions: a per-epoch running total next to a logged loss.item()", d("""
        import torch.nn as nn
        def train(rank, model, loader, optimizer, epochs):
            loss_fn = nn.CrossEntropyLoss()
            for epoch in range(epochs):
                running_loss = 0.0
                for i, (x, y) in enumerate(loader):
                    optimizer.zero_grad()
                    loss = loss_fn(model(x), y)
                    loss.backward()
                    optimizer.step()
                    running_loss += loss
                    if rank == 0 and i % 50 == 0:
                        print(f"epoch {epoch} step {i} loss {loss.item():.3f}")
                print(running_loss / len(loader))
    """), 11),
]
QUIET += [
    Shape("TW101", "gradient accumulation: the total restarts at every optimizer step (same loop)", d("""
        def train(model, loader, optimizer, accum):
            for epoch in range(3):
                total = 0.0
                for i, (x, y) in enumerate(loader):
                    loss = criterion(model(x), y) / accum
                    loss.backward()
                    total += loss
                    if (i + 1) % accum == 0:
                        optimizer.step()
                        log(total)
                        total = 0.0
    """)),
]

# ----------------------------------------------------------------------------------- TW218
FIND += [
    Shape("TW218", "pure fp16 scripts: the model is halved in main() and trained in a function of the file", d("""
        import torch
        import torch.nn as nn
        def train(net, loader, optimizer):
            for x, y in loader:
                loss = nn.functional.cross_entropy(net(x.cuda().half()), y.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        def main():
            net = ResNet18().cuda().half()
            optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
            train(net, loader, optimizer)
    """), 10),
]
QUIET += [
    Shape("TW218", "a halved model that only runs inference, next to a training function", d("""
        import torch
        def train(net, loader, optimizer):
            for x, y in loader:
                net(x).sum().backward()
                optimizer.step()
        def export():
            model = Net().cuda().half()
            torch.save(model.state_dict(), "fp16.pt")
    """)),
]

# ----------------------------------------------------------------------------------- TW201
QUIET += [
    Shape("TW201", "image-quality metrics: a frozen Inception/VGG feature extractor spread over the GPUs", d("""
        import torch.nn as nn
        class FID:
            def __init__(self, device):
                self.inception = nn.DataParallel(InceptionV3([3])).eval().to(device)
                for p in self.inception.parameters():
                    p.requires_grad = False
    """)),
    Shape("TW201", "a frozen teacher next to a trained student", d("""
        import torch
        import torch.nn as nn
        teacher = nn.DataParallel(load_teacher())
        teacher.requires_grad_(False)
        teacher.eval()
        student = Net().cuda()
        opt = torch.optim.SGD(student.parameters(), lr=0.1)
    """)),
]
FIND += [
    Shape("TW201", "the trained model, evaluated now and then", d("""
        import torch
        import torch.nn as nn
        model = nn.DataParallel(Net()).cuda()
        opt = torch.optim.Adam(model.parameters())
        for epoch in range(10):
            model.train()
            train(model)
            model.eval()
            validate(model)
    """), 3),
    Shape("TW201", "a model put in eval mode, then trained again", d("""
        import torch.nn as nn
        def setup(net):
            net = nn.DataParallel(net)
            net.eval()
            warmup(net)
            net.train()
            return fit(net)
    """), 3),
]

# ----------------------------------------------------------------------------------- TW205
FIND += [
    Shape("TW205", "model code: a position table made on the CPU and moved to the input's device every forward", d("""
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, x):
                T = x.shape[1]
                mask = torch.ones(T, T).tril().to(x)
                return x.masked_fill(mask == 0, 0.0)
    """), 6),
    Shape("TW205", "diffusion samplers: the time steps of a batch, cast to the batch with type_as", d("""
        import torch
        def sample(model, x, steps):
            for i in reversed(range(steps)):
                t = torch.full((x.shape[0],), i).type_as(x)
                x = model(x, t)
            return x
    """), 4),
    Shape("TW205", "RL rollouts: the reward made from NumPy data, then moved in the next statement", d("""
        import torch
        for step in range(num_steps):
            next_obs, reward, done, info = envs.step(action)
            r = torch.tensor([1.0, 2.0])
            r = r.to(device)
    """), 5),
]
QUIET += [
    Shape("TW205", "RL scripts: storage buffers allocated once before the rollout loop", d("""
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        obs = torch.zeros((num_steps, num_envs) + obs_shape).to(device)
        actions = torch.zeros((num_steps, num_envs)).to(device)
        for iteration in range(1, num_iterations + 1):
            for step in range(num_steps):
                obs[step] = next_obs
    """)),
    Shape("TW205", "a cast to a dtype held in a name, and a tensor used on the CPU before its move", d("""
        import torch
        precision = torch.float16
        for x in batches:
            a = torch.zeros(3).to(precision)
            m = torch.ones(3)
            m[0] = x.sum().item()
            m = m.cuda()
    """)),
]

# ----------------------------------------------------------------------------------- TW207
_PPO_UPDATE = d("""
    import torch
    import torch.nn as nn

    class PPO:
        def __init__(self, actor_critic, lr):
            self.actor_critic = actor_critic
            self.optimizer = torch.optim.Adam(actor_critic.parameters(), lr=lr)

        def update(self, rollouts):
            value_loss_epoch = 0
            for e in range(4):
                for sample in rollouts.generator():
                    obs, actions, returns, old_logp, adv = sample
                    values, logp, entropy = self.actor_critic.evaluate_actions(obs, actions)
                    ratio = torch.exp(logp - old_logp)
                    action_loss = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
                    value_loss = (returns - values).pow(2).mean()
                    self.optimizer.zero_grad()
                    (value_loss * 0.5 + action_loss - entropy * 0.01).backward()
                    nn.utils.clip_grad_norm_(self.actor_critic.parameters(), 0.5)
                    self.optimizer.step()
                    value_loss_epoch += value_loss.item()
            return value_loss_epoch
""")
PROJECTS += [
    ProjectShape("TW207", "PPO/A2C libraries: .item() of each minibatch loss in an update() method whose module never "
                 "names a device (the entry point moves the agent to the GPU)", {
                     "algo/ppo.py": _PPO_UPDATE,
                     "main.py": d("""
                         import torch
                         from algo.ppo import PPO
                         device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
                         agent = PPO(Policy().to(device), 3e-4)
                         for j in range(num_updates):
                             agent.update(rollouts)  # (a method nothing calls is dead code: ruling R5)
                     """),
                 }, (("algo/ppo.py", 22),)),
    ProjectShape("TW207", "the same update() in a project that never uses a GPU", {
        "algo/ppo.py": _PPO_UPDATE,
        "main.py": "from algo.ppo import PPO\nagent = PPO(Policy(), 3e-4)\n",
    }),
    ProjectShape("TW207", "super-resolution model classes: the step method hands its loss dict to a base-class helper "
                 "(in another module) that calls .item() on each loss", {
                     "models/base_model.py": d("""
                         import torch
                         from collections import OrderedDict

                         class BaseModel:
                             def reduce_loss_dict(self, loss_dict):
                                 log_dict = OrderedDict()
                                 for name, value in loss_dict.items():
                                     log_dict[name] = value.mean().item()
                                 return log_dict
                     """),
                     "models/__init__.py": d("""
                         import importlib
                         import os
                         for name in os.listdir(os.path.dirname(__file__)):
                             if name.endswith("_model.py"):
                                 importlib.import_module(f"models.{name[:-3]}")
                     """),
                     "models/sr_model.py": d("""
                         from collections import OrderedDict
                         from .base_model import BaseModel

                         class SRModel(BaseModel):
                             def optimize_parameters(self, current_iter):
                                 self.optimizer_g.zero_grad()
                                 self.output = self.net_g(self.lq)
                                 l_total = 0
                                 loss_dict = OrderedDict()
                                 l_pix = self.cri_pix(self.output, self.gt)
                                 l_total += l_pix
                                 loss_dict["l_pix"] = l_pix
                                 l_total.backward()
                                 self.optimizer_g.step()
                                 self.log_dict = self.reduce_loss_dict(loss_dict)
                     """),
                     "train.py": d("""
                         import torch
                         model = build_model(opt)
                         model.net_g.cuda()
                         for current_iter, train_data in enumerate(loader):
                             model.feed_data(train_data)
                             model.optimize_parameters(current_iter)
                     """),
                 }, (('models/base_model.py', 8), ('models/sr_model.py', 15),)),
]
FIND += [
    Shape("TW207", "RL single-file scripts: .item() of a clipped fraction in the minibatch loop, under no_grad", d("""
        import torch
        device = torch.device("cuda")
        logprobs = torch.zeros((128, 4)).to(device)
        for iteration in range(100):
            b_logprobs = logprobs.reshape(-1)
            for epoch in range(4):
                for start in range(0, 512, 64):
                    mb = inds[start:start + 64]
                    _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb])
                    logratio = newlogprob - b_logprobs[mb]
                    ratio = logratio.exp()
                    with torch.no_grad():
                        clipfracs += [((ratio - 1.0).abs() > 0.2).float().mean().item()]
                    loss = -(ratio * adv[mb]).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
    """), 13),
    Shape("TW207", "ImageNet scripts: the loss averaged across ranks by a helper, then read with .item() every step", d("""
        import torch
        import torch.distributed as dist
        def reduce_tensor(t, n):
            rt = t.clone()
            dist.all_reduce(rt)
            return rt / n
        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                reduced = reduce_tensor(loss.data, 8)
                losses.update(reduced.item(), x.size(0))
    """), 15),
    Shape("TW207", "a loss written to TensorBoard as a tensor every step (add_scalar reads it on the host)", d("""
        import torch
        from torch.utils.tensorboard import SummaryWriter
        writer = SummaryWriter()
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            writer.add_scalar("train/loss", loss, step)
    """), 10),
    Shape("TW207", "a training-step function (no loop of its own) that returns the loss as a number", d("""
        import torch
        def train_step(model, batch, optimizer):
            x, y = batch[0].cuda(), batch[1].cuda()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss.item()
    """), 8),
    Shape("TW207", "a local helper that turns a dict of losses into numbers, called every step", d("""
        import torch
        def to_numbers(losses):
            return {k: v.item() for k, v in losses.items()}
        for x, y in loader:
            x = x.cuda()
            out = model(x)
            losses = {"ce": criterion(out, y.cuda())}
            total = sum(losses.values())
            optimizer.zero_grad()
            total.backward()
            optimizer.step()
            logs = to_numbers(losses)
    """), 12),
]
QUIET += [
    Shape("TW207", "DQN scripts: the greedy action goes to the environment on the host every step", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class QNetwork(nn.Module):
            def forward(self, x):
                return self.network(x)
        device = torch.device("cuda")
        q_network = QNetwork().to(device)
        for global_step in range(100000):
            if random.random() < epsilon:
                actions = np.array([envs.single_action_space.sample() for _ in range(envs.num_envs)])
            else:
                q_values = q_network(torch.Tensor(obs).to(device))
                actions = torch.argmax(q_values, dim=1).cpu().numpy()
            next_obs, rewards, terminations, truncations, infos = envs.step(actions)
            data = rb.sample(32)
            loss = F.mse_loss(q_network(data.observations).max(1)[0], data.returns)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """)),
    Shape("TW207", "actor-critic loops: the sampled action is sent to the environment directly", d("""
        import torch
        import torch.nn as nn
        class Policy(nn.Module):
            def forward(self, x):
                return self.head(x)
        policy = Policy().to(device)
        for step in range(1000):
            state = torch.from_numpy(obs).float().to(device)
            action, logp = policy(state)
            obs, reward, done, _ = env.step(action.cpu().numpy())
            loss = -(logp * reward)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """)),
    Shape("TW207", "resuming: the loop index compared with a start step read from a checkpoint", d("""
        import torch
        def load_checkpoint(model, path):
            ckpt = torch.load(path, map_location="cpu")
            model.load_state_dict(ckpt["model"])
            model.cuda()
            return ckpt
        def train(model, loader, optimizer):
            ckpt = load_checkpoint(model, "last.pt")
            start = ckpt["step"]
            for i, (x, y) in enumerate(loader):
                if i == start:
                    print("resumed")
                loss = model(x.cuda(), y.cuda())
                loss.backward()
                optimizer.step()
    """)),
    Shape("TW207", "a loss written to TensorBoard every 100 steps only", d("""
        import torch
        for step, (x, y) in enumerate(loader):
            x = x.cuda()
            loss = criterion(model(x), y.cuda())
            loss.backward()
            optimizer.step()
            if step % 100 == 0:
                writer.add_scalar("loss", loss, step)
    """)),
]

# ----------------------------------------------------------------------------------- TW104
_AGENT = d("""
    import torch
    import torch.nn as nn
    class Agent(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.actor = nn.Linear(n, 2)
        def get_action_and_value(self, x):
            logits = self.actor(x)
            return logits.argmax(-1), logits
""")
FIND += [
    Shape("TW104", "RL evaluation scripts: the agent runs through a method after agent.eval()", _AGENT + d("""
        def evaluate(model_path, envs, device):
            agent = Agent(4).to(device)
            agent.load_state_dict(torch.load(model_path, map_location=device))
            agent.eval()
            obs = envs.reset()
            while True:
                actions, _ = agent.get_action_and_value(torch.Tensor(obs).to(device))
                obs, reward, done, info = envs.step(actions.cpu().numpy())
    """), 16),
    Shape("TW104", "sampling scripts: a model of the file generates after model.eval(), no no_grad", d("""
        import torch
        import torch.nn as nn
        class GPT(nn.Module):
            def generate(self, idx, steps):
                for _ in range(steps):
                    logits = self(idx)
                    idx = torch.cat([idx, logits[:, -1:].argmax(-1)], 1)
                return idx
        model = GPT()
        model.eval()
        for k in range(10):
            y = model.generate(x, 100)
    """), 12),
    Shape("TW104", "an imported model class sampled after eval(), in a project that never turns autograd off", d("""
        from model import Generator
        def sample(path, z):
            netG = Generator()
            netG.eval()
            return netG.sample(z)
    """), 5),
    Shape("TW104", "evaluation inside the training function after model.eval(), autograd still on", d("""
        import torch.nn.functional as F
        def train(model, train_loader, val_loader, optimizer, epochs):
            for epoch in range(epochs):
                model.train()
                for x, y in train_loader:
                    loss = F.cross_entropy(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                model.eval()
                correct = 0
                for x, y in val_loader:
                    out = model(x)
                    correct += (out.argmax(1) == y).sum().item()
    """), 13),
    Shape("TW104", "an evaluate() that puts the model back into training mode at its end", d("""
        def evaluate(model, loader):
            model.eval()
            total = 0
            for x, y in loader:
                total += (model(x).argmax(1) == y).sum()
            model.train()
            return total
    """), 5),
]
QUIET += [
    Shape("TW104", "nanoGPT-style generate() decorated with @torch.no_grad()", d("""
        import torch
        import torch.nn as nn
        class GPT(nn.Module):
            @torch.no_grad()
            def generate(self, idx, steps):
                return self(idx)
        model = GPT()
        model.eval()
        for k in range(10):
            y = model.generate(x, 100)
    """)),
    Shape("TW104", "Hugging Face generate() (decorated with no_grad by the library), and utility methods", d("""
        from transformers import AutoModelForCausalLM
        def evaluate(path, ids):
            model = AutoModelForCausalLM.from_pretrained(path)
            model.eval()
            n = model.num_parameters()
            model.save_pretrained("out")
            return model.generate(ids, max_new_tokens=20)
    """)),
    Shape("TW104", "the training function evaluates under no_grad", d("""
        import torch
        import torch.nn.functional as F
        def train(model, train_loader, val_loader, optimizer):
            for epoch in range(10):
                model.train()
                for x, y in train_loader:
                    F.cross_entropy(model(x), y).backward()
                    optimizer.step()
                model.eval()
                with torch.no_grad():
                    for x, y in val_loader:
                        out = model(x)
    """)),
    Shape("TW104", "eval() to freeze BatchNorm statistics while training", d("""
        import torch.nn.functional as F
        def finetune(model, loader, optimizer):
            model.eval()
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
    """)),
]
PROJECTS += [
    ProjectShape("TW104", "a sampling script whose model class (another module) decorates sample() with no_grad", {
        "model.py": d("""
            import torch
            import torch.nn as nn
            class Generator(nn.Module):
                @torch.no_grad()
                def sample(self, z):
                    return self.net(z)
        """),
        "sample.py": d("""
            from model import Generator
            def sample(path, z):
                netG = Generator()
                netG.eval()
                return netG.sample(z)
        """),
    }),
]

# ----------------------------------------------------------------------------------- TW203
FIND += [
    Shape("TW203", "CIFAR/ImageNet zoos: loaders built in a get_loaders() helper, the GPU in main()", d("""
        import torch
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms
        def get_loaders(root, bs):
            train = datasets.CIFAR10(root, train=True, transform=transforms.ToTensor())
            train_loader = DataLoader(train, batch_size=bs, shuffle=True, num_workers=4)
            return train_loader
        def main():
            model = Net().cuda()
            loader = get_loaders("data", 128)
    """), 6),
]
PROJECTS += [
    ProjectShape("TW203", "a data module that builds the loaders for a GPU training script of the project", {
        "data.py": d("""
            from torch.utils.data import DataLoader
            from torchvision import datasets, transforms
            def build_loader(root, bs):
                ds = datasets.ImageFolder(root, transform=transforms.ToTensor())
                return DataLoader(ds, batch_size=bs, shuffle=True, num_workers=8)
        """),
        "train.py": d("""
            import torch
            from data import build_loader
            model = Net().cuda()
            loader = build_loader("imgs", 64)
        """),
    }, (("data.py", 5),)),
]
QUIET += [
    Shape("TW203", "a loader helper whose only caller is a CPU-only function of a file that also has GPU code", d("""
        import torch
        from torch.utils.data import DataLoader
        from torchvision import datasets
        def make_loader(ds):
            return DataLoader(ds, batch_size=4)
        def cpu_check():
            return next(iter(make_loader(datasets.MNIST("."))))
        def gpu_part(x):
            return x.cuda()
    """)),
]

# ----------------------------------------------------------------------------------- TW204
PROJECTS += [
    ProjectShape("TW204", "training scripts iterating loaders that a data module of the project builds pinned", {
        "data.py": d("""
            from torch.utils.data import DataLoader
            def get_loaders(train_set, val_set):
                train = DataLoader(train_set, batch_size=64, num_workers=4, pin_memory=True)
                val = DataLoader(val_set, batch_size=64, num_workers=4, pin_memory=True)
                return train, val
        """),
        "train.py": d("""
            from data import get_loaders
            train_loader, val_loader = get_loaders(a, b)
            for x, y in train_loader:
                x = x.cuda()
                y = y.to(device)
        """),
    }, (("train.py", 4), ("train.py", 5))),
    ProjectShape("TW204", "a training function given a loader, in a project whose loaders are all pinned", {
        "data.py": d("""
            from torch.utils.data import DataLoader
            loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)
        """),
        "engine.py": d("""
            def train_one_epoch(model, train_loader, optimizer, device):
                for images, target in train_loader:
                    images = images.to(device)
                    target = target.to(device, non_blocking=True)
        """),
    }, (("engine.py", 3),)),
]
QUIET += [
    Shape("TW204", "the same loader name bound to a pinned loader in one function and an unpinned one in another", d("""
        from torch.utils.data import DataLoader
        def gpu_train(ds):
            loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)
            for x, y in loader:
                x = x.cuda(non_blocking=True)
        def cpu_eval(ds):
            loader = DataLoader(ds, batch_size=64)
            for x, y in loader:
                x = x.to(device)
    """)),
]

# ----------------------------------------------------------------------------------- TW301
PROJECTS += [
    ProjectShape("TW301", "a data module shuffles with Python's random; the entry point seeds NumPy and torch only", {
        "train.py": d("""
            import numpy as np
            import torch
            from data import make_splits
            np.random.seed(0)
            torch.manual_seed(0)
            train, val = make_splits(files)
        """),
        "data.py": d("""
            import random
            def make_splits(files):
                random.shuffle(files)
                return files[:-100], files[-100:]
        """),
    }, (("data.py", 3),)),
    ProjectShape("TW301", "the same project with a seed-everything helper of its own", {
        "train.py": "import utils\nutils.fix_all_seeds(0)\n",
        "utils.py": d("""
            import random
            import numpy as np
            import torch
            def fix_all_seeds(s):
                np.random.seed(s)
                torch.manual_seed(s)
        """),
        "data.py": "import random\ndef pick(xs):\n    return random.choice(xs)\n",
    }),
    ProjectShape("TW301", "model files draw nothing themselves: layer initialisation is not reported across files", {
        "train.py": "import numpy as np\nnp.random.seed(0)\nfrom model import Net\nnet = Net()\n",
        "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n",
    }),
]
QUIET += [
    Shape("TW301", "a model zoo file whose only seed is in its self-test", d("""
        import random
        import torch
        def test():
            torch.manual_seed(0)
            net = Net()
            print(net(torch.randn(2, 3, 32, 32)).shape)
        def augment(x):
            return x.flip(-1) if random.random() < 0.5 else x
    """)),
]
FIND += [
    Shape("TW301", "the same seed outside a test: it counts", d("""
        import random
        import torch
        def main():
            torch.manual_seed(0)
        def augment(x):
            return x.flip(-1) if random.random() < 0.5 else x
    """), 6),
]

# ----------------------------------------------------------------------------------- TW402
QUIET += [
    Shape("TW402", "FID tools: statistics computed with NumPy, saved and loaded back by the same file", d("""
        import numpy as np
        import torch
        def save_stats(feats, path):
            mu = np.mean(feats, axis=0)
            sigma = np.cov(feats, rowvar=False)
            torch.save({"mu": mu, "sigma": sigma}, path)
        def load_stats(path):
            stats = torch.load(path)
            return stats["mu"], stats["sigma"]
        model = Inception().cuda()
    """)),
]
PROJECTS += [
    ProjectShape("TW402", "a project that writes its checkpoints after .cpu() and reads them in another module", {
        "utils.py": d("""
            import torch
            def save_checkpoint(model, epoch, path):
                state = {k: v.cpu() for k, v in model.state_dict().items()}
                torch.save({"model": state, "epoch": epoch}, path)
        """),
        "test.py": d("""
            import torch
            model = Net().cuda()
            ckpt = torch.load("checkpoints/last.pth")
            model.load_state_dict(ckpt["model"])
        """),
    }),
    ProjectShape("TW402", "the same reader when the project saves GPU state dicts", {
        "utils.py": "import torch\ndef save_checkpoint(model, path):\n    torch.save(model.state_dict(), path)\n",
        "test.py": "import torch\nmodel = Net().cuda()\nckpt = torch.load('checkpoints/last.pth')\n",
    }, (("test.py", 3),)),
]

# ----------------------------------------------------------------------------------- TW403
PROJECTS += [
    ProjectShape("TW403", "a GPU-only project: its scripts call a shared set-up that initialises NCCL and exits "
                 "without a GPU, while two small tools fall back to the CPU", {
                     "utils/dist.py": d("""
                         import sys
                         import torch
                         import torch.distributed as dist
                         def init_distributed(args):
                             if not torch.cuda.is_available():
                                 sys.exit("needs a GPU")
                             dist.init_process_group(backend="nccl")
                     """),
                     "train.py": d("""
                         import torch
                         from utils.dist import init_distributed
                         init_distributed(args)
                         model = Net().cuda()
                     """),
                     "tools/export.py": d("""
                         import torch
                         device = "cuda" if torch.cuda.is_available() else "cpu"
                     """),
                     "tools/probe.py": d("""
                         import torch
                         print(torch.cuda.device_count())
                     """),
                     "demo.py": "import torch\nmodel = Net().cuda()\n",
                 }, ()),  # round 18: demo.py is reached by no CPU run (the tools' fallback is no CPU path of it)
]
PROJECTS += [
    ProjectShape("TW402", "FID scripts: one script saves NumPy statistics under named keys, another loads them on a GPU "
                 "machine (the project also saves GPU training states elsewhere)", {
                     "stats.py": d("""
                         import numpy as np
                         import torch
                         def main(feats):
                             mean = np.mean(feats, 0)
                             cov = np.cov(feats, rowvar=False)
                             torch.save(dict(name="ffhq", mean=mean, cov=cov), "ffhq_stats.pth")
                     """),
                     "train.py": "import torch\ntorch.save({'net': model.state_dict(), 'iter': it}, 'state.pth')\n",
                     "fid.py": d("""
                         import torch
                         inception = load_inception().cuda()
                         stats = torch.load(args.fid_stats)
                         real_mean, real_cov = stats["mean"], stats["cov"]
                     """),
                 }),
    ProjectShape("TW402", "a load that reads a key the project saves with device tensors", {
        "train.py": "import torch\ntorch.save({'net': model.state_dict(), 'iter': it}, 'state.pth')\n",
        "test.py": "import torch\nmodel = Net().cuda()\nsd = torch.load(args.ckpt)['net']\n",
    }, (("test.py", 3),)),
]
FIND += [
    Shape("TW204", "DeiT/BLIP-style loops: the pinned loader wrapped in a logging iterator", d("""
        from torch.utils.data import DataLoader
        def train(model, data_loader, metric_logger, device):
            for i, (image, caption) in enumerate(metric_logger.log_every(data_loader, 50, "train")):
                image = image.to(device)
        loader = DataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)
        train(model, loader, logger, "cuda")
    """), 4),
]
_QNET = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class QNetwork(nn.Module):
        def forward(self, x):
            return self.network(x)
    q_network = QNetwork().to("cuda")
""")
FIND += [
    Shape("TW104", "DQN scripts: the greedy action computed with autograd on in the training loop", _QNET + d("""
        for global_step in range(100000):
            q_values = q_network(torch.Tensor(obs).to("cuda"))
            actions = torch.argmax(q_values, dim=1).cpu().numpy()
            next_obs, rewards, terminations, truncations, infos = envs.step(actions)
            rb.add(obs, next_obs, actions, rewards)
            data = rb.sample(32)
            loss = F.mse_loss(q_network(data.observations).max(1)[0], data.returns)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """), 9),
]
QUIET += [
    Shape("TW104", "REINFORCE: the log-probability of the sampled action is kept for the loss", _QNET + d("""
        for episode in range(1000):
            log_probs = []
            for t in range(200):
                probs = q_network(torch.Tensor(obs).to("cuda"))
                dist = torch.distributions.Categorical(logits=probs)
                action = dist.sample()
                log_probs.append(dist.log_prob(action))
                obs, reward, done, info = env.step(action.item())
            loss = -torch.stack(log_probs).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """)),
    Shape("TW104", "the same action computed under no_grad", _QNET + d("""
        for global_step in range(100000):
            with torch.no_grad():
                q_values = q_network(torch.Tensor(obs).to("cuda"))
            actions = torch.argmax(q_values, dim=1).cpu().numpy()
            envs.step(actions)
            loss = F.mse_loss(q_network(x), y)
            loss.backward()
            optimizer.step()
    """)),
]
FIND += [
    Shape("TW204", "segmentation scripts: the loaders' arguments, pin_memory=True included, passed as **loader_args", d("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, train_set, device):
            loader_args = dict(batch_size=8, num_workers=4, pin_memory=True)
            train_loader = DataLoader(train_set, shuffle=True, **loader_args)
            for batch in train_loader:
                images = batch["image"].to(device=device, dtype=torch.float32)
    """), 7),
]
QUIET += [
    Shape("TW204", "the same without pin_memory in the arguments dict", d("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, train_set, device):
            loader_args = dict(batch_size=8, num_workers=4)
            train_loader = DataLoader(train_set, shuffle=True, **loader_args)
            for batch in train_loader:
                images = batch["image"].to(device=device, dtype=torch.float32)
    """)),
]
FIND += [
    Shape("TW204", "the batch unpacked from a dict first (images, masks = batch['image'], batch['mask'])", d("""
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
        for batch in loader:
            images, masks = batch["image"], batch["mask"]
            images = images.to(device=device, dtype=torch.float32)
    """), 6),
]

# the later rounds' shapes, one module each (recall_corpus2.py, recall_corpus3.py, ...), loaded in the
# order of their numbers: round 2 (classes found missing or falsely reported on the tuning set), then
# one or more modules per later round (each from a held-out set measured first, then tuned on); which
# module belongs to which round is said in each module's docstring and in BENCHMARKS.md
_HERE = Path(__file__).resolve().parent
for _round in sorted((p.stem for p in _HERE.glob("recall_corpus[0-9]*.py")), key=lambda n: int(n[len("recall_corpus"):])):
    _module = importlib.import_module(_round)
    FIND += _module.FIND
    QUIET += _module.QUIET
    PROJECTS += _module.PROJECTS
