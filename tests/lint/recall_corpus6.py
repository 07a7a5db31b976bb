"""The recall corpus, sixth round: the classes a first look at six more fresh projects (issue 22,
fifth held-out set, now a tuning set) found missing - each written in our own words and reduced
to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW104 helper method
# An experiment class: vali/test switch the model to eval mode, then run it through a helper
# method of the same class that the training loop shares (so the helper has no no_grad itself).
_EXPERIMENT = d("""
    import torch
    import torch.nn as nn
    class Experiment:
        def __init__(self, model, device):
            self.model = model
            self.device = device
        def _run_batch(self, x, y):
            x = x.float().to(self.device)
            out = self.model(x)
            return out, y.to(self.device)
        def train(self, loader, opt, criterion):
            self.model.train()
            for x, y in loader:
                opt.zero_grad()
                pred, true = self._run_batch(x, y)
                loss = criterion(pred, true)
                loss.backward()
                opt.step()
        def vali(self, loader, criterion):
            self.model.eval()
            losses = []
            for x, y in loader:
                pred, true = self._run_batch(x, y)
                losses.append(criterion(pred.detach().cpu(), true.detach().cpu()))
            self.model.train()
            return losses
        def forecast(self, loader):
            self.model.eval()
            preds = []
            for x, y in loader:
                pred, _ = self._run_batch(x, y)
                preds.append(pred.detach().cpu().numpy())
            return preds
""")
FIND += [
    Shape("TW104", "time-series experiments: vali() runs the model through the class's batch helper after .eval()",
          _EXPERIMENT, 23),
    Shape("TW104", "the same in a method not named for evaluation (forecast), after .eval()", _EXPERIMENT, 31),
]
QUIET += [
    Shape("TW104", "the evaluation loops run the helper under no_grad / inference_mode", _EXPERIMENT.replace(
        "        losses = []\n", "        losses = []\n        torch.set_grad_enabled(False)\n").replace(
        "        preds = []\n        for x, y in loader:\n            pred, _ = self._run_batch(x, y)\n",
        "        preds = []\n        for x, y in loader:\n            with torch.inference_mode():\n"
        "                pred, _ = self._run_batch(x, y)\n")),
    Shape("TW104", "the helper switches autograd off itself", _EXPERIMENT.replace(
        "        out = self.model(x)", "        with torch.set_grad_enabled(self.model.training):\n            out = self.model(x)")),
    Shape("TW104", "after .eval(), a helper of the class that loads data and runs no model", d("""
        import torch
        class Experiment:
            def __init__(self, model):
                self.model = model
            def _get_data(self, flag):
                return torch.utils.data.DataLoader(self.datasets[flag], batch_size=32)
            def vali(self):
                self.model.eval()
                loader = self._get_data('val')
                return len(loader)
    """)),
    Shape("TW104", "after .eval() (BatchNorm frozen), a helper that takes a training step", d("""
        import torch
        class Finetuner:
            def __init__(self, model, opt):
                self.model, self.opt = model, opt
            def _step(self, x, y):
                loss = torch.nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.opt.step()
            def finetune(self, loader):
                self.model.eval()
                for x, y in loader:
                    self._step(x, y)
    """)),
]
PROJECTS += [
    ProjectShape("TW104", "the batch helper is named for prediction: reported once, at its own forward pass, not at its caller", {"model.py": d("""
        import torch
        class Model:
            def __init__(self, network):
                self.network = network
            def _predict_batch(self, x):
                return self.network(x).cpu().detach().numpy()
            def _predict_epoch(self, loader):
                self.network.eval()
                scores = [self._predict_batch(x) for x, _ in loader]
                self.network.train()
                return scores
    """)}, (("model.py", 6),)),
]

# ----------------------------------------------------------------------------------- TW205 scaled and retyped
FIND += [
    Shape("TW205", "attention maps returned for display: (torch.ones(...) / L).type_as(attn).to(attn.device) every forward", d("""
        import torch
        import torch.nn as nn
        class ProbAttention(nn.Module):
            def forward(self, q, k, v):
                B, H, L, _ = q.shape
                attn = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
                attns = (torch.ones([B, H, L, L]) / L).type_as(attn).to(attn.device)
                return attn @ v, attns
    """), 7),
]
QUIET += [
    Shape("TW205", "the same map built where it is used, or scaled by a device tensor, or in __init__ once", d("""
        import torch
        import torch.nn as nn
        class ProbAttention(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.register_buffer("prior", (torch.ones([n, n]) / n).type_as(torch.zeros(1)))
            def forward(self, q, k, v):
                B, H, L, _ = q.shape
                attn = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
                attns = torch.full([B, H, L, L], 1.0 / L, dtype=attn.dtype, device=attn.device)
                scale = (torch.ones_like(attn) / attn.sum()).type_as(attn)
                return attn @ v * scale, attns
    """)),
]

# ----------------------------------------------------------------------------------- TW205 joined, then moved
_DECODER_INPUT = d("""
    import torch
    def run(model, loader, device, label_len, pred_len):
        for x, y in loader:
            x = x.float().to(device)
            dec_inp = torch.zeros([y.shape[0], pred_len, y.shape[-1]]).float()
            dec_inp = torch.cat([y[:, :label_len, :], dec_inp], dim=1).float().to(device)
            out = model(x, dec_inp)
""")
FIND += [
    Shape("TW205", "forecasting decoders: a zero placeholder joined with the CPU batch by torch.cat and moved in the next "
          "statement, every batch", _DECODER_INPUT, 6),
]
QUIET += [
    Shape("TW205", "the placeholder made on the device, and the batch moved before the join", _DECODER_INPUT.replace(
        "torch.zeros([y.shape[0], pred_len, y.shape[-1]]).float()",
        "torch.zeros([y.shape[0], pred_len, y.shape[-1]], device=device)").replace(
        "torch.cat([y[:, :label_len, :], dec_inp], dim=1).float().to(device)",
        "torch.cat([y[:, :label_len, :].float().to(device), dec_inp], dim=1)")),
    Shape("TW205", "the placeholder made once before the loop, and one filled on the host before the join", d("""
        import torch
        def run(model, loader, device, n):
            pad = torch.zeros([1, n])
            for x, y in loader:
                out = model(torch.cat([x, pad], dim=1).to(device))
                mask = torch.zeros([x.shape[0], n])
                mask[:, 0] = y
                out = model(torch.cat([x, mask], dim=1).to(device))
    """)),
]
