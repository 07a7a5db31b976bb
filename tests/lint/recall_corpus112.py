"""The recall corpus, round 32 part B: a log interval that is no interval (TW207) - the reporting
interval a training loop tests with ``%`` defaults to 1, so on the default run the "periodic" read
happens every step; reached here through a local copy of the option, a parameter whose callers hand
the option in, and an option declared by the entry script of another module. Each written in our own
words and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these
to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 an interval option copied to a local name
# A language-model script that copies its options into locals at the top of main() and then logs
# `if (step + 1) % log_every == 0:` with the option's default 1 (GPT2-Chinese-like).
_LOCAL_COPY = """
    import argparse
    import torch
    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument('--report_every', default={report}, type=int)
        parser.add_argument('--accum', default={accum}, type=int)
        args = parser.parse_args()
        report_every = args.report_every
        accum = args.accum
        net = torch.nn.Linear(8, 1).cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        total = 0.0
        for step in range(1000):
            x = torch.randn(4, 8, device='cuda')
            loss = net(x).pow(2).mean()
            loss.backward()
            if (step + 1) % accum == 0:
                total += loss.item()
                opt.step()
                opt.zero_grad()
            if (step + 1) % report_every == 0:
                print(step, loss.item())
    if __name__ == '__main__':
        main()
"""
FIND += [
    Shape("TW207", "report interval copied from an option whose default is 1 into a local name", d(
        _LOCAL_COPY.format(report=1, accum=4)), 22),
    Shape("TW207", "optimizer-step gate on an accumulation option copied to a local, default 1", d(
        _LOCAL_COPY.format(report=50, accum=1)), 18),
]
QUIET += [
    Shape("TW207", "look-alike: the locals copy options whose defaults are real intervals", d(
        _LOCAL_COPY.format(report=50, accum=4))),
    Shape("TW207", "look-alike: the local copy is overwritten before the loop", d("""
        import argparse
        import torch
        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument('--report_every', default=1, type=int)
            args = parser.parse_args()
            report_every = args.report_every
            if report_every < 10:
                report_every = 100
            net = torch.nn.Linear(8, 1).cuda()
            for step in range(1000):
                loss = net(torch.randn(4, 8, device='cuda')).pow(2).mean()
                loss.backward()
                if step % report_every == 0:
                    print(step, loss.item())
        if __name__ == '__main__':
            main()
    """)),
]

# ------------------------------------------------------------- TW207 a parameter that takes the option
# A training-epoch function of a utilities module with `print_every=1` as its default, called by the
# training script with `args.print_every`, an option declared in another module with default 1
# (MusicTransformer-like); and a library step reading `args.log_steps` declared by the entry script.
_EPOCH = """
    import torch
    def train_epoch(model, loader, opt, print_every=1):
        for i, (x, y) in enumerate(loader):
            opt.zero_grad()
            out = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            out.backward()
            opt.step()
            if (i + 1) % print_every == 0:
                print('batch', i, 'loss', float(out))
"""
_OPTIONS = """
    import argparse
    def parse_train_args():
        p = argparse.ArgumentParser()
        p.add_argument('-print_every', type=int, default={every})
        p.add_argument('-epochs', type=int, default=10)
        return p.parse_args()
"""
_SCRIPT = """
    import torch
    from utils.options import parse_train_args
    from utils.run import train_epoch
    def main():
        args = parse_train_args()
        model = torch.nn.Linear(3, 1).cuda()
        opt = torch.optim.Adam(model.parameters())
        loader = [(torch.randn(2, 3), torch.randn(2, 1))] * 10
        for epoch in range(args.epochs):
            train_epoch(model, loader, opt, args.print_every)
    if __name__ == '__main__':
        main()
"""
_STEP = """
    import torch
    def train(args, model, loader, opt):
        for i, (x, y) in enumerate(loader):
            loss = (model(x.cuda()) - y.cuda()).abs().mean()
            loss.backward()
            opt.step()
            if i % args.log_steps == 0:
                print(i, loss.item())
"""
_MAIN_WITH = """
    import argparse
    import torch
    from engine import train
    parser = argparse.ArgumentParser()
    parser.add_argument('--log_steps', type=int, default={every})
    args = parser.parse_args()
    model = torch.nn.Linear(3, 1).cuda()
    train(args, model, [], torch.optim.SGD(model.parameters(), lr=0.1))
"""
PROJECTS += [
    ProjectShape("TW207", "epoch function's print interval parameter, handed an option of another module whose default is 1",
                 {"utils/run.py": d(_EPOCH), "utils/options.py": d(_OPTIONS.format(every=1)), "train.py": d(_SCRIPT)},
                 (("utils/run.py", 9),)),
    ProjectShape("TW207", "look-alike: the option handed to the print interval parameter defaults to 50",
                 {"utils/run.py": d(_EPOCH), "utils/options.py": d(_OPTIONS.format(every=50)), "train.py": d(_SCRIPT)}),
    ProjectShape("TW207", "look-alike: the caller hands a literal interval to a parameter that defaults to 1",
                 {"utils/run.py": d(_EPOCH), "utils/options.py": d(_OPTIONS.format(every=1)),
                  "train.py": d(_SCRIPT.replace("args.print_every", "20"))}),
    ProjectShape("TW207", "library step testing an option the entry script declares with default 1",
                 {"engine.py": d(_STEP), "main.py": d(_MAIN_WITH.format(every=1))},
                 (("engine.py", 8),)),
    ProjectShape("TW207", "look-alike: the entry script declares the library's log option with default 100",
                 {"engine.py": d(_STEP), "main.py": d(_MAIN_WITH.format(every=100))}),
]

# ------------------------------------------------------------- TW207 / TW204 a Dassl trainer's per-step hooks
# Prompt-learning trainers built on Dassl: the library's run_epoch calls forward_backward for every
# batch (its dict of floats goes to a MetricMeter) and parse_batch_train copies the batch of Dassl's
# loaders, which Dassl pins whenever CUDA is used (CoOp-like).
_DASSL = """
    import torch
    from torch.nn import functional as F
    from dassl.engine import TRAINER_REGISTRY, {base}
    from dassl.metrics import compute_accuracy

    @TRAINER_REGISTRY.register()
    class PromptTuner({base}):
        def forward_backward(self, batch):
            image, label = self.parse_batch_train(batch)
            output = self.model(image)
            loss = F.cross_entropy(output, label)
            self.model_backward_and_update(loss)
            summary = {{"loss": loss.item(), "acc": compute_accuracy(output, label)[0].item()}}
            if (self.batch_idx + 1) == self.num_batches:
                self.update_lr()
            return summary

        def parse_batch_train(self, batch):
            image = batch["img"]
            label = batch["label"]
            image = image.to(self.device)
            label = label.to(self.device)
            return image, label
"""
FIND += [
    Shape("TW207", "loss.item() in a Dassl trainer's forward_backward", d(_DASSL.format(base="TrainerX")), 13),
    Shape("TW204", "batch copied in a Dassl trainer's parse_batch_train", d(_DASSL.format(base="TrainerX")), 21),
    Shape("TW204", "both parts of a tuple batch copied in a Dassl TrainerXU's parse_batch_train", d("""
        from dassl.engine import TrainerXU
        class Adapt(TrainerXU):
            def parse_batch_train(self, batch_x, batch_u):
                x, y = batch_x["img"], batch_x["label"]
                u = batch_u["img"]
                return x.cuda(), y.cuda(), u.cuda()
    """), 6),
]
QUIET += [
    Shape("TW207", "look-alike: a forward_backward of a trainer of the project's own, no Dassl base", d(
        _DASSL.format(base="TrainerX").replace("from dassl.engine import TRAINER_REGISTRY, TrainerX",
                                               "from engine import TRAINER_REGISTRY, TrainerX"))),
    Shape("TW204", "look-alike: the Dassl trainer copies a tensor it builds, not the batch", d("""
        import torch
        from dassl.engine import TrainerX
        class Tuner(TrainerX):
            def parse_batch_test(self, batch):
                prompts = torch.zeros(4, 8)
                return batch["img"].to(self.device, non_blocking=True), prompts.to(self.device)
    """)),
    Shape("TW204", "look-alike: a Dassl trainer in a project whose loaders are built unpinned", d("""
        import torch
        from dassl.engine import TrainerX
        class Tuner(TrainerX):
            def build_data_loader(self):
                self.train_loader_x = torch.utils.data.DataLoader(self.ds, batch_size=32, pin_memory=False)
            def parse_batch_train(self, batch):
                return batch["img"].cuda(), batch["label"].cuda()
    """)),
]
QUIET += [
    Shape("TW207", "look-alike: a Dassl trainer reads the domain labels its parser hands back unmoved (host tensors)", d("""
        import torch
        from dassl.engine import TrainerX
        class Mixture(TrainerX):
            def forward_backward(self, batch):
                parsed = self.parse_batch_train(batch)
                x, y, domains = parsed
                domains = [d[0].item() for d in torch.split(domains, 8, 0)]
                return {"n": len(domains)}
    """)),
]
