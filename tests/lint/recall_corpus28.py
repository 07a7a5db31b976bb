"""The recall corpus, round 13 part D: classes the sets 15 and 16 (tuning sets of round 13) showed
for TW201, TW403, TW301, TW104 and TW402 - reported where the advice does not apply, or missed -
each written in our own words and reduced to its shape, with look-alikes. ``recall_corpus.py``
adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW201 only where the code around it trains
# A volumetric segmentation project: its trainer wraps the model in DataParallel and trains; its
# prediction script restores the trained weights, wraps the model in DataParallel when several GPUs
# are there and runs a predictor over the test loaders - no backward, no optimizer anywhere in it.
_SEG3D_TRAINER = d("""
    import torch
    import torch.nn as nn
    class UNetTrainer:
        def __init__(self, model, optimizer, loaders):
            if torch.cuda.device_count() > 1:
                model = nn.DataParallel(model)
            self.model, self.optimizer, self.loaders = model, optimizer, loaders
        def fit(self):
            for x, y in self.loaders["train"]:
                loss = self.model(x, y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
""")
_SEG3D_PREDICT = d("""
    import torch
    import torch.nn as nn
    from unet3d.model import get_model
    from unet3d.utils import load_checkpoint
    def main():
        config = load_config()
        model = get_model(config["model"])
        load_checkpoint(config["model_path"], model)
        if torch.cuda.device_count() > 1:
            model = nn.DataParallel(model)
        model = model.to(config["device"])
        predictor = make_predictor(model, config)
        for test_loader in get_test_loaders(config):
            predictor(test_loader)
    if __name__ == "__main__":
        main()
""")
_SEG3D_MODEL = "import torch.nn as nn\ndef get_model(cfg):\n    return nn.Conv3d(1, 1, 3)\n"
PROJECTS += [
    ProjectShape("TW201", "look-alike: a prediction script wraps the restored model in DataParallel (trains nothing)", {
        "unet3d/trainer.py": _SEG3D_TRAINER, "predict.py": _SEG3D_PREDICT, "unet3d/model.py": _SEG3D_MODEL,
        "train.py": "from unet3d.trainer import UNetTrainer\nUNetTrainer(model, optimizer, loaders).fit()\n"},
        (("unet3d/trainer.py", 6),)),
]
# A model builder in a utils module: the training script calls it and backpropagates; the same
# builder called only by an inference script of another project is left alone.
_BUILDER = d("""
    import torch.nn as nn
    from nets import ResNet
    def build_network(cfg):
        net = ResNet(cfg.depth)
        if cfg.multi_gpu:
            net = nn.DataParallel(net)
        return net.cuda()
""")
PROJECTS += [
    ProjectShape("TW201", "a utils module's model builder wraps in DataParallel; the training script calls it and trains", {
        "utils.py": _BUILDER, "nets.py": "import torch.nn as nn\nclass ResNet(nn.Module):\n    pass\n",
        "train.py": d("""
            from utils import build_network
            net = build_network(cfg)
            for x, y in loader:
                loss = criterion(net(x), y)
                loss.backward()
                optimizer.step()
        """)}, (("utils.py", 6),)),
    ProjectShape("TW201", "look-alike: the builder is only called by an inference script", {
        "utils.py": _BUILDER, "nets.py": "import torch.nn as nn\nclass ResNet(nn.Module):\n    pass\n",
        "demo.py": d("""
            import torch
            from utils import build_network
            net = build_network(cfg)
            net.load_state_dict(torch.load(cfg.weights, map_location="cpu"))
            print(net(image).argmax(1))
        """)}),
]
# A pose-estimation project's checkpoint converter copies the training script's set-up - the
# DataParallel model and an RMSprop optimizer whose state it loads - and only re-saves the weights.
PROJECTS += [
    ProjectShape("TW201", "look-alike: a checkpoint converter builds the optimizer only to load its state", {
        "train.py": _SEG3D_TRAINER, "convert.py": d("""
            import torch
            def main(args):
                model = torch.nn.DataParallel(build(args)).to(args.device)
                optimizer = torch.optim.RMSprop(model.parameters(), lr=args.lr)
                checkpoint = torch.load(args.resume, map_location="cpu")
                model.load_state_dict(checkpoint["state_dict"])
                optimizer.load_state_dict(checkpoint["optimizer"])
                torch.save({"state_dict": model.module.state_dict()}, args.out)
            if __name__ == "__main__":
                main(parse())
        """)}, (("train.py", 6),)),
]
# A language model and a segmentation model trained through the project's own subclasses of
# DataParallel (a balanced first GPU; a scatter the user controls), found through a chain of classes.
_DP_UTILS = d("""
    from torch.nn.parallel import DataParallel
    import torch.nn as nn
    class DictGatherDataParallel(nn.DataParallel):
        def gather(self, outputs, output_device):
            return outputs
    class UserScatteredDataParallel(DictGatherDataParallel):
        def scatter(self, inputs, kwargs, device_ids):
            return inputs, kwargs
    class BalancedDataParallel(DataParallel):
        def __init__(self, gpu0_bsz, *args, **kwargs):
            self.gpu0_bsz = gpu0_bsz
            super().__init__(*args, **kwargs)
""")
PROJECTS += [
    ProjectShape("TW201", "training through project subclasses of nn.DataParallel (also through a chain of classes)", {
        "lib/parallel.py": _DP_UTILS, "train.py": d("""
            import torch
            from lib.parallel import UserScatteredDataParallel, BalancedDataParallel
            def main(args, model, optimizer, loader):
                if args.balanced:
                    para = BalancedDataParallel(args.gpu0_bsz, model, dim=1).cuda()
                else:
                    para = UserScatteredDataParallel(model, device_ids=args.gpus)
                for batch in loader:
                    loss = para(batch).mean()
                    loss.backward()
                    optimizer.step()
        """)}, (("train.py", 5), ("train.py", 7))),
    ProjectShape("TW201", "look-alike: isinstance tests against the project's subclass, and a class of the same name from a library", {
        "lib/parallel.py": _DP_UTILS, "train.py": d("""
            import torch
            from encoding.parallel import DataParallelModel as BalancedDataParallel
            from lib.parallel import UserScatteredDataParallel
            def unwrap(model):
                return model.module if isinstance(model, UserScatteredDataParallel) else model
            def main(args, model, optimizer, loader):
                para = BalancedDataParallel(model)
                for batch in loader:
                    loss = para(batch).mean()
                    loss.backward()
                    optimizer.step()
        """)}),
]
# A GAN that samples through the functional data_parallel under no_grad (sample sheets, the
# inception metrics' samples), beside the DataParallel its training uses.
QUIET += [
    Shape("TW201", "the functional data_parallel draws samples under no_grad in a training file", d("""
        import torch
        import torch.nn as nn
        def sample_sheet(G, z, y, parallel):
            with torch.no_grad():
                if parallel:
                    out = nn.parallel.data_parallel(G, (z, G.shared(y)))
                else:
                    out = G(z, G.shared(y))
            return out, y
        def train_step(G, D, opt, x):
            loss = D(G(x)).mean()
            loss.backward()
            opt.step()
    """)),
]
FIND += [
    Shape("TW201", "look-alike: the functional data_parallel runs the training forward", d("""
        import torch
        import torch.nn as nn
        def train_step(G, D, opt, z, y):
            fake = nn.parallel.data_parallel(G, (z, y))
            loss = D(fake).mean()
            loss.backward()
            opt.step()
    """), 4),
]

# ------------------------------------------------------------- TW403 code that no CPU run reaches
# A contrastive-distillation memory: its alias sampler has a `cuda()` method of its own that moves
# its tables (`self.prob = self.prob.cuda()`); the memory calls `self.multinomial.cuda()`
# unconditionally while the training scripts offer a CPU path. The call is the pitfall; the
# method's body only runs when asked to.
_MEMORY = d("""
    import torch
    from torch import nn
    class NCEMemory(nn.Module):
        def __init__(self, size, K):
            super().__init__()
            self.multinomial = AliasSampler(torch.ones(size))
            self.multinomial.cuda()
            self.K = K
    class AliasSampler(object):
        def __init__(self, probs):
            self.prob = probs / probs.sum()
            self.alias = torch.zeros(len(probs), dtype=torch.long)
        def cuda(self):
            self.prob = self.prob.cuda()
            self.alias = self.alias.cuda()
        def draw(self, n):
            return torch.multinomial(self.prob, n, replacement=True)
""")
_DISTILL = d("""
    import torch
    from memory import NCEMemory
    device = "cuda" if torch.cuda.is_available() else "cpu"
    memory = NCEMemory(50000, 4096)
    model = build().to(device)
""")
PROJECTS += [
    ProjectShape("TW403", "a class's own cuda() method moves its tables; the unconditional call of it is reported", {
        "memory.py": _MEMORY, "train.py": _DISTILL}, (("memory.py", 7),)),
    ProjectShape("TW403", "look-alike: the same move in an ordinary method of the class", {
        "memory.py": _MEMORY.replace("def cuda(self):", "def prepare(self):").replace(
            "self.multinomial.cuda()", "self.multinomial.prepare()"), "train.py": _DISTILL},
        (("memory.py", 14), ("memory.py", 15))),
]
# A vocoder project keeps an old version of its model class in a module nobody imports, beside
# the version every script imports; the old one's generate() hard-codes `.cuda()`.
_OLD_VOCODER = d("""
    import torch
    import torch.nn as nn
    class WaveRNN(nn.Module):
        def generate(self, seq_len):
            h = torch.zeros(1, 896).cuda()
            out = torch.LongTensor([0]).cuda()
            return h, out
""")
_NEW_VOCODER = d("""
    import torch
    import torch.nn as nn
    class WaveRNN(nn.Module):
        def generate(self, mels):
            return mels
""")
_VOC_TRAIN = d("""
    import torch
    from vocoder.models.fatchord import WaveRNN
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = WaveRNN().to(device)
""")
PROJECTS += [
    ProjectShape("TW403", "an old version of the model class in a module nobody imports (superseded: never runs)", {
        "vocoder/models/deepmind.py": _OLD_VOCODER, "vocoder/models/fatchord.py": _NEW_VOCODER, "train.py": _VOC_TRAIN}),
    ProjectShape("TW403", "look-alike: a module nobody imports whose class is its own (a library entry point)" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "vocoder/models/deepmind.py": _OLD_VOCODER.replace("class WaveRNN", "class SampleRNN"),
        "vocoder/models/fatchord.py": _NEW_VOCODER, "train.py": _VOC_TRAIN},
        ()),
]

# ------------------------------------------------------------- TW301 draws in DataLoader workers
# A self-supervised project seeds torch and NumPy in a helper of its utils module; its augmentations
# draw from Python's `random` in `__call__` and run in the loader's workers (num_workers from an
# option that defaults to 10). Each worker's `random` is seeded from torch's seeded generator.
_SSL_UTILS = d("""
    import random
    import numpy as np
    import torch
    class GaussianBlur(object):
        def __init__(self, p=0.5):
            self.prob = p
        def __call__(self, img):
            if random.random() > self.prob:
                return img
            return img.blur(random.uniform(0.1, 2.0))
    def fix_random_seeds(seed=31):
        torch.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
        np.random.seed(seed)
""")
_SSL_MAIN = d("""
    import argparse
    import torch
    import utils
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_workers", default=10, type=int)
    args = parser.parse_args()
    utils.fix_random_seeds(0)
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=args.num_workers)
""")
PROJECTS += [
    ProjectShape("TW301", "Python's random drawn in an augmentation's __call__, run in seeded loader workers", {
        "utils.py": _SSL_UTILS, "main.py": _SSL_MAIN}),
    ProjectShape("TW301", "look-alike: the loaders run in the main process (num_workers=0)", {
        "utils.py": _SSL_UTILS, "main.py": _SSL_MAIN.replace("num_workers=args.num_workers", "num_workers=0")},
        (("utils.py", 8),)),
    ProjectShape("TW301", "look-alike: the workers option defaults to 0", {
        "utils.py": _SSL_UTILS, "main.py": _SSL_MAIN.replace("default=10", "default=0")}, (("utils.py", 8),)),
]
FIND += [
    Shape("TW301", "look-alike: the draw is in an ordinary method (the training step), not in worker code", d("""
        import random
        import numpy as np
        import torch
        torch.manual_seed(0)
        np.random.seed(0)
        class Trainer:
            def step(self, batch):
                if random.random() < 0.5:
                    batch = batch.flip(-1)
                return batch
        loader = torch.utils.data.DataLoader(data, num_workers=4)
    """), 8),
]

# ------------------------------------------------------------- TW104 a course's test(), a shape probe
# A course's scripts evaluate a global model in `def test():` after `model.eval()`, looping over the
# global test loader without no_grad (some with the no-op `Variable(..., volatile=True)`).
FIND += [
    Shape("TW104", "a parameterless test() puts the global model in eval mode and loops over the test loader", d("""
        import torch
        import torch.nn.functional as F
        from torch.autograd import Variable
        model = Net()
        def test():
            model.eval()
            test_loss = 0
            for data, target in test_loader:
                data, target = Variable(data, volatile=True), Variable(target)
                output = model(data)
                test_loss += F.nll_loss(output, target).item()
            print(test_loss / len(test_loader.dataset))
        for epoch in range(1, 10):
            train(epoch)
            test()
    """), 10),
]
QUIET += [
    Shape("TW104", "look-alike: a parameterless test() that asserts (a unit test)", d("""
        import torch
        model = Net()
        def test():
            model.eval()
            for x, y in batches:
                assert model(x).shape == y.shape
    """)),
]
# A distillation script puts teacher and student in eval mode and runs both once on two random images
# to read the feature shapes its connector layers need, then trains (in helpers of other modules).
QUIET += [
    Shape("TW104", "a one-off probe of feature shapes on random inputs in the training script's main()", d("""
        import torch
        def main(opt):
            model_t = load_teacher(opt.path_t)
            model_s = build_student(opt)
            data = torch.randn(2, 3, 32, 32)
            model_t.eval()
            model_s.eval()
            feat_t, _ = model_t(data, is_feat=True)
            feat_s, _ = model_s(data, is_feat=True)
            connector = Regressor(feat_s[-1].shape[1], feat_t[-1].shape[1])
            for epoch in range(opt.epochs):
                train(epoch, loader, model_s, model_t, connector)
    """)),
]
FIND += [
    Shape("TW104", "look-alike: the single run after eval() is on a real batch from the loader", d("""
        import torch
        def main(opt):
            model = load_model(opt.ckpt)
            data, _ = next(iter(val_loader))
            model.eval()
            out = model(data)
            print((out.argmax(1) == 0).float().mean())
    """), 6),
]

# ------------------------------------------------------------- TW402 the script reloads what its training loop wrote
# A language model's training script: module-level epoch loop calling `train()`, which saves the best
# model with `with open(os.path.join(args.work_dir, "model.pt"), "wb") as f: torch.save(model, f)`;
# after the loop it reopens that file the same way and loads it for the test run.
_LM_TRAIN = d("""
    import os
    import torch
    device = torch.device("cuda" if args.cuda else "cpu")
    model = MemTransformerLM().to(device)
    def train():
        for batch in tr_iter:
            loss = model(*batch).mean()
            loss.backward()
            optimizer.step()
        with open(os.path.join(args.work_dir, "model.pt"), "wb") as f:
            torch.save(model, f)
    for epoch in range(args.epochs):
        train()
    with open(os.path.join(args.work_dir, "model.pt"), "rb") as f:
        model = torch.load(f)
    test_loss = evaluate(te_iter)
""")
PROJECTS += [
    ProjectShape("TW402", "a module-level reload of the model file its training function wrote, opened with open()", {
        "train.py": _LM_TRAIN}),
    ProjectShape("TW402", "look-alike: an evaluation script opens and loads the model file the training writes", {
        "train.py": _LM_TRAIN, "eval.py": d("""
            import os
            import torch
            device = torch.device("cuda" if args.cuda else "cpu")
            with open(os.path.join(args.work_dir, "model.pt"), "rb") as f:
                model = torch.load(f)
            model = model.to(device)
        """)}, (("eval.py", 5),)),
]

# ------------------------------------------------------------- TW208 a memset written with fill_(0)
# TRPO's critic update: the loss closure handed to scipy's L-BFGS zeroes the gradients by hand with
# `param.grad.data.fill_(0)` on every evaluation before its backward.
FIND += [
    Shape("TW208", "gradients zeroed with p.grad.data.fill_(0) in an L-BFGS loss closure", d("""
        import scipy.optimize
        def update_critic(value_net, states, returns):
            def get_value_loss(flat_params):
                set_flat_params_to(value_net, flat_params)
                for param in value_net.parameters():
                    if param.grad is not None:
                        param.grad.data.fill_(0)
                loss = (value_net(states) - returns).pow(2).mean()
                loss.backward()
                return loss.item(), get_flat_grad_from(value_net.parameters())
            return scipy.optimize.fmin_l_bfgs_b(get_value_loss, get_flat_params_from(value_net), maxiter=25)
    """), 7),
]
QUIET += [
    Shape("TW208", "look-alike: the gradient filled with a non-zero value (a seed gradient)", d("""
        def seed_grad(params):
            for p in params:
                p.grad.data.fill_(1.0)
    """)),
    Shape("TW208", "look-alike: the gradient of an input the function perturbs, filled with 0", d("""
        def fgsm(model, x, y, eps):
            x.requires_grad_()
            for _ in range(10):
                loss = model(x, y)
                loss.backward()
                x = x + eps * x.grad.sign()
                x.grad.data.fill_(0)
            return x
    """)),
]

# ------------------------------------------------------------- TW403 a project with no CPU path anywhere
# A CIFAR ResNet project: its one training script moves the model, the loss and every batch with a
# bare `.cuda()` and resumes with a plain `torch.load`; its model module and torch.hub entry have no
# device code. Nothing anywhere offers a CPU run: the script is written for a GPU.
_CIFAR_TRAIN = d("""
    import argparse
    import torch
    import torch.nn as nn
    import resnet
    def main():
        args = argparse.ArgumentParser().parse_args()
        model = torch.nn.DataParallel(resnet.__dict__[args.arch]())
        model.cuda()
        criterion = nn.CrossEntropyLoss(weight=class_weights).cuda()
        optimizer = torch.optim.SGD(model.parameters(), 0.1)
        for input, target in train_loader:
            output = model(input.cuda())
            loss = criterion(output, target.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")
_CIFAR_MODEL = "import torch.nn as nn\nclass ResNet(nn.Module):\n    pass\ndef resnet20():\n    return ResNet()\n"
PROJECTS += [
    ProjectShape("TW403", "a training script hard-codes CUDA in a project with no CPU path anywhere", {
        "trainer.py": _CIFAR_TRAIN, "resnet.py": _CIFAR_MODEL, "hubconf.py": "from resnet import resnet20\n"}),
    ProjectShape("TW403", "look-alike: a sibling training script falls back to the CPU" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "trainer.py": _CIFAR_TRAIN, "resnet.py": _CIFAR_MODEL, "finetune.py": d("""
            import torch
            import resnet
            device = "cuda" if torch.cuda.is_available() else "cpu"
            model = resnet.resnet20().to(device)
            optimizer = torch.optim.SGD(model.parameters(), 0.01)
            for x, y in loader:
                model(x.to(device), y.to(device)).backward()
                optimizer.step()
        """)}, ()),
    ProjectShape("TW403", "look-alike: another training script takes a --device option (cpu is one answer)" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "trainer.py": _CIFAR_TRAIN, "resnet.py": _CIFAR_MODEL, "main.py": d("""
            import argparse
            import torch
            parser = argparse.ArgumentParser()
            parser.add_argument("--device", default="cuda:0")
            args = parser.parse_args()
            model = build().to(args.device)
            optimizer = torch.optim.Adam(model.parameters())
            for x, y in loader:
                model(x.to(args.device), y.to(args.device)).backward()
                optimizer.step()
        """)}, ()),
]

# ------------------------------------------------------------- TW402 torch through a star import; a class picked by name
# A traffic-forecasting project: its test script imports torch only through `from model import *`,
# offers `--device`, and restores the checkpoint the training script saves from the GPU.
_GWN_MODEL = "import torch\nimport torch.nn as nn\nimport numpy as np\nclass gwnet(nn.Module):\n    pass\n"
_GWN_TRAIN = d("""
    import torch
    from model import gwnet
    device = torch.device(args.device)
    model = gwnet().to(device)
    for x, y in loader:
        model(x.to(device)).sum().backward()
    torch.save(model.state_dict(), args.save + "_best.pth")
""")
PROJECTS += [
    ProjectShape("TW402", "an evaluation script gets torch only through `from model import *` and restores the checkpoint", {
        "model.py": _GWN_MODEL, "train.py": _GWN_TRAIN, "test.py": d("""
            import argparse
            from model import *
            parser = argparse.ArgumentParser()
            parser.add_argument("--device", type=str, default="cuda:0")
            parser.add_argument("--checkpoint", type=str)
            args = parser.parse_args()
            model = gwnet().to(args.device)
            model.load_state_dict(torch.load(args.checkpoint))
            model.eval()
        """)}, (("test.py", 8),)),
    ProjectShape("TW402", "look-alike: the star import hands on NumPy's load, not torch's", {
        "model.py": _GWN_MODEL, "train.py": _GWN_TRAIN, "test.py": d("""
            from model import *
            stats = np.load(args.stats)
            model = gwnet().to(args.device)
        """)}),
]
# An audio-tagging project's fine-tuning template: the model class is chosen with `Model =
# eval(model_type)` from the command line (never named in code), and its `load_from_pretrain()`
# restores the checkpoint the training script saves from the GPU; the template offers `--cuda`.
_TAG_MAIN = d("""
    import torch
    from models import *
    def train(args):
        device = "cuda" if args.cuda and torch.cuda.is_available() else "cpu"
        Model = eval(args.model_type)
        model = Model(args.classes).to(device)
        for x, y in loader:
            model(x.to(device)).sum().backward()
        torch.save({"model": model.state_dict()}, args.out)
""")
_TAG_TEMPLATE = d("""
    import torch
    import torch.nn as nn
    from models import Cnn14
    class Transfer_Cnn14(nn.Module):
        def __init__(self, classes):
            super().__init__()
            self.base = Cnn14(527)
        def load_from_pretrain(self, path):
            checkpoint = torch.load(path)
            self.base.load_state_dict(checkpoint["model"])
    def train(args):
        device = "cuda" if args.cuda and torch.cuda.is_available() else "cpu"
        Model = eval(args.model_type)
        model = Model(args.classes)
        model.load_from_pretrain(args.pretrained)
        model.to(device)
    if __name__ == "__main__":
        train(parse_args())
""")
PROJECTS += [
    ProjectShape("TW402", "a class picked with eval(model_type) restores the GPU-trained checkpoint in its load_from_pretrain()", {
        "models.py": "import torch.nn as nn\nclass Cnn14(nn.Module):\n    pass\n", "main.py": _TAG_MAIN,
        "finetune_template.py": _TAG_TEMPLATE}, (("finetune_template.py", 9),)),
    ProjectShape("TW402", "look-alike: the same class with no eval() lookup anywhere is dead code", {
        "models.py": "import torch.nn as nn\nclass Cnn14(nn.Module):\n    pass\n",
        "main.py": _TAG_MAIN.replace("Model = eval(args.model_type)", "Model = Cnn14"),
        "finetune_template.py": _TAG_TEMPLATE.replace("Model = eval(args.model_type)", "Model = Cnn14")}),
]

# ------------------------------------------------------------- TW104 an inference API: eval mode set in load(), the model run elsewhere
# A voice-cloning toolbox: the synthesizer class loads its Tacotron in `load()` and puts it in eval
# mode; `synthesize_spectrograms()` runs `self._model.generate(...)` with autograd on. The speaker
# encoder's inference module keeps a global model that `load_model()` puts in eval mode;
# `embed_frames_batch()` runs it and hands back `.detach().cpu().numpy()`.
_TACOTRON = d("""
    import torch.nn as nn
    class Tacotron(nn.Module):
        def generate(self, chars, embeds):
            return self.decoder(self.encoder(chars), embeds)
""")
_SYNTH = d("""
    import torch
    from synthesizer.models.tacotron import Tacotron
    class Synthesizer:
        def __init__(self, path):
            self.path = path
            self._model = None
        def load(self):
            self._model = Tacotron()
            self._model.load_state_dict(torch.load(self.path, map_location="cpu"))
            self._model.eval()
        def synthesize_spectrograms(self, texts, embeds):
            if self._model is None:
                self.load()
            chars = torch.tensor(texts)
            _, mels, alignments = self._model.generate(chars, torch.tensor(embeds))
            return mels.detach().cpu().numpy()
""")
PROJECTS += [
    ProjectShape("TW104", "a synthesizer class puts its model in eval mode in load(); another method runs its generate()", {
        "synthesizer/models/tacotron.py": _TACOTRON, "synthesizer/inference.py": _SYNTH}, (("synthesizer/inference.py", 15),)),
    ProjectShape("TW104", "look-alike: the model class's generate() runs under no_grad itself", {
        "synthesizer/models/tacotron.py": _TACOTRON.replace(
            "        return self.decoder(self.encoder(chars), embeds)",
            "        with torch.no_grad():\n            return self.decoder(self.encoder(chars), embeds)").replace(
            "import torch.nn as nn", "import torch\nimport torch.nn as nn"),
        "synthesizer/inference.py": _SYNTH}),
    ProjectShape("TW104", "look-alike: the class also trains the model (a train() method switches it back)", {
        "synthesizer/models/tacotron.py": _TACOTRON, "synthesizer/inference.py": _SYNTH + d("""
            def finetune(self, batches):
                self._model.train()
                return [self._model.generate(*b) for b in batches]
        """).replace("def finetune", "    def finetune").replace("\n    ", "\n        ").replace("\n        def", "\n    def")}),
]
FIND += [
    Shape("TW104", "an inference module's global model put in eval mode by load_model(), run by embed_frames_batch()", d("""
        import torch
        from encoder.model import SpeakerEncoder
        _model = None
        _device = None
        def load_model(weights_fpath, device=None):
            global _model, _device
            _device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            _model = SpeakerEncoder(_device)
            _model.load_state_dict(torch.load(weights_fpath, _device)["model_state"])
            _model.eval()
        def embed_frames_batch(frames_batch):
            frames = torch.from_numpy(frames_batch).to(_device)
            return _model.forward(frames).detach().cpu().numpy()
    """), 13, "inference.py"),
]
QUIET += [
    Shape("TW104", "look-alike: the global model's runner wraps the pass in no_grad", d("""
        import torch
        _model = None
        def load_model(path):
            global _model
            _model = build(path)
            _model.eval()
        def embed(frames):
            with torch.no_grad():
                return _model(torch.from_numpy(frames)).cpu().numpy()
    """), path="inference.py"),
    Shape("TW104", "look-alike: a global model put in eval mode and trained elsewhere in the file", d("""
        import torch
        _model = None
        def load_model(path):
            global _model
            _model = build(path)
            _model.eval()
        def adapt(frames, opt):
            loss = _model(frames).pow(2).mean()
            loss.backward()
            opt.step()
    """), path="inference.py"),
]

# ------------------------------------------------------------- TW201 the model's own forward path
# A sequence-to-sequence library: the base model's `encode()`/`decode()` split the batch over the
# GPUs with the functional `data_parallel` when given device ids; its trainer lives elsewhere.
PROJECTS += [
    ProjectShape("TW201", "a model class's encode() runs the functional data_parallel (the trainer is in another module)", {
        "models/base.py": d("""
            import torch.nn as nn
            from torch.nn.parallel import data_parallel
            class Seq2Seq(nn.Module):
                def encode(self, inputs, hidden=None, device_ids=None):
                    if isinstance(device_ids, tuple):
                        return data_parallel(self.encoder, (inputs, hidden), device_ids=device_ids)
                    return self.encoder(inputs, hidden)
                def forward(self, src, tgt, device_ids=None):
                    return self.decoder(self.encode(src, device_ids=device_ids), tgt)
        """),
        "models/__init__.py": "from .base import Seq2Seq\n",
        "tools/trainer.py": d("""
            class Seq2SeqTrainer:
                def iterate(self, src, tgt):
                    loss = self.model(src, tgt, device_ids=self.device_ids).mean()
                    loss.backward()
                    self.optimizer.step()
        """)}, (("models/base.py", 6),)),
]

# ------------------------------------------------------------- TW104 autoregressive decoding for inference
# A course's char-RNN samples text from its decoder, and its seq2seq lessons translate a string: the
# loop samples each output on the host (`output.data...`, `torch.multinomial`, `chr(...)`) and feeds
# the choice back as the next input, returning the text; no grad switch anywhere.
FIND += [
    Shape("TW104", "a char-RNN's generate() primes and samples its decoder step by step, returning the text", d("""
        import torch
        import torch.nn as nn
        class CharRNN(nn.Module):
            def forward(self, x, hidden):
                return self.out(x), hidden
        def generate(decoder, prime_str="A", predict_len=100, temperature=0.8):
            hidden = decoder.init_hidden()
            prime_input = str2tensor(prime_str)
            predicted = prime_str
            for p in range(len(prime_str) - 1):
                _, hidden = decoder(prime_input[p], hidden)
            inp = prime_input[-1]
            for p in range(predict_len):
                output, hidden = decoder(inp, hidden)
                output_dist = output.data.view(-1).div(temperature).exp()
                top_i = torch.multinomial(output_dist, 1)[0]
                predicted += chr(top_i)
                inp = str2tensor(chr(top_i))
            return predicted
        decoder = CharRNN()
        optimizer = torch.optim.Adam(decoder.parameters(), lr=0.001)
        print(generate(decoder, "Wh", 100))
    """), 11),
    Shape("TW104", "a seq2seq translate() runs the encoder once, then decodes greedily until EOS", d("""
        import torch
        import seq2seq_models as sm
        def translate(enc_input, predict_len=100):
            encoder_outputs, encoder_hidden = encoder(str2tensor(enc_input), encoder.init_hidden())
            hidden = encoder_hidden
            predicted = ""
            dec_input = str2tensor(SOS)
            for c in range(predict_len):
                output, hidden, attention = decoder(dec_input, hidden, encoder_outputs)
                top_i = output.data.topk(1)[1].item()
                if top_i == EOS:
                    break
                predicted += chr(top_i)
                dec_input = str2tensor(chr(top_i))
            return enc_input, predicted
        encoder = sm.EncoderRNN(128, 100)
        decoder = sm.AttnDecoderRNN(100, 128)
        params = list(encoder.parameters()) + list(decoder.parameters())
        optimizer = torch.optim.Adam(params, lr=0.001)
        print(translate("hello"))
    """), 4),
]
QUIET += [
    Shape("TW104", "look-alike: the decoding loop returns the stacked outputs (a training helper's loss input)", d("""
        import torch
        def greedy_decode(decoder, hidden, steps):
            outputs = []
            inp = start_token()
            for t in range(steps):
                output, hidden = decoder(inp, hidden)
                outputs.append(output)
                inp = output.data.argmax(-1)
            outputs = torch.stack(outputs)
            return outputs
    """)),
    Shape("TW104", "look-alike: the sampling loop runs under no_grad", d("""
        import torch
        def generate(decoder, prime, n):
            hidden = decoder.init_hidden()
            text = prime
            inp = encode(prime[-1])
            with torch.no_grad():
                for _ in range(n):
                    out, hidden = decoder(inp, hidden)
                    ch = chr(out.data.argmax().item())
                    text += ch
                    inp = encode(ch)
            return text
    """)),
]

# ------------------------------------------------------------- TW104 a rollout that trains nothing
# An imitation-learning project's expert-trajectory script runs the trained policy for the mean
# action, made host data on the spot (`policy_net(s)[0][0].detach().numpy()`), steps the
# environment and stores the pair; nothing in the file trains.
FIND += [
    Shape("TW104", "an expert-trajectory script picks each action with the policy, detached to NumPy on the spot", d("""
        import pickle
        import numpy as np
        import torch
        policy_net, _, running_state = pickle.load(open(args.model_path, "rb"))
        expert_traj = []
        def main_loop():
            for i_episode in range(args.episodes):
                state = env.reset()
                for t in range(10000):
                    state_var = torch.tensor(state).unsqueeze(0)
                    action = policy_net(state_var)[0][0].detach().numpy()
                    action = action.astype(np.float64)
                    next_state, reward, done, _ = env.step(action)
                    expert_traj.append(np.hstack([state, action]))
                    if done:
                        break
                    state = next_state
        main_loop()
    """), 11),
]
QUIET += [
    Shape("TW104", "look-alike: the rollout keeps the log-probabilities with their graph for a later update", d("""
        import torch
        def rollout(policy_net, env, steps):
            log_probs, rewards = [], []
            state = env.reset()
            for t in range(steps):
                dist = policy_net(torch.tensor(state).unsqueeze(0))
                action = dist.sample()
                log_probs.append(dist.log_prob(action))
                state, reward, done, _ = env.step(action.item())
                rewards.append(reward)
            return log_probs, rewards
    """)),
    Shape("TW104", "look-alike: the expert actions are picked under no_grad", d("""
        import numpy as np
        import torch
        def main_loop(policy_net, env):
            state = env.reset()
            for t in range(10000):
                with torch.no_grad():
                    action = policy_net(torch.tensor(state).unsqueeze(0))[0][0].numpy()
                state, reward, done, _ = env.step(action)
    """)),
]

# ------------------------------------------------------------- TW213 images fed one at a time in their own sizes
# An image-retrieval evaluation turns cuDNN benchmarking on, shrinks every image with an
# aspect-preserving `thumbnail()` in its dataset and loads one image per batch: each image has a
# shape of its own, and each new shape is benchmarked again.
_RETRIEVAL = d("""
    import torch
    import torch.backends.cudnn as cudnn
    from PIL import Image
    class RetrievalDataset(torch.utils.data.Dataset):
        def __init__(self, paths, transform, imsize):
            self.paths, self.transform, self.imsize = paths, transform, imsize
        def __getitem__(self, index):
            img = Image.open(self.paths[index]).convert("RGB")
            img.thumbnail((self.imsize, self.imsize), Image.LANCZOS)
            return self.transform(img), index
    if __name__ == "__main__":
        cudnn.benchmark = True
        dataset = RetrievalDataset(paths, to_tensor, 224)
        loader = torch.utils.data.DataLoader(dataset, batch_size=1, num_workers=4)
""")
FIND += [Shape("TW213", "per-image shapes: thumbnail() in __getitem__, one image per batch, benchmark on", _RETRIEVAL, 12)]
QUIET += [
    Shape("TW213", "look-alike: the transform resizes every image to a fixed size", _RETRIEVAL.replace(
        "return self.transform(img), index", "return self.transform(img.resize((224, 224))), index")),
    Shape("TW213", "look-alike: the loader batches several images (they must share a shape)", _RETRIEVAL.replace(
        "batch_size=1", "batch_size=32")),
]

# ------------------------------------------------------------- TW104 two passes in one evaluation function
# A name classifier's `test(name=None)` predicts one name and returns when given one; otherwise it
# runs the test loop: two evaluation passes, each with autograd on.
FIND += [
    Shape("TW104", "the pass after a branch that predicts one item and returns", d("""
        def test(name=None):
            if name:
                output = classifier(make_variables([name]))
                print(output.data.max(1)[1])
                return
            correct = 0
            for names, countries in test_loader:
                output = classifier(make_variables(names))
                correct += output.data.max(1)[1].eq(countries).sum()
            print(correct)
        classifier = RNNClassifier(57, 100, 18)
        optimizer = torch.optim.Adam(classifier.parameters())
    """), 8),
]
QUIET += [
    Shape("TW104", "look-alike: the branch returns but the loop after it runs under no_grad", d("""
        import torch
        def test(name=None):
            if name:
                with torch.no_grad():
                    print(classifier(make_variables([name])))
                return
            with torch.no_grad():
                for names, countries in test_loader:
                    output = classifier(make_variables(names))
        classifier = RNNClassifier(57, 100, 18)
        optimizer = torch.optim.Adam(classifier.parameters())
    """)),
]
# The vocoder's inference module: a global model built, moved (`_model = _model.cuda()`) and put in
# eval mode by load_model(); its class's generate() decodes under no_grad itself.
PROJECTS += [
    ProjectShape("TW104", "look-alike: a global model moved after it is built; its class's generate() runs under no_grad", {
        "vocoder/models/fatchord.py": d("""
            import torch
            import torch.nn as nn
            class WaveRNN(nn.Module):
                def generate(self, mels, batched):
                    self.eval()
                    with torch.no_grad():
                        return self.fc(mels)
        """),
        "vocoder/inference.py": d("""
            import torch
            from vocoder.models.fatchord import WaveRNN
            _model = None
            def load_model(path):
                global _model
                _model = WaveRNN()
                if torch.cuda.is_available():
                    _model = _model.cuda()
                _model.load_state_dict(torch.load(path, map_location="cpu"))
                _model.eval()
            def infer_waveform(mel, batched=True):
                return _model.generate(torch.from_numpy(mel[None, ...]), batched)
        """)}),
]
