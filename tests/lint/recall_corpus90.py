"""The recall corpus, round 27 part C: TW301 runs that seed only their gym environment, TW301
transform helpers that several transforms of one module name alike (worker code), and TW402
inference modes of a training script dispatched by a flag - each written in our own words and
reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to
its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW301 only the environment is seeded
# A run script seeds the gym environment with the run's seed and nothing else, while the agent it
# trains initialises torch layers, explores with NumPy and samples its replay with `random`.
_AGENT = d("""
    import random
    import numpy as np
    import torch
    from torch import nn
    class Agent:
        def __init__(self, n_in, n_out):
            self.q = nn.Linear(n_in, n_out)
            self.opt = torch.optim.Adam(self.q.parameters())
            self.buffer = []
        def act(self, obs, eps):
            if np.random.rand() < eps:
                return np.random.randint(2)
            return int(self.q(torch.as_tensor(obs)).argmax())
        def learn(self):
            batch = random.sample(self.buffer, 32)
            loss = self.q(torch.stack(batch)).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
""")
_RUN = d("""
    import gym
    from agent import Agent
    SEED = 7
    def main(name="CartPole-v1"):
        env = gym.make(name)
        env.seed(SEED)
        agent = Agent(4, 2)
        for episode in range(100):
            obs = env.reset()
            agent.act(obs, 0.1)
            agent.learn()
    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW301", "run script seeding only the environment (env.seed(SEED)); the agent module draws", {
        "agent.py": _AGENT, "run.py": _RUN,
    }, (("run.py", 6),)),
    ProjectShape("TW301", "gymnasium reset(seed=args.seed) as the only seed of a training run", {
        "agent.py": _AGENT,
        "train.py": d("""
            import argparse
            import gymnasium as gym
            from agent import Agent
            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("--seed", type=int, default=0)
                args = p.parse_args()
                env = gym.make("Pendulum-v1")
                obs, _ = env.reset(seed=args.seed)
                agent = Agent(3, 1)
                agent.learn()
        """),
    }, (("train.py", 9),)),
    ProjectShape("TW301", "look-alike: the run seeds torch and numpy beside the environment (in the agent module)", {
        "agent.py": "import numpy as np\nimport torch\ntorch.manual_seed(0)\nnp.random.seed(0)\nrandom = __import__('random')\nrandom.seed(0)\n" + _AGENT,
        "run.py": _RUN,
    }),
    ProjectShape("TW301", "look-alike: each worker process seeds its environment by its index", {
        "agent.py": _AGENT,
        "run.py": _RUN.replace("env.seed(SEED)", "env.seed(worker_id)").replace('def main(name="CartPole-v1"):', 'def main(worker_id=0, name="CartPole-v1"):'),
    }),
    ProjectShape("TW301", "look-alike: the environment's seed is fresh entropy (seed = os.urandom ...)", {
        "agent.py": _AGENT,
        "run.py": _RUN.replace("    env.seed(SEED)\n", "    seed = int.from_bytes(os.urandom(4), 'little')\n    env.seed(seed)\n").replace("import gym\n", "import os\nimport gym\n"),
    }),
    ProjectShape("TW301", "look-alike: a random-agent demo that trains nothing", {
        "demo.py": d("""
            import gym
            import numpy as np
            if __name__ == "__main__":
                env = gym.make("CartPole-v1")
                env.seed(3)
                obs = env.reset()
                for _ in range(100):
                    obs, r, done, _ = env.step(np.random.randint(2))
        """),
    }),
]

# ------------------------------------------------------------- TW301 get_params of one transform among several
# An extended-transforms module whose every transform has its own static get_params; the rotation's
# get_params draws from `random`, called only from its __call__: worker code of a seeded-torch run.
_EXT = d("""
    import random
    class PairCrop:
        @staticmethod
        def get_params(size):
            return random.randint(0, size)
        def __call__(self, img, lbl):
            i = self.get_params(10)
            return img, lbl
    class PairRotate:
        @staticmethod
        def get_params(degrees):
            return random.uniform(-degrees, degrees)
        def __call__(self, img, lbl):
            angle = self.get_params(self.degrees)
            return img, lbl
""")
PROJECTS += [
    ProjectShape("TW301", "look-alike: get_params defined by several transforms of a module, drawn in loader workers", {
        "ext_transforms.py": _EXT,
        "train.py": d("""
            import argparse
            import torch
            import ext_transforms
            from torch.utils.data import DataLoader
            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("--seed", type=int, default=1)
                args = p.parse_args()
                torch.manual_seed(args.seed)
                loader = DataLoader(make_set(ext_transforms.PairCrop()), batch_size=8, num_workers=4)
                model = torch.nn.Linear(4, 2)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    opt.zero_grad()
                    model(x).sum().backward()
                    opt.step()
        """),
    }),
]

# ------------------------------------------------------------- TW402 a generate mode of a training script
# A GAN script run with --generate restores the generator from its training checkpoint and samples;
# otherwise it trains. The generate function's name says nothing of evaluation.
_MODELS = d("""
    import torch
    class G(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)
        def forward(self, z):
            return self.fc(z)
""")
_GAN = d("""
    import torch
    from absl import app, flags
    from models import G
    FLAGS = flags.FLAGS
    flags.DEFINE_bool("generate", False, "sample images")
    flags.DEFINE_string("pretrain", None, "checkpoint")
    device = torch.device("cuda:0")
    def sample_images():
        net = G().to(device)
        net.load_state_dict(torch.load(FLAGS.pretrain)["net_G"])
        net.eval()
        with torch.no_grad():
            return net(torch.randn(4, 8, device=device))
    def train():
        net = G().to(device)
        opt = torch.optim.Adam(net.parameters())
        for step in range(100):
            loss = net(torch.randn(4, 8, device=device)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.save({"net_G": net.state_dict()}, "ckpt.pt")
    def main(argv):
        if FLAGS.generate:
            sample_images()
        else:
            train()
    if __name__ == "__main__":
        app.run(main)
""")
PROJECTS += [
    ProjectShape("TW402", "GPU-only GAN script: generate mode (flag dispatch) restores the training checkpoint", {
        "models.py": _MODELS, "gan.py": _GAN,
    }, (("gan.py", 10),)),
    ProjectShape("TW402", "training side first: `if args.train: fit() else: render()` with a no_grad render", {
        "models.py": _MODELS,
        "main.py": d("""
            import argparse
            import torch
            from models import G
            def render(args):
                model = G().cuda()
                model.load_state_dict(torch.load(args.ckpt))
                with torch.no_grad():
                    return model(torch.zeros(1, 8).cuda())
            def fit(args):
                model = G().cuda()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for _ in range(10):
                    opt.zero_grad()
                    model(torch.zeros(1, 8).cuda()).mean().backward()
                    opt.step()
                torch.save(model.state_dict(), args.ckpt)
            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("--train", action="store_true")
                p.add_argument("--ckpt", default="model.pt")
                args = p.parse_args()
                if args.train:
                    fit(args)
                else:
                    render(args)
        """),
    }, (("main.py", 6),)),
    ProjectShape("TW402", "look-alike: the flag's other side does not train (two inference modes)", {
        "models.py": _MODELS, "gan.py": _GAN.replace("        train()\n", "        sample_images()\n"),
    }),
    ProjectShape("TW402", "look-alike: the dispatched function resumes and keeps training (no eval mode, no no_grad)", {
        "models.py": _MODELS,
        "gan.py": _GAN.replace("    net.eval()\n    with torch.no_grad():\n        return net(torch.randn(4, 8, device=device))\n",
                               "    return net\n"),
    }),
]
