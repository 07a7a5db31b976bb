"""The recall corpus, round 16 part B: TW207 classes the sets 21 and 22 (tuning sets of round 16)
missed - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 a batch moved by a method returning a generator
# An image-completion trainer moves each batch with a method of its own that hands its arguments
# back moved (a generator of `.to(self.device)`); a metric of the moved masks is read with .item()
# into the progress log on every step.
_MOVER = d("""
    import torch


    class Completer:
        def __init__(self, net, opt):
            self.net, self.opt = net, opt
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def to_device(self, *items):
            return MOVES

        def fit(self, loader, log):
            for step, batch in enumerate(loader):
                images, holes = self.to_device(*batch)
                filled = self.net.fill(images, holes)
                loss = (filled - images).abs().mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                coverage = holes.float().mean()
                GATElog.append(("coverage", coverage.item()))
""")
FIND += [
    Shape("TW207", "metric of a batch moved by a method returning a generator of .to(self.device)",
          _MOVER.replace("MOVES", "(t.to(self.device) for t in items)").replace("GATE", ""), 21),
    Shape("TW207", "the same with a list comprehension of .cuda() moves",
          _MOVER.replace("MOVES", "[t.cuda(non_blocking=True) for t in items]").replace("GATE", ""), 21),
]
QUIET += [
    Shape("TW207", "look-alike: the method only converts the dtype (nothing reaches a device)",
          _MOVER.replace("MOVES", "(t.float() for t in items)").replace("GATE", ""), None),
    Shape("TW207", "look-alike: the moved batch's metric read only every 50 steps",
          _MOVER.replace("MOVES", "(t.to(self.device) for t in items)").replace("GATE", "if step % 50 == 0: "), None),
]

# ------------------------------------------------------------- TW207 a loss function of another module, result backwarded
# An imitation-learning critic update calls a loss function of another module that fills a dict
# of `.item()` values and selects rows with a flag unpacked from the batch (`is_demo`); the step
# backpropagates the loss it hands back. Its inputs come from method calls lint cannot follow,
# but a loss that is backpropagated in code on an accelerator was computed there.
_DUAL_LOSS = d("""
    import torch


    def dual_loss(agent, q, v, batch):
        obs, done, is_demo = batch
        logs = {}
        target = (1 - done) * agent.gamma * v
        gap = (q - target)[is_demo]
        loss = -gap.mean()
        logs["gap"] = loss.item()
        return loss, logs
""")
_DUAL_AGENT = d("""
    import torch
    from losses import dual_loss
    from nets import build


    class Agent:
        def __init__(self, cfg, device):
            self.critic = build(cfg.critic).to(device)
            self.value = build(cfg.value).to(device)
            self.gamma = cfg.gamma
            self.opt = torch.optim.Adam(self.critic.parameters())

        def critic_step(self, batch):
            q = self.critic.q(batch[0])
            v = self.value.v(batch[0])
            loss, logs = dual_loss(self, q, v, batch)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            return logs


    def main(cfg, buffer):
        agent = Agent(cfg, "cuda")
        for step in range(1000):
            logs = agent.critic_step(buffer.sample(64))
""")
PROJECTS += [
    ProjectShape("TW207", "loss function of another module whose loss the step backpropagates: flag-mask selection and .item()",
                 {"losses.py": _DUAL_LOSS, "train.py": _DUAL_AGENT}, (("losses.py", 8), ("losses.py", 10))),
    ProjectShape("TW207", "the same selecting rows by an integer index (no mask): only the .item()",
                 {"losses.py": _DUAL_LOSS.replace("is_demo", "demo_rows"), "train.py": _DUAL_AGENT}, (("losses.py", 10),)),
    ProjectShape("TW207", "look-alike: the same project with nothing on a device (CPU only)",
                 {"losses.py": _DUAL_LOSS, "train.py": _DUAL_AGENT.replace(".to(device)", "").replace('"cuda"', '"cpu"')}),
    ProjectShape("TW207", "look-alike: the loss function keeps its logs on the device (.detach()) and slices a column", {
        "losses.py": _DUAL_LOSS.replace('logs["gap"] = loss.item()', 'logs["gap"] = loss.detach()').replace("[is_demo]", "[:, 0]"),
        "train.py": _DUAL_AGENT}),
]

# ------------------------------------------------------------- TW207 an operand of the backpropagated loss
# A soft actor-critic actor update reads the policy's entropy and the temperature (a property of
# the agent) with .item() for its loss dict, every update. Both are operands of the loss it
# backpropagates right there, so they live on its device, however the method got them
# (`self.actor.sample(obs)` is no forward call lint can see).
_ACTOR = d("""
    import torch


    class Agent:
        def __init__(self, actor, critic, opt):
            self.actor, self.critic, self.opt = actor, critic, opt
            self.device = torch.device("cuda")
            self.log_alpha = torch.zeros(1, device=self.device, requires_grad=True)
            self.steps = 0

        @property
        def alpha(self):
            return self.log_alpha.exp()

        def update_actor(self, obs, temperature):
            action, log_prob = self.actor.sample(obs)
            q = self.critic.q(obs, action)
            loss = (self.alpha.detach() * temperature * log_prob - q).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.steps += 1
            READ


    def train(agent, replay):
        for step in range(10000):
            agent.update_actor(replay.sample(), 0.5)
""")
FIND += [
    Shape("TW207", "entropy of a policy's sample read with .item() beside the actor loss it is an operand of",
          _ACTOR.replace("READ", 'return {"entropy": -log_prob.mean().item()}'), 23),
    Shape("TW207", "a temperature property of the agent, an operand of the loss, read with .item()",
          _ACTOR.replace("READ", 'return {"alpha": self.alpha.item()}'), 23),
]
QUIET += [
    Shape("TW207", "look-alike: a Python number among the loss's operands, cast with float()",
          _ACTOR.replace("READ", 'return {"temperature": float(temperature)}'), None),
    Shape("TW207", "look-alike: the operand read only every 100 updates",
          _ACTOR.replace("READ", 'if self.steps % 100 == 0:\n            return {"entropy": -log_prob.mean().item()}'), None),
]
