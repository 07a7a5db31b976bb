"""The recall corpus, round 25 part B: classes the tuning sets of round 25 (sets 39 and 40) showed
for TW203 - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet (or, for a fixed false class, keep firing). ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW203 loaders of parsed JSON records, tensor-free collate
# A summarization or QA project: the dataset parses one JSON file per item (directly or through a base
# class's __getitem__), the collate function only regroups, filters or tokenizes the strings, and the
# tensors are built later by a batcher. Nothing in a batch is a tensor: pin_memory has nothing to pin.
_RECORDS = d("""
    import json
    import os
    from torch.utils.data import Dataset
    class JsonRecords(Dataset):
        def __init__(self, root):
            self.root = root
            self.n = len(os.listdir(root))
        def __len__(self):
            return self.n
        def __getitem__(self, i):
            with open(os.path.join(self.root, f"{i}.json")) as f:
                rec = json.loads(f.read())
            return rec
""")
PROJECTS += [
    ProjectShape("TW203", "look-alike: subclass picks fields of a base's JSON record, nested collate splits words", {
        "data/records.py": _RECORDS,
        "train.py": d("""
            import torch
            from torch.utils.data import DataLoader
            from data.records import JsonRecords
            class Pairs(JsonRecords):
                def __getitem__(self, i):
                    rec = super().__getitem__(i)
                    src, tgt = rec["source"], rec["target"]
                    return [src[k] for k in rec["keep"]], tgt[:4]
            def loaders(bs):
                def regroup(batch):
                    srcs, tgts = zip(*batch)
                    return [s.lower().split() for s in srcs], list(tgts)
                return DataLoader(Pairs("train"), batch_size=bs, num_workers=4, collate_fn=regroup)
            def train(model, bs):
                for srcs, tgts in loaders(bs):
                    ids = torch.tensor([len(s) for s in srcs]).cuda()
                    model(ids)
        """),
    }),
    ProjectShape("TW203", "look-alike: JSON records from json.load, collate of another module filters with a library helper", {
        "batching.py": d("""
            import torch
            from toolz import concat
            def flatten(batch):
                out = list(filter(bool, concat(batch)))
                return out
        """),
        "train.py": d("""
            import json
            import torch
            from torch.utils.data import DataLoader, Dataset
            from batching import flatten
            class Questions(Dataset):
                def __init__(self, files):
                    self.files = files
                def __len__(self):
                    return len(self.files)
                def __getitem__(self, i):
                    item = json.load(open(self.files[i]))
                    return item["question"], item["answers"]
            def train(model, files):
                loader = DataLoader(Questions(files), batch_size=8, num_workers=2, collate_fn=flatten)
                for batch in loader:
                    model(torch.zeros(len(batch)).cuda())
        """),
    }),
]
FIND += [
    Shape("TW203", "JSON records, but the collate function builds tensors from them", d("""
        import json
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Scores(Dataset):
            def __init__(self, files):
                self.files = files
            def __len__(self):
                return len(self.files)
            def __getitem__(self, i):
                rec = json.load(open(self.files[i]))
                return rec["ids"], rec["label"]
        def collate(batch):
            ids, labels = zip(*batch)
            return torch.tensor(ids), torch.tensor(labels)
        def train(model, files):
            loader = DataLoader(Scores(files), batch_size=8, num_workers=2, collate_fn=collate)
            for x, y in loader:
                model(x.cuda(), y.cuda())
    """), 16),
    Shape("TW203", "JSON records with the default collate (numbers become tensors)", d("""
        import json
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Scores(Dataset):
            def __init__(self, files):
                self.files = files
            def __len__(self):
                return len(self.files)
            def __getitem__(self, i):
                rec = json.load(open(self.files[i]))
                return rec["ids"], rec["label"]
        def train(model, files):
            loader = DataLoader(Scores(files), batch_size=8, num_workers=2)
            for x, y in loader:
                model(x.cuda(), y.cuda())
    """), 13),
    Shape("TW203", "JSON records through a collate that pads with torch's pad_sequence", d("""
        import json
        import torch
        from torch.nn.utils.rnn import pad_sequence
        from torch.utils.data import DataLoader, Dataset
        class Scores(Dataset):
            def __init__(self, files):
                self.files = files
            def __len__(self):
                return len(self.files)
            def __getitem__(self, i):
                rec = json.load(open(self.files[i]))
                return rec["ids"]
        def pad(batch):
            return pad_sequence(batch)
        def train(model, files):
            loader = DataLoader(Scores(files), batch_size=8, num_workers=2, collate_fn=pad)
            for x in loader:
                model(x.cuda())
    """), 16),
]
