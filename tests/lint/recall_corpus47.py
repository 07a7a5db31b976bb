"""The recall corpus, round 18 part A: TW403 redesigned for precision on never-seen code. A file
with no CPU path of its own is reported only where a CPU run of the project reaches it (an entry
point that chooses a "cpu" device, parses a CPU option or sets a device flag from the GPU check,
and the project modules it imports). Look-alikes from the GPU-only projects of sets 21, 25 and 26,
written in our own words: they must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW403 a GPU id option is no CPU path
_GRAPH_LAYERS = d("""
    import torch
    import torch.nn as nn
    class GraphConv(nn.Module):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.weight = nn.Parameter(torch.FloatTensor(n_in, n_out).cuda())
        def forward(self, x, adj):
            return torch.matmul(adj, x) @ self.weight
""")
_GPU_ID_TRAIN = d("""
    import argparse
    import os
    import torch
    from layers import GraphConv
    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", dest="cuda", default="1", help="the GPU to use")
        args = parser.parse_args()
        os.environ["CUDA_VISIBLE_DEVICES"] = args.cuda
        model = GraphConv(16, 8).cuda()
        for adj, feats in batches():
            model(feats.cuda(), adj.cuda()).sum().backward()
    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: a --cuda option that holds a GPU id written into CUDA_VISIBLE_DEVICES", {
        "train.py": _GPU_ID_TRAIN, "layers.py": _GRAPH_LAYERS, "data.py": "import torch\ndef batches():\n    return []\n"}),
]

# ------------------------------------------------------------- TW403 a "cpu" choice in a helper is no CPU run
PROJECTS += [
    ProjectShape("TW403", "look-alike: only a vendored layer chooses 'cpu' for a tensor of its own; the factory and "
                 "the training scripts hard-code CUDA", {
        "networks/vit.py": d("""
            import torch
            def drop_path_mask(shape):
                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                return torch.rand(shape, device=device)
        """),
        "networks/factory.py": d("""
            from networks.vit import drop_path_mask
            def net_factory(name):
                if name == "unet":
                    return UNet().cuda()
                return ViTSeg().cuda()
        """),
        "train_a.py": d("""
            from networks.factory import net_factory
            model = net_factory("unet")
            for x, y in loader:
                loss = model(x.cuda()).sum()
                loss.backward()
        """),
        "val.py": d("""
            import torch
            def evaluate(model, image):
                return model(torch.from_numpy(image).cuda())
        """)}),
]

# ------------------------------------------------------------- TW403 a scratch kernel test beside a real fallback
PROJECTS += [
    ProjectShape("TW403", "look-alike: a scratch test of a CUDA kernel that no script imports, beside a script that "
                 "falls back to the CPU", {
        "common/kernel_test.py": d("""
            import torch
            from common.ops import jagged_max
            values = torch.arange(10.0).cuda()
            lens = torch.LongTensor([3, 7]).cuda()
            print(jagged_max(values, lens))
        """),
        "common/ops.py": "def jagged_max(v, n):\n    return v.max()\n",
        "train.py": d("""
            import torch
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = build().to(device)
        """)}),
]

# ------------------------------------------------------------- TW403 guards the rule did not see
PROJECTS += [
    ProjectShape("TW403", "look-alike: a lambda chosen under the caller's own flag (if to_gpu: cast = lambda ...)", {
        "buffer.py": d("""
            import numpy as np
            from torch import Tensor
            class Buffer:
                def sample(self, n, to_gpu=False):
                    idx = np.random.choice(len(self.obs), n)
                    if to_gpu:
                        cast = lambda x: Tensor(x).cuda()
                    else:
                        cast = lambda x: Tensor(x)
                    return cast(self.obs[idx])
        """),
        "main.py": d("""
            import argparse
            import torch
            from buffer import Buffer
            parser = argparse.ArgumentParser()
            parser.add_argument("--use_gpu", action="store_true")
            config = parser.parse_args()
            device = "cuda" if config.use_gpu else "cpu"
            batch = Buffer().sample(32, to_gpu=config.use_gpu)
        """)}),
]
QUIET += [
    Shape("TW403", "look-alike: a network that asserts it is not on the CPU ('CPU not implemented')", d("""
        import torch
        import torch.nn as nn
        def to_cuda(x, gpu_id=0):
            return x.cuda(gpu_id)
        class Net(nn.Module):
            def set_device(self, device):
                if device == "cpu":
                    self.cpu()
                else:
                    self.cuda(device)
            def predict(self, x):
                assert self.get_device() != "cpu", "CPU not implemented"
                weights = torch.ones(x.shape).cuda()
                return self(to_cuda(x)) * weights
    """)),
]
