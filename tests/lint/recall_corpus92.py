"""The recall corpus, round 27 part E: classes sets 43 and 44 showed for TW104 (pictures made in
the training loop, an inference wrapper whose loader method returns an eval-mode model), TW101 (a
running-mean object handed the loss tensor) and TW217 (empty_cache once per evaluation batch or
per rendered chunk) - each written in our own words and reduced to its shape, with look-alikes that
must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 a network run only for a picture
# A GAN script that renders a fixed latent batch every few steps for TensorBoard and disk.
_GAN = d("""
    import torch
    from torchvision.utils import make_grid, save_image
    def train(gen, disc, loader, opt_g, opt_d, writer, fixed, every):
        for step, real in enumerate(loader):
            z = torch.randn(real.size(0), 64)
            with torch.no_grad():
                fake = gen(z)
            loss_d = disc(fake).mean() - disc(real).mean()
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
            loss_g = -disc(gen(z)).mean()
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
            if step % every == 0:
                fake = gen(fixed).cpu()
                grid = (make_grid(fake) + 1) / 2
                writer.add_image("samples", grid, step)
                save_image(grid, "out/%d.png" % step)
""")
FIND += [
    Shape("TW104", "fixed-latent samples rendered every N steps through make_grid/add_image", _GAN, 17),
    Shape("TW104", "decoder output saved as an image in place, inside the training loop", d("""
        import torch
        import torchvision.utils as vutils
        def fit(autoenc, loader, optimizer, probe):
            for i, x in enumerate(loader):
                loss = ((autoenc(x) - x) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if i % 200 == 0:
                    vutils.save_image(autoenc(probe).detach() * 0.5 + 0.5, "recon_%d.png" % i)
    """), 10),
    Shape("TW104", "a module-level helper that saves generated pictures, called bare by the training loop", d("""
        import torch
        from torchvision.utils import save_image
        generator = None
        def sample_image(n_row, done):
            z = torch.randn(n_row ** 2, 100)
            imgs = generator(z)
            save_image(imgs.data, "images/%d.png" % done, nrow=n_row)
        def main(loader, opt, disc):
            for i, real in enumerate(loader):
                loss = -disc(generator(torch.randn(8, 100))).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if i % 400 == 0:
                    sample_image(10, i)
    """), 6),
]
QUIET += [
    Shape("TW104", "look-alike: the saved images are the training forward's, also fed to the discriminator", d("""
        import torch
        from torchvision.utils import save_image
        def train(generator, discriminator, loader, opt_g, adv):
            for i, real in enumerate(loader):
                gen_imgs = generator(torch.randn(real.size(0), 100))
                g_loss = adv(discriminator(gen_imgs), torch.ones(real.size(0), 1))
                opt_g.zero_grad()
                g_loss.backward()
                opt_g.step()
                if i % 400 == 0:
                    save_image(gen_imgs.data[:25], "images/%d.png" % i)
    """)),
    Shape("TW104", "look-alike: the samples are generated under no_grad", _GAN.replace(
        "        if step % every == 0:\n            fake = gen(fixed).cpu()",
        "        if step % every == 0:\n            with torch.no_grad():\n                fake = gen(fixed).cpu()")),
    Shape("TW104", "look-alike: the reconstruction is logged and also kept in a list the caller uses", d("""
        import torch
        from torchvision.utils import save_image
        def fit(net, loader, optimizer, probe, kept):
            for i, x in enumerate(loader):
                loss = ((net(x) - x) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                out = net(probe)
                save_image(out, "r.png")
                kept.append(out)
    """)),
    Shape("TW104", "look-alike: the helper that saves pictures is called under no_grad", d("""
        import torch
        from torchvision.utils import save_image
        generator = None
        def sample_image(n_row, done):
            imgs = generator(torch.randn(n_row ** 2, 100))
            save_image(imgs, "images/%d.png" % done)
        def main(loader, opt, disc):
            for i, real in enumerate(loader):
                loss = -disc(generator(torch.randn(8, 100))).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                with torch.no_grad():
                    sample_image(10, i)
    """)),
]

# ------------------------------------------------------------- TW104 a loader method that returns an eval-mode model
# An inference wrapper: __init__ binds self.net from a method that loads, calls .eval() and returns it.
_WRAPPER = d("""
    import torch
    from nets import FlowNet
    class Predictor:
        def __init__(self, ckpt):
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self.net = self._load(ckpt)
        def _load(self, ckpt):
            net = FlowNet()
            net.load_state_dict(torch.load(ckpt, map_location="cpu", weights_only=True))
            net.eval()
            return net.to(self.device)
        def estimate(self, a, b):
            pair = torch.cat([a, b], 1).to(self.device)
            return self.net(pair)
    if __name__ == "__main__":
        flow = Predictor("flow.pt").estimate(torch.rand(1, 3, 64, 64), torch.rand(1, 3, 64, 64))
""")
FIND += [
    Shape("TW104", "an inference wrapper whose loader method returns the model after .eval()", _WRAPPER.replace(
        "        return net.to(self.device)", "        net = net.to(self.device)\n        return net"), 15),
]
QUIET += [
    Shape("TW104", "look-alike: the wrapper runs the model under no_grad", _WRAPPER.replace(
        "        net = net.to(self.device)\n        return net", "").replace(
        "        return self.net(pair)", "        with torch.no_grad():\n            return self.net(pair)").replace(
        "        return net.to(self.device)", "        return net")),
    Shape("TW104", "look-alike: the returned model is put back in training mode by a fine-tuning method", d("""
        import torch
        from nets import FlowNet
        class Tuner:
            def __init__(self):
                self.net = self._load()
            def _load(self):
                net = FlowNet()
                net.eval()
                return net
            def adapt(self, x):
                self.net.train()
                return self.net(x)
    """)),
]

# ------------------------------------------------------------- TW101 a running-mean object handed the loss tensor
_METER = d("""
    import torch
    import torch.nn.functional as F
    class Averager:
        def __init__(self):
            self.n = 0
            self.v = 0
        def add(self, x):
            self.v = (self.v * self.n + x) / (self.n + 1)
            self.n += 1
    def train(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            meter = Averager()
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                meter.add(loss)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print(epoch, meter.v)
""")
FIND += [
    Shape("TW101", "a running-mean object of the file handed the loss tensor every step", _METER, 15),
]
QUIET += [
    Shape("TW101", "look-alike: the object is handed loss.item()", _METER.replace("meter.add(loss)", "meter.add(loss.item())")),
    Shape("TW101", "look-alike: the object converts what it is handed", _METER.replace(
        "        self.v = (self.v * self.n + x) / (self.n + 1)",
        "        x = float(x)\n        self.v = (self.v * self.n + x) / (self.n + 1)")),
    Shape("TW101", "look-alike: the object keeps only the latest value", _METER.replace(
        "        self.v = (self.v * self.n + x) / (self.n + 1)", "        self.v = x")),
    Shape("TW101", "look-alike: a fresh object every step", _METER.replace(
        "        meter = Averager()\n        for x, y in loader:\n",
        "        for x, y in loader:\n            meter = Averager()\n")),
]
_UTILS = d("""
    class AverageMeter:
        def __init__(self):
            self.sum = 0
            self.count = 0
        def update(self, val, n=1):
            self.val = val
            self.sum += val * n
            self.count += n
            self.avg = self.sum / self.count
""")
_LOOP = d("""
    import torch.nn as nn
    from utils.meters import AverageMeter
    def train_epoch(model, loader, optimizer):
        criterion = nn.CrossEntropyLoss()
        losses = AverageMeter()
        for images, target in loader:
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.update(loss, images.size(0))
        print(losses.avg)
""")
PROJECTS += [
    ProjectShape("TW101", "an AverageMeter of another module handed the loss tensor", {
        "utils/meters.py": _UTILS, "train.py": _LOOP,
    }, (("train.py", 11),)),
    ProjectShape("TW101", "look-alike: the meter of another module is handed loss.item()", {
        "utils/meters.py": _UTILS, "train.py": _LOOP.replace("losses.update(loss,", "losses.update(loss.item(),"),
    }),
]

# ------------------------------------------------------------- TW217 empty_cache once per evaluation batch
FIND += [
    Shape("TW217", "empty_cache after every validation batch", d("""
        import torch
        def validate(model, val_loader, criterion):
            model.eval()
            total = 0.0
            with torch.no_grad():
                for i, batch in enumerate(val_loader):
                    out = model(batch["image"].cuda())
                    total += criterion(out, batch["label"].cuda()).item()
                    torch.cuda.empty_cache()
            return total
    """), 9),
    Shape("TW217", "empty_cache after every chunk of a chunked renderer", d("""
        import torch
        def render(net, rays, chunk):
            outs = []
            for i in range(0, rays.shape[0], chunk):
                with torch.no_grad():
                    out = net(rays[i:i + chunk])
                outs.append(out.cpu())
                torch.cuda.empty_cache()
            return torch.cat(outs)
    """), 8),
]
QUIET += [
    Shape("TW217", "look-alike: empty_cache between the models of a benchmark", d("""
        import torch
        def bench(nets, x):
            for net in nets:
                with torch.no_grad():
                    net(x)
                torch.cuda.empty_cache()
    """)),
    Shape("TW217", "look-alike: empty_cache between batch sizes tried in a literal list", d("""
        import torch
        def probe(model):
            for bs in [1, 8, 32]:
                with torch.no_grad():
                    model(torch.randn(bs, 3, 224, 224))
                torch.cuda.empty_cache()
    """)),
    Shape("TW217", "look-alike: empty_cache once per epoch, after the validation loop", d("""
        import torch
        def run(model, val_loader, epochs):
            for epoch in range(epochs):
                with torch.no_grad():
                    for x in val_loader:
                        model(x)
                torch.cuda.empty_cache()
    """)),
]
