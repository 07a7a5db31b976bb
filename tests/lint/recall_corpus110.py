"""The recall corpus, round 31 part D: classes sets 36-54 still showed for TW402, TW403 and TW203 -
each written in our own words and reduced to its shape, with look-alikes that must stay as they
are. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW402 a load helper every caller runs after its own save
# A utility module pairs a save helper and a load helper over the same file-name template; the
# training script saves the best model during its loop and reloads it through the helper right
# after, in the same process and on the same GPU (set 51 Multimodal-Transformer, ASTGCN; set 38).
_SAVE_LOAD = d("""
    import torch
    def save_net(opts, net, tag=''):
        torch.save(net, f'checkpoints/{tag}_{opts.name}.pt')
    def load_net(opts, tag=''):
        return torch.load(f'checkpoints/{tag}_{opts.name}.pt')
    def to_gpu(*xs):
        return [x.cuda() for x in xs]
""")
_TRAIN_THEN_LOAD = d("""
    import torch
    from helpers import save_net, load_net
    def run(opts, net, loader):
        net = net.cuda()
        best = 1e9
        for epoch in range(opts.epochs):
            for x, y in loader:
                loss = (net(x.cuda()) - y.cuda()).pow(2).mean()
                loss.backward()
            if loss.item() < best:
                save_net(opts, net, tag='best')
                best = loss.item()
        net = load_net(opts, tag='best')
        return net
""")
_EVAL_LOADS = d("""
    import torch
    from helpers import load_net
    if __name__ == '__main__':
        import argparse
        opts = argparse.ArgumentParser().parse_args()
        net = load_net(opts, tag='best').cuda()
""")
PROJECTS += [
    ProjectShape("TW402", "look-alike: the same load helper also serves an evaluation script (R2)",
                 {"helpers.py": _SAVE_LOAD, "train.py": _TRAIN_THEN_LOAD, "evaluate.py": _EVAL_LOADS},
                 (("helpers.py", 5),)),
    ProjectShape("TW402", "predict helper reloading the epoch template the training loop saved, called after the loop", {
        "fit.py": d("""
            import os
            import torch
            out_dir = os.path.join('runs', 'exp')
            net = torch.nn.Linear(4, 2).cuda()
            def fit(loader, epochs):
                best_loss, best_epoch = 1e9, 0
                for epoch in range(epochs):
                    path = os.path.join(out_dir, 'weights_%s.bin' % epoch)
                    for x, y in loader:
                        loss = (net(x.cuda()) - y.cuda()).abs().mean()
                        loss.backward()
                    if loss.item() < best_loss:
                        best_loss, best_epoch = loss.item(), epoch
                        torch.save(net.state_dict(), path)
                score(best_epoch, loader)
            def score(epoch, loader):
                path = os.path.join(out_dir, 'weights_%s.bin' % epoch)
                net.load_state_dict(torch.load(path))
                return sum(net(x.cuda()).sum().item() for x, _ in loader)
            if __name__ == '__main__':
                fit([], 3)
                # score(10, [])
        """)}),
    ProjectShape("TW402", "look-alike: the predict helper is also the script's own entry (a run with a given epoch)", {
        "fit.py": d("""
            import os
            import sys
            import torch
            out_dir = os.path.join('runs', 'exp')
            net = torch.nn.Linear(4, 2).cuda()
            def fit(loader, epochs):
                for epoch in range(epochs):
                    path = os.path.join(out_dir, 'weights_%s.bin' % epoch)
                    for x, y in loader:
                        (net(x.cuda()) - y.cuda()).abs().mean().backward()
                    torch.save(net.state_dict(), path)
                score(epochs - 1, loader)
            def score(epoch, loader):
                path = os.path.join(out_dir, 'weights_%s.bin' % epoch)
                net.load_state_dict(torch.load(path))
            if __name__ == '__main__':
                if len(sys.argv) > 1:
                    score(int(sys.argv[1]), [])
                else:
                    fit([], 3)
        """)}, (("fit.py", 15),)),
]

# ------------------------------------------------------------- TW403 a checkpoint mapped onto a fixed GPU
# A file that promises a CPU run (a --no_cuda option, a device handed in) restores a checkpoint
# with map_location naming a CUDA device: the CPU run fails at the load (sets 36, 49, 54).
FIND += [
    Shape("TW403", "map_location='cuda:0' in a script with a --no_cuda option", d("""
        import argparse
        import torch
        p = argparse.ArgumentParser()
        p.add_argument('--no_cuda', action='store_true')
        p.add_argument('--ckpt', default='model.pt')
        args = p.parse_args()
        device = torch.device('cpu' if args.no_cuda else 'cuda')
        net = torch.nn.Linear(3, 3).to(device)
        net.load_state_dict(torch.load(args.ckpt, map_location='cuda:0'))
    """), 9),
    Shape("TW403", "map_location built with format from a GPU id, through a name, in a --cpu script", d("""
        import argparse
        import torch
        p = argparse.ArgumentParser()
        p.add_argument('--cpu', action='store_true')
        p.add_argument('--gpu', type=int, default=0)
        args = p.parse_args()
        device = torch.device('cpu') if args.cpu else torch.device('cuda', args.gpu)
        net = torch.nn.Linear(3, 3).to(device)
        where = 'cuda:{}'.format(args.gpu)
        state = torch.load('last.pt', map_location=where)
    """), 10),
]
QUIET += [
    Shape("TW403", "look-alike: map_location on a CUDA device only under the device flag", d("""
        import argparse
        import torch
        p = argparse.ArgumentParser()
        p.add_argument('--no_cuda', action='store_true')
        args = p.parse_args()
        device = torch.device('cpu' if args.no_cuda else 'cuda')
        if not args.no_cuda:
            state = torch.load('m.pt', map_location='cuda:0')
        else:
            state = torch.load('m.pt', map_location='cpu')
    """)),
    Shape("TW403", "look-alike: map_location mapping onto the chosen device", d("""
        import argparse
        import torch
        p = argparse.ArgumentParser()
        p.add_argument('--no_cuda', action='store_true')
        args = p.parse_args()
        device = torch.device('cpu' if args.no_cuda else 'cuda')
        state = torch.load('m.pt', map_location=device)
        other = torch.load('n.pt', map_location='cuda_cache' if False else 'cpu')
    """)),
]

# ------------------------------------------------------------- TW203 a loader built per dataset, one batch drawn
# A sampling script builds its loader in an if/elif chain over the dataset name and, after the
# chain, draws a single batch of real images to save beside the samples (R16; set 53).
_CHAIN = d("""
    import torch
    from torchvision import datasets, transforms
    def build(args):
        if args.data == 'cifar':
            loader = torch.utils.data.DataLoader(datasets.CIFAR10('.', transform=transforms.ToTensor()), batch_size=64)
        elif args.data == 'mnist':
            loader = torch.utils.data.DataLoader(datasets.MNIST('.', transform=transforms.ToTensor()), batch_size=64)
        else:
            loader = torch.utils.data.DataLoader(datasets.SVHN('.', transform=transforms.ToTensor()), batch_size=64)
        model = torch.nn.Conv2d(3, 3, 1).cuda()
        %s
""")
QUIET += [
    Shape("TW203", "loader picked in an if/elif chain, one batch drawn with __iter__().__next__() after it",
          _CHAIN % "real = loader.__iter__().__next__()[0]\n    return model(real.cuda())"),
    Shape("TW203", "loader picked in an if/elif chain, one batch drawn with next(iter(...)) after it",
          _CHAIN % "x, _ = next(iter(loader))\n    return model(x.cuda())"),
]
FIND += [
    Shape("TW203", "look-alike: the loader picked in the chain is iterated after it",
          _CHAIN % "for x, _ in loader:\n        model(x.cuda())", 5),
]
