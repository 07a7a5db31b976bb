"""The recall corpus, round 33 part B (TW207): reads of a part of the backward pass's loss that lint
did not know was on the device - an element of the list of losses the loss sums (``update =
losses[0]`` beside ``loss = w * losses[0] + ...``), and a term the loss reduces or clamps before
summing (``total = a.clamp(max=k) + b``) - with look-alikes that must stay quiet. Written in our own
words from the shapes of sets 30 and 62.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 an element of the loss list, read every step
FIND += [
    Shape("TW207", "meter fed .item() of an element of the losses list the backward pass sums", d("""
        import torch
        def self_loss_and_acc(out, y):
            ce = torch.nn.functional.cross_entropy(out, y)
            return [ce, ce * 0.5], [0.0, 0.0]
        def train(model, head, loader, opt, meter):
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                parts, accs = self_loss_and_acc(model(x), y)
                loss = 0.7 * parts[0] + 0.3 * parts[1]
                shown = parts[0]
                opt.zero_grad()
                loss.backward()
                opt.step()
                meter.update(shown.item(), x.size(0))
    """), 14),
    Shape("TW207", "float() of the mean of two elements of a list of losses", d("""
        import torch
        def fit(net, batches, optim, device, log):
            for a, b in batches:
                terms, _ = compute_terms(net, a.to(device), b.to(device))
                total = terms[0] + terms[1]
                optim.zero_grad()
                total.backward()
                optim.step()
                avg = 0.5 * (terms[0] + terms[1])
                log.append(float(avg))
    """), 10),
]
FIND += [
    Shape("TW207", "values of torch.max(probs, 1) (the function form) summed and read every step", d("""
        import torch
        def train(net, loader, opt, device):
            for x, y in loader:
                out = net(x.to(device))
                probs = torch.softmax(out, dim=1) ** 2
                conf, pseudo = torch.max(probs, 1)
                per = torch.nn.functional.cross_entropy(out, pseudo, reduction="none")
                loss = torch.sum(conf * per) / torch.sum(conf).item()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 8),
]
QUIET += [
    Shape("TW207", "look-alike: torch.max of a host tensor of counts the loop built", d("""
        import torch
        def train(net, loader, opt, device, counts):
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(net(x.to(device)), y.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()
                top, idx = torch.max(torch.tensor(counts), 0)
                print(int(idx))
    """)),
    Shape("TW207", "look-alike: element of the loss list read under a print interval", d("""
        import torch
        def train(model, head, loader, opt):
            for step, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                parts, accs = head.score(model(x), y)
                loss = parts[0] + parts[1]
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 100 == 0:
                    print(parts[0].item())
    """)),
    Shape("TW207", "look-alike: an element of a list of host numbers beside the loss", d("""
        import torch
        def train(model, loader, opt, sizes):
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                losses = [torch.nn.functional.mse_loss(model(x), y)]
                loss = losses[0]
                opt.zero_grad()
                loss.backward()
                opt.step()
                w = float(sizes[0])
    """)),
    Shape("TW207", "look-alike: a clamped term on a CPU-only script", d("""
        import torch
        def update(model, opt, batch):
            pred = model(batch[0])
            recon = ((pred - batch[1]) ** 2).mean()
            total = recon.clamp(max=100.0)
            opt.zero_grad()
            total.backward()
            opt.step()
            return recon.item()
    """)),
]
