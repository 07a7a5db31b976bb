"""The recall corpus, round 14 part C: the bulk rules TW205, TW209 and TW513 on the classes that
sets 17 and 18 (the tuning sets of round 14) missed or reported falsely - each written in our own
words and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds
these to its lists.

TW205's false findings of set 18 had one thing in common: the code never runs. Lint's test of
dead code took a second copy of a helper (``farthest_point_sample`` pasted into three utility
modules, ``misc.py`` copied into a sub-project) for a use of the first, and it could not see a
fallback for a missing argument that every call passes (``if x_mask is None: x_mask =
torch.ones(...)``). The project shapes keep a true neighbour next to each look-alike, so that the
class is removed without losing the pitfall beside it.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW205 a helper copied into several modules (ruling R5)
# Point-cloud projects paste the same utilities into a sub-project (`utils/misc.py` and
# `seg/misc.py`, each with `drop_points` and `jitter`): a definition in the other module is not a
# call of this one. What each copy's own users call stays reported.
_MISC = d("""
    import torch
    def jitter(pc, sigma=0.01):
        return pc + torch.randn(pc.shape).to(pc.device) * sigma
    def drop_points(pc, n):
        pad = torch.zeros(pc.size(0), n - pc.size(1), 3).to(pc.device)
        return torch.cat([pc, pad], dim=1)
""")
PROJECTS += [
    ProjectShape("TW205", "a helper pasted into two modules that nothing calls (quiet); the helper beside it that each "
                 "copy's training script calls every step (found in both)",
                 {"utils/__init__.py": "", "utils/misc.py": _MISC, "seg/misc.py": _MISC,
                  "main.py": d("""
                      from utils import misc
                      def train(model, loader, opt):
                          for pc, y in loader:
                              loss = model(misc.jitter(pc.cuda()), y.cuda())
                              opt.zero_grad()
                              loss.backward()
                              opt.step()
                  """),
                  "seg/train_seg.py": d("""
                      import misc
                      def train(model, loader, opt):
                          for pc, y in loader:
                              loss = model(misc.jitter(pc.cuda()), y.cuda())
                              opt.zero_grad()
                              loss.backward()
                              opt.step()
                  """)},
                 (("utils/misc.py", 3), ("seg/misc.py", 3))),
]

# A sampling helper defined in two modules of a sub-project; the dataset imports it from one of
# them by name. The other copy, and the set-abstraction class beside it that no model builds,
# never run.
_SAMPLER = d("""
    import torch
    import torch.nn as nn
    def far_sample(xyz, k):
        b, n, _ = xyz.shape
        picked = torch.zeros(b, k, dtype=torch.long).to(xyz.device)
        far = torch.randint(0, n, (b,)).to(xyz.device)
        for i in range(k):
            picked[:, i] = far
            far = (xyz - xyz[:, far]).norm(dim=-1).argmax(-1)
        return picked
    class SetAbstraction(nn.Module):
        def forward(self, xyz):
            return xyz[:, far_sample(xyz, 32)]
    class FeatureProp(nn.Module):
        def forward(self, xyz, feats):
            return feats.gather(1, xyz.argmin(-1, keepdim=True))
""")
PROJECTS += [
    ProjectShape("TW205", "a sampler copied into two modules: the copy a dataset imports by name (found), the other one "
                 "and its unused module class (quiet)",
                 {"seg/point_util.py": _SAMPLER, "seg/models/point_util2.py": _SAMPLER,
                  "seg/models/net.py": d("""
                      import torch.nn as nn
                      from point_util2 import FeatureProp
                      class Net(nn.Module):
                          def __init__(self):
                              super().__init__()
                              self.fp = FeatureProp()
                          def forward(self, x, f):
                              return self.fp(x, f)
                  """),
                  "seg/data.py": d("""
                      import torch
                      from torch.utils.data import Dataset
                      from point_util import far_sample
                      class Points(Dataset):
                          def __getitem__(self, i):
                              pts = torch.load(self.files[i]).cuda()
                              return pts[0, far_sample(pts, 1024)[0]]
                  """)},
                 (("seg/point_util.py", 5), ("seg/point_util.py", 6))),
]

# ------------------------------------------------------------- TW205 a fallback for an argument every call passes
# A flow model's squeeze helper makes a mask of ones when it is given none, and a VAE draws its
# latent when `decode` gets none; the only callers always pass them. A padding helper that one
# caller calls without a mask, and a `decode` some call gives `z=None`, keep the finding.
PROJECTS += [
    ProjectShape("TW205", "`if mask is None:` fallbacks of a module function and a method that every call passes (quiet); "
                 "the same fallbacks with one call leaving the argument out (found)",
                 {"flows/ops.py": d("""
                      import torch
                      def squeeze(x, mask=None, n=2):
                          b, c, t = x.size()
                          x = x[:, :, :t // n * n].reshape(b, c * n, t // n)
                          if mask is not None:
                              mask = mask[:, :, n - 1::n]
                          else:
                              mask = torch.ones(b, 1, t // n).to(device=x.device, dtype=x.dtype)
                          return x * mask, mask
                      def pad_mask(x, mask=None):
                          if mask is None:
                              mask = torch.ones(x.size(0), 1, x.size(2)).to(x.device)
                          return x * mask
                  """),
                  "flows/model.py": d("""
                      import torch
                      import torch.nn as nn
                      from flows import ops
                      class Decoder(nn.Module):
                          def forward(self, x, x_mask):
                              x, x_mask = ops.squeeze(x, x_mask, 2)
                              y = ops.pad_mask(x, x_mask) + ops.pad_mask(x)
                              return x.squeeze(1), y
                      class VAE(nn.Module):
                          def forward(self, s, a):
                              z = self.encode(s, a)
                              return self.decode(s, z)
                          def decode(self, s, z=None):
                              if z is None:
                                  z = torch.randn(s.shape[0], self.latent).to(s.device).clamp(-0.5, 0.5)
                              return self.net(torch.cat([s, z], -1))
                      class Prior(nn.Module):
                          def forward(self, s):
                              return self.sample(s, z=None)
                          def sample(self, s, z=None):
                              if z is None:
                                  z = torch.randn(s.shape[0], self.latent).to(s.device)
                              return self.net(torch.cat([s, z], -1))
                      class Agent:
                          def act(self, s):
                              z = self.encoder(s)
                              return self.vae.decode(s, z)
                  """)},
                 (("flows/ops.py", 12), ("flows/model.py", 22))),
]

# ------------------------------------------------------------- TW205 a queue made once, maybe restored from a checkpoint
# A self-supervised script starts its feature queue at some epoch: `queue = None`, restored from
# a file when one exists, then made in the epoch loop under `... and queue is None`. Once per run.
# A store set back to None at the end of every pass is made again each time.
FIND += [
    Shape("TW205", "a state set back to None at the end of every pass and made again under `if h is None:`", d("""
        import torch
        def run(model, loader, opt):
            h = None
            for x, y in loader:
                if h is None:
                    h = torch.zeros(1, x.size(0), 64).cuda()
                out, h = model(x.cuda(), h)
                loss = (out - y.cuda()).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                h = None
    """), 6),
]
QUIET += [
    Shape("TW205", "look-alike: a queue made in the epoch loop when it is still None, maybe restored from a file before", d("""
        import os
        import torch
        def main(args, model, loader, opt):
            queue = None
            path = os.path.join(args.dump, "queue.pth")
            if os.path.isfile(path):
                queue = torch.load(path)["queue"]
            for epoch in range(args.epochs):
                if args.queue_length > 0 and epoch >= args.queue_start and queue is None:
                    queue = torch.zeros(2, args.queue_length, args.dim).cuda()
                queue = train(loader, model, opt, queue)
                torch.save({"queue": queue}, path)
    """)),
]

# ------------------------------------------------------------- TW205 a rollout's device tensors written per step
# A decision-transformer rollout keeps its history in tensors made with `device=`; the action the
# model predicts goes to NumPy for the environment and is then converted back and written into
# the history - a second crossing of a value that was on the device. The return-to-go computed
# from the device history itself is no copy at all.
FIND += [
    Shape("TW205", "predicted action pulled to NumPy for env.step, then torch.as_tensor(...) written back into a device tensor", d("""
        import torch
        @torch.no_grad()
        def rollout(model, env, target, device="cuda"):
            model.to(device).eval()
            actions = torch.zeros(1, model.horizon, model.act_dim, device=device)
            returns = torch.zeros(1, model.horizon + 1, device=device)
            returns[:, 0] = target
            for t in range(model.horizon):
                pred = model(actions[:, :t + 1], returns[:, :t + 1])
                act = pred[0, -1].cpu().numpy()
                obs, reward, done, _ = env.step(act)
                actions[:, t] = torch.as_tensor(act)
                returns[:, t + 1] = torch.as_tensor(returns[:, t] - reward)
                if done:
                    break
    """), 12),
]
QUIET += [
    Shape("TW205", "look-alike: torch.as_tensor of arithmetic on a device tensor, written into another", d("""
        import torch
        def discount(critic, rewards, gamma, device):
            critic.to(device)
            returns = torch.zeros(len(rewards) + 1, device=device)
            for t in reversed(range(len(rewards))):
                returns[t] = torch.as_tensor(returns[t + 1] * gamma + rewards[t])
            return returns
    """)),
]

# ------------------------------------------------------------- TW205 NumPy indices into a tensor kept on the device
# Offline-RL scripts keep the whole dataset in a replay buffer made on the training device
# (`torch.zeros((size, dim), device=device)` in `__init__`) and sample it with
# `np.random.randint(...)` every step: the index array crosses the bus at its first use (and again
# at each of the others). Point-cloud fine-tuning picks a random subset of sampled points with
# `np.random.choice` on the output of a GPU sampling op. `torch.randint(..., device=...)` draws
# them where they are used. A buffer kept on the host, or in NumPy, is indexed where it lives.
PROJECTS += [
    ProjectShape("TW205", "np.random indices into a replay buffer made with device= (found) and into a GPU op's output (found); "
                 "the same into a buffer on the CPU, in NumPy, or built only with its device left at \"cpu\" (quiet)",
                 {"offline.py": d("""
                     import numpy as np
                     import torch
                     class DeviceBuffer:
                         def __init__(self, size, state_dim, device="cpu"):
                             self._states = torch.zeros((size, state_dim), dtype=torch.float32, device=device)
                             self._rewards = torch.zeros((size, 1), dtype=torch.float32, device=device)
                             self._size = size
                         def sample(self, batch_size):
                             idx = np.random.randint(0, self._size, size=batch_size)
                             return self._states[idx], self._rewards[idx]
                     class HostBuffer:
                         def __init__(self, size, state_dim):
                             self._states = torch.zeros((size, state_dim), device="cpu")
                             self._actions = np.zeros((size, 4), dtype=np.float32)
                             self._size = size
                         def sample(self, batch_size):
                             idx = np.random.randint(0, self._size, size=batch_size)
                             return self._states[idx], self._actions[idx]
                     class DefaultBuffer:
                         def __init__(self, size, state_dim, device="cpu"):
                             self._states = torch.zeros((size, state_dim), device=device)
                         def sample(self, batch_size):
                             idx = np.random.randint(0, len(self._states), size=batch_size)
                             return self._states[idx]
                     def train(agent, buffer, opt, steps, device):
                         agent.to(device)
                         extra = DefaultBuffer(1000, 8)
                         for _ in range(steps):
                             loss = agent.loss(buffer.sample(256))
                             opt.zero_grad()
                             loss.backward()
                             opt.step()
                 """),
                 "finetune.py": d("""
                     import numpy as np
                     import torch
                     from pointops import furthest_point_sample
                     def train(model, loader, opt, npoints):
                         for points, label in loader:
                             points = points.cuda()
                             idx = furthest_point_sample(points, 1200)
                             idx = idx[:, np.random.choice(1200, npoints, False)]
                             loss = model(points, idx, label.cuda())
                             opt.zero_grad()
                             loss.backward()
                             opt.step()
                 """)},
                 (("offline.py", 9), ("finetune.py", 8))),
]

# ------------------------------------------------------------- TW205 moved with .type(torch.cuda.FloatTensor)
# YOLO-style box decoders pick `FloatTensor = torch.cuda.FloatTensor if x.is_cuda else
# torch.FloatTensor` and build the grid of every output map with `torch.linspace(...)...type(FloatTensor)`
# in each forward: `.type()` with a CUDA tensor type copies the CPU tensor across like `.cuda()`.
# `.type()` with a CPU type or a dtype only casts.
FIND += [
    Shape("TW205", "decode box: torch.linspace(...).repeat(...).type(FloatTensor), FloatTensor the CUDA type when x is on the GPU", d("""
        import torch
        import torch.nn as nn
        class DecodeBox(nn.Module):
            def forward(self, x):
                b, a, h, w = x.shape
                FloatTensor = torch.cuda.FloatTensor if x.is_cuda else torch.FloatTensor
                grid_x = torch.linspace(0, w - 1, w).repeat(h, 1).repeat(b * a, 1, 1).view(x.shape).type(FloatTensor)
                scale = torch.Tensor([w, h, w, h]).type(FloatTensor)
                return (x + grid_x) / scale[0]
    """), 7),
    Shape("TW205", "a per-batch mask moved with .type(torch.cuda.FloatTensor) written out", d("""
        import torch
        def train(model, loader, opt):
            for x, y in loader:
                mask = torch.ones(x.size(0), 1).type(torch.cuda.FloatTensor)
                loss = (model(x.cuda()) * mask).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 4),
]
QUIET += [
    Shape("TW205", "look-alike: .type() with a CPU tensor type and with a dtype; a CUDA type used as a constructor", d("""
        import torch
        import torch.nn as nn
        class DecodeBox(nn.Module):
            def forward(self, x, half=False):
                dtype = torch.float16 if half else torch.float32
                grid = torch.linspace(0, 1, x.size(-1)).type(torch.FloatTensor)
                steps = torch.arange(x.size(-1)).type(dtype)
                FloatTensor = torch.cuda.FloatTensor if x.is_cuda else torch.FloatTensor
                anchors = FloatTensor([[10, 13], [16, 30]])
                return x.cpu() + grid + steps, anchors
    """)),
]

# ------------------------------------------------------------- TW209 a convolution bound in the branches of a stage builder
# A VGG for CIFAR builds each stage in a loop: `conv = nn.Conv2d(c_in, c_out, 3)` for the first
# block and `conv = nn.Conv2d(c_out, c_out, 3)` in the `else`, then `stage.add_module(f"conv{i}",
# conv)` and, under `if self.use_bn:`, a BatchNorm2d added right after. Each branch's convolution
# keeps a bias that the BatchNorm cancels.
FIND += [
    Shape("TW209", "stage builder: conv bound in if/else, add_module(conv) then add_module(BatchNorm2d) under if self.use_bn", d("""
        import torch.nn as nn
        class Network(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.use_bn = cfg.use_bn
                self.stage1 = self._make_stage(3, 64, 2)
            def _make_stage(self, in_channels, out_channels, n_blocks):
                stage = nn.Sequential()
                for index in range(n_blocks):
                    if index == 0:
                        conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
                    else:
                        conv = nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1)
                    stage.add_module(f"conv{index}", conv)
                    if self.use_bn:
                        stage.add_module(f"bn{index}", nn.BatchNorm2d(out_channels))
                    stage.add_module(f"relu{index}", nn.ReLU(inplace=True))
                return stage
    """), 11),
]
QUIET += [
    Shape("TW209", "look-alike: the branches' convolutions without bias, and a name bound again to a conv and its activation", d("""
        import torch.nn as nn
        class Network(nn.Module):
            def _make_stage(self, in_channels, out_channels, n_blocks):
                stage = nn.Sequential()
                for index in range(n_blocks):
                    if index == 0:
                        conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
                    else:
                        conv = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
                    stage.add_module(f"conv{index}", conv)
                    stage.add_module(f"bn{index}", nn.BatchNorm2d(out_channels))
                return stage
            def _make_head(self, c):
                head = nn.Sequential()
                conv = nn.Conv2d(c, c, 3)
                conv = nn.Sequential(conv, nn.ReLU())
                head.add_module("conv", conv)
                head.add_module("bn", nn.BatchNorm2d(c))
                return head
    """)),
]

# ------------------------------------------------------------- TW205 made in each branch, moved once after
# Shake-shake blocks draw their mixing weights in one of three branches (`torch.rand(1)`,
# `torch.rand(b).view(b, 1, 1, 1)`, or a constant 0.5 at evaluation) and move whichever was made
# with one `alpha = alpha.to(device)` every forward: each branch makes a tensor on the host. A
# branch that fills its tensor from data before the move keeps quiet.
PROJECTS += [
    ProjectShape("TW205", "mixing weights drawn in each branch of an if/elif/else and moved after it (found, each branch); "
                 "a branch that writes data into its tensor first (quiet; its else found at the move)",
                 {"shake.py": d("""
                     import torch
                     import torch.nn as nn
                     def get_alpha(batch_size, shake, per_image, device):
                         if shake and not per_image:
                             alpha = torch.rand(1)
                         elif shake and per_image:
                             alpha = torch.rand(batch_size).view(batch_size, 1, 1, 1)
                         else:
                             alpha = torch.FloatTensor([0.5])
                         alpha = alpha.to(device)
                         return alpha
                     def get_weights(batch_size, counts, device):
                         if counts is not None:
                             w = torch.zeros(batch_size)
                             w[:len(counts)] = torch.as_tensor(counts)
                         else:
                             w = torch.ones(batch_size)
                         w = w.to(device)
                         return w
                     class ShakeBlock(nn.Module):
                         def forward(self, x, counts=None):
                             a = get_alpha(x.size(0), self.training, True, x.device)
                             return self.b1(x) * a + self.b2(x) * (1 - a) * get_weights(x.size(0), counts, x.device)
                 """)},
                 (("shake.py", 5), ("shake.py", 7), ("shake.py", 10), ("shake.py", 18))),
]

# A flow decoder keeps its normalising layers in a list of modules and runs them all with the
# mask (`for f in flows: x = f(x, x_mask)`, in reverse when sampling): the `forward`'s fallback
# for a missing mask never runs. A norm layer its owner calls once without the mask keeps it.
PROJECTS += [
    ProjectShape("TW205", "a module forward's mask fallback where its builder calls every instance with the mask, through "
                 "a list of modules and reversed() (quiet); one an owner calls without the mask (found)",
                 {"layers.py": d("""
                     import torch
                     import torch.nn as nn
                     class ActNorm(nn.Module):
                         def forward(self, x, x_mask=None, reverse=False):
                             if x_mask is None:
                                 x_mask = torch.ones(x.size(0), 1, x.size(2)).to(device=x.device, dtype=x.dtype)
                             return (x - self.bias) * x_mask
                     class MaskedNorm(nn.Module):
                         def forward(self, x, mask=None):
                             if mask is None:
                                 mask = torch.ones(x.size(0), 1, x.size(2)).to(x.device)
                             return x * mask
                 """),
                 "model.py": d("""
                     import torch.nn as nn
                     import layers
                     class Decoder(nn.Module):
                         def __init__(self, c, n):
                             super().__init__()
                             self.flows = nn.ModuleList()
                             for _ in range(n):
                                 self.flows.append(layers.ActNorm(c))
                             self.norm = layers.MaskedNorm()
                         def forward(self, x, x_mask, reverse=False):
                             flows = reversed(self.flows) if reverse else self.flows
                             for f in flows:
                                 x = f(x, x_mask, reverse=reverse)
                             return self.norm(x)
                 """)},
                 (("layers.py", 11),)),
]

# ------------------------------------------------------------- TW205 once per setting, in a function run once per epoch
# DeepCluster-style training clusters its memory bank once per epoch, for each number of
# prototypes given on the command line (`for K in args.nmb_prototypes:`): the centroids it starts
# from are made once per setting and epoch. The k-means iterations inside allocate every pass.
PROJECTS += [
    ProjectShape("TW205", "centroids made per command-line setting in a clustering step run once per epoch (quiet); the "
                 "k-means iterations' buffers (found)",
                 {"main_cluster.py": d("""
                     import argparse
                     import torch
                     parser = argparse.ArgumentParser()
                     parser.add_argument("--nmb_prototypes", default=[3000, 3000], type=int, nargs="+")
                     parser.add_argument("--feat_dim", default=128, type=int)
                     args = parser.parse_args()
                     def cluster_memory(bank, n_iters=10):
                         for K in args.nmb_prototypes:
                             centroids = torch.empty(K, args.feat_dim).cuda(non_blocking=True)
                             for it in range(n_iters):
                                 assign = (bank @ centroids.t()).argmax(1)
                                 sums = torch.zeros(K, args.feat_dim).cuda(non_blocking=True)
                                 sums.index_add_(0, assign, bank)
                                 centroids = sums
                         return centroids
                     def train(loader, model, optimizer, bank):
                         centroids = cluster_memory(bank)
                         for x in loader:
                             loss = model(x.cuda(), centroids)
                             optimizer.zero_grad()
                             loss.backward()
                             optimizer.step()
                     def main(loader, model, optimizer, bank):
                         for epoch in range(100):
                             train(loader, model, optimizer, bank)
                 """)},
                 (("main_cluster.py", 12),)),
]

# ------------------------------------------------------------- TW205 used only by a dataset a module's demo builds (ruling R5)
# A dataset module the training script imports keeps a second dataset class that only its own
# `if __name__ == "__main__":` demo builds; that class calls a sampler of a utilities module per
# item. The sampler never runs in training or evaluation. The dataset the script builds keeps
# the finding of the helper it calls.
PROJECTS += [
    ProjectShape("TW205", "a sampler called only by a dataset class built in another module's __main__ demo (quiet); a "
                 "helper the dataset the script builds calls per item (found)",
                 {"point_util.py": d("""
                     import torch
                     def far_sample(xyz, k):
                         picked = [0]
                         for i in range(k):
                             floor = torch.full((xyz.size(0),), 1e-3).to(xyz.device)
                             picked.append(int(((xyz - xyz[picked[-1]]).norm(dim=-1) + floor).argmax()))
                         return picked
                     def jitter(xyz):
                         return xyz + torch.randn(xyz.shape).to(xyz.device) * 0.01
                 """),
                 "dataset.py": d("""
                     import torch
                     from torch.utils.data import Dataset
                     from point_util import far_sample, jitter
                     class ShapeLoader(Dataset):
                         def __getitem__(self, i):
                             pts = torch.load(self.files[i]).cuda()
                             return pts[far_sample(pts, 1024)]
                     class PartDataset(Dataset):
                         def __getitem__(self, i):
                             return jitter(torch.load(self.files[i]).cuda())
                     if __name__ == "__main__":
                         data = ShapeLoader()
                         for i in range(10):
                             print(data[i].shape)
                 """),
                 "main.py": d("""
                     from torch.utils.data import DataLoader
                     from dataset import PartDataset
                     def main(model, opt):
                         for x in DataLoader(PartDataset(), batch_size=8):
                             loss = model(x)
                             opt.zero_grad()
                             loss.backward()
                             opt.step()
                 """)},
                 (("point_util.py", 9),)),
]

# ------------------------------------------------------------- TW205 a random mask filled row by row with NumPy
# Masked point-cloud autoencoders draw which patches to hide in NumPy on every forward: a zero
# array filled row by row with a shuffled `np.hstack([np.zeros(g - k), np.ones(k)])`, converted
# with `torch.from_numpy(...).to(torch.bool)` (a cast) and moved to the centres' device. Rows
# filled from the batch's own data have to cross anyway.
PROJECTS += [
    ProjectShape("TW205", "a mask filled row by row with shuffled NumPy arrays, cast and moved every forward (found); rows "
                 "copied from the caller's data (quiet)",
                 {"mae.py": d("""
                     import numpy as np
                     import torch
                     import torch.nn as nn
                     class MaskEncoder(nn.Module):
                         def _mask_rand(self, center):
                             B, G, _ = center.shape
                             k = int(self.ratio * G)
                             overall = np.zeros([B, G])
                             for i in range(B):
                                 row = np.hstack([np.zeros(G - k), np.ones(k)])
                                 np.random.shuffle(row)
                                 overall[i, :] = row
                             overall = torch.from_numpy(overall).to(torch.bool)
                             return overall.to(center.device)
                         def _mask_given(self, center, keep):
                             B, G, _ = center.shape
                             overall = np.zeros([B, G])
                             for i in range(B):
                                 overall[i, :] = keep[i]
                             overall = torch.from_numpy(overall).to(torch.bool)
                             return overall.to(center.device)
                         def forward(self, x, center, keep=None):
                             mask = self._mask_rand(center) if keep is None else self._mask_given(center, keep)
                             return self.blocks(x[~mask])
                 """)},
                 (("mae.py", 14),)),
]

# ------------------------------------------------------------- TW205 pulled to the host for .unique() and sent back
# YOLO ports run non-maximum suppression per image: the class column of the detections is pulled
# to the host for `.unique()` and sent back under `if prediction.is_cuda:` - two crossings and a
# synchronisation per image for an operation torch runs on the GPU. Kept on the host, or moved
# without any work done there, it stays quiet.
FIND += [
    Shape("TW205", "NMS: detections[:, -1].cpu().unique(), then .cuda() under if prediction.is_cuda", d("""
        import torch
        def non_max_suppression(prediction, conf_thres=0.5):
            output = [None] * len(prediction)
            for i, image_pred in enumerate(prediction):
                image_pred = image_pred[image_pred[:, 4] >= conf_thres]
                detections = torch.cat((image_pred[:, :5], image_pred[:, 5:].argmax(1, keepdim=True).float()), 1)
                unique_labels = detections[:, -1].cpu().unique()
                if prediction.is_cuda:
                    unique_labels = unique_labels.cuda()
                for c in unique_labels:
                    output[i] = detections[detections[:, -1] == c]
            return output
    """), 7),
]
QUIET += [
    Shape("TW205", "look-alike: labels kept on the host after .cpu().unique(), and a tensor moved back without work on the host", d("""
        import torch
        def summarize(prediction, model):
            out = []
            for image_pred in prediction:
                labels = image_pred[:, -1].cpu().unique()
                out.append(labels.tolist())
                scores = image_pred[:, 4].cpu()
                if prediction.is_cuda:
                    scores = scores.cuda()
                out.append(model(scores))
            return out
    """)),
]

# ------------------------------------------------------------- TW205 a table built from numbers by a helper, moved each call
# A speech enhancer resamples inside every forward: `kernel_up(zeros).to(x)`, the helper building
# a sinc kernel from `th.hann_window(4 * zeros + 1)` and `th.linspace(...)` with only its number
# argument. A beta-TCVAE loss takes `importance_matrix(batch_size, n_data).to(z.device)` from a
# utilities module every step, the helper filling `torch.Tensor(b, b).fill_(1 / m)` from the two
# numbers. Helpers that use an argument as data, or read a file, build something else.
PROJECTS += [
    ProjectShape("TW205", "helpers that build a kernel or weight matrix from numbers alone, moved by a forward pass and a loss "
                 "every call (found); helpers given data or reading a file (quiet)",
                 {"resample.py": d("""
                     import math
                     import torch as th
                     from torch.nn import functional as F
                     def kernel_up(zeros=56):
                         win = th.hann_window(4 * zeros + 1, periodic=False)
                         t = th.linspace(-zeros + 0.5, zeros - 0.5, 2 * zeros)
                         t *= math.pi
                         return (th.sin(t) / t * win[1::2]).view(1, 1, -1)
                     def centred(x, n):
                         return th.zeros(n) + x.mean()
                     def upsample(x, zeros=56):
                         kernel = kernel_up(zeros).to(x)
                         bias = centred(x.cpu(), x.size(-1)).to(x)
                         return F.conv1d(x, kernel, padding=zeros) + bias
                 """),
                 "util/__init__.py": "",
                 "util/mathx.py": d("""
                     import numpy as np
                     import torch
                     def importance_matrix(batch_size, dataset_size):
                         n, m = dataset_size, batch_size - 1
                         w = torch.Tensor(batch_size, batch_size).fill_(1 / m)
                         w.view(-1)[::m + 1] = 1 / n
                         w[m - 1, 0] = (n - m) / (n * m)
                         return w.log()
                     def saved_prior(size):
                         return torch.from_numpy(np.load("prior.npy")[:size])
                 """),
                 "losses.py": d("""
                     import torch.nn as nn
                     from util.mathx import importance_matrix, saved_prior
                     class TCLoss(nn.Module):
                         def forward(self, z, n_data):
                             b, d = z.shape
                             w = importance_matrix(b, n_data).to(z.device)
                             p = saved_prior(d).to(z.device)
                             return (z.logsumexp(1) * w.sum(1)).mean() + p.sum()
                 """),
                 "model.py": d("""
                     import torch.nn as nn
                     from resample import upsample
                     class Enhancer(nn.Module):
                         def forward(self, x):
                             return self.net(upsample(x))
                 """)},
                 (("resample.py", 12), ("losses.py", 6))),
]

# ------------------------------------------------------------- TW205 a module of the project built and moved every forward
# A speech-enhancement augmentation builds a low-pass filter bank in each `forward`:
# `dsp.LowPassFilters([lo, hi]).to(wav.device)`, the bank's `__init__` computing its window and
# filters with torch on the CPU and registering them as buffers - copied to the device each call.
# A model built once before the training loop, and a filter bank built in `__init__`, are set-up.
PROJECTS += [
    ProjectShape("TW205", "a filter-bank module built and moved in an augmentation's forward (found); the same module "
                 "built in __init__, and a model built once in train() (quiet)",
                 {"audio/__init__.py": "",
                  "audio/dsp.py": d("""
                      import numpy as np
                      import torch
                      class LowPass(torch.nn.Module):
                          def __init__(self, cutoffs, width=32):
                              super().__init__()
                              window = torch.hamming_window(2 * width + 1, periodic=False)
                              t = np.arange(-width, width + 1, dtype=np.float32)
                              filters = [2 * c * torch.from_numpy(np.sinc(2 * c * t)) * window for c in cutoffs]
                              self.register_buffer("filters", torch.stack(filters).unsqueeze(1))
                          def forward(self, x):
                              return torch.nn.functional.conv1d(x, self.filters)
                  """),
                  "audio/augment.py": d("""
                      import random
                      import torch.nn as nn
                      from . import dsp
                      class BandMask(nn.Module):
                          def __init__(self):
                              super().__init__()
                              self.fixed = dsp.LowPass([0.1, 0.2])
                          def forward(self, wav):
                              lo = random.random() * 0.4
                              bank = dsp.LowPass([lo, lo + 0.05]).to(wav.device)
                              return wav - bank(wav) + self.fixed(wav)
                  """),
                  "train.py": d("""
                      import torch
                      from audio.dsp import LowPass
                      from audio.augment import BandMask
                      def train(loader, device):
                          model = LowPass([0.25]).to(device)
                          aug = BandMask().to(device)
                          opt = torch.optim.Adam(model.parameters())
                          for wav in loader:
                              loss = model(aug(wav.to(device))).abs().mean()
                              opt.zero_grad()
                              loss.backward()
                              opt.step()
                  """)},
                 (("audio/augment.py", 10),)),
]
