"""The recall corpus, round 34 part A: TW207 per-row pad stripping in a sequence decoder's forward
path that sets 12, 45 and 58 missed - each written in our own words and reduced to its shape, with
look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

_LOOP = """
    net = Seq2Seq().cuda()
    for src, tgt in loader:
        loss = net(src.cuda(), tgt.cuda())
        loss.backward()
        opt.step()
"""

# ------------------------------------------------------------- TW207 [y[y != PAD] for y in padded] in a decoder
# A decoder strips the padding of each target row before adding start/end tokens and embedding
# them with its own layers: one boolean selection (a wait for the GPU) per row, every step
# (sets 12 Speech-Transformer, 45 end2end-asr-pytorch, 58 Listen-Attend-Spell).
FIND += [
    Shape("TW207", "pad stripping per target row in a helper the decoder's forward calls", d("""
        import torch
        import torch.nn as nn
        PAD = -1
        class Seq2Seq(nn.Module):
            def split_targets(self, targets):
                rows = [t[t != PAD] for t in targets]
                bos = rows[0].new([1])
                return pad_rows([torch.cat([bos, r]) for r in rows])
            def forward(self, src, tgt):
                tin = self.split_targets(tgt)
                return self.emb(tin).sum()
    """) + d(_LOOP), 6),
    Shape("TW207", "pad stripping per row in the forward itself, pad id an attribute of a constants module", d("""
        import torch
        import torch.nn as nn
        import consts
        class Seq2Seq(nn.Module):
            def forward(self, src, padded):
                seqs = [row[row != consts.PAD_ID] for row in padded]
                return self.emb(pad_rows(seqs)).sum()
    """) + d(_LOOP), 6),
]
QUIET += [
    Shape("TW207", "look-alike: the method moves the stripped rows to the device itself (host rows)", d("""
        import torch
        import torch.nn as nn
        PAD = -1
        class Seq2Seq(nn.Module):
            def forward(self, src, tgt):
                rows = [t[t != PAD] for t in tgt]
                tin = pad_rows(rows).to(src.device)
                return self.emb(tin).sum()
    """) + d(_LOOP)),
    Shape("TW207", "look-alike: pad stripping in an inference-only decode method", d("""
        import torch
        import torch.nn as nn
        PAD = -1
        class Seq2Seq(nn.Module):
            def forward(self, src, tgt):
                return self.emb(tgt).sum()
            @torch.no_grad()
            def decode(self, hyps):
                return [h[h != PAD] for h in hyps]
    """) + d(_LOOP)),
    Shape("TW207", "look-alike: pad stripping in a plain function of a collate (no module)", d("""
        import torch
        PAD = -1
        def collate(batch):
            rows = [b[b != PAD] for b in batch]
            return rows
    """) + d(_LOOP)),
    Shape("TW207", "look-alike: per-row selection with a mask of another tensor (lengths known on the host)", d("""
        import torch
        import torch.nn as nn
        class Seq2Seq(nn.Module):
            def forward(self, src, tgt):
                rows = [t[keep] for t in tgt]
                return self.emb(pad_rows(rows)).sum()
    """) + d(_LOOP)),
]
