"""The recall corpus, round 31 part C (TW104): classes sets 49-52 missed or reported falsely - each
written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 acting in an agent's episode loop
# An agent's run() steps its environment; one branch acts greedily for evaluation, the other
# collects transitions that a separate update method trains on. The action forward's output only
# becomes the host action.
_AGENT = """
    import torch
    import torch.nn as nn
    import torch.optim as optim
    class Gaussian(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 2)
        def forward(self, x):
            h = self.body(x)
            return h.tanh(), h, h.sum()
    class Agent:
        def __init__(self, env):
            self.env = env
            self.policy = Gaussian()
            self.q = nn.Linear(4, 1)
            self.opt = optim.Adam(self.q.parameters())
            self.greedy = False
            self.memory = []
        def update(self):
            s, a, r = self.memory[-1]
            loss = (self.q(s) - r).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        def episode(self, limit):
            obs = self.env.reset()
            done, n = False, 0
            while not done and n < limit:
                if self.greedy:
                    _, mean, _ = self.policy(torch.as_tensor(obs))
                    act = mean.argmax().detach().cpu().numpy()
                    obs2, rew, done, _ = self.env.step(act)
                else:
                    EXPLORE
                    obs2, rew, done, _ = self.env.step(act)
                    self.memory.append((obs, act, rew))
                    self.update()
                obs, n = obs2, n + 1
"""
FIND += [
    Shape("TW104", "greedy branch of an agent's episode loop: policy output only detached and stepped", d(
        _AGENT.replace("EXPLORE", "act = self.env.action_space.sample()")), 30),
    Shape("TW104", "exploration branch: sampled action detached at once, other outputs unused", d(
        _AGENT.replace("EXPLORE", "sample, _, _ = self.policy(torch.as_tensor(obs))\n                    act = sample.detach().cpu().numpy()")
        .replace("_, mean, _ = self.policy(torch.as_tensor(obs))\n                    act = mean.argmax().detach().cpu().numpy()",
                 "act = self.env.action_space.sample()")), 33),
]
QUIET += [
    Shape("TW104", "look-alike: the episode loop keeps the log-probability for a policy-gradient update", d(
        _AGENT.replace("EXPLORE", "sample, logp, _ = self.policy(torch.as_tensor(obs))\n                    self.memory.append(logp)\n"
                       "                    act = sample.detach().cpu().numpy()")
        .replace("_, mean, _ = self.policy(torch.as_tensor(obs))\n                    act = mean.argmax().detach().cpu().numpy()",
                 "act = self.env.action_space.sample()")
        .replace("self.memory.append((obs, act, rew))", "pass"))),
    Shape("TW104", "look-alike: the greedy forward already under no_grad", d(
        _AGENT.replace("EXPLORE", "act = self.env.action_space.sample()")
        .replace("_, mean, _ = self.policy(torch.as_tensor(obs))", "with torch.no_grad():\n                        _, mean, _ = self.policy(torch.as_tensor(obs))"))),
]

# ------------------------------------------------------------- TW104 a library agent's predict()
# stable-baselines3's predict() runs its policy under no_grad itself: not a forward of the project's.
QUIET += [
    Shape("TW104", "look-alike: stable-baselines3 agent trained, then predict() in a rollout loop", d("""
        from stable_baselines3 import PPO
        def demo(env):
            model = PPO("MlpPolicy", env)
            model.learn(total_timesteps=10000)
            obs = env.reset()
            for _ in range(1000):
                action, _ = model.predict(obs, deterministic=True)
                obs, reward, done, info = env.step(action)
    """)),
    Shape("TW104", "look-alike: a loaded sb3-contrib agent acting", d("""
        from sb3_contrib import QRDQN
        def replay(env, path):
            model = QRDQN.load(path)
            obs = env.reset()
            while True:
                act, _ = model.predict(obs)
                obs, r, done, _ = env.step(act)
                if done:
                    break
    """)),
]

# ------------------------------------------------------------- TW104 select_action that stores its graph
_A2C = """
    import torch
    import torch.nn as nn
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 2)
        def forward(self, x):
            return self.lin(x), self.lin(x).sum()
    class ActorCritic:
        def __init__(self):
            self.actor = Head()
            self.critic = nn.Linear(4, 1)
            self.trace = []
        def select_action(self, obs):
            act, logp = self.actor(obs)
            value = self.critic(obs)
            KEEP
            return act.detach().cpu().numpy()
"""
QUIET += [
    Shape("TW104", "look-alike: select_action hands log-prob and value to the transition list (A2C backpropagates them)", d(
        _A2C.replace("KEEP", "self.trace.extend([logp, value])"))),
    Shape("TW104", "look-alike: select_action stores the value on the agent for the update", d(
        _A2C.replace("KEEP", "self.last_value = value\n            self.last_logp = logp"))),
]

# ------------------------------------------------------------- TW104 global eval-mode network of an inference script
FIND += [
    Shape("TW104", "module-level restored network in eval mode, run by the script's own function", d("""
        import torch
        device = "cuda"
        upscaler = torch.load("ckpt.pth")["model"].to(device)
        upscaler.eval()
        def upscale(img):
            out = upscaler(img.unsqueeze(0).to(device))
            return out.squeeze(0).cpu().detach()
        if __name__ == "__main__":
            pic = upscale(torch.rand(3, 64, 64))
    """), 6),
    Shape("TW104", "network put in eval mode in its building chain, run in a module-level loop", d("""
        import numpy as np
        import torch
        from nets import SpeakerNet
        enc = SpeakerNet(dim=80).eval().cuda()
        enc.load_state_dict(torch.load("enc.ckpt"))
        vectors = []
        for path in ["a.npy", "b.npy"]:
            mel = torch.from_numpy(np.load(path)).cuda()
            vec = enc(mel)
            vectors.append(vec.detach().cpu().numpy())
        np.save("vectors.npy", np.stack(vectors))
    """), 9),
]
QUIET += [
    Shape("TW104", "look-alike: the global eval-mode network is a perceptual loss a training step backpropagates", d("""
        import torch
        import torch.optim as optim
        feat = torch.load("vgg.pth").eval()
        def perceptual(x, y):
            return (feat(x) - feat(y)).abs().mean()
        def fit(gen, loader):
            opt = optim.Adam(gen.parameters())
            for x, y in loader:
                loss = perceptual(gen(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
    Shape("TW104", "look-alike: the script optimises an image through the global network", d("""
        import torch
        net = torch.load("vgg.pth").eval()
        def stylise(img, steps):
            img.requires_grad_(True)
            for _ in range(steps):
                score = net(img).sum()
                grad, = torch.autograd.grad(score, img)
                img.data -= 0.1 * grad
            return img.detach()
        if __name__ == "__main__":
            stylise(torch.rand(1, 3, 64, 64), 10)
    """)),
    Shape("TW104", "look-alike: the function is called only under no_grad", d("""
        import torch
        enc = torch.load("enc.pth")
        enc.eval()
        def embed(x):
            return enc(x).cpu()
        if __name__ == "__main__":
            with torch.no_grad():
                print(embed(torch.rand(1, 80)))
    """)),
]
PROJECTS += [
    ProjectShape("TW104", "look-alike: a helper with a global eval-mode network that a training script imports", {
        "metrics.py": d("""
            import torch
            critic = torch.load("critic.pth").cuda()
            critic.eval()
            def realism(img):
                return critic(img).mean()
        """),
        "train.py": d("""
            import torch
            from metrics import realism
            def step(gen, z, opt):
                loss = -realism(gen(z))
                opt.zero_grad()
                loss.backward()
                opt.step()
        """),
    }),
]

# ------------------------------------------------------------- TW104 evaluation handed to a worker pool
_POOL = """
    import multiprocessing as mp
    import torch
    def score_chunk(paths):
        scorer = torch.load("scorer.pth").cuda()
        scorer.eval()
        out = {}
        for p in paths:
            WRAP
        return out
    def main(paths, n):
        pool = mp.Pool(n)
        parts = pool.map(score_chunk, [paths[i::n] for i in range(n)])
        return parts
"""
FIND += [
    Shape("TW104", "evaluation function run by multiprocessing Pool.map: workers start with autograd on", d(
        _POOL.replace("WRAP", "out[p] = float(scorer(torch.load(p).cuda()))")), 8),
]
QUIET += [
    Shape("TW104", "look-alike: the pool's evaluation function runs its network under no_grad", d(
        _POOL.replace("WRAP", "with torch.no_grad():\n                out[p] = float(scorer(torch.load(p).cuda()))"))),
]
