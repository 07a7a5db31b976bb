"""The recall corpus, round 16 part D (second tuner): classes the sets 21 and 22 still missed for
TW205, TW104, TW402 and TW301 - each written in our own words and reduced to its shape, with
look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW205 a looping loss another module's forward calls
# A contrastive loss module builds its positive/negative masks on the CPU, moves them and fills
# them in a loop over the batch's nodes; a model in another module (star-importing the losses)
# calls it from `forward`, so the masks are made every step.
_LOSS = d("""
    import torch
    def node_graph_loss(node_emb, graph_emb, assign):
        n, g = node_emb.shape[0], graph_emb.shape[0]
        pos = torch.zeros((n, g)).cuda()
        neg = torch.ones((n, g)).cuda()
        for i, k in enumerate(assign):
            pos[i][k] = 1.0
            neg[i][k] = 0.0
        scores = node_emb @ graph_emb.t()
        return -(scores * pos).sum() / n + (scores * neg).sum() / (n * (g - 1))
""")
_MODEL = """
    import torch.nn as nn
    %s
    class InfoNet(nn.Module):
        def __init__(self, enc):
            super().__init__()
            self.enc = enc
        def forward(self, x, edges, assign):
            node_emb, graph_emb = self.enc(x, edges, assign)
            return node_graph_loss(node_emb, graph_emb, assign)
"""
PROJECTS += [
    ProjectShape("TW205", "masks of a looping loss, star-imported and called from another module's forward", {
        "losses.py": _LOSS, "model.py": d(_MODEL % "from losses import *")}, (("losses.py", 4), ("losses.py", 5))),
    ProjectShape("TW205", "the same loss imported by name", {
        "losses.py": _LOSS, "model.py": d(_MODEL % "from losses import node_graph_loss")},
        (("losses.py", 4), ("losses.py", 5))),
    ProjectShape("TW205", "look-alike: the looping loss called once by a report script's main()", {
        "losses.py": _LOSS, "report.py": d("""
            import torch
            from losses import *
            def main():
                emb, gemb, assign = torch.load("emb.pt")
                print(node_graph_loss(emb, gemb, assign))
            if __name__ == "__main__":
                main()
        """)}),
]

# ------------------------------------------------------------- TW205 a sample_* helper of an action method
# An agent's `_sample_noise(actions)` makes its mean and scale on the CPU and moves them; its only
# caller is the agent's noisy action choice, run every environment step - no sampler on request.
_AGENT = """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    class Controller:
        def __init__(self, actor, sigma):
            self.actor, self.sigma = actor, sigma
        def noisy_action(self, state):
            a = self.actor(torch.as_tensor(state, device=device))
            return (a + self.%s(a)).detach().cpu().numpy()
        def %s(self, actions):
            mean = torch.zeros(actions.size()).to(device)
            std = torch.ones(actions.size()).to(device)
            return torch.normal(mean, self.sigma * std)
"""
FIND += [
    Shape("TW205", "an exploration-noise sample_ helper only the agent's action method calls",
          d(_AGENT % ("_sample_noise", "_sample_noise")), 10, "agent.py"),
]
QUIET += [
    Shape("TW205", "look-alike: a generator's sample_grid() that a script asks for once", d("""
        import torch
        import torch.nn as nn
        class Gen(nn.Module):
            def __init__(self, net, zdim):
                super().__init__()
                self.net, self.zdim = net, zdim
            def forward(self, z):
                return self.net(z)
            def sample_grid(self, n):
                z = torch.randn(n, self.zdim).cuda()
                return self.net(z)
        gen = Gen(nn.Linear(8, 8), 8).cuda()
        for epoch in range(10):
            fit(gen)
        grid = gen.sample_grid(64)
    """), None, "gan.py"),
]

# ------------------------------------------------------------- TW205 moved by .type(input.type())
# A separation network pads its input with zeros made on the CPU (wrapped in torch.Tensor) and
# retyped to the input's type - torch.cuda.FloatTensor on the GPU - every forward.
_PAD = """
    import torch
    import torch.nn as nn
    class Chunker(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k
        def %s(self, x):
            b, n, length = x.shape
            gap = self.k - length %% self.k
            if gap > 0:
                pad = torch.Tensor(torch.zeros(b, n, gap)).type(x.type())
                x = torch.cat([x, pad], dim=2)
            edge = torch.zeros(b, n, self.k // 2).type(x.type())
            return torch.cat([edge, x, edge], dim=2)
"""
FIND += [
    Shape("TW205", "zeros wrapped in torch.Tensor and retyped to the input's type in forward",
          d(_PAD % "forward"), 11, "dprnn.py"),
    Shape("TW205", "zeros retyped to the input's type after the input was padded", d(_PAD % "forward"), 13, "dprnn.py"),
]
QUIET += [
    Shape("TW205", "look-alike: a retyped table made once in __init__", d("""
        import torch
        import torch.nn as nn
        class Win(nn.Module):
            def __init__(self, proto):
                super().__init__()
                self.win = torch.hann_window(400).type(proto.type())
            def forward(self, x):
                return x * self.win
    """), None, "win.py"),
    Shape("TW205", "look-alike: a cast to another CPU tensor's type", d("""
        import torch
        def counts(labels, n):
            ref = torch.zeros(n, dtype=torch.long)
            for y in labels:
                ref += torch.ones(n).type(ref.type()) * y
            return ref
    """), None, "stats.py"),
]

# ------------------------------------------------------------- TW104 an actor's policy() with a NumPy default
# A hierarchical RL controller's `policy(state, goal, to_numpy=True)` and its noisy twin run the
# actor with autograd on and return NumPy when the flag keeps its default - which every caller
# leaves: the tensor return never runs, and each environment step records a graph.
_CONTROLLER = """
    import torch
    import torch.nn as nn
    class Actor(nn.Module):
        def __init__(self, s, g, a):
            super().__init__()
            self.net = nn.Linear(s + g, a)
        def forward(self, s, g):
            return torch.tanh(self.net(torch.cat([s, g], 1)))
    class Controller:
        def __init__(self, s, g, a):
            self.actor = Actor(s, g, a)
        def policy(self, state, goal, to_numpy=True):
            state = torch.as_tensor(state, dtype=torch.float32)
            action = self.actor(state, goal)
            if to_numpy:
                return action.cpu().data.numpy().squeeze()
            return action.squeeze()
        def policy_with_noise(self, state, goal, to_numpy=True):
            action = self.actor(torch.as_tensor(state), goal)
            action = action + 0.1 * torch.randn_like(action)
            if to_numpy:
                return action.detach().cpu().numpy()
            return action
"""
_ROLLOUT = """
    from controller import Controller
    def run(env, con, goal, steps):
        s = env.reset()
        for t in range(steps):
            a = con.policy_with_noise(s, goal)
            s, r, done, _ = env.step(a)
            if done:
                s = env.reset()
        return con.policy(s, goal%s)
    if __name__ == "__main__":
        print(run(make_env(), Controller(8, 2, 2), [0.0, 1.0], 1000))
"""
PROJECTS += [
    ProjectShape("TW104", "an actor's policy()/policy_with_noise() whose to_numpy default no caller changes", {
        "controller.py": d(_CONTROLLER), "rollout.py": d(_ROLLOUT % "")},
        (("controller.py", 14), ("controller.py", 19))),
    ProjectShape("TW104", "look-alike: a caller asks policy() for the tensor (an actor loss backpropagates it)", {
        "controller.py": d(_CONTROLLER), "rollout.py": d(_ROLLOUT % ", to_numpy=False")},
        (("controller.py", 19),)),
]
QUIET += [
    Shape("TW104", "look-alike: a policy(state) that returns the tensor for the update", d("""
        import torch
        class Agent:
            def __init__(self, actor, opt):
                self.actor, self.opt = actor, opt
            def policy(self, state):
                return self.actor(state).squeeze()
            def update(self, states, critic):
                loss = -critic(states, self.policy(states)).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
    """), None, "agent.py"),
]

# ------------------------------------------------------------- TW402 top-level load of a distributed script
# A lane detector's training script (module-level code under `__main__`) wraps the net in
# DistributedDataParallel and fine-tunes from `torch.load(cfg.finetune)['model']`: every process
# deserializes onto the GPU that saved it.
_DDP = """
    import torch
    import torch.distributed as dist
    if __name__ == "__main__":
        args, cfg = parse()
        distributed = args.world_size > 1
        if distributed:
            dist.init_process_group(backend="nccl")
        net = LaneNet().cuda()
        if distributed:
            net = torch.nn.parallel.DistributedDataParallel(net, device_ids=[args.local_rank])
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        if cfg.finetune is not None:
            %s
        for x, y in loader:
            loss = crit(net(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
"""
PROJECTS += [
    ProjectShape("TW402", "a fine-tuning load at the top level of a distributed training script", {
        "train.py": d(_DDP % "net.load_state_dict(torch.load(cfg.finetune)['model'], strict=False)")},
        (("train.py", 13),)),
    ProjectShape("TW402", "look-alike: the same load mapped onto the process's device", {
        "train.py": d(_DDP % "net.load_state_dict(torch.load(cfg.finetune, map_location='cuda:%d' % args.local_rank)['model'])")}),
]

# ------------------------------------------------------------- TW301 a --seed option that seeds nothing
# A chat script's parser offers `--seed` ("makes the results deterministic") and samples with
# torch.multinomial, but no generator is ever seeded; likewise a training script whose shared parser
# function in another module offers it.
_CHAT = """
    import argparse
    import torch
    def get_args():
        p = argparse.ArgumentParser()
        p.add_argument("--temperature", type=float, default=1.0)
        p.add_argument("--seed", type=int, default=None, help="fix it for repeatable replies")
        return p.parse_args()
    def reply(model, ids, args):
        logits = model(ids)[:, -1] / args.temperature
        return torch.multinomial(logits.softmax(-1), 1)
    if __name__ == "__main__":
        args = get_args()
        %s
        print(reply(load_model(), encode(input()), args))
"""
FIND += [
    Shape("TW301", "a --seed option that no seeding call reads", d(_CHAT % "pass"), 6, "chat.py"),
]
QUIET += [
    Shape("TW301", "look-alike: the option seeds torch", d(_CHAT % "torch.manual_seed(args.seed)"), None, "chat.py"),
    Shape("TW301", "look-alike: the options handed to a trainer of another module (it may seed)",
          d(_CHAT % "Trainer(args).run()"), None, "chat.py"),
]
_ARGS = d("""
    import argparse
    def arg_parse():
        p = argparse.ArgumentParser()
        p.add_argument("--lr", type=float, default=0.01)
        p.add_argument("--seed", type=int, default=0)
        return p.parse_args()
""")
_INFOMAX = """
    import torch
    from arguments import arg_parse
    if __name__ == "__main__":
        args = arg_parse()
        %s
        model = torch.nn.Linear(16, 4)
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
        for x in torch.utils.data.DataLoader(load(), shuffle=True):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""
PROJECTS += [
    ProjectShape("TW301", "a training script whose shared parser offers --seed, seeding nothing", {
        "arguments.py": _ARGS, "infomax.py": d(_INFOMAX % "pass")}, (("infomax.py", 4),)),
    ProjectShape("TW301", "look-alike: the script seeds through a helper of the project", {
        "arguments.py": _ARGS, "infomax.py": d(_INFOMAX % "setup_seed(args.seed)")}),
]
