"""The recall corpus, round 30 part C: false findings of per-call rules in code that never runs
(rulings R5/R16/R18 of issue 22) - each written in our own words and reduced to its shape, with
live look-alikes that must still be reported. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW504 a branch under an option nothing sets
# A vendored transformer modeling file guards activation checkpointing with
# `getattr(self.config, "<option>", False) and self.training`; the project never sets that option
# (no keyword, assignment, argparse flag, config key): the default holds, the branch never runs.
# (Seen in summarization and vision research repos that copy Hugging Face modeling code, sets 37/49.)
_ENCODER = d("""
    import torch
    import torch.utils.checkpoint
    from torch import nn
    class Encoder(nn.Module):
        def __init__(self, config, layers):
            super().__init__()
            self.config = config
            self.layers = nn.ModuleList(layers)
        def forward(self, h):
            for layer in self.layers:
                if getattr(self.config, "grad_ckpt", False) and self.training:
                    if getattr(self.config, "use_cache", False):
                        raise ValueError("`use_cache=True` does not work with `config.grad_ckpt=True`")
                    h = torch.utils.checkpoint.checkpoint(layer, h)
                else:
                    h = layer(h)
            return h
""")
_TRAIN = d("""
    import torch
    from transformers import AutoConfig
    from modeling_enc import Encoder
    def main(path):
        config = AutoConfig.from_pretrained(path)
        model = Encoder(config, [torch.nn.Linear(8, 8)])
        opt = torch.optim.Adam(model.parameters())
        for x in torch.randn(10, 4, 8):
            loss = model(x).sum()
            loss.backward()
            opt.step()
    if __name__ == "__main__":
        main("cfg")
""")
PROJECTS += [
    ProjectShape("TW504", "look-alike: checkpoint under getattr(config, 'grad_ckpt', False), an option nothing sets", {
        "modeling_enc.py": _ENCODER, "train.py": _TRAIN,
    }),
    ProjectShape("TW504", "look-alike: the option is read with a None default in a plain if", {
        "modeling_enc.py": _ENCODER.replace('if getattr(self.config, "grad_ckpt", False) and self.training:',
                                            'if getattr(self.config, "grad_ckpt", None):'),
        "train.py": _TRAIN,
    }),
    ProjectShape("TW504", "the training script sets the option as a keyword of from_pretrained", {
        "modeling_enc.py": _ENCODER,
        "train.py": _TRAIN.replace("AutoConfig.from_pretrained(path)", "AutoConfig.from_pretrained(path, grad_ckpt=True)"),
    }, (("modeling_enc.py", 14),)),
    ProjectShape("TW504", "the training script assigns the option on the config", {
        "modeling_enc.py": _ENCODER,
        "train.py": _TRAIN.replace("    model = Encoder(", "    config.grad_ckpt = args_ckpt\n    model = Encoder(").replace(
            "def main(path):", "def main(path, args_ckpt=True):"),
    }, (("modeling_enc.py", 14),)),
    ProjectShape("TW504", "an argparse flag of that name feeds the config", {
        "modeling_enc.py": _ENCODER,
        "train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--grad_ckpt', action='store_true')\n" + _TRAIN,
    }, (("modeling_enc.py", 14),)),
    ProjectShape("TW504", "the option is a key of a config file of the project", {
        "modeling_enc.py": _ENCODER, "train.py": _TRAIN,
        "configs/base.json": '{"hidden": 8, "grad_ckpt": true}\n',
    }, (("modeling_enc.py", 14),)),
    ProjectShape("TW504", "the option is set through setattr by a string of the project", {
        "modeling_enc.py": _ENCODER,
        "train.py": _TRAIN.replace("    model = Encoder(", "    setattr(config, 'grad_ckpt', True)\n    model = Encoder("),
    }, (("modeling_enc.py", 14),)),
    ProjectShape("TW504", "a getattr with a True default is on unless something turns it off", {
        "modeling_enc.py": _ENCODER.replace('"grad_ckpt", False) and', '"grad_ckpt", True) and'),
        "train.py": _TRAIN,
    }, (("modeling_enc.py", 14),)),
]

# ------------------------------------------------------------- TW402 a method whose name a library shares
# An agent's `load` method (and a replay buffer's) that no script, module or notebook calls; the
# project's notebook only calls NumPy's `np.load(...)`. A library function of the same name is no
# call of the project's method: the method is dead (R5). A notebook that calls `agent.load(...)`
# keeps it alive. (Seen in RL research repos with a data-augmentation notebook, set 47.)
_AGENT = 'import torch\nfrom torch import nn\n\n\nclass Agent:\n    def __init__(self, dim, device):\n        self.actor = nn.Linear(dim, 2).to(device)\n        self.critic = nn.Linear(dim, 1).to(device)\n\n    def act(self, obs):\n        return self.actor(obs)\n\n    def save(self, folder, step):\n        torch.save(self.actor.state_dict(), "%s/actor_%s.pt" % (folder, step))\n        torch.save(self.critic.state_dict(), "%s/critic_%s.pt" % (folder, step))\n\n    def load(self, folder, step):\n        self.actor.load_state_dict(torch.load("%s/actor_%s.pt" % (folder, step)))\n        self.critic.load_state_dict(torch.load("%s/critic_%s.pt" % (folder, step)))\n'
_RUN = 'import numpy as np\nimport torch\nfrom agent import Agent\n\n\ndef main():\n    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n    agent = Agent(4, device)\n    opt = torch.optim.Adam(agent.actor.parameters())\n    for step in range(100):\n        obs = torch.randn(8, 4).to(device)\n        loss = agent.act(obs).sum()\n        opt.zero_grad()\n        loss.backward()\n        opt.step()\n        if step % 10 == 0:\n            agent.save("ckpt", step)\n    stats = np.load("stats.npy")\n\n\nif __name__ == "__main__":\n    main()\n'
PROJECTS += [
    ProjectShape("TW402", "look-alike: Agent.load nothing calls; the notebook only calls np.load", {
        "agent.py": _AGENT, "train.py": _RUN, "demo.ipynb": '{"cells": [{"cell_type": "code", "source": ["import numpy as np\\n", "x = np.load(\'sample.npy\', allow_pickle=True)\\n"]}], "nbformat": 4}\n',
    }),
    ProjectShape("TW402", "the notebook calls the agent's load", {
        "agent.py": _AGENT, "train.py": _RUN, "demo.ipynb": '{"cells": [{"cell_type": "code", "source": ["import numpy as np\\n", "x = np.load(\'sample.npy\', allow_pickle=True)\\n", "agent.load(\'ckpt\', 90)\\n"]}], "nbformat": 4}\n',
    }, (("agent.py", 18), ("agent.py", 19))),
]
