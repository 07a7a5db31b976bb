"""The recall corpus, round 16 part D: classes the sets 21 and 22 (tuning sets of round 16) showed
for TW402, TW305, TW201, TW104, TW205/TW206 and TW301 - reported where the advice does not apply,
or missed - each written in our own words and reduced to its shape, with look-alikes.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW402 reference data read with .numpy()
# A course's sanity-check script loads expected outputs and the inputs shipped with them from one
# data folder and compares with `expected.numpy()`: `.numpy()` raises on a CUDA tensor, so the
# folder holds CPU data.
_CHECK = """
    import sys
    import numpy as np
    import torch
    from model import Seq2Seq

    def check_encode(model, src):
        padded = model.vocab.to_tensor(src, device=model.device)
        expected = torch.load("./check_data/encoded.pkl")
        with torch.no_grad():
            got = model.encode(padded)
        assert np.allclose(expected.numpy(), got.numpy()), "encode is wrong"

    def check_step(model):
        hidden = torch.load("./check_data/hidden_{}.pkl".format(0))
        mask = torch.load("./check_data/mask.pkl")
        expected_state = torch.load("./check_data/state.pkl")
        with torch.no_grad():
            state = model.step(hidden, mask)
        assert np.allclose(expected_state[0].numpy(), state[0].numpy())
    %s
    def main():
        torch.cuda.manual_seed(0)
        model = Seq2Seq(device="cuda" if torch.cuda.is_available() else "cpu")
        check_encode(model, sys.argv[1:])
        check_step(model)
        check_other(model)

    if __name__ == "__main__":
        main()
"""
QUIET += [
    Shape("TW402", "look-alike: a sanity check's expected outputs (read with .numpy()) and the inputs of their folder",
          d(_CHECK % "def check_other(model):\n        pass\n"), None, "sanity_check.py"),
]
FIND += [
    Shape("TW402", "the same script restoring a network from that folder", d(_CHECK % (
        "def check_other(model):\n        model.load_state_dict(torch.load('./check_data/net.pt'))\n")), 21, "sanity_check.py"),
    Shape("TW402", "the same script loading from another folder, read after .cpu()", d(_CHECK % (
        "def check_other(model):\n        out = torch.load('./runs/out.pt')\n"
        "        print(out.cpu().numpy())\n")), 21, "sanity_check.py"),
]

# ------------------------------------------------------------- TW402 an option no caller passes
# A trainer's static `test(model, args, loader, path=None)` restores a checkpoint only when given a
# path, and every call in the project leaves it out: the branch never runs (R5).
_TRAINER = d("""
    import torch
    class Trainer:
        def __init__(self, model, args):
            self.model, self.args = model, args
        def train(self):
            for x, y in self.args.loader:
                loss = self.model(x.to(self.args.device), y)
                loss.backward()
            self.test(self.model, self.args, self.args.loader)
        @staticmethod
        def test(model, args, loader, path=None):
            if path != None:
                ckpt = torch.load(path)
                model.load_state_dict(ckpt["state_dict"])
            model.eval()
            with torch.no_grad():
                return [model(x.to(args.device)) for x, _ in loader]
""")
_RUN = """
    import torch
    from trainer import Trainer
    args = parse()
    args.device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Net().to(args.device)
    trainer = Trainer(model, args)
    trainer.train()
    trainer.test(model, args, args.loader%s)
"""
PROJECTS += [
    ProjectShape("TW402", "look-alike: the load under `if path != None:` of a parameter no call passes", {
        "trainer.py": _TRAINER, "run.py": d(_RUN % "")}),
    ProjectShape("TW402", "the same trainer when the run script passes a checkpoint path", {
        "trainer.py": _TRAINER, "run.py": d(_RUN % ", path=args.ckpt")}, (("trainer.py", 13),)),
]

# ------------------------------------------------------------- TW305 an option off by default in a Hydra config
# An imitation-learning trainer asks for cuDNN determinism only under `args.cuda_deterministic`,
# which the Hydra config beside the script sets to False: a user's choice, not the project's.
_HYDRA_TRAIN = """
    import hydra
    import torch
    @hydra.main(config_path="conf", config_name="config")
    def main(cfg):
        torch.manual_seed(cfg.seed)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if device.type == "cuda" and cfg.cuda_deterministic:
            torch.backends.cudnn.benchmark = False
            torch.backends.cudnn.deterministic = True
        %s
    if __name__ == "__main__":
        main()
"""
PROJECTS += [
    ProjectShape("TW305", "look-alike: cudnn.deterministic under a Hydra option whose YAML default is False", {
        "iq/train.py": d(_HYDRA_TRAIN % "learn(cfg)"), "iq/conf/config.yaml": "seed: 0\ncuda_deterministic: False\n"}),
    ProjectShape("TW305", "look-alike: the flag set from the Hydra option, off by default", {
        "iq/train.py": d(_HYDRA_TRAIN % "torch.backends.cudnn.deterministic = cfg.strict"),
        "iq/conf/config.yaml": "seed: 0\ncuda_deterministic: False\nstrict: false  # exact runs\n"}),
    ProjectShape("TW305", "the same script whose Hydra config turns the option on", {
        "iq/train.py": d(_HYDRA_TRAIN % "learn(cfg)"), "iq/conf/config.yaml": "seed: 0\ncuda_deterministic: True\n"},
        (("iq/train.py", 9),)),
    ProjectShape("TW305", "the same script with no config file to read: reported", {
        "iq/train.py": d(_HYDRA_TRAIN % "learn(cfg)")}, (("iq/train.py", 9),)),
]
QUIET += [
    Shape("TW305", "look-alike: the flag set under a store_true option", d("""
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--deterministic", action="store_true")
        args = parser.parse_args()
        if args.deterministic:
            torch.backends.cudnn.deterministic = True
        train(args)
    """)),
]
FIND += [
    Shape("TW305", "the flag set under an option on by default", d("""
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--torch-deterministic", type=bool, default=True)
        args = parser.parse_args()
        if args.torch_deterministic:
            torch.backends.cudnn.deterministic = True
        train(args)
    """), 7),
]

# ------------------------------------------------------------- TW201 an evaluator factory's wrapper
# A re-identification engine builds its evaluator in a factory: the model is wrapped in
# DataParallel when there are several GPUs, moved, and only called in the evaluator's step under
# no_grad (R8). The trainer factory beside it, whose step runs backward, is still reported.
_ENGINE = d("""
    import torch
    import torch.nn as nn
    from ignite.engine import Engine

    def create_trainer(model, optimizer, loss_fn, device=None):
        if device:
            if torch.cuda.device_count() > 1:
                model = nn.DataParallel(model)
            model.to(device)
        def _update(engine, batch):
            model.train()
            optimizer.zero_grad()
            img, target = batch
            loss = loss_fn(model(img.to(device)), target.to(device))
            loss.backward()
            optimizer.step()
            return loss.item()
        return Engine(_update)

    def create_evaluator(model, metrics, device=None):
        if device:
            if torch.cuda.device_count() > 1:
                model = nn.DataParallel(model)
            model.to(device)
        def _inference(engine, batch):
            model.eval()
            with torch.no_grad():
                data, pids = batch
                return model(data.to(device)), pids
        engine = Engine(_inference)
        for name, metric in metrics.items():
            metric.attach(engine, name)
        return engine
""")
PROJECTS += [
    ProjectShape("TW201", "an evaluator factory's DataParallel (step under no_grad) beside the trainer factory's", {
        "engine/trainer.py": _ENGINE}, (("engine/trainer.py", 8),)),
    ProjectShape("TW201", "look-alike: an evaluator factory that hands the wrapped model back to its caller", {
        "engine/trainer.py": _ENGINE.replace("    return engine\n", "    return engine, model\n")},
        (("engine/trainer.py", 8), ("engine/trainer.py", 23))),
]

# ------------------------------------------------------------- TW104 a decoder's own step; an export's dry run
# A translation model's beam search calls `self.step(...)` - the decoder step its class defines,
# unpacked into three values like an environment's - in a loop: no environment, no action.
QUIET += [
    Shape("TW104", "look-alike: a module's beam search calling its own decoder step", d("""
        import torch
        import torch.nn as nn
        class NMT(nn.Module):
            def __init__(self, vocab, size):
                super().__init__()
                self.embed = nn.Embedding(len(vocab), size)
                self.cell = nn.LSTMCell(size, size)
            def step(self, x, h, enc):
                h = self.cell(x, h)
                return h, self.att(h, enc), None
            def beam_search(self, src, beam_size=5, max_steps=70):
                enc = self.encode(src)
                h, hyps, t = self.init_state(enc), [[1]], 0
                while len(hyps) < beam_size and t < max_steps:
                    t += 1
                    y = self.embed(torch.tensor([hy[-1] for hy in hyps], device=self.device))
                    y = torch.squeeze(y, dim=0)
                    h, att, _ = self.step(y, h, enc)
                    hyps = self.extend(hyps, att.log_softmax(-1).tolist())
                return hyps
    """), None, "nmt_model.py"),
]
FIND += [
    Shape("TW104", "an evaluation rollout stepping its environment with the policy network's action", d("""
        import gym
        import torch
        import torch.nn as nn
        policy = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
        policy.load_state_dict(torch.load("policy.pt", map_location="cpu"))
        env = gym.make("CartPole-v1")
        obs = env.reset()
        for t in range(1000):
            action = policy(torch.as_tensor(obs)).argmax().item()
            obs, reward, done, info = env.step(action)
            if done:
                obs = env.reset()
    """), 9),
]
# An export script restores a network, puts it in eval mode, runs it once on a dummy input and
# traces it: the run is the trace's warm-up.
_EXPORT = d("""
    import torch
    from model import LaneNet
    net = LaneNet(backbone="18")
    state = torch.load("weights.pth", map_location="cpu")["model"]
    net.load_state_dict(state)
    net.eval()
    img = torch.zeros(1, 3, 288, 800)
    y = net(img)
    %s
""")
QUIET += [
    Shape("TW104", "look-alike: a dry run right before torch.jit.trace of the same network",
          _EXPORT % 'ts = torch.jit.trace(net, img)\nts.save("lanenet.pt")', None, "export.py"),
]
FIND += [
    Shape("TW104", "the same script printing the output instead of exporting it",
          _EXPORT % "print(y[0].shape)", 8, "export.py"),
]
FIND += [
    Shape("TW201", "a fine-tuning template that wraps and moves the model, its training left to fill in", d("""
        import torch
        def train(args):
            model = Classifier(args.classes)
            model.load_from_pretrain(args.checkpoint)
            model = torch.nn.DataParallel(model)
            if "cuda" in args.device:
                model.to(args.device)
    """), 5),
]
