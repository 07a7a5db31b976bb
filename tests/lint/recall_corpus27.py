"""The recall corpus, round 13 part C2 (issue 22): the API and correctness rules (TW502, TW220,
TW218, TW103, TW105, TW509, TW401) on the classes sets 15 and 16 showed - each written in our
own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW502 F.sigmoid / F.tanh are not deprecated
# They warned in PyTorch 0.4-1.x; current releases define them as plain aliases of
# torch.sigmoid/torch.tanh, with no warning and no removal planned.
QUIET += [
    Shape("TW502", "look-alike: a WaveRNN cell's gates with F.sigmoid and F.tanh", d("""
        import torch.nn.functional as F
        def gru_gates(R_u, I_u, R_r, I_r, R_e, I_e, b):
            u = F.sigmoid(R_u + I_u + b)
            r = F.sigmoid(R_r + I_r + b)
            return u, F.tanh(r * R_e + I_e + b)
    """)),
    Shape("TW502", "look-alike: F.tanh handed on as a body's gate, F.sigmoid kept as an output function", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Head(nn.Module):
            def __init__(self, body_cls, dim):
                super().__init__()
                self.body = body_cls(dim, gate=F.tanh)
                self.out = F.sigmoid
    """)),
]

# ------------------------------------------------------------- TW502 add(Number, Tensor) without the underscore, in an optimizer
# Adam/SharedAdam copies from PyTorch 0.x: weight decay folded in with grad = grad.add(wd, p.data),
# the out-of-place scalar-first overload, inside the loop over a parameter group.
FIND += [
    Shape("TW502", "a shared Adam for A3C: grad.add(weight_decay, p.data) in the parameter loop", d("""
        import torch
        class SharedAdam(torch.optim.Adam):
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group['params']:
                        grad = p.grad.data
                        if group['weight_decay'] != 0:
                            grad = grad.add(group['weight_decay'], p.data)
                        p.data.add_(grad, alpha=-group['lr'])
    """), 8),
    Shape("TW502", "an fp16 Adam: decay against the fp32 master copy kept in the state", d("""
        import torch
        class Adam16(torch.optim.Optimizer):
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        state = self.state[p]
                        grad = p.grad.data.float()
                        if group["weight_decay"]:
                            grad = grad.add(group["weight_decay"], state["fp32_p"])
                        state["fp32_p"].add_(grad, alpha=-group["lr"])
    """), 9),
    Shape("TW502", "a hand-written SGD looping over optimizer.param_groups: sub(lr, grad)", d("""
        import torch
        def manual_sgd(optimizer):
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.data = p.data.sub(group["lr"], p.grad.data)
    """), 5),
]
QUIET += [
    Shape("TW502", "look-alike: the current add with alpha= in the parameter loop", d("""
        import torch
        class SharedAdam(torch.optim.Adam):
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group['params']:
                        grad = p.grad.data
                        grad = grad.add(p.data, alpha=group['weight_decay'])
                        p.data.add_(grad, alpha=-group['lr'])
    """)),
    Shape("TW502", "look-alike: a meter's add(value, n) in a loop over batches, and a set's add", d("""
        import torch
        def evaluate(model, loader, meter, seen):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x), y)
                meter.add(loss.item(), x.size(0))
                seen.add(len(y))
    """)),
    Shape("TW502", "look-alike: a confusion meter fed two tensors outside any optimizer", d("""
        import torch
        def score(model, loader, confusion):
            for x, y in loader:
                confusion.add(model(x).argmax(1), y)
    """)),
]

# ------------------------------------------------------------- TW502 scheduler.step(epoch) on a scheduler chosen by an option
# The scheduler name is bound in several branches of `if args.scheduler == ...` (one of them a
# ReduceLROnPlateau); the step calls sit under the same tests.
_OPTION_SCHEDULERS = d("""
    import argparse
    import torch.optim as optim
    parser = argparse.ArgumentParser()
    parser.add_argument('--scheduler', default='cosine')
    args = parser.parse_args()
    optimizer = optim.SGD([], lr=0.1)
    if args.scheduler == 'cosine':
        scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, 1000)
    elif args.scheduler == 'inv_sqrt':
        scheduler = optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lambda s: 1.0 / max(s, 1) ** 0.5)
    elif args.scheduler == 'dev_perf':
        scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5)
    def train(step):
        if args.scheduler in ['cosine', 'constant', 'dev_perf']:
            if args.scheduler == 'cosine':
                scheduler.step(step)
        elif args.scheduler == 'inv_sqrt':
            scheduler.step(step)
    def validate(val_loss):
        if args.scheduler == 'dev_perf':
            scheduler.step(val_loss)
""")
FIND += [
    Shape("TW502", "a language-model trainer: the cosine branch steps its scheduler with the step count",
          _OPTION_SCHEDULERS, 16),
    Shape("TW502", "the same trainer: the inverse-square-root branch after an elif", _OPTION_SCHEDULERS, 18),
    Shape("TW502", "a per-epoch step in a function, the scheduler chosen by the config's name", d("""
        import torch
        def fit(opt, cfg, epochs):
            if cfg.sched == "step":
                sched = torch.optim.lr_scheduler.StepLR(opt, 30)
            else:
                sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
            for epoch in range(epochs):
                if cfg.sched == "step":
                    sched.step(epoch)
    """), 9),
]
QUIET += [
    Shape("TW502", "look-alike: the plateau branch of the same trainer steps with the validation loss",
          _OPTION_SCHEDULERS.replace("scheduler.step(step)", "scheduler.step()")),
    Shape("TW502", "look-alike: a scheduler chosen by an option, stepped with no option test around the call", d("""
        import torch
        def fit(opt, cfg, epochs, evaluate):
            if cfg.sched == "step":
                sched = torch.optim.lr_scheduler.StepLR(opt, 30)
            else:
                sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
            for epoch in range(epochs):
                sched.step(evaluate())
    """)),
    Shape("TW502", "look-alike: the else branch (the plateau) steps with the metric", d("""
        import torch
        def fit(opt, cfg, epochs, evaluate):
            if cfg.sched == "step":
                sched = torch.optim.lr_scheduler.StepLR(opt, 30)
            else:
                sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
            for epoch in range(epochs):
                if cfg.sched == "step":
                    sched.step()
                else:
                    sched.step(evaluate())
    """)),
]

# ------------------------------------------------------------- TW220 torch.cuda.amp under a name of its own; apex.fp16_utils
FIND += [
    Shape("TW220", "a masked-image-modelling script: import torch.cuda.amp as amp, then amp.GradScaler()", d("""
        import torch
        import torch.cuda.amp as amp
        def main(model, loader, optimizer):
            scaler = amp.GradScaler()
            for x in loader:
                with amp.autocast(enabled=True):
                    loss = model(x)
                scaler.scale(loss).backward()
    """), 2),
    Shape("TW220", "apex's FP16_Optimizer imported inside try under an --fp16 flag", d("""
        import torch
        def setup(args, optimizer):
            if args.fp16:
                try:
                    from apex.fp16_utils import FP16_Optimizer
                except ImportError:
                    args.fp16 = False
            return optimizer
    """), 5),
    Shape("TW220", "apex's FP16_Optimizer wrapping the optimizer with dynamic loss scaling", d("""
        import torch
        from apex.fp16_utils import FP16_Optimizer
        def wrap(model, lr):
            opt = torch.optim.Adam(model.parameters(), lr=lr)
            return FP16_Optimizer(opt, dynamic_loss_scale=True)
    """), 5),
    Shape("TW220", "a re-id test script: a star import of apex.fp16_utils, then network_to_half", d("""
        import torch
        from apex.fp16_utils import *
        def load(model, fp16):
            if fp16:
                model = network_to_half(model)
            return model
    """), 2),
    Shape("TW220", "apex's network_to_half on the model (BatchNorm kept in fp32 by hand)", d("""
        import apex.fp16_utils as fp16
        def half_model(model):
            return fp16.network_to_half(model)
    """), 3),
]
QUIET += [
    Shape("TW220", "look-alike: torch.amp imported under the name amp", d("""
        import torch
        import torch.amp as amp
        def main(model, x):
            scaler = amp.GradScaler("cuda")
            with amp.autocast("cuda"):
                return scaler, model(x)
    """)),
    Shape("TW220", "look-alike: a project module fp16_utils with its own FP16_Optimizer", d("""
        import torch
        from utils.fp16_utils import FP16_Optimizer
        def wrap(opt):
            return FP16_Optimizer(opt, static_loss_scale=128.0)
    """)),
    Shape("TW220", "look-alike: NVIDIA's ImageNet example: a star import of apex.fp16_utils for to_python_float only", d("""
        import torch
        try:
            from apex.fp16_utils import *
        except ImportError:
            raise ImportError("install apex")
        def log(loss):
            return to_python_float(loss.data)
    """)),
    Shape("TW220", "look-alike: the old module imported as amp for its availability test only", d("""
        import torch
        import torch.cuda.amp as amp
        def usable():
            return not amp.amp_definitely_not_available()
    """)),
]

# ------------------------------------------------------------- TW218 .half() of a model the script puts in training mode
# A GAN training script converts G and D with G = G.half() under config flags; the update runs in
# another module's training function, and the loop calls G.train() / D.train().
FIND += [
    Shape("TW218", "a GAN script: G = G.half() under a flag, G.train() in the epoch loop", d("""
        import torch
        import nets
        import train_fns
        def run(config, loader):
            G = nets.Generator(**config).to("cuda")
            D = nets.Discriminator(**config).to("cuda")
            if config["G_fp16"]:
                G = G.half()
            if config["D_fp16"]:
                D = D.half()
            step = train_fns.make_step(G, D, config)
            for x, y in loader:
                G.train()
                D.train()
                step(x, y)
    """), 8),
    Shape("TW218", "the EMA copy converted too, and put in training mode with the others", d("""
        import nets
        import train_fns
        def run(config, loader):
            G_ema = nets.Generator(**config).cuda()
            if config["ema"]:
                G_ema = G_ema.half()
            for x, y in loader:
                G_ema.train()
                train_fns.update(G_ema, x, y)
    """), 6),
]
QUIET += [
    Shape("TW218", "look-alike: a sampling script converts G to fp16 and only ever evaluates it", d("""
        import torch
        import nets
        def sample(config):
            G = nets.Generator(**config).cuda()
            G = G.half()
            G.eval()
            with torch.no_grad():
                return G(torch.randn(8, 128, device="cuda").half())
    """)),
    Shape("TW218", "look-alike: Monte Carlo dropout: an fp16 model put in train mode for sampling under no_grad", d("""
        import torch
        import nets
        def mc_predict(config, x, n):
            model = nets.Classifier(**config).cuda()
            model = model.half()
            model.train()
            with torch.no_grad():
                return torch.stack([model(x.half()) for _ in range(n)]).mean(0)
    """)),
    Shape("TW218", "look-alike: train(False) is evaluation mode", d("""
        import nets
        def export(config):
            G = nets.Generator(**config).cuda()
            G = G.half()
            G.train(False)
            return G
    """)),
]

# ------------------------------------------------------------- TW103 a parameter every caller fills with a module
# RL agents hand the policy network to a helper (`self.pick_action(self.local_model, state)`,
# `self.log_prob(self.policy_new, ...)`) that calls policy.forward(state).
FIND += [
    Shape("TW103", "an A3C worker: the local model passed to a helper as `policy`", d("""
        import torch
        class Worker(torch.multiprocessing.Process):
            def __init__(self, local_model):
                super().__init__()
                self.local_model = local_model
            def run(self, state):
                return self.act(self.local_model, state)
            def act(self, policy, state):
                out = policy.forward(torch.as_tensor(state))
                return out.argmax()
    """), 9),
    Shape("TW103", "PPO: new and old policies (given to an optimizer, loaded with a state dict) through one helper", d("""
        import copy
        import torch
        class PPO:
            def __init__(self, make_net):
                self.policy_new = make_net()
                self.policy_old = make_net()
                self.policy_old.load_state_dict(copy.deepcopy(self.policy_new.state_dict()))
                self.opt = torch.optim.Adam(self.policy_new.parameters(), lr=1e-3)
            def ratio(self, states, actions):
                new = self.log_prob(self.policy_new, states, actions)
                old = self.log_prob(self.policy_old, states, actions)
                return torch.exp(new - old)
            def log_prob(self, policy, states, actions):
                return policy.forward(states).log_softmax(-1).gather(1, actions)
    """), 14),
]
QUIET += [
    Shape("TW103", "look-alike: one caller passes a plain scheduler object", d("""
        import torch
        class Runner:
            def __init__(self, model, schedule):
                self.model, self.schedule = model, schedule
            def go(self, x, t):
                return self.apply(self.model, x) + self.apply(self.schedule, t)
            def apply(self, thing, v):
                return thing.forward(v)
    """)),
    Shape("TW103", "look-alike: a parameter nobody in view fills", d("""
        import torch
        def act(policy, state):
            return policy.forward(torch.as_tensor(state))
    """)),
]
PROJECTS += [
    ProjectShape("TW103", "an experience generator keeps the policy it was built with; the agent passes its network", {
        "agents/ppo.py": d("""
            import torch
            from utils.generator import ExperienceGenerator
            class PPO:
                def __init__(self, make_net, env):
                    self.policy_new = make_net()
                    self.opt = torch.optim.Adam(self.policy_new.parameters(), lr=1e-3)
                    self.gen = ExperienceGenerator(env, self.policy_new)
                def collect(self):
                    return self.gen.play()
        """),
        "utils/generator.py": d("""
            import torch
            class ExperienceGenerator:
                def __init__(self, env, policy):
                    self.env = env
                    self.policy = policy
                def play(self):
                    return self.pick(self.policy, self.env.reset())
                def pick(self, policy, state):
                    return policy.forward(torch.as_tensor(state)).argmax()
        """),
    }, (("utils/generator.py", 9),)),
    ProjectShape("TW103", "look-alike: the generator is built with a plain scripted policy", {
        "agents/scripted.py": d("""
            from utils.generator import ExperienceGenerator
            from utils.rules import RulePolicy
            def make(env):
                return ExperienceGenerator(env, RulePolicy())
        """),
        "utils/rules.py": "class RulePolicy:\n    def forward(self, state):\n        return 0\n",
        "utils/generator.py": d("""
            import torch
            class ExperienceGenerator:
                def __init__(self, env, policy):
                    self.env = env
                    self.policy = policy
                def play(self):
                    return self.pick(self.policy, self.env.reset())
                def pick(self, policy, state):
                    return policy.forward(torch.as_tensor(state))
        """),
    }),
]

# ------------------------------------------------------------- TW103 a part of a model taken out of it
FIND += [
    Shape("TW103", "a summarization predictor keeps the model's generator head and calls its forward", d("""
        import torch
        class Translator:
            def __init__(self, model):
                self.model = model
                self.generator = self.model.generator
            def step(self, dec_out):
                return self.generator.forward(dec_out.squeeze(0))
    """), 7),
    Shape("TW103", "the chain written out: model.decoder.forward(h)", d("""
        import torch
        def decode(model, h):
            return model.decoder.forward(h)
    """), 3),
]
QUIET += [
    Shape("TW103", "look-alike: a part of a plain config object", d("""
        import torch
        class Runner:
            def __init__(self, cfg):
                self.cfg = cfg
                self.hook = self.cfg.pipeline
            def step(self, x):
                return self.hook.forward(x)
    """)),
]

# ------------------------------------------------------------- TW105 log of an entry picked from probabilities
FIND += [
    Shape("TW105", "a discrete policy: log of the gathered softmax output its forward returns", d("""
        import torch
        import torch.nn as nn
        class DiscretePolicy(nn.Module):
            def __init__(self, n_in, n_act):
                super().__init__()
                self.head = nn.Linear(n_in, n_act)
            def forward(self, x):
                return torch.softmax(self.head(x), dim=1)
            def get_log_prob(self, x, actions):
                action_prob = self.forward(x)
                return torch.log(action_prob.gather(1, actions.long().unsqueeze(1)))
    """), 11),
    Shape("TW105", "REINFORCE: log of the chosen actions' probabilities indexed out of a softmax", d("""
        import torch
        import torch.nn.functional as F
        def pg_loss(logits, actions, returns):
            probs = F.softmax(logits, dim=-1)
            picked = torch.log(probs[torch.arange(len(actions)), actions])
            return -(picked * returns).mean()
    """), 5),
]
QUIET += [
    Shape("TW105", "look-alike: gathered from log_softmax, then exp for the probabilities", d("""
        import torch
        import torch.nn.functional as F
        def pg(logits, actions):
            logp = F.log_softmax(logits, dim=-1).gather(1, actions)
            return logp, torch.log(logp.exp().clamp_min(1e-8))
    """)),
    Shape("TW105", "look-alike: log of gathered probabilities floored first", d("""
        import torch
        def nll(probs_fn, x, y):
            probs = probs_fn(x).clamp(min=1e-8)
            return -torch.log(probs.gather(1, y)).mean()
    """)),
]

# ------------------------------------------------------------- TW509 a boolean expression as the positional flag
FIND += [
    Shape("TW509", "Faster R-CNN: vgg16(not opt.load_path), ImageNet weights unless a checkpoint follows", d("""
        from torchvision.models import vgg16
        def decom_vgg16(opt):
            model = vgg16(not opt.load_path)
            return model.features
    """), 3),
    Shape("TW509", "a backbone option compared in the call", d("""
        import torchvision
        def backbone(cfg):
            return torchvision.models.resnet50(cfg.init == "imagenet")
    """), 3),
]
QUIET += [
    Shape("TW509", "look-alike: the project's own vgg16 called with a boolean expression", d("""
        import torchvision
        from nets.vgg import vgg16
        def decom(opt):
            return vgg16(not opt.load_path)
    """)),
]

# ------------------------------------------------------------- TW401 torch through a star import of a project module
PROJECTS += [
    ProjectShape("TW401", "a traffic-forecasting test script: from model import * hands on torch", {
        "model.py": "import torch\nimport torch.nn as nn\nclass GWNet(nn.Module):\n    pass\n",
        "test.py": d("""
            import argparse
            from model import *
            def main(args):
                model = GWNet()
                model.load_state_dict(torch.load(args.checkpoint))
                return model
        """),
    }, (("test.py", 5),)),
    ProjectShape("TW401", "look-alike: the star import hands on a project's own torch helper named load", {
        "model.py": "import torch\nimport checkpoint_io as torch_io\n__all__ = ['Net', 'torch_io']\nclass Net:\n    pass\n",
        "checkpoint_io.py": "def load(path):\n    return path\n",
        "test.py": d("""
            from model import *
            def main(path):
                return torch_io.load(path)
        """),
    }),
]
