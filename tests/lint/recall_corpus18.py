"""The recall corpus, round 11 part B: classes the eleventh set (the tuning set of round 11) still
missed - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW509 a builder looked up in the module namespace
# An ImageNet script that picks the architecture by name from torchvision's module dictionary.
FIND += [
    Shape("TW509", "architecture picked from torchvision.models.__dict__ by a command-line name", d("""
        import torchvision.models as models
        def build(args):
            if args.pretrained:
                return models.__dict__[args.arch](pretrained=True)
            return models.__dict__[args.arch]()
    """), 4),
    Shape("TW509", "vars() of the torchvision detection module, indexed by a config name", d("""
        import torchvision
        def detector(cfg):
            return vars(torchvision.models.detection)[cfg["name"]](pretrained_backbone=False)
    """), 3),
]
QUIET += [
    Shape("TW509", "look-alike: the namespace of a package of the project's own models", d("""
        import torchvision
        import nets.cifar as cifar_models
        def build(args):
            return cifar_models.__dict__[args.arch](pretrained=True)
    """)),
    Shape("TW509", "look-alike: a registry dict of the project's own builders", d("""
        import torchvision
        from nets import small_resnet, tiny_vgg
        REGISTRY = {"resnet": small_resnet, "vgg": tiny_vgg}
        def build(name):
            return REGISTRY[name](pretrained=True)
    """)),
    Shape("TW509", "look-alike: torchvision's namespace called with weights=", d("""
        import torchvision.models as models
        def build(args):
            return models.__dict__[args.arch](weights="DEFAULT")
    """)),
]

# ------------------------------------------------------------- TW206 an image decoded per item and copied
# A Dataset that reads each image with OpenCV (and maybe an albumentations pipeline without
# ToTensorV2) and turns it into a tensor with torch.tensor: a second copy of every sample.
FIND += [
    Shape("TW206", "albumentations pipeline result copied with torch.tensor in __getitem__", d("""
        import cv2
        import torch
        import albumentations as A
        class Pairs(torch.utils.data.Dataset):
            def __init__(self, paths):
                self.paths = paths
                self.aug = A.Compose([A.Resize(224, 224), A.Normalize()])
            def __getitem__(self, i):
                img = cv2.imread(self.paths[i])
                img = self.aug(image=img)["image"]
                return torch.tensor(img).permute(2, 0, 1).float()
    """), 11),
    Shape("TW206", "OpenCV colour conversion copied with torch.tensor per item", d("""
        import cv2
        import torch
        class Frames:
            def __init__(self, files):
                self.files = files
            def __getitem__(self, k):
                frame = cv2.cvtColor(cv2.imread(self.files[k]), cv2.COLOR_BGR2RGB)
                return torch.tensor(frame)
    """), 8),
]
QUIET += [
    Shape("TW206", "look-alike: the pipeline ends in ToTensorV2 (the value is already a tensor)", d("""
        import cv2
        import torch
        import albumentations as A
        from albumentations.pytorch import ToTensorV2
        class Pairs:
            def __init__(self, paths):
                self.paths = paths
                self.aug = A.Compose([A.Normalize(), ToTensorV2()])
            def __getitem__(self, i):
                img = self.aug(image=cv2.imread(self.paths[i]))["image"]
                return torch.tensor(img)
    """)),
    Shape("TW206", "look-alike: one image read once at set-up for a preview", d("""
        import cv2
        import torch
        def preview(path, model):
            picture = cv2.imread(path)
            return model(torch.tensor(picture).unsqueeze(0))
    """)),
    Shape("TW206", "look-alike: a decoded image converted with a dtype change (that copies anyway)", d("""
        import cv2
        import torch
        class Frames:
            def __getitem__(self, k):
                frame = cv2.imread(self.files[k])
                return torch.tensor(frame, dtype=torch.float32)
    """)),
]

# ------------------------------------------------------------- TW205 .to(x) where x is the input, reshaped first
# A quantile / noise head that makes its sampling grid with a legacy constructor and moves it with
# .to(x), x being the forward's input after scaling, layers and a reshape.
FIND += [
    Shape("TW205", "legacy constructor moved .to(x) after x went through layers and a view", d("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class QuantileHead(nn.Module):
            def forward(self, x, n_taus):
                x = x / 255.0
                x = F.relu(self.conv1(x))
                x = F.relu(self.conv2(x))
                x = x.view(x.size(0), -1)
                taus = torch.FloatTensor(x.size(0) * n_taus, 1).to(x)
                return self.head(x, taus)
    """), 10),
    Shape("TW205", "a list of indices made into a tensor and moved .to(h), h = torch.tanh(...) of the input", d("""
        import torch
        import torch.nn as nn
        class Embed(nn.Module):
            def forward(self, inp):
                h = torch.tanh(self.proj(inp))
                k = torch.FloatTensor([i for i in range(1, 65)]).to(h)
                return h * k
    """), 6),
]
QUIET += [
    Shape("TW205", "look-alike: .to(dtype) where the dtype name is derived from a string", d("""
        import torch
        import torch.nn as nn
        class Head(nn.Module):
            def forward(self, x, precision):
                kind = getattr(torch, precision)
                return torch.FloatTensor(x.size(0), 1).to(kind)
    """)),
    Shape("TW205", "look-alike: .to(x) where x was built on the CPU from a list itself", d("""
        import torch
        def grid(n):
            x = torch.arange(n) / 2
            return torch.FloatTensor([1.0, 2.0]).to(x)
    """)),
]

# ------------------------------------------------------------- TW104 a scoring method run after .eval()
# A language model (imported from the project's package) scored with its log-probability method in
# the evaluation function, autograd on.
FIND += [
    Shape("TW104", "imported language model's log_prob() in an evaluate() after .eval()", d("""
        import torch
        from lm.model import WordLM
        def evaluate(data, word_model):
            word_model.eval()
            total = 0.0
            for words, targets in data:
                scores = word_model.log_prob(words)
                total += torch.nn.functional.nll_loss(scores, targets).item()
            return total
    """), 7),
    Shape("TW104", "a classifier's predict_proba() in a module-level evaluation loop after .eval()", d("""
        import torch
        from nets import Tagger
        net = Tagger()
        net.load_state_dict(torch.load("tagger.pt"))
        net.eval()
        for batch in torch.load("val.pt"):
            probs = net.predict_proba(batch)
            print(probs.argmax(1))
    """), 7),
]
QUIET += [
    Shape("TW104", "look-alike: log_prob of a local class that runs under no_grad itself", d("""
        import torch
        import torch.nn as nn
        class WordLM(nn.Module):
            def forward(self, x):
                return self.out(x)
            @torch.no_grad()
            def log_prob(self, x):
                return self(x).log_softmax(-1)
        def evaluate(data, lm):
            lm = WordLM()
            lm.eval()
            for words in data:
                print(lm.log_prob(words).sum())
    """)),
    Shape("TW104", "look-alike: an action distribution's log_prob in the update, after a policy's .eval() then .train()", d("""
        import torch
        from agents import Policy
        def update(policy, states, actions, optimizer):
            policy.eval()
            policy.train()
            dist = policy.distribution(states)
            loss = -dist.log_prob(actions).mean()
            loss.backward()
            optimizer.step()
    """)),
]

# ------------------------------------------------------------- TW205 stored, reshaped, then reshaped again as it moves
# A distributional-RL projection that builds its index offsets with linspace, stores and
# unsqueezes them, and moves them with `.expand(...).to(other)` in one more statement.
FIND += [
    Shape("TW205", "linspace stored, unsqueezed, then expanded and moved .to(actions) in the next statement", d("""
        import torch
        def project(actions, rewards, batch, atoms):
            offset = torch.linspace(0, (batch - 1) * atoms, batch)
            offset = offset.unsqueeze(dim=1)
            offset = offset.expand(batch, atoms).to(actions)
            return rewards.view(-1) + offset.view(-1)
    """), 5),
    Shape("TW205", "zeros stored, then repeated and moved with .cuda() in a step", d("""
        import torch
        def step(model, x):
            pad = torch.zeros(1, 16)
            out = model(torch.cat([x, pad.repeat(x.size(0), 1).cuda()], 1))
            return out
    """), 4),
]
QUIET += [
    Shape("TW205", "look-alike: the stored tensor is used on the CPU before it is reshaped and moved", d("""
        import torch
        def project(actions, batch, atoms):
            offset = torch.linspace(0, (batch - 1) * atoms, batch)
            print(offset.sum())
            return offset.expand(batch, atoms).to(actions)
    """)),
    Shape("TW205", "look-alike: a parameter reshaped and moved (it may be on the device already)", d("""
        import torch
        def project(offset, actions, batch, atoms):
            return offset.expand(batch, atoms).to(actions)
    """)),
]

# ------------------------------------------------------------- TW104 a helper module star-imported, two calls deep
# A face-verification training script that star-imports its test module and, after model.eval(),
# calls its verification function, which hands the model to a feature-extraction function.
_VERIFY = d("""
    import numpy as np
    import torch
    def embed_all(net, images, batch_size=16):
        feats = []
        for start in range(0, len(images), batch_size):
            batch = torch.from_numpy(np.stack(images[start:start + batch_size]))
            feats.append(net(batch).numpy())
        return np.concatenate(feats)
    def verify_pairs(net, images, pairs, batch_size):
        feats = embed_all(net, images, batch_size=batch_size)
        return float(np.mean([feats[a] @ feats[b] > 0.5 for a, b in pairs]))
""")
_TRAIN_STAR = d("""
    import torch
    from verify import *
    model = torch.nn.Linear(8, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        model.train()
        for x, y in torch.load("batches.pt"):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        model.eval()
        acc = verify_pairs(model, torch.load("faces.pt"), [(0, 1)], 16)
""")
PROJECTS += [
    ProjectShape("TW104", "model.eval(), then a star-imported helper that hands the model to a feature extractor", {
        "verify.py": _VERIFY, "train.py": _TRAIN_STAR,
    }, (("train.py", 12),)),
    ProjectShape("TW104", "look-alike: the feature extractor runs under no_grad", {
        "verify.py": _VERIFY.replace("def embed_all(", "@torch.no_grad()\ndef embed_all("), "train.py": _TRAIN_STAR,
    }),
    ProjectShape("TW104", "look-alike: a local function of the same name shadows the star import", {
        "verify.py": _VERIFY,
        "train.py": _TRAIN_STAR.replace("from verify import *\n", "from verify import *\ndef verify_pairs(net, images, pairs, n):\n    return 1.0\n"),
    }),
]
