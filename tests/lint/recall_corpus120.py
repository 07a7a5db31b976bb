"""The recall corpus, round 34 part B: TW403 per function (ruling R17) - a library module that a
CPU-capable script imports, where only GPU-only scripts call some of its functions (a script that
imports ``NN, kNN`` but calls only ``kNN``). Written in our own words, reduced to the shape, with
look-alikes that must keep their findings. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

_PROBE = '''import torch


def exact_probe(net, bank, loader):
    labels = torch.LongTensor(loader.labels).cuda()
    for x, y in loader:
        y = y.cuda()
    return labels


def soft_probe(net, bank, loader, k):
    labels = torch.LongTensor(loader.labels).cuda()
    votes = torch.zeros(k, 10).cuda()
    return _score(labels, votes)


def _score(labels, votes):
    return (votes.argmax(1) == labels).float().mean()
'''

_CPU_RUN = '''import argparse
import torch
from probe import exact_probe, soft_probe

parser = argparse.ArgumentParser()
parser.add_argument("--k", type=int, default=20)
args = parser.parse_args()
device = "cuda" if torch.cuda.is_available() else "cpu"
net = torch.nn.Linear(4, 4).to(device)
acc = soft_probe(net, None, [], args.k)
'''

_GPU_RUN = '''import torch
from probe import exact_probe

def main():
    net = torch.nn.Linear(4, 4).cuda()
    exact_probe(net, None, [])

if __name__ == "__main__":
    main()
'''

PROJECTS += [
    ProjectShape("TW403", "a function the CPU-capable script imports but never calls; only the GPU-only script runs it", {
        "probe.py": _PROBE, "cpu_run.py": _CPU_RUN, "gpu_run.py": _GPU_RUN,
    }, (("probe.py", 12), ("probe.py", 13))),
    ProjectShape("TW403", "the same function, imported under another name by the CPU script: reached", {
        "probe.py": _PROBE, "gpu_run.py": _GPU_RUN,
        "cpu_run.py": _CPU_RUN.replace("import exact_probe,", "import exact_probe as exact,").replace(
            "acc = soft", "exact(net, None, [])\nacc = soft"),
    }, (("probe.py", 5), ("probe.py", 7), ("probe.py", 12), ("probe.py", 13))),
    ProjectShape("TW403", "the CPU script reaches it through a function of the module itself (soft_probe -> exact_probe)", {
        "probe.py": _PROBE.replace("    return _score(labels, votes)", "    exact_probe(net, bank, loader)\n    return _score(labels, votes)"),
        "cpu_run.py": _CPU_RUN, "gpu_run.py": _GPU_RUN,
    }, (("probe.py", 5), ("probe.py", 7), ("probe.py", 12), ("probe.py", 13))),
    ProjectShape("TW403", "the CPU script picks the function by a run-time name (getattr(probe, name)): every one may run", {
        "probe.py": _PROBE, "gpu_run.py": _GPU_RUN,
        "cpu_run.py": _CPU_RUN.replace("from probe import exact_probe, soft_probe", "import probe").replace(
            "acc = soft_probe(", "acc = getattr(probe, args.fn)(").replace(
            'parser.add_argument("--k"', 'parser.add_argument("--fn", default="soft_probe")\nparser.add_argument("--k"'),
    }, (("probe.py", 5), ("probe.py", 7), ("probe.py", 12), ("probe.py", 13))),
]
