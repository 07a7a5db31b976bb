"""The recall corpus, second round: the classes a first look at eleven fresh projects (issue 22)
found missing or falsely reported after the first round - each written in our own words and
reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these
to its lists; the entries of one rule sit together.
"""

from __future__ import annotations

import textwrap

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
            resume(torch.nn.Linear(2, 2))  # (called: code nothing calls is dead, METHOD R5)
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

# ----------------------------------------------------------------------------------- TW207
# a full-batch step (one optimizer step per call, its loss read on the host); the shapes below differ
# only in how often the caller evaluates
_FULL_BATCH_STEP = d("""
        import torch
        def train(model, data, train_idx, optimizer):
            optimizer.zero_grad()
            out = model(data.x)[train_idx]
            loss = torch.nn.functional.nll_loss(out, data.y[train_idx])
            loss.backward()
            optimizer.step()
            return loss.item()
""")
_VOCODER_LOOP = d("""
    import torch
    from audio import mel_spectrogram
    from losses import discriminator_loss
    def train(generator, mpd, loader, optim_d, device):
        generator = generator.to(device)
        mpd = torch.nn.parallel.DistributedDataParallel(mpd.to(device), device_ids=[0])
        optim_g = torch.optim.AdamW(generator.parameters(), lr=2e-4)
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            y_hat = generator(x)
            y_hat_mel = mel_spectrogram(y_hat.squeeze(1), 1024)
            optim_d.zero_grad()
            real, fake = mpd(y, y_hat.detach())
            loss_d, r_losses, g_losses = discriminator_loss(real, fake)
            loss_d.backward()
            optim_d.step()
""")
PROJECTS += [
    ProjectShape("TW207", "vocoder GAN: a feature helper of another module tests the generator's output in an if "
                 "(if torch.min(y) < -1.), a loss helper calls .item() for every sub-discriminator", {
        "audio.py": d("""
            import torch
            def mel_spectrogram(y, n_fft):
                if torch.min(y) < -1.0:
                    print("min value is", torch.min(y))
                if y.abs().max() > 1.0:
                    print("clipping")
                return torch.stft(y, n_fft, return_complex=True).abs()
        """),
        "losses.py": d("""
            import torch
            def discriminator_loss(real_outputs, fake_outputs):
                loss = 0
                r_losses, g_losses = [], []
                for dr, dg in zip(real_outputs, fake_outputs):
                    r_loss = torch.mean((1 - dr) ** 2)
                    g_loss = torch.mean(dg ** 2)
                    loss += r_loss + g_loss
                    r_losses.append(r_loss.item())
                    g_losses.append(g_loss.item())
                return loss, r_losses, g_losses
        """),
        "train.py": _VOCODER_LOOP,
    }, (('losses.py', 9), ('losses.py', 10), ('train.py', 11), ('train.py', 14),)),  # the lines of mel_spectrogram(...) and discriminator_loss(...)
    ProjectShape("TW207", "look-alike: helpers that only look at shapes and settings of what they are given", {
        "audio.py": d("""
            import torch
            def mel_spectrogram(y, n_fft):
                if y.dim() == 3 or y.shape[-1] < n_fft:
                    y = y.squeeze(1)
                if n_fft not in CACHE:
                    CACHE[n_fft] = torch.hann_window(n_fft)
                return torch.stft(y, n_fft, return_complex=True).abs()
        """),
        "losses.py": d("""
            import torch
            def discriminator_loss(real_outputs, fake_outputs):
                loss = 0
                for dr, dg in zip(real_outputs, fake_outputs):
                    loss += torch.mean((1 - dr) ** 2) + torch.mean(dg ** 2)
                return loss, [], []
        """),
        "train.py": _VOCODER_LOOP,
    }),
    ProjectShape("TW207", "course notebooks: an accuracy helper imported from a helper module, torch.eq(...).sum().item()", {
        "helper_functions.py": d("""
            import torch
            def accuracy_fn(y_true, y_pred):
                correct = torch.eq(y_true, y_pred).sum().item()
                return correct / len(y_pred) * 100
        """),
        "notebook.py": d("""
            import torch
            from helper_functions import accuracy_fn
            device = "cuda" if torch.cuda.is_available() else "cpu"
            def train_step(model, data_loader, loss_fn, optimizer, accuracy_fn):
                train_acc = 0
                for X, y in data_loader:
                    X, y = X.to(device), y.to(device)
                    y_pred = model(X)
                    loss = loss_fn(y_pred, y)
                    train_acc += accuracy_fn(y_true=y, y_pred=y_pred.argmax(dim=1))
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """),
    }, (('helper_functions.py', 3), ('notebook.py', 10),)),
    ProjectShape("TW207", "metric learning: metric objects called every step; the project's metric __call__ reads "
                 "pred.eq(target).cpu().sum()", {
        "metrics.py": d("""
            class AccumulatedAccuracy:
                def __init__(self):
                    self.correct = 0
                def __call__(self, outputs, target, loss):
                    pred = outputs[0].data.max(1, keepdim=True)[1]
                    self.correct += pred.eq(target[0].data.view_as(pred)).cpu().sum()
                    return self.correct
        """),
        "trainer.py": d("""
            def train_epoch(loader, model, loss_fn, optimizer, cuda, metrics):
                for data, target in loader:
                    if cuda:
                        data, target = data.cuda(), target.cuda()
                    outputs = model(data)
                    loss = loss_fn(outputs, target)
                    loss.backward()
                    optimizer.step()
                    for metric in metrics:
                        metric((outputs,), (target,), loss)
        """),
    }, (("trainer.py", 10),)),
]
FIND += [
    Shape("TW207", "TW207's doc example: an accuracy helper of the file, (out.argmax(1) == y).float().mean().item()", d("""
        import torch
        def calculate_accuracy(out, y):
            return (out.argmax(1) == y).float().mean().item()
        def train(model, loader, opt, device):
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                out = model(x)
                loss = torch.nn.functional.cross_entropy(out, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                acc = calculate_accuracy(out, y)
    """), 12),
    Shape("TW207", "graph mini-batches: a test on a mask of the batch object moved to the device", d("""
        import torch
        def train(model, loader, optimizer, device):
            for data in loader:
                data = data.to(device)
                if data.train_mask.sum() == 0:
                    continue
                out = model(data.x, data.edge_index)
                loss = torch.nn.functional.nll_loss(out, data.y)
                loss.backward()
                optimizer.step()
    """), 5),
    Shape("TW207", "graph mini-batches: the last graph index of the moved batch tested every step", d("""
        import torch
        def train(model, loader, optimizer, device):
            for batch in loader:
                batch = batch.to(device)
                if batch.x.shape[0] == 1 or batch.batch[-1] == 0:
                    continue
                loss = model(batch).mean()
                loss.backward()
                optimizer.step()
    """), 5),
    Shape("TW207", "graph mini-batches: the number of training nodes of the moved batch read every step", d("""
        import torch
        def train(model, loader, optimizer, device):
            total = 0
            for data in loader:
                data = data.to(device)
                loss = model(data).mean()
                loss.backward()
                optimizer.step()
                total += data.train_mask.sum().item()
    """), 9),
    Shape("TW207", "knowledge-graph embeddings: a regularisation term added to the loss read in a branch of the step", d("""
        import torch
        def train_step(model, optimizer, iterator, args):
            optimizer.zero_grad()
            pos, neg = next(iterator)
            pos, neg = pos.cuda(), neg.cuda()
            loss = (model(pos).mean() + model(neg).mean()) / 2
            if args.regularization != 0.0:
                regularization = args.regularization * model.entity_embedding.norm(p=3) ** 3
                loss = loss + regularization
                log = {"regularization": regularization.item()}
            loss.backward()
            optimizer.step()
            return loss
    """), 10),
    Shape("TW207", "masked losses: boolean-mask indexing with a comparison (outputs[mask == 0]) every step", d("""
        import torch
        def train(model, loader, criterion, optimizer, device):
            for batch_x, _ in loader:
                batch_x = batch_x.float().to(device)
                mask = torch.rand(batch_x.shape, device=device)
                outputs = model(batch_x * mask)
                loss = criterion(outputs[mask == 0], batch_x[mask == 0])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """), 7),
    Shape("TW207", "molecular property prediction: NaN labels masked with is_labeled = y == y", d("""
        import torch
        def train(model, loader, optimizer, device):
            for batch in loader:
                batch = batch.to(device)
                pred = model(batch)
                is_labeled = batch.y == batch.y
                loss = torch.nn.functional.mse_loss(pred.to(torch.float32)[is_labeled], batch.y[is_labeled])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """), 7),
    Shape("TW207", "node classification: the output selected with the batch's train mask", d("""
        import torch
        def train(model, loader, optimizer, device):
            for data in loader:
                data = data.to(device)
                out = model(data.x, data.edge_index)[data.train_mask]
                loss = torch.nn.functional.nll_loss(out, data.y[data.train_mask])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """), 5),
    Shape("TW207", "knowledge-graph models: a fixed margin kept as an nn.Parameter and read with .item() in the score", d("""
        import torch
        import torch.nn as nn
        class KGEModel(nn.Module):
            def __init__(self, gamma):
                super().__init__()
                self.gamma = nn.Parameter(torch.Tensor([gamma]), requires_grad=False)
            def TransE(self, head, relation, tail):
                score = head + relation - tail
                return self.gamma.item() - torch.norm(score, p=1, dim=2)
            def forward(self, head, relation, tail):
                return self.TransE(head, relation, tail)
        model = KGEModel(12.0).cuda()
    """), 9),
    Shape("TW207", "full-batch training whose test runs only every few epochs: the step's read is the only sync",
          _FULL_BATCH_STEP + d("""
        def main(model, data, train_idx, optimizer, args):
            data = data.to("cuda")
            for epoch in range(1, args.epochs + 1):
                loss = train(model, data, train_idx, optimizer)
                if epoch % args.eval_steps == 0:
                    result = test(model, data)
    """), 8),
    Shape("TW207", "look-alike of the replay priorities below: the per-sample losses collected for logging", d("""
        import torch
        def learn(model, memory, optimizer, losses, device):
            for step in range(1000):
                idxs, states, weights = memory.sample(32)
                loss = model(states.to(device)).sum(1)
                optimizer.zero_grad()
                (weights.to(device) * loss).mean().backward()
                optimizer.step()
                losses.append(loss.detach().cpu().numpy())
    """), 9),
]
QUIET += [
    Shape("TW207", "full-batch graph training: one step per epoch, and the same epoch runs test(), which reads on the host",
          _FULL_BATCH_STEP + d("""
        def main(model, data, train_idx, optimizer, args):
            data = data.to("cuda")
            for epoch in range(1, args.epochs + 1):
                loss = train(model, data, train_idx, optimizer)
                result = test(model, data)
                print(epoch, loss, result)
    """)),
    Shape("TW207", "course notebooks: full-batch epochs that evaluate every epoch (model.eval() and inference_mode)", d("""
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        X_train, y_train = X_train.to(device), y_train.to(device)
        for epoch in range(epochs):
            model.train()
            y_logits = model(X_train).squeeze()
            loss = loss_fn(y_logits, y_train)
            acc = accuracy_fn(y_true=y_train, y_pred=torch.round(torch.sigmoid(y_logits)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            model.eval()
            with torch.inference_mode():
                test_logits = model(X_test).squeeze()
                test_acc = accuracy_fn(y_true=y_test, y_pred=torch.round(torch.sigmoid(test_logits)))
        def accuracy_fn(y_true, y_pred):
            return torch.eq(y_true, y_pred).sum().item() / len(y_pred)
    """)),
    Shape("TW207", "prioritised replay: the per-sample losses become the new priorities of a NumPy segment tree", d("""
        import torch
        def learn(model, memory, optimizer, device):
            for step in range(1000):
                idxs, states, weights = memory.sample(32)
                loss = model(states.to(device)).sum(1)
                optimizer.zero_grad()
                (weights.to(device) * loss).mean().backward()
                optimizer.step()
                memory.update_priorities(idxs, loss.detach().cpu().numpy())
    """)),
    Shape("TW207", "look-alikes of masks and parameters: integer indices, a store through a mask, a host mask, "
          "a parameter read in __init__, a plain attribute", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class Scorer(nn.Module):
            def __init__(self, gamma):
                super().__init__()
                self.gamma = nn.Parameter(torch.Tensor([gamma]), requires_grad=False)
                self.margin = float(self.gamma.item())
                self.scale = 2.0
            def forward(self, x):
                return self.margin - x.norm(dim=-1) * self.scale
        def train(model, loader, optimizer, device, keep):
            host_mask = torch.from_numpy(np.array(keep))
            for x, idx in loader:
                x = x.to(device)
                out = model(x)
                out[out < 0] = 0
                picked = out[idx]
                kept = idx[host_mask]
                loss = picked.sum()
                loss.backward()
                optimizer.step()
        model = Scorer(1.0).cuda()
    """)),
]

# ----------------------------------------------------------------------------------- TW204
_TRAINER = d("""
    def fit(train_loader, val_loader, model, loss_fn, optimizer, n_epochs, cuda):
        for epoch in range(n_epochs):
            train_epoch(train_loader, model, loss_fn, optimizer, cuda)

    def train_epoch(train_loader, model, loss_fn, optimizer, cuda):
        for data, target in train_loader:
            target = target if len(target) > 0 else None
            if not type(data) in (tuple, list):
                data = (data,)
            if cuda:
                data = tuple(d.cuda() for d in data)
                if target is not None:
                    target = target.cuda()
            loss = loss_fn(*model(*data), target)
            loss.backward()
            optimizer.step()
""")
_ENGINE = d("""
    import torch
    def train_step(model, dataloader, loss_fn, optimizer, device):
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            loss = loss_fn(model(X), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    def train(model, train_dataloader, loss_fn, optimizer, epochs, device):
        for epoch in range(epochs):
            train_step(model=model, dataloader=train_dataloader, loss_fn=loss_fn, optimizer=optimizer, device=device)
""")
PROJECTS += [
    ProjectShape("TW204", "metric-learning notebooks: loaders pinned through a kwargs dict chosen by `if cuda`, handed "
                 "to fit() of a trainer module, which copies tuple(d.cuda() for d in data)", {
        "trainer.py": _TRAINER,
        "experiment.py": d("""
            import torch
            from trainer import fit
            cuda = torch.cuda.is_available()
            kwargs = {"num_workers": 1, "pin_memory": True} if cuda else {}
            train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=256, shuffle=True, **kwargs)
            test_loader = torch.utils.data.DataLoader(test_dataset, batch_size=256, shuffle=False, **kwargs)
            fit(train_loader, test_loader, model, loss_fn, optimizer, 20, cuda)
        """),
    }, (("trainer.py", 11), ("trainer.py", 13))),
    ProjectShape("TW204", "look-alike: the same trainer fed loaders that are not pinned", {
        "trainer.py": _TRAINER,
        "experiment.py": d("""
            import torch
            from trainer import fit
            cuda = torch.cuda.is_available()
            kwargs = {"num_workers": 1, "pin_memory": False} if cuda else {}
            train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=256, shuffle=True, **kwargs)
            fit(train_loader, None, model, loss_fn, optimizer, 20, cuda)
        """),
        "other.py": "from torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True)\n",
    }),
    ProjectShape("TW204", "course modules: engine.train(...) called from train.py with loaders from "
                 "data_setup.create_dataloaders (pinned); a notebook passes its own unpinned loader", {
        "data_setup.py": d("""
            from torch.utils.data import DataLoader
            def create_dataloaders(train_data, test_data, batch_size, num_workers):
                train_dataloader = DataLoader(train_data, batch_size=batch_size, shuffle=True,
                                              num_workers=num_workers, pin_memory=True)
                test_dataloader = DataLoader(test_data, batch_size=batch_size, num_workers=num_workers, pin_memory=True)
                return train_dataloader, test_dataloader
        """),
        "engine.py": _ENGINE,
        "train.py": d("""
            import torch
            import data_setup, engine
            device = "cuda" if torch.cuda.is_available() else "cpu"
            train_dataloader, test_dataloader = data_setup.create_dataloaders(train_data, test_data, 32, 4)
            engine.train(model, train_dataloader, loss_fn, optimizer, 5, device)
        """),
        "notebook.py": d("""
            from torch.utils.data import DataLoader
            from going_modular import engine
            simple_loader = DataLoader(train_data, batch_size=32)
            engine.train(model=model, train_dataloader=simple_loader, loss_fn=loss_fn, optimizer=opt, epochs=5, device=device)
        """),
    }, (("engine.py", 4), ("engine.py", 4))),
    ProjectShape("TW204", "look-alike: every caller of the engine passes an unpinned loader", {
        "engine.py": _ENGINE,
        "notebook.py": d("""
            import torch
            from torch.utils.data import DataLoader
            import engine
            device = "cuda" if torch.cuda.is_available() else "cpu"
            simple_loader = DataLoader(train_data, batch_size=32)
            engine.train(model, simple_loader, loss_fn, optimizer, 5, device)
            pinned = DataLoader(other, pin_memory=True)
        """),
    }),
    ProjectShape("TW204", "tabular library: a fit loop hands each batch to a _train_batch method; the loaders come "
                 "from a builder of another module with pin_memory=self.pin_memory; validation loaders in a zip", {
        "utils.py": d("""
            from torch.utils.data import DataLoader
            def create_dataloaders(X_train, y_train, eval_set, batch_size, pin_memory):
                train_dataloader = DataLoader(TorchDataset(X_train, y_train), batch_size=batch_size, pin_memory=pin_memory)
                valid_dataloaders = [DataLoader(TorchDataset(X, y), batch_size=batch_size, pin_memory=pin_memory)
                                     for X, y in eval_set]
                return train_dataloader, valid_dataloaders
        """),
        "model.py": d("""
            import torch
            from utils import create_dataloaders
            class TabModel:
                def __init__(self, device_name="auto", pin_memory=True):
                    self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                    self.pin_memory = pin_memory and self.device.type != "cpu"
                def fit(self, X_train, y_train, eval_set, names):
                    train_dataloader, valid_dataloaders = self._construct_loaders(X_train, y_train, eval_set)
                    for epoch in range(10):
                        self._train_epoch(train_dataloader)
                        for name, valid_dataloader in zip(names, valid_dataloaders):
                            self._predict_epoch(name, valid_dataloader)
                def _construct_loaders(self, X_train, y_train, eval_set):
                    train_dataloader, valid_dataloaders = create_dataloaders(X_train, y_train, eval_set, 1024, self.pin_memory)
                    return train_dataloader, valid_dataloaders
                def _train_epoch(self, train_loader):
                    for X, y in train_loader:
                        self._train_batch(X, y)
                def _train_batch(self, X, y):
                    X = X.to(self.device).float()
                    y = y.to(self.device).float()
                    loss = self.loss_fn(self.network(X), y)
                    loss.backward()
                    self.optimizer.step()
                def _predict_epoch(self, name, loader):
                    for X, y in loader:
                        scores = self.network(X.to(self.device).float())
        """),
    }, (("model.py", 20), ("model.py", 21), ("model.py", 27))),
]
FIND += [
    Shape("TW204", "contrastive-learning scripts: a conversion before the copy (images.float().cuda())", d("""
        import torch
        from torch.utils.data import DataLoader
        val_loader = DataLoader(val_dataset, batch_size=256, shuffle=False, num_workers=8, pin_memory=True)
        def validate(val_loader, model):
            with torch.no_grad():
                for images, labels in val_loader:
                    images = images.float().cuda()
                    labels = labels.cuda(non_blocking=True)
                    output = model(images)
        validate(val_loader, model)
    """), 7),
    Shape("TW204", "loaders pinned when a GPU is there (pin_memory=torch.cuda.is_available())", d("""
        import torch
        from torch.utils.data import DataLoader
        device = "cuda" if torch.cuda.is_available() else "cpu"
        loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=torch.cuda.is_available())
        for x, y in loader:
            x = x.to(device)
    """), 6),
]

# ----------------------------------------------------------------------------------- TW203
_TAB_MODEL = d("""
    import torch
    from torch.utils.data import DataLoader
    from utils import define_device
    class TabModel:
        def __init__(self, device_name="auto"):
            self.device = torch.device(define_device(device_name))
        def predict(self, X):
            self.network.eval()
            dataloader = DataLoader(PredictDataset(X), batch_size=1024, shuffle=False)
            results = []
            for data in dataloader:
                data = data.to(self.device).float()
                results.append(self.network(data))
            return results
""")
PROJECTS += [
    ProjectShape("TW203", "tabular library: predict() builds a loader and moves its batches to self.device, which "
                 "a helper of another module sets to cuda when one is there", {
        "utils.py": d("""
            import torch
            def define_device(device_name):
                if device_name == "auto":
                    return "cuda" if torch.cuda.is_available() else "cpu"
                return device_name
        """),
        "model.py": _TAB_MODEL,
    }, (("model.py", 9),)),
    ProjectShape("TW203", "look-alike: the same class in a project that never names CUDA", {
        "utils.py": "def define_device(device_name):\n    return device_name\n",
        "model.py": _TAB_MODEL,
    }),
]
FIND += [
    Shape("TW203", "NLP fine-tuning: self.device chosen in __init__, the loader built in train()", d("""
        import torch
        from torch.utils.data import DataLoader, RandomSampler
        class Trainer:
            def __init__(self, args, model, train_dataset):
                self.train_dataset = train_dataset
                self.device = "cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu"
                self.model = model.to(self.device)
            def train(self):
                sampler = RandomSampler(self.train_dataset)
                loader = DataLoader(self.train_dataset, sampler=sampler, batch_size=32)
                for batch in loader:
                    batch = tuple(t.to(self.device) for t in batch)
                    loss = self.model(*batch)[0]
                    loss.backward()
    """), 10),
    Shape("TW203", "prediction scripts: the device from a helper of the file (device = get_device(cfg))", d("""
        import torch
        from torch.utils.data import DataLoader, SequentialSampler
        def get_device(cfg):
            return "cuda" if torch.cuda.is_available() and not cfg.no_cuda else "cpu"
        def predict(cfg, model, dataset):
            device = get_device(cfg)
            model.to(device)
            loader = DataLoader(dataset, sampler=SequentialSampler(dataset), batch_size=cfg.batch_size)
            for batch in loader:
                batch = tuple(t.to(device) for t in batch)
                outputs = model(*batch)
    """), 8),
]
QUIET += [
    Shape("TW203", "course notebooks: loaders only used to show one batch (next(iter(...)), len, a bare name)", d("""
        import torch
        from torch.utils.data import DataLoader
        device = "cuda" if torch.cuda.is_available() else "cpu"
        train_dataloader = DataLoader(dataset=train_data, batch_size=1, num_workers=1, shuffle=True)
        test_dataloader = DataLoader(dataset=test_data, batch_size=1, num_workers=1, shuffle=False)
        train_dataloader, test_dataloader
        img, label = next(iter(train_dataloader))
        print(len(train_dataloader), len(test_dataloader))
        model = Net().to(device)
    """)),
]
FIND += [
    Shape("TW203", "look-alike of the above: the same demo loader later handed to train()", d("""
        import torch
        from torch.utils.data import DataLoader
        device = "cuda" if torch.cuda.is_available() else "cpu"
        train_dataloader = DataLoader(dataset=train_data, batch_size=1, num_workers=1, shuffle=True)
        img, label = next(iter(train_dataloader))
        model = Net().to(device)
        results = train(model=model, train_dataloader=train_dataloader, device=device)
    """), 4),
]

# ----------------------------------------------------------------------------------- TW205
FIND += [
    Shape("TW205", "diffusion samplers: a timestep vector made as ones times the step, then moved, every step", d("""
        import torch
        def generalized_steps(x, seq, model, b):
            n = x.size(0)
            xs = [x]
            for i in reversed(seq):
                t = (torch.ones(n) * i).to(x.device)
                et = model(xs[-1], t)
                xs.append(et)
            return xs
    """), 6),
    Shape("TW205", "vocoders: an STFT window made on the CPU and moved, every call of the feature function", d("""
        import torch
        def mel_spectrogram(y, n_fft, win_size):
            window = torch.hann_window(win_size).to(y.device)
            return torch.stft(y, n_fft, window=window, return_complex=True).abs()
    """), 3),
    Shape("TW205", "attention masks: a helper class built in every forward (torch.triu(torch.ones(...)).to(device))", d("""
        import torch
        import torch.nn as nn
        class TriangularCausalMask:
            def __init__(self, B, L, device="cpu"):
                with torch.no_grad():
                    self._mask = torch.triu(torch.ones([B, 1, L, L], dtype=torch.bool), diagonal=1).to(device)
        class FullAttention(nn.Module):
            def forward(self, queries, keys, values):
                B, L = queries.shape[:2]
                mask = TriangularCausalMask(B, L, device=queries.device)
                return (queries @ keys.transpose(-2, -1)).masked_fill(mask._mask, -1e9) @ values
    """), 6),
]
PROJECTS += [
    ProjectShape("TW205", "attention masks: the helper class lives in a utils module, the attention layer that "
                 "builds it every forward in another", {
        "masking.py": d("""
            import torch
            class ProbMask:
                def __init__(self, B, H, L, index, scores, device="cpu"):
                    _mask = torch.ones(L, scores.shape[-1], dtype=torch.bool).to(device).triu(1)
                    self._mask = _mask[None, None, :].expand(B, H, L, scores.shape[-1])
        """),
        "attention.py": d("""
            import torch.nn as nn
            from masking import ProbMask
            class ProbAttention(nn.Module):
                def forward(self, scores, index):
                    B, H, L = scores.shape[:3]
                    mask = ProbMask(B, H, L, index, scores, device=scores.device)
                    return scores.masked_fill(mask._mask, -1e9)
        """),
    }, (("masking.py", 4),)),
]
QUIET += [
    Shape("TW205", "a dummy forward of a module, called only from its __init__ to size the layers", d("""
        import torch
        import torch.nn as nn
        class Decomposition(nn.Module):
            def __init__(self, length, device):
                super().__init__()
                self.device = device
                self.out_dims = self._dummy_forward(length)
            def _dummy_forward(self, length):
                dummy_x = torch.ones((1, 1, length)).to(self.device)
                return [t.shape[-1] for t in self.dwt(dummy_x)]
    """)),
    Shape("TW205", "a recovery path taken when a solve gives NaN (if torch.isnan(K).any():)", d("""
        import torch
        import torch.nn as nn
        class KPLayer(nn.Module):
            def forward(self, x, y):
                K = torch.linalg.lstsq(x, y).solution
                if torch.isnan(K).any():
                    K = torch.eye(K.shape[1]).to(K.device).unsqueeze(0).repeat(x.shape[0], 1, 1)
                return torch.bmm(x, K)
    """)),
    Shape("TW205", "an evaluator: one buffer per evaluation call, in a helper only eval() calls", d("""
        import torch
        class Evaluator:
            def eval(self, input_dict):
                correct, pred = input_dict["t_correct_index"], input_dict["t_pred_top10"]
                return self._calculate_mrr(correct.to(pred.device), pred)
            def _calculate_mrr(self, correct_index, pred_top10):
                tmp = torch.nonzero(correct_index.view(-1, 1) == pred_top10, as_tuple=False)
                rr = torch.zeros(len(correct_index)).to(tmp.device)
                rr[tmp[:, 0]] = 1.0 / (tmp[:, 1].float() + 1.0)
                return float(rr.mean().item())
    """)),
    Shape("TW205", "experiment tracking: one example input for writer.add_graph per experiment", d("""
        import torch
        def run_experiment(model, writer, device, epochs):
            for epoch in range(epochs):
                writer.add_graph(model=model, input_to_model=torch.randn(32, 3, 224, 224).to(device))
    """)),
]

# ----------------------------------------------------------------------------------- TW206, TW305
QUIET += [
    Shape("TW206", "an evaluator module's __main__ smoke test on random arrays", d("""
        import numpy as np
        import torch
        class Evaluator:
            def eval(self, input_dict):
                return (input_dict["y_true"] == input_dict["y_pred"]).float().mean()
        if __name__ == "__main__":
            evaluator = Evaluator()
            y_true = torch.tensor(np.random.randint(2, size=(100, 128)))
            y_pred = torch.tensor(np.random.randn(100, 128))
            print(evaluator.eval({"y_true": y_true, "y_pred": y_pred}))
    """)),
    Shape("TW305", "a backbone module's __main__ smoke test that prints an output shape", d("""
        import torch
        import torch.nn as nn
        class HRNet(nn.Module):
            def forward(self, x):
                return x
        if __name__ == "__main__":
            model = HRNet()
            if torch.cuda.is_available():
                torch.backends.cudnn.deterministic = True
                device = torch.device("cuda")
            else:
                device = torch.device("cpu")
            print(model.to(device)(torch.ones(1, 3, 64, 64, device=device)).shape)
    """)),
]
FIND += [
    Shape("TW206", "look-alike of the smoke test: a script whose __main__ block loads real data in a loop", d("""
        import numpy as np
        import torch
        def load(path):
            return np.load(path)
        if __name__ == "__main__":
            for path in ["a.npy", "b.npy"]:
                x = torch.tensor(np.load(path))
    """), 7),
    Shape("TW305", "look-alike of the smoke test: a training script's __main__ block", d("""
        import torch
        def train(model, loader):
            pass
        if __name__ == "__main__":
            torch.backends.cudnn.deterministic = True
            for epoch in range(10):
                train(model, loader)
    """), 5),
]

# ----------------------------------------------------------------------------------- TW201
def _methods(src: str) -> str:
    """More methods of the class above (indented one level)."""
    return textwrap.indent(d(src), "    ")


# an experiment class that wraps its model in DataParallel when asked for several GPUs
_EXP_WITH_DP = d("""
        import torch
        import torch.nn as nn
        class {cls}(ExpBase):
            def _build_model(self):
                model = self.model_dict[self.args.model](self.args).float()
                if self.args.use_multi_gpu and self.args.use_gpu:
                    model = nn.DataParallel(model, device_ids=self.args.device_ids)
                return model
""")
QUIET += [
    Shape("TW201", "diffusion runners: sample() wraps the model and puts it in eval mode; train() of the same "
          "class trains its own wrapper", d("""
        import torch
        class Diffusion:
            def train(self, model, loader, optimizer):
                model = model.to(self.device)
                model = torch.nn.DataParallel(model)  # noqa: TW201
                model.train()
                for x, y in loader:
                    loss = model(x.to(self.device)).mean()
                    loss.backward()
                    optimizer.step()
            def sample(self, model):
                model = model.to(self.device)
                model = torch.nn.DataParallel(model)
                model.eval()
                return self.sample_images(model)
    """)),
    Shape("TW201", "an EMA helper: the copy is loaded from the live model's state_dict and only evaluated", d("""
        import torch.nn as nn
        class EMAHelper:
            def ema_copy(self, module):
                inner = module.module
                module_copy = type(inner)(inner.config).to(inner.config.device)
                module_copy.load_state_dict(inner.state_dict())
                module_copy = nn.DataParallel(module_copy)
                self.ema(module_copy)
                return module_copy
    """)),
    Shape("TW201", "a test-only experiment class (zero-shot forecasting): no training in the file",
          _EXP_WITH_DP.format(cls="ExpZeroShot") + _methods("""
            def test(self, setting):
                self.model.eval()
                with torch.no_grad():
                    for x, y in self.test_loader:
                        out = self.model(x.to(self.device))
    """)),
]
FIND += [
    Shape("TW201", "look-alike: the same experiment class with a train() method",
          _EXP_WITH_DP.format(cls="ExpForecast") + _methods("""
            def train(self, setting):
                for x, y in self.train_loader:
                    loss = self.criterion(self.model(x), y)
                    loss.backward()
                    self.optimizer.step()
    """), 7),
]

# ----------------------------------------------------------------------------------- TW103
PROJECTS += [
    ProjectShape("TW103", "knowledge-graph toolkits: model.forward(...) of a plain class defined in another module", {
        "models.py": d("""
            class KEModel(object):
                def __init__(self, args):
                    self.args = args
                def forward(self, pos_g, neg_g, gpu_id=-1):
                    return self.score(pos_g) - self.score(neg_g), {}
        """),
        "train.py": d("""
            from models import KEModel
            def load_model(args):
                model = KEModel(args)
                return model
            def train(args, model, sampler, optimizer):
                for step in range(args.max_step):
                    pos_g, neg_g = next(sampler)
                    loss, log = model.forward(pos_g, neg_g, args.gpu)
                    loss.backward()
        """),
    }),
    ProjectShape("TW103", "look-alike: model.forward(...) of a torch module class of another module", {
        "models.py": d("""
            import torch.nn as nn
            class KEModel(nn.Module):
                def forward(self, pos_g, neg_g):
                    return self.score(pos_g) - self.score(neg_g)
        """),
        "train.py": d("""
            from models import KEModel
            def load_model(args):
                model = KEModel(args)
                return model
            def train(args, model, sampler, optimizer):
                for step in range(args.max_step):
                    pos_g, neg_g = next(sampler)
                    loss = model.forward(pos_g, neg_g)
                    loss.backward()
        """),
    }, (("train.py", 8),)),
]

# ----------------------------------------------------------------------------------- TW301
QUIET += [
    Shape("TW301", "course notebooks: random.sample only picks which test images to plot", d("""
        import random
        import torch
        torch.manual_seed(42)
        test_image_path_sample = random.sample(population=test_image_path_list, k=3)
        for image_path in test_image_path_sample:
            pred_and_plot_image(model=model, image_path=image_path)
    """)),
    Shape("TW301", "a dataset module that fixes NumPy's generator for a split and puts its state back", d("""
        import numpy as np
        import torch
        def get_dataset(dataset):
            indices = list(range(len(dataset)))
            random_state = np.random.get_state()
            np.random.seed(2019)
            np.random.shuffle(indices)
            np.random.set_state(random_state)
            return indices
        def data_transform(X):
            return X + torch.rand_like(X) / 256.0
    """)),
]
PROJECTS += [
    ProjectShape("TW301", "a data module that seeds NumPy while the entry point seeds torch: both seeded", {
        "main.py": "import torch\nimport numpy as np\ntorch.manual_seed(0)\nnp.random.seed(0)\n",
        "data.py": d("""
            import numpy as np
            import torch
            np.random.seed(1)
            def jitter(x):
                return x + torch.randn_like(x) * 0.01
        """),
    }),
]
FIND += [
    Shape("TW301", "look-alike: the draw feeds training, not a plot", d("""
        import random
        import torch
        torch.manual_seed(42)
        batch_paths = random.sample(population=train_paths, k=32)
        for path in batch_paths:
            train_on(path)
    """), 4),
]

# ----------------------------------------------------------------------------------- TW104
FIND += [
    Shape("TW104", "experiment classes: test() scores the test set after a no_grad pass over the training set",
          d("""
        import torch
        class ExpAnomaly(ExpBase):
            def train(self, setting):
                for x, y in self.train_loader:
                    loss = self.criterion(self.model(x), y)
                    loss.backward()
                    self.optimizer.step()
            def test(self, setting, test=0):
                self.model.eval()
                with torch.no_grad():
                    for batch_x, _ in self.train_loader:
                        energy = self.model(batch_x)
                for batch_x, batch_y in self.test_loader:
                    batch_x = batch_x.float().to(self.device)
                    outputs = self.model(batch_x)
                    score = torch.mean((batch_x - outputs) ** 2, dim=-1)
    """), 15),
    Shape("TW104", "tabular models: explain() runs a forward_* method of the imported network after eval()", d("""
        import torch
        class TabModel:
            def explain(self, loader):
                self.network.eval()
                res = []
                for data in loader:
                    data = data.to(self.device).float()
                    m_explain, masks = self.network.forward_masks(data)
                    res.append(m_explain.cpu().detach().numpy())
                return res
    """), 8),
]
QUIET += [
    Shape("TW104", "look-alike: test() of a unittest.TestCase checks behaviour, grad mode included", d("""
        import unittest
        import torch
        class ModelTest(unittest.TestCase):
            def test(self):
                model = Net()
                model.eval()
                out = model(torch.ones(2, 3))
                self.assertEqual(out.shape, (2, 1))
    """)),
    Shape("TW104", "look-alike: the same test() with both passes under no_grad", d("""
        import torch
        class ExpAnomaly(ExpBase):
            def test(self, setting, test=0):
                self.model.eval()
                with torch.no_grad():
                    for batch_x, _ in self.train_loader:
                        energy = self.model(batch_x)
                    for batch_x, batch_y in self.test_loader:
                        outputs = self.model(batch_x.to(self.device))
    """)),
    Shape("TW104", "look-alike: a forward_* method whose caller turned autograd off", d("""
        import torch
        class TabModel:
            @torch.no_grad()
            def explain(self, loader):
                self.network.eval()
                return [self.network.forward_masks(data)[0] for data in loader]
    """)),
]

# ----------------------------------------------------------------------------------- TW403
FIND += [
    Shape("TW403", "diffusion samplers: xs[-1].to('cuda') in a file whose only 'cpu' moves results back", d("""
        import torch
        def generalized_steps(x, seq, model, b):
            with torch.no_grad():
                xs, x0_preds = [x], []
                for i in reversed(seq):
                    t = (torch.ones(x.size(0)) * i).to(x.device)
                    xt = xs[-1].to('cuda')
                    et = model(xt, t)
                    x0_preds.append((xt - et).to('cpu'))
                    xs.append(xt.to("cpu"))
            return xs, x0_preds
    """), 7),
]
QUIET += [
    Shape("TW403", "look-alike: the same sampler in a file that chooses the CPU as a device", d("""
        import torch
        device = torch.device("cpu") if args.cpu else torch.device("cuda")
        def generalized_steps(x, seq, model, b):
            xs = [x]
            for i in reversed(seq):
                xt = xs[-1].to('cuda')
                xs.append(model(xt, i).to('cpu'))
            return xs
    """)),
]
