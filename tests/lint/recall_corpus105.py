"""The recall corpus, round 30 part D (TW402): evaluation loads that reach a checkpoint through a
project helper - the script hands the loaded dict to a restoring helper (``load_state(net, ckpt)``),
or the load sits in a helper of a GPU module that an evaluation script calls - and a save helper
whose dict holds the model and optimizer handed to it (not "plain numbers"). Written in our own
words; look-alikes must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW402 a checkpoint handed to a restoring helper
# A GPU-only project: training wraps the net in DataParallel on CUDA and saves it; the evaluation
# (or export) script loads the file and hands it to the project's `copy_weights(net, ckpt)`.
_TRAIN = d("""
    import torch
    from nets import PoseNet
    def main(args):
        net = torch.nn.DataParallel(PoseNet()).cuda()
        opt = torch.optim.Adam(net.parameters())
        for x, y in loader:
            loss = (net(x.cuda()) - y.cuda()).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
        torch.save({"state_dict": net.module.state_dict(), "optimizer": opt.state_dict()}, "ckpt.pth")
    if __name__ == "__main__":
        main(None)
""")
_HELPER = d("""
    import collections
    def copy_weights(net, ckpt):
        src = ckpt["state_dict"]
        own = net.state_dict()
        merged = collections.OrderedDict()
        for k, v in own.items():
            merged[k] = src[k] if k in src else v
        net.load_state_dict(merged)
""")
_EVAL = d("""
    import argparse
    import torch
    from nets import PoseNet
    from helpers.weights import copy_weights
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--ckpt")
        args = p.parse_args()
        net = PoseNet()
        ckpt = torch.load(args.ckpt)
        copy_weights(net, ckpt)
        net = net.cuda().eval()
        with torch.no_grad():
            print(net(torch.zeros(1, 3, 8, 8).cuda()))
""")
_EXPORT = d("""
    import argparse
    import torch
    from nets import PoseNet
    from helpers.weights import copy_weights
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--ckpt")
        args = p.parse_args()
        net = PoseNet()
        copy_weights(net, torch.load(args.ckpt))
        torch.onnx.export(net, torch.zeros(1, 3, 8, 8), "net.onnx")
""")
_NETS = "import torch\nclass PoseNet(torch.nn.Module):\n    pass\n"
PROJECTS += [
    ProjectShape("TW402", "evaluation script hands the loaded checkpoint to the project's restoring helper", {
        "train.py": _TRAIN, "helpers/weights.py": _HELPER, "val.py": _EVAL, "nets.py": _NETS,
    }, (("val.py", 10),)),
    ProjectShape("TW402", "export script with no device code restores a GPU-saved checkpoint through the helper", {
        "train.py": _TRAIN, "helpers/weights.py": _HELPER, "export.py": _EXPORT, "nets.py": _NETS,
    }, (("export.py", 10),)),
    ProjectShape("TW402", "look-alike: the helper builds its own model from the dict (a loader, no model handed in)", {
        "train.py": _TRAIN, "nets.py": _NETS, "val.py": _EVAL,
        "helpers/weights.py": "def copy_weights(net, ckpt):\n    print(sorted(ckpt))\n    return net\n",
    }),
    ProjectShape("TW402", "look-alike: the helper restores with map_location already in the script", {
        "train.py": _TRAIN, "helpers/weights.py": _HELPER, "nets.py": _NETS,
        "val.py": _EVAL.replace("torch.load(args.ckpt)", "torch.load(args.ckpt, map_location='cpu')"),
    }),
]

# ------------------------------------------------------------- TW402 a GPU module's load helper that an evaluation script calls
_UTILS = d("""
    import torch
    from nets import PoseNet
    def restore(path):
        ckpt = torch.load(path)
        model = PoseNet()
        model.load_state_dict(ckpt["state_dict"])
        return model.cuda()
    def restore_all(root, net, head, with_optim=True):
        net.load_state_dict(torch.load(root + "/net.pth"))
        if head is not None:
            head.load_state_dict(torch.load(root + "/head.pth"))
        if with_optim:
            net.opt.load_state_dict(torch.load(root + "/net_opt.pth"))
    def save_all(root, net, head):
        torch.save(net.state_dict(), root + "/net.pth")
        torch.save(head.state_dict(), root + "/head.pth")
        torch.save(net.opt.state_dict(), root + "/net_opt.pth")
        torch.save({"state_dict": net.state_dict()}, root + "/ckpt.pth")
""")
_TEST = d("""
    import argparse
    import torch
    from utils import restore, restore_all
    from nets import PoseNet
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--ckpt")
        args = p.parse_args()
        model = restore(args.ckpt).eval()
        net = PoseNet().cuda()
        restore_all(args.ckpt, net, None, with_optim=False)
        with torch.no_grad():
            print(model(torch.zeros(1).cuda()), net(torch.zeros(1).cuda()))
""")
_TRAIN2 = d("""
    import torch
    from utils import save_all
    from nets import PoseNet
    if __name__ == "__main__":
        net, head = PoseNet().cuda(), PoseNet().cuda()
        for x in loader:
            loss = head(net(x.cuda())).sum()
            loss.backward(); net.opt.step()
        save_all("runs", net, head)
""")
PROJECTS += [
    ProjectShape("TW402", "load helper of a GPU module, called by an evaluation script (only the branches it selects)", {
        "utils.py": _UTILS, "test.py": _TEST, "train.py": _TRAIN2, "nets.py": _NETS,
    }, (("utils.py", 4), ("utils.py", 9))),
    ProjectShape("TW402", "look-alike: only the training script calls the load helpers (GPU-only resume, R2)", {
        "utils.py": _UTILS, "train.py": _TRAIN2.replace("from utils import save_all", "from utils import save_all, restore, restore_all")
        .replace("save_all(\"runs\", net, head)", "save_all(\"runs\", net, head)\n    restore_all(\"runs\", net, head)"),
        "nets.py": _NETS,
    }),
    ProjectShape("TW402", "look-alike: the evaluation helper restores a torchvision network (metric weights from elsewhere)", {
        "utils.py": d("""
            import torch
            from torchvision.models import inception_v3
            def load_scorer(path):
                state = torch.load(path)
                scorer = inception_v3(aux_logits=False)
                scorer.load_state_dict(state)
                return scorer.cuda()
            def save(net):
                torch.save(net.state_dict(), "net.pth")
        """),
        "test.py": "import argparse\nfrom utils import load_scorer\nif __name__ == '__main__':\n    a = argparse.ArgumentParser().parse_args()\n    s = load_scorer(a.scorer)\n",
        "train.py": _TRAIN2.replace("from utils import save_all", "from utils import save").replace('save_all("runs", net, head)', "save(net)"),
        "nets.py": _NETS,
    }),
]

# ------------------------------------------------------------- TW402 a save helper's dict of the model and optimizer handed to it
_SAVE_UTILS = d("""
    import torch
    def save_checkpoint(epoch, model, optimizer, acc):
        state = {"epoch": epoch, "acc": acc, "model": model, "optimizer": optimizer}
        torch.save(state, "checkpoint.tar")
""")
_CONFIG = "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
_RESUME = d("""
    import argparse
    import torch
    from config import device
    from utils import save_checkpoint
    from nets import PoseNet
    def train(args):
        if args.checkpoint is None:
            model = PoseNet().to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        else:
            checkpoint = torch.load(args.checkpoint)
            model = checkpoint["model"]
            optimizer = checkpoint["optimizer"]
        for x, y in loader:
            loss = model(x.to(device)).sum()
            optimizer.zero_grad(); loss.backward(); optimizer.step()
        save_checkpoint(1, model, optimizer, 0.5)
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--checkpoint")
        train(p.parse_args())
""")
PROJECTS += [
    ProjectShape("TW402", "resume of a checkpoint whose save helper pickles the model and optimizer it is given", {
        "utils.py": _SAVE_UTILS, "config.py": _CONFIG, "train.py": _RESUME, "nets.py": _NETS,
    }, (("train.py", 11),)),
    ProjectShape("TW402", "look-alike: the save helper is given statistics only (numbers and a host array)", {
        "utils.py": d("""
            import torch
            def save_checkpoint(epoch, mean, optimizer_name, acc):
                torch.save({"epoch": epoch, "acc": acc, "mean": mean, "optimizer_name": optimizer_name}, "checkpoint.tar")
        """),
        "config.py": _CONFIG, "nets.py": _NETS,
        "train.py": _RESUME.replace('model = checkpoint["model"]', 'model = PoseNet().to(device); print(checkpoint["mean"])')
        .replace('optimizer = checkpoint["optimizer"]', "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)")
        .replace("save_checkpoint(1, model, optimizer, 0.5)", "save_checkpoint(1, 0.1, 'sgd', 0.5)"),
    }),
]
