"""The recall corpus, round 34 part C: TW402's same-process reloads of a module-level path - a
script's ``test()`` reloading the file its ``train(epoch)`` saved to the same global variable,
called after the training loop (NRI-like scripts, set 63) - written in our own words, with
look-alikes that must stay found. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

_HEAD = """
    import argparse, os
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true", help="run the test on the CPU")
    parser.add_argument("--out", default="runs")
    parser.add_argument("--restore", default="")
    parser.add_argument("--evaluate", action="store_true")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu"
    net = torch.nn.Linear(4, 2).to(device)
    weights_file = os.path.join(args.out, "net.pt")
"""

# ------------------------------------------------------------- TW402 test() reloads the global the training function saved
QUIET += [
    Shape("TW402", "look-alike: test() reloads the module-level path train(epoch) saved, after the loop", d(_HEAD + """
    def train(epoch, best):
        loss = net(torch.randn(8, 4, device=device)).sum()
        if loss.item() < best:
            torch.save(net.state_dict(), weights_file)
        return loss.item()
    def test():
        net.load_state_dict(torch.load(weights_file))
        net.eval()
    best = 1e9
    for epoch in range(10):
        best = min(best, train(epoch, best))
    test()
    """)),
    Shape("TW402", "look-alike: evaluate() reloads the global checkpoint path fit() wrote, in a __main__ block", d(_HEAD + """
    def fit():
        for step in range(100):
            net(torch.randn(8, 4, device=device)).sum().backward()
        torch.save({"net": net.state_dict()}, weights_file)
    def evaluate():
        state = torch.load(weights_file)
        net.load_state_dict(state["net"])
    if __name__ == "__main__":
        fit()
        evaluate()
    """)),
]
FIND += [
    Shape("TW402", "test() of the global path also runs alone under --evaluate (another run's file)", d(_HEAD + """
    def train(epoch):
        torch.save(net.state_dict(), weights_file)
    def test():
        net.load_state_dict(torch.load(weights_file))
    if args.evaluate:
        test()
    else:
        for epoch in range(10):
            train(epoch)
        test()
    """), 16),
    Shape("TW402", "test() reads a global the training function never saves to (a --restore file)", d(_HEAD + """
    restore_file = args.restore
    def train(epoch):
        torch.save(net.state_dict(), weights_file)
    def test():
        net.load_state_dict(torch.load(restore_file))
    for epoch in range(10):
        train(epoch)
    test()
    """), 17),
    Shape("TW402", "train() saves to its own local variable of the same name, test() reads the global", d(_HEAD + """
    def train(epoch):
        weights_file = "epoch_%d.pt" % epoch
        torch.save(net.state_dict(), weights_file)
    def test():
        net.load_state_dict(torch.load(weights_file))
    for epoch in range(10):
        train(epoch)
    test()
    """), 17),
]
