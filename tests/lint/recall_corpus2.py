"""The recall corpus, second round: the classes a first look at eleven fresh projects (issue 22)
found missing or falsely reported after the first round - each written in our own words and
reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these
to its lists; the entries of one rule sit together.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW402
_EXP_BASE = d("""
    import os
    import torch
    class ExpBase:
        def __init__(self, args):
            self.args = args
            self.device = self._acquire_device()
            self.model = self._build_model().to(self.device)
        def _acquire_device(self):
            if self.args.use_gpu:
                return torch.device("cuda:{}".format(self.args.gpu))
            return torch.device("cpu")
""")
_EARLY_STOP = d("""
    import torch
    class EarlyStopping:
        def __init__(self, patience=7):
            self.patience = patience
            self.best = None
        def __call__(self, val_loss, model, path):
            if self.best is None or val_loss < self.best:
                self.best = val_loss
                torch.save(model.state_dict(), path + "/" + "checkpoint.pth")
""")
PROJECTS += [
    ProjectShape("TW402", "experiment classes: test-only load of a GPU-trained checkpoint; the device is chosen "
                 "in the base class of another module, the best checkpoint reloaded after training is not flagged", {
        "exp_basic.py": _EXP_BASE,
        "tools.py": _EARLY_STOP,
        "exp_forecast.py": d("""
            import os
            import torch
            from exp_basic import ExpBase
            from tools import EarlyStopping
            class ExpForecast(ExpBase):
                def train(self, setting):
                    path = os.path.join(self.args.checkpoints, setting)
                    stopper = EarlyStopping()
                    opt = torch.optim.Adam(self.model.parameters())
                    for epoch in range(self.args.epochs):
                        for x, y in self.loader:
                            x, y = x.to(self.device), y.to(self.device)
                            loss = ((self.model(x) - y) ** 2).mean()
                            opt.zero_grad()
                            loss.backward()
                            opt.step()
                        stopper(loss.item(), self.model, path)
                    best_model_path = path + "/" + "checkpoint.pth"
                    self.model.load_state_dict(torch.load(best_model_path))
                    return self.model
                def test(self, setting, test=0):
                    if test:
                        self.model.load_state_dict(torch.load(os.path.join("./checkpoints/" + setting, "checkpoint.pth")))
                    for x, y in self.test_loader:
                        out = self.model(x.to(self.device))
        """),
    }, (("exp_forecast.py", 23),)),
    ProjectShape("TW402", "graph benchmarks: an embedding one script saves after .cpu() and another loads; a "
                 "GPU checkpoint of another name is still flagged", {
        "node2vec.py": d("""
            import torch
            def save_embedding(model):
                torch.save(model.embedding.weight.data.cpu(), "embedding.pt")
        """),
        "train.py": d("""
            import torch
            def save(model):
                torch.save(model.state_dict(), "model.pt")
            def main(data, model, device):
                data.x = torch.cat([data.x, torch.load("embedding.pt")], dim=-1)
                model.load_state_dict(torch.load("model.pt"))
                model.to(device)
                data = data.to(device)
            if __name__ == "__main__":
                main(None, None, "cuda")
        """),
    }, (("train.py", 6),)),
    ProjectShape("TW402", "NLP fine-tuning: the pickled training arguments loaded back by the prediction script", {
        "trainer.py": d("""
            import os
            import torch
            class Trainer:
                def __init__(self, args, model):
                    self.args = args
                    self.device = "cuda" if torch.cuda.is_available() else "cpu"
                    self.model = model.to(self.device)
                def save_model(self):
                    self.model.save_pretrained(self.args.model_dir)
                    torch.save(self.args, os.path.join(self.args.model_dir, "training_args.bin"))
        """),
        "predict.py": d("""
            import os
            import torch
            def get_args(cfg):
                return torch.load(os.path.join(cfg.model_dir, "training_args.bin"))
            def predict(cfg, model):
                device = "cuda" if torch.cuda.is_available() else "cpu"
                model.to(device)
        """),
    }),
    ProjectShape("TW402", "graph preprocessing: an adjacency matrix built from NumPy and cached, loaded by the "
                 "training module", {
        "data.py": d("""
            import torch
            from torch_sparse import SparseTensor
            class DataModule:
                def prepare_data(self):
                    path = f"{self.root}/paper_to_paper.pt"
                    edge_index = torch.from_numpy(self.dataset.edge_index())
                    adj_t = SparseTensor(row=edge_index[0], col=edge_index[1], sparse_sizes=(self.n, self.n))
                    torch.save(adj_t.to_symmetric(), path)
                def setup(self):
                    path = f"{self.root}/paper_to_paper.pt"
                    self.adj_t = torch.load(path)
                    self.x = self.x.to(self.device)
        """),
        "train.py": "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n",
    }),
    ProjectShape("TW402", "look-alike: a checkpoint file name one script writes from host data and another from "
                 "GPU tensors stays flagged", {
        "export.py": d("""
            import torch
            def export(model):
                torch.save({k: v.cpu() for k, v in model.state_dict().items()}, "checkpoint.pt")
        """),
        "train.py": d("""
            import torch
            def train(model, loader, opt, device="cuda"):
                model.to(device)
                for x, y in loader:
                    loss = model(x.to(device)).sum()
                    loss.backward()
                    opt.step()
                torch.save(model.state_dict(), "checkpoint.pt")
            def resume(model):
                model.load_state_dict(torch.load("checkpoint.pt"))
        """),
    }, (("train.py", 10),)),
]
QUIET += [
    Shape("TW402", "course notebooks: the state dict saved a few cells above is loaded back in the same session", d("""
        import torch
        from pathlib import Path
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = Net().to(device)
        MODEL_SAVE_PATH = Path("models") / "model_0.pth"
        torch.save(obj=model.state_dict(), f=MODEL_SAVE_PATH)
        loaded = Net()
        loaded.load_state_dict(torch.load(f=MODEL_SAVE_PATH))
    """)),
    Shape("TW402", "a training script that keeps its best state dict and reloads it at the end", d("""
        import torch
        def train(model, loader, opt, device):
            best = 0
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x.to(device)).sum()
                    loss.backward()
                    opt.step()
                acc = evaluate(model)
                if acc > best:
                    torch.save(model.state_dict(), "results/model.pt")
            model.load_state_dict(torch.load("results/model.pt"))
    """)),
]
FIND += [
    Shape("TW402", "resuming: the checkpoint is loaded before the loop that saves it (another run wrote it)", d("""
        import torch
        def train(model, loader, opt, args):
            model.cuda()
            if args.resume:
                state = torch.load(args.log_path + "/ckpt.pth")
                model.load_state_dict(state[0])
            for x, y in loader:
                loss = model(x.cuda()).sum()
                loss.backward()
                opt.step()
                torch.save([model.state_dict()], args.log_path + "/ckpt.pth")
    """), 5),
]
