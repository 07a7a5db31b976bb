"""The recall corpus, round 8 part B: classes the seventh and eighth sets (tuning sets since round
8) missed or falsely reported in TW104, TW203/TW202/TW204, TW402 and TW301 - each written in our own
words and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds
these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW104 frozen networks
# A pretrained network that only feeds the one being trained (a distillation teacher, a captioning
# model's image encoder): put in eval mode, in no optimizer, requires_grad left on, and run on the
# batch in every training step without no_grad - each step records its whole graph for nothing.
_TEACHER = """
    import torch
    import torch.nn.functional as F
    from nets import Big, Small
    teacher = Big()
    teacher.load_state_dict(torch.load("big.pt"))
    student = Small()
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    def fit(epoch, loader, temperature):
        student.train()
        teacher.eval()
        for images, labels in loader:
            opt.zero_grad()
            logits = student(images)
            soft = teacher(images).detach()
            loss = F.kl_div(F.log_softmax(logits / temperature, 1), F.softmax(soft / temperature, 1))
            loss.backward()
            opt.step()
"""
_CAPTIONER = """
    import torch
    from torch.autograd import Variable
    def run_epoch(encoder, decoder, optimizer, criterion, loader):
        encoder.eval()
        decoder.train()
        for step, (pics, words) in enumerate(loader):
            pics, words = Variable(pics).cuda(), Variable(words).cuda()
            feats = encoder(pics)
            optimizer.zero_grad()
            scores = decoder(feats, words)
            loss = criterion(scores, words[:, 1:])
            loss.backward()
            optimizer.step()
    def main(args):
        encoder, decoder = Encoder(args.arch), Decoder(args.vocab)
        optimizer = torch.optim.Adam({params}, lr=1e-4)
        for epoch in range(args.epochs):
            run_epoch(encoder, decoder, optimizer, torch.nn.CrossEntropyLoss(), args.loader)
"""
FIND += [
    Shape("TW104", "a distillation teacher in eval mode run with autograd on in every student step",
          d(_TEACHER), 14),
    Shape("TW104", "a captioner's pretrained image encoder in eval mode, handed in, only the decoder optimized",
          d(_CAPTIONER.format(params="decoder.parameters()")), 8),
]
QUIET += [
    Shape("TW104", "the teacher run under no_grad", d(_TEACHER).replace(
        "        soft = teacher(images).detach()", "        with torch.no_grad():\n            soft = teacher(images)")),
    Shape("TW104", "the teacher's parameters frozen by hand", d(_TEACHER).replace(
        "teacher.eval()", "teacher.eval()\n    teacher.requires_grad_(False)")),
    Shape("TW104", "the encoder fine-tuned too (its parameters are in the optimizer)",
          d(_CAPTIONER.format(params="list(encoder.parameters()) + list(decoder.parameters())"))),
    Shape("TW104", "a perceptual loss: the frozen network sees the generator's output, whose gradient it must pass", d("""
        import torch
        import torch.nn.functional as F
        def fit(gen, feats_net, opt, loader):
            feats_net.eval()
            gen.train()
            for low, high in loader:
                fake = gen(low)
                loss = F.mse_loss(feats_net(fake), high)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
    Shape("TW104", "one train/test function that picks the mode and the grad switch from its optimizer argument", d("""
        import torch
        def run(net, loader, opt):
            training = opt is not None
            net.train() if training else net.eval()
            with (torch.enable_grad() if training else torch.no_grad()):
                for x, y in loader:
                    out = net(x)
                    loss = torch.nn.functional.cross_entropy(out, y)
                    if training:
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
    """)),
]

# ----------------------------------------------------------------------------------- TW104 other eval paths
# model.train(False) / model.train(mode=False) as the switch to evaluation; a model run through a
# nested function after .eval(); .eval() in __main__ with the forward in a helper the model is handed.
FIND += [
    Shape("TW104", "validate() switching with model.train(mode=False) and restoring the mode afterwards", d("""
        from torch.autograd import Variable
        def validate(model, loader, limit=256):
            was = model.training
            model.train(mode=False)
            right = seen = 0
            for x, y in loader:
                if seen >= limit:
                    break
                out = model(Variable(x))
                right += int((out.max(1)[1] == y).sum())
                seen += len(x)
            model.train(mode=was)
            return right / seen
    """), 9),
    Shape("TW104", "net.train(False) before a scoring loop in a function not named for evaluation", d("""
        def score_all(net, batches):
            net.train(False)
            return [net(b).softmax(1) for b in batches]
    """), 3),
    Shape("TW104", "a pretrained scorer run through a nested function per batch after .eval()", d("""
        import numpy as np
        import torch.nn.functional as F
        from torchvision.models import inception_v3
        def image_score(images, batch_size=32):
            scorer = inception_v3(pretrained=True)
            scorer.eval()
            def probs(x):
                return F.softmax(scorer(x), dim=1).cpu().numpy()
            out = []
            for i in range(0, len(images), batch_size):
                out.append(probs(images[i:i + batch_size]))
            return np.concatenate(out)
    """), 8),
    Shape("TW104", "eval() in __main__, the forward in a helper of the file handed the networks", d("""
        import torch
        from nets import Encoder, Decoder
        def describe(encoder, decoder, image, beam=3):
            feats = encoder(image.unsqueeze(0))
            return decoder.caption(feats, beam)
        if __name__ == "__main__":
            encoder = Encoder()
            decoder = Decoder()
            decoder.load_state_dict(torch.load("dec.pt"))
            encoder.eval()
            decoder.eval()
            print(describe(encoder, decoder, torch.rand(3, 224, 224)))
    """), 4),
]
QUIET += [
    Shape("TW104", "a val() that first turns requires_grad off on every parameter of the model it runs", d("""
        def val(net, loader, criterion):
            for p in net.parameters():
                p.requires_grad = False
            net.eval()
            total = 0.0
            for x, y in loader:
                total += float(criterion(net(x), y))
            return total
    """)),
    Shape("TW104", "the nested helper runs the model under no_grad itself", d("""
        import torch
        def image_score(images, scorer):
            scorer.eval()
            def probs(x):
                with torch.no_grad():
                    return scorer(x).softmax(1)
            return [probs(b) for b in images]
    """)),
    Shape("TW104", "eval() in __main__, the helper handed the model only saves it", d("""
        import torch
        from nets import Encoder
        def export(encoder, path):
            torch.save(encoder.state_dict(), path)
        if __name__ == "__main__":
            encoder = Encoder()
            encoder.eval()
            export(encoder, "enc.pt")
    """)),
]

# ----------------------------------------------------------------------------------- TW203 per-epoch iterators
# An iterator over the loader made again every epoch (``it = iter(loader)`` in the epoch loop) and
# stepped once per training step by a function of the script (``it.next()``), or stepped in the
# loop of a validation function: every batch is read, and copied into a preallocated CUDA tensor.
FIND += [
    Shape("TW203", "a module-level loader whose iterator is made every epoch and stepped by the step function", d("""
        import torch
        from torch.utils.data import DataLoader
        import helpers
        loader = DataLoader(lines, batch_size=64, shuffle=True, num_workers=4)
        images = torch.FloatTensor(64, 1, 32, 100).cuda()
        net = Recognizer().cuda()
        def one_step(net, opt):
            cpu_images, labels = it.next()
            helpers.copy_into(images, cpu_images)
            cost = criterion(net(images), labels)
            net.zero_grad()
            cost.backward()
            opt.step()
        for epoch in range(25):
            it = iter(loader)
            for _ in range(len(loader)):
                one_step(net, opt)
    """), 4),
    Shape("TW203", "a validation function that builds its loader and steps its iterator in a loop", d("""
        import torch
        from torch.utils.data import DataLoader
        images = torch.FloatTensor(64, 1, 32, 100).cuda()
        def val(net, data, steps=100):
            loader = DataLoader(data, batch_size=64, num_workers=2)
            it = iter(loader)
            for i in range(min(steps, len(loader))):
                cpu_images, labels = it.next()
                images.resize_(cpu_images.size()).copy_(cpu_images)
                net(images)
    """), 5),
]
QUIET += [
    Shape("TW203", "look-alike: one batch taken from an iterator made once, to look at", d("""
        import torch
        from torch.utils.data import DataLoader
        net = Recognizer().cuda()
        loader = DataLoader(lines, batch_size=8)
        it = iter(loader)
        sample_images, sample_labels = it.next()
        print(sample_images.shape, sample_labels)
    """)),
]

# ----------------------------------------------------------------------------------- TW204 conditional pinning
# A project helper that pins only when asked: ``**({'num_workers': 2, 'pin_memory': True} if cuda
# else {})``. A caller that passes its flag gets pinned batches (copied with ``Variable(x).cuda()``
# from a ``tqdm(enumerate(loader))`` stream); one that leaves ``cuda`` at its False default does not.
_HELPERS = d("""
    from torch.utils.data import DataLoader
    def make_loader(dataset, batch_size, cuda=False):
        return DataLoader(dataset, batch_size=batch_size, shuffle=True,
                          **({'num_workers': 2, 'pin_memory': True} if cuda else {}))
""")
_STEPS = d("""
    from torch.autograd import Variable
    from tqdm import tqdm
    import helpers
    def fit(model, opt, dataset, cuda):
        stream = tqdm(enumerate(helpers.make_loader(dataset, 64{flag}), 1))
        for i, (x, y) in stream:
            x = x.view(len(x), -1)
            x = Variable(x).cuda() if cuda else Variable(x)
            loss = model.loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW204", "a helper pinning through a conditional ** dict, called with its flag; Variable(x).cuda() from a tqdm stream", {
        "helpers.py": _HELPERS,
        "train.py": _STEPS.format(flag=", cuda=cuda"),
    }, (("train.py", 8),)),
    ProjectShape("TW204", "look-alike: the same helper called with its flag left at the False default", {
        "helpers.py": _HELPERS,
        "train.py": _STEPS.format(flag=""),
    }),
]
FIND += [
    Shape("TW204", "the conditional helper in the same file, called with cuda=cuda", _HELPERS + d("""
        from torch.autograd import Variable
        def validate(model, dataset, cuda=False):
            for x, y in make_loader(dataset, 32, cuda=cuda):
                x = Variable(x).cuda() if cuda else Variable(x)
                model(x)
    """), 8),
]
QUIET += [
    Shape("TW204", "look-alike: the same-file helper called without its flag", _HELPERS + d("""
        from torch.autograd import Variable
        def validate(model, dataset, cuda=False):
            for x, y in make_loader(dataset, 32):
                x = Variable(x).cuda() if cuda else Variable(x)
                model(x)
    """)),
]

# ----------------------------------------------------------------------------------- TW402 host scripts, fresh names
# A script with no device code at all restores a model from a checkpoint another script of the
# project writes from a CUDA model: it runs on the CPU and reads CUDA tensors. And a GPU script
# that reloads, in the same run, a checkpoint it wrote under a name made fresh for the run (uuid).
_GPU_TRAIN = d("""
    import torch
    from nets import Decoder
    def main(args):
        decoder = Decoder(args.vocab).cuda()
        opt = torch.optim.Adam(decoder.parameters())
        for epoch in range(args.epochs):
            fit(decoder, opt)
            torch.save(decoder.{state}, "model/decoder_%d.pth" % epoch)
""")
_HOST_SCRIPT = d("""
    import argparse
    import torch
    from nets import Decoder
    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--model")
        args = parser.parse_args()
        decoder = Decoder(1000)
        decoder.load_state_dict(torch.load(args.model))
        # decoder.cuda()
        decoder.eval()
""")
PROJECTS += [
    ProjectShape("TW402", "a CPU-only captioning script restoring the decoder that the training script saves from the GPU", {
        "train.py": _GPU_TRAIN.format(state="state_dict()"),
        "caption.py": _HOST_SCRIPT,
    }, (("caption.py", 9),)),
    ProjectShape("TW402", "look-alike: the training script saves the state moved to the host", {
        "train.py": _GPU_TRAIN.format(state="cpu().state_dict()"),
        "caption.py": _HOST_SCRIPT,
    }),
    ProjectShape("TW402", "look-alike: a model module (no script) restoring a backbone's pretrained weights", {
        "train.py": _GPU_TRAIN.format(state="state_dict()"),
        "backbone.py": d("""
            import torch
            import torchvision
            def resnet_trunk(path):
                net = torchvision.models.resnet50()
                net.load_state_dict(torch.load(path))
                return net
        """),
    }),
]
QUIET += [
    Shape("TW402", "a GPU script reloading, in the same run, the best checkpoint it saved under a fresh uuid name", d("""
        import uuid
        import torch
        device = torch.device("cuda:0")
        ckpt = "pretrained/" + uuid.uuid4().hex + ".pt"
        model = Net().to(device)
        def test():
            model.load_state_dict(torch.load(ckpt))
            return evaluate(model)
        best = 1e9
        for epoch in range(100):
            loss = train_epoch(model)
            if loss < best:
                best = loss
                torch.save(model.state_dict(), ckpt)
        test()
    """)),
]

# A project whose every .cuda() is chosen by a cuda flag (`Variable(x).cuda() if cuda else
# Variable(x)`, a --no-gpus option in the entry script) has a CPU path: its checkpoint helper
# restores without map_location what the GPU runs saved.
_FLAG_MAIN = d("""
    import argparse
    import torch
    import train, utils
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-gpus", action="store_false", dest="gpus")
    args = parser.parse_args()
    on_gpu = torch.cuda.is_available() and args.gpus
    net = Net()
    if on_gpu:
        net.cuda()
    train.fit(net, data, on_gpu)
    utils.load_checkpoint(net, "ckpt")
""")
_FLAG_TRAIN = d("""
    import torch
    from torch.autograd import Variable
    import utils
    def fit(net, loader, cuda=False):
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, y in loader:
            x = Variable(x).cuda() if cuda else Variable(x)
            loss = net.loss(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        utils.save_checkpoint(net, "ckpt")
""")
_FLAG_UTILS = d("""
    import torch
    from torch.autograd import Variable
    def save_checkpoint(model, path):
        torch.save({"state": model.state_dict()}, path)
    def load_checkpoint(model, path):
        checkpoint = torch.load(path)
        model.load_state_dict(checkpoint["state"])
    def score(model, x, cuda=False):
        return model(Variable(x).cuda() if cuda else Variable(x))
""")
PROJECTS += [
    ProjectShape("TW402", "a checkpoint helper in a project whose GPU use is a flag (--no-gpus) chosen in every .cuda() call", {
        "main.py": _FLAG_MAIN,
        "train.py": _FLAG_TRAIN,
        "utils.py": _FLAG_UTILS,
    }, (("utils.py", 6),)),
]

# ----------------------------------------------------------------------------------- TW301 seeds and draws
# The entry script seeds torch (also every CUDA device: manual_seed_all, no seed-everything
# helper) and NumPy, while the dataset module it imports shuffles with Python's random.
PROJECTS += [
    ProjectShape("TW301", "Python's random in the dataset module; the entry script seeds torch, CUDA and NumPy", {
        "train.py": d("""
            import numpy as np
            import torch
            from episodes import Episodes
            if __name__ == "__main__":
                torch.manual_seed(222)
                torch.cuda.manual_seed_all(222)
                np.random.seed(222)
                data = Episodes("train", n_way=5)
        """),
        "episodes.py": d("""
            import random
            from torch.utils.data import Dataset
            class Episodes(Dataset):
                def __init__(self, split, n_way):
                    self.classes = list(range(64))
                    self.n_way = n_way
                def __getitem__(self, i):
                    picked = list(self.classes)
                    random.shuffle(picked)
                    return picked[:self.n_way]
        """),
    }, (("episodes.py", 9),)),
]
# Look-alikes: a DataLoader worker's init function that reseeds NumPy per worker is no seeding of
# the run; a draw from an explicitly seeded torch.Generator uses no global generator.
QUIET += [
    Shape("TW301", "a worker_init_fn that reseeds NumPy per worker, beside Python's random", d("""
        import random
        import numpy
        def worker_init_fn(worker_id):
            numpy.random.seed(numpy.random.get_state()[1][0] + worker_id)
        def crop(audio, frames):
            start = int(random.random() * (len(audio) - frames))
            return audio[start:start + frames]
    """)),
    Shape("TW301", "torch.randperm with a generator seeded on the line before, in a file that seeds NumPy", d("""
        import numpy as np
        import torch
        np.random.seed(0)
        class EpochSampler:
            def __iter__(self):
                g = torch.Generator()
                g.manual_seed(self.seed + self.epoch)
                order = torch.randperm(len(self.labels), generator=g).tolist()
                return iter(order)
    """)),
]

# Only NumPy seeded by the entry script, while the modules it imports draw from torch's generator
# without naming a random function: layers that initialise their weights, dropout, a shuffling
# loader. Reported at the seed.
_NP_ONLY_MAIN = d("""
    import numpy as np
    import torch
    from model import MLP
    if __name__ == "__main__":
        np.random.seed(0){torch_seed}
        orders = [np.random.permutation(784) for _ in range(5)]
        net = MLP(784, 10)
""")
PROJECTS += [
    ProjectShape("TW301", "only NumPy seeded while the imported model's layers and dropout draw from torch's generator", {
        "main.py": _NP_ONLY_MAIN.format(torch_seed=""),
        "model.py": d("""
            import torch.nn as nn
            class MLP(nn.Module):
                def __init__(self, n_in, n_out):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(n_in, 400), nn.ReLU(), nn.Dropout(0.5), nn.Linear(400, n_out))
                def forward(self, x):
                    return self.body(x)
        """),
    }, (("main.py", 5),)),
    ProjectShape("TW301", "look-alike: the entry script seeds torch as well", {
        "main.py": _NP_ONLY_MAIN.format(torch_seed="\n    torch.manual_seed(0)"),
        "model.py": d("""
            import torch.nn as nn
            class MLP(nn.Module):
                def __init__(self, n_in, n_out):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(n_in, 400), nn.Dropout(0.5), nn.Linear(400, n_out))
        """),
    }),
    ProjectShape("TW301", "look-alike: the imported module draws nothing from torch", {
        "main.py": _NP_ONLY_MAIN.format(torch_seed=""),
        "model.py": d("""
            import numpy as np
            class MLP:
                def __init__(self, n_in, n_out):
                    self.w = np.zeros((n_in, n_out))
        """),
    }),
]

# ----------------------------------------------------------------------------------- TW202/TW203 unread loaders
# A data module's helper returns (train, test) loaders; the script hands the test loader only to
# the GAN's evaluate(test_loader, d_path, g_path), whose every definition samples noise and never
# reads that argument: no batch of it is ever loaded. The train loader (trained on) is reported.
_GAN_LOADERS = d("""
    import torch.utils.data as data_utils
    import torchvision.datasets as dset
    def get_loaders(args, tf):
        train_set = dset.ImageFolder(args.root + "/train", transform=tf)
        test_set = dset.ImageFolder(args.root + "/test", transform=tf)
        train_dl = data_utils.DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
        test_dl = data_utils.DataLoader(test_set, batch_size=args.batch_size, shuffle=True)
        return train_dl, test_dl
""")
_GAN_MAIN = d("""
    from loaders import get_loaders
    from gan import GAN
    def main(args):
        model = GAN(args)
        train_dl, test_dl = get_loaders(args, args.transform)
        if args.train:
            model.train(train_dl)
        else:
            model.evaluate(test_dl, args.d_path, args.g_path)
""")
_GAN_MODEL = d("""
    import torch
    class GAN:
        def __init__(self, args):
            self.G = Generator().cuda()
        def train(self, loader):
            for images, _ in loader:
                images = images.cuda()
                step(self.G, images)
        def evaluate(self, test_loader, d_path, g_path):
            z = torch.randn(64, 100, 1, 1).cuda()
            return self.G({use})
""")
PROJECTS += [
    ProjectShape(code, f"a returned test loader only handed to evaluate() that ignores it ({code})", {
        "loaders.py": _GAN_LOADERS,
        "main.py": _GAN_MAIN,
        "gan.py": _GAN_MODEL.format(use="z"),
    }, (("loaders.py", 6),))
    for code in ("TW202", "TW203")
] + [
    ProjectShape(code, f"look-alike: evaluate() reads the test loader ({code})", {
        "loaders.py": _GAN_LOADERS,
        "main.py": _GAN_MAIN,
        "gan.py": _GAN_MODEL.format(use="next(iter(test_loader))[0].cuda()"),
    }, (("loaders.py", 6), ("loaders.py", 7)))
    for code in ("TW202", "TW203")
]

# TW203 for the same helper: a call that leaves its cuda flag at the False default builds an
# unpinned loader whose batches still go to the GPU; passing the flag pins it.
PROJECTS += [
    ProjectShape("TW203", "a conditionally pinning helper called without its flag, batches moved with .cuda()", {
        "helpers.py": _HELPERS,
        "train.py": _STEPS.format(flag=""),
    }, (("train.py", 5),)),
    ProjectShape("TW203", "look-alike: the same helper called with cuda=cuda", {
        "helpers.py": _HELPERS,
        "train.py": _STEPS.format(flag=", cuda=cuda"),
    }),
]
