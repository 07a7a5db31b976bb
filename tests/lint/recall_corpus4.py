"""The recall corpus, fourth round: the classes a first look at eleven more fresh projects
(issue 22, third held-out set, now a tuning set) found missing or falsely reported - each written
in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists; the entries of one rule sit together.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW204
QUIET += [
    Shape("TW204", "speech synthesis: the evaluation copies one pinned batch, then breaks", d("""
        import torch
        eval_loader = torch.utils.data.DataLoader(eval_dataset, batch_size=1, num_workers=8, pin_memory=True)
        def evaluate(generator, eval_loader):
            generator.eval()
            with torch.no_grad():
                for batch_idx, (x, x_lengths, y) in enumerate(eval_loader):
                    x, x_lengths = x.cuda(0), x_lengths.cuda(0)
                    y = y.cuda(0)
                    x = x[:1]
                    break
                y_hat = generator.infer(x, x_lengths)
    """)),
]
FIND += [
    Shape("TW204", "a loop that breaks only on a condition still takes many batches", d("""
        import torch
        loader = torch.utils.data.DataLoader(dataset, batch_size=32, num_workers=8, pin_memory=True)
        for step, (x, y) in enumerate(loader):
            x = x.cuda()
            if step >= max_steps:
                break
    """), 4),
]

# ----------------------------------------------------------------------------------- TW502
FIND += [
    Shape("TW502", "time-series nets: the upsampling chosen as a reference to F.upsample", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Model(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.up = None
                if args.up_mode == 'nearest':
                    self.up = F.upsample
    """), 8),
    Shape("TW502", "the same with an old init function in a table of initialisers", d("""
        import torch.nn as nn
        INITS = {"normal": nn.init.normal_, "orthogonal": nn.init.orthogonal}
    """), 2),
    Shape("TW502", "segmentation losses: the nn.NLLLoss2d class", d("""
        from torch import nn
        class LossMulti:
            def __init__(self, nll_weight=None):
                self.nll_loss = nn.NLLLoss2d(weight=nll_weight)
    """), 4),
]
QUIET += [
    Shape("TW502", "references to the current functions and classes, and a tensor's own tanh method", d("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        ACTIVATIONS = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "relu": F.relu}
        loss = nn.NLLLoss(weight=None)
        def f(x):
            g = x.tanh
            return g() + x.sigmoid()
    """)),
]

# ----------------------------------------------------------------------------------- TW205
_VAE_MODEL = d("""
    import torch
    from torch import nn
    class VanillaVAE(nn.Module):
        def __init__(self, latent_dim):
            super().__init__()
            self.latent_dim = latent_dim
            self.decoder = nn.Linear(latent_dim, 784)
        def forward(self, x):
            return self.decoder(x)
        def sample(self, num_samples, current_device):
            z = torch.randn(num_samples, self.latent_dim)
            z = z.to(current_device)
            return self.decoder(z)
""")
PROJECTS += [
    ProjectShape("TW205", "VAE zoos: sample() draws latents on the CPU, but only the validation hook asks for samples", {
        "models/vanilla_vae.py": _VAE_MODEL,
        "experiment.py": d("""
            import pytorch_lightning as pl
            class VAEXperiment(pl.LightningModule):
                def training_step(self, batch, batch_idx):
                    real_img, labels = batch
                    return self.model.loss_function(self.model(real_img))
                def on_validation_end(self):
                    samples = self.model.sample(144, self.curr_device)
                    save_image(samples, "samples.png")
        """),
    }),
    ProjectShape("TW205", "GANs: the generator's sample() is called by every training step", {
        "models/vanilla_vae.py": _VAE_MODEL,
        "train.py": d("""
            import torch
            from models.vanilla_vae import VanillaVAE
            model = VanillaVAE(16).cuda()
            for real in loader:
                fake = model.sample(64, "cuda")
                loss = critic(fake).mean() - critic(real.cuda()).mean()
                loss.backward()
                opt.step()
        """),
    }, (("models/vanilla_vae.py", 12),)),
]
QUIET += [
    Shape("TW205", "speech synthesis: a window cached per size and device in a module dict", d("""
        import torch
        hann_window = {}
        def spectrogram_torch(y, n_fft, hop_size, win_size):
            key = str(win_size) + "_" + str(y.dtype) + "_" + str(y.device)
            if key not in hann_window:
                hann_window[key] = torch.hann_window(win_size).to(dtype=y.dtype, device=y.device)
            return torch.stft(y, n_fft, hop_length=hop_size, window=hann_window[key], return_complex=True)
    """)),
    Shape("TW205", "custom optimizers: the state made lazily at the first step", d("""
        import torch
        class AdamW(torch.optim.Optimizer):
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        state = self.state[p]
                        if not state:
                            state["step"] = 0
                            state["exp_avg_sq"] = torch.zeros([]).to(p.device)
                        if len(state) == 0:
                            state["max_sq"] = torch.zeros([]).to(p.device)
    """)),
    Shape("TW205", "metric scripts: images read and stacked with NumPy are input data", d("""
        import numpy as np
        import torch
        def get_features(images, model, device, batch_size=50):
            for start in range(0, len(images), batch_size):
                batch_images = []
                for img in images[start:start + batch_size]:
                    batch_images.append(img)
                batch_images = np.stack(batch_images, axis=0)
                batch_images = torch.from_numpy(batch_images).type(torch.FloatTensor)
                batch_images = batch_images.to(device)
                yield model(batch_images)
    """)),
    Shape("TW205", "speech synthesis: an array a host routine fills, then moved back", d("""
        import numpy as np
        import torch
        def maximum_path(neg_cent, mask):
            device = neg_cent.device
            path = np.zeros(neg_cent.shape, dtype=np.int32)
            maximum_path_c(path, neg_cent.cpu().numpy())
            return torch.from_numpy(path).to(device=device)
    """)),
]
FIND += [
    Shape("TW205", "the same window without the cache test is made every call", d("""
        import torch
        hann_window = {}
        def spectrogram_torch(y, n_fft, hop_size, win_size):
            key = str(win_size)
            hann_window[key] = torch.hann_window(win_size).to(dtype=y.dtype, device=y.device)
            return torch.stft(y, n_fft, hop_length=hop_size, window=hann_window[key], return_complex=True)
    """), 5),
    Shape("TW205", "NumPy noise reshaped, then moved in the training loop", d("""
        import numpy as np
        import torch
        for x, y in loader:
            noise = np.expand_dims(np.random.normal(0, 1, (64, 16)), 0)
            z = torch.from_numpy(noise).cuda()
            loss = model(x.cuda(), z).mean()
            loss.backward()
    """), 5),
]

# ----------------------------------------------------------------------------------- TW403 / TW402
_GPU_MAIN = d("""
    import torch
    from score.fid import get_fid
    device = torch.device('cuda:0')
    def train():
        net = UNet().to(device)
        for x in loader:
            loss = net(x.to(device)).mean()
            loss.backward()
    def evaluate():
        net = UNet().to(device)
        net.load_state_dict(torch.load('ckpt.pt')['net'])
    train()
    evaluate()
""")
# a training script that falls back to the CPU (round 5: a fallback only in files that train nothing,
# such as an inference module, leaves the training files GPU-only by design - recall_corpus5)
_CPU_TRAINER = ("import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
                "loss = model(x.to(device)).sum()\nloss.backward()\n")
_GPU_SCORE = d("""
    import torch
    device = torch.device('cuda:0')
    def get_fid(images):
        model = InceptionV3().to(device)
        return model(images.to(device))
""")
PROJECTS += [
    ProjectShape("TW403", "diffusion repos: every file hard-codes cuda:0 and none can run without a GPU (GPU-only by design)", {
        "main.py": _GPU_MAIN, "score/fid.py": _GPU_SCORE}),
    ProjectShape("TW402", "the same GPU-only project resumes its own checkpoint", {
        "main.py": _GPU_MAIN, "score/fid.py": _GPU_SCORE}),
    ProjectShape("TW403", "the same project with a CPU fallback in one training script: the hard-coded files break it" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "main.py": _GPU_MAIN, "score/fid.py": _GPU_SCORE, "finetune.py": _CPU_TRAINER},
        ()),
    ProjectShape("TW402", "the same project with a CPU fallback: the resume load needs map_location", {
        "main.py": _GPU_MAIN, "score/fid.py": _GPU_SCORE, "finetune.py": _CPU_TRAINER},
        (("main.py", 11),)),
    ProjectShape("TW403", "a multi-GPU check (device_count() > 1) is no CPU path", {
        "main.py": _GPU_MAIN, "score/fid.py": _GPU_SCORE,
        "predict.py": "import torch\nmodel = Net().cuda()\nif torch.cuda.device_count() > 1:\n    model = torch.nn.DataParallel(model)\n"},
        ()),
]
QUIET += [
    Shape("TW403", "graph networks: a module-level demo draws the autograd graph of random inputs", d("""
        import torch
        import models
        def make_dot(var, params):
            return render(var.grad_fn, params)
        inputs = torch.randn(100, 50).cuda()
        adj = torch.randn(100, 100).cuda()
        model = models.SpGAT(50, 8, 7, 0.5, 0.01, 3)
        model = model.cuda()
        y = model(inputs, adj)
        make_dot(y, model.state_dict()).view()
    """), path="visualize_graph.py"),
    Shape("TW402", "graph networks: the best epoch's checkpoint, written by this run, reloaded by name pattern", d("""
        import torch
        model = GAT().cuda()
        for epoch in range(args.epochs):
            loss_values.append(train(epoch))
            torch.save(model.state_dict(), '{}.pkl'.format(epoch))
        model.load_state_dict(torch.load('{}.pkl'.format(best_epoch)))
    """)),
    Shape("TW402", "detection evaluation: the load in the GPU branch of is_available()", d("""
        import torch
        model = RetinaNet()
        if torch.cuda.is_available():
            model.load_state_dict(torch.load(parser.model_path))
            model = model.cuda()
    """)),
]
FIND += [
    Shape("TW403", "the same random inputs in a script that trains on them", d("""
        import torch
        inputs = torch.randn(100, 50).cuda()
        model = Net().cuda()
        loss = model(inputs).sum()
        loss.backward()
    """), 2),
    Shape("TW402", "a load of another name pattern than the run saved (a resume argument)", d("""
        import torch
        model = GAT().cuda()
        model.load_state_dict(torch.load('{}.pth'.format(args.resume)))
        for epoch in range(args.epochs):
            torch.save(model.state_dict(), '{}.pkl'.format(epoch))
    """), 3),
]

# ----------------------------------------------------------------------------------- TW201
_DIFFUSION = d("""
    import torch
    def evaluate(sampler, model):
        model.eval()
        with torch.no_grad():
            images = sampler(x_T)
        model.train()
        return score(images)
    def train():
        trainer = DiffusionTrainer(net_model).to(device)
        net_sampler = DiffusionSampler(net_model).to(device)
        ema_sampler = DiffusionSampler(ema_model).to(device)
        if FLAGS.parallel:
            trainer = torch.nn.DataParallel(trainer)
            net_sampler = torch.nn.DataParallel(net_sampler)
            ema_sampler = torch.nn.DataParallel(ema_sampler)
        for step in range(FLAGS.total_steps):
            loss = trainer(next(datalooper)).mean()
            loss.backward()
            optim.step()
            if step % FLAGS.sample_step == 0:
                with torch.no_grad():
                    x_0 = ema_sampler(x_T)
            if step % FLAGS.eval_step == 0:
                net_IS = evaluate(net_sampler, net_model)
""")
PROJECTS += [
    ProjectShape("TW201", "diffusion repos: the trainer wrapper runs the training loss; the samplers beside it, only "
                 "called under no_grad, are quiet", {"main.py": _DIFFUSION}, (("main.py", 13),)),
]
FIND += [
    Shape("TW201", "a wrapper called outside no_grad in the function it is handed to still trains", d("""
        import torch
        def fit(net, loader):
            for x, y in loader:
                loss = net(x).mean()
                loss.backward()
        model = torch.nn.DataParallel(model)
        fit(model, loader)
    """), 6),
]
QUIET += [
    Shape("TW201", "detection training: DataParallel in the branch without CUDA", d("""
        import torch
        if torch.cuda.is_available():
            retinanet = retinanet.cuda()
        else:
            retinanet = torch.nn.DataParallel(retinanet)
        if not torch.cuda.is_available():
            model = torch.nn.DataParallel(model)
    """)),
]

# ----------------------------------------------------------------------------------- TW203 / TW104
QUIET += [
    Shape("TW203", "Kaggle pipelines: the TPU script hands its loaders to torch_xla's ParallelLoader", d("""
        import torch
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.parallel_loader as pl
        from torch.utils.data import DataLoader
        def train_fn(loader, model, device):
            for x, y in loader:
                loss = model(x.to(device)).mean()
                loss.backward()
        def main():
            train_dataloader = DataLoader(train_dataset, batch_size=32, num_workers=1)
            device = xm.xla_device()
            model = Net().to(device)
            para_loader = pl.ParallelLoader(train_dataloader, [device])
            train_fn(para_loader.per_device_loader(device), model, device)
            model.cuda()
    """)),
    Shape("TW104", "a TensorFlow file of a mixed project: its test_predict builds a TF graph", d("""
        import numpy as np
        import tensorflow as tf
        from tqdm import tqdm
        def test_predict(model_class, folder, file_names, load_path, nclasses, TTA):
            tf.reset_default_graph()
            img_batch = tf.placeholder(dtype=tf.float32, shape=[len(TTA), 512, 512, 3])
            prediction = model_class(img_batch, tf.estimator.ModeKeys.PREDICT, nclasses)
            saver = tf.train.Saver()
            soft_predictions = []
            with tf.Session() as sess:
                saver.restore(sess, load_path)
                for name in tqdm(file_names):
                    images = np.stack([t(read(folder + name)) for t in TTA.values()])
                    soft_predictions.append(sess.run(prediction, feed_dict={img_batch: images}))
            return np.stack(soft_predictions)
    """), path="tools/tf_utils.py"),
]
PROJECTS += [
    ProjectShape("TW203", "detection training: the training loader is reported, not the validation loader that nothing "
                 "iterates (evaluation indexes the dataset)", {"train.py": d("""
        import torch
        from torch.utils.data import DataLoader
        dataloader_train = DataLoader(dataset_train, num_workers=3, collate_fn=collater, batch_sampler=sampler)
        dataloader_val = DataLoader(dataset_val, num_workers=3, collate_fn=collater, batch_sampler=sampler_val)
        model = RetinaNet().cuda()
        for data in dataloader_train:
            loss = model(data['img'].cuda().float()).mean()
            loss.backward()
        evaluate(dataset_val, model)
    """)}, (("train.py", 3),)),
]

# ----------------------------------------------------------------------------------- TW207
FIND += [
    Shape("TW207", "detection training: if bool(loss == 0) and float(loss) every step", d("""
        import torch
        for data in dataloader_train:
            optimizer.zero_grad()
            loss = model(data['img'].cuda().float()).mean()
            if bool(loss == 0):
                continue
            loss.backward()
            optimizer.step()
            epoch_loss.append(float(loss))
    """), 5),
    Shape("TW207", "the same: float() of the loss for the running list", d("""
        import torch
        for data in dataloader_train:
            loss = model(data['img'].cuda().float()).mean()
            loss.backward()
            optimizer.step()
            epoch_loss.append(float(loss))
    """), 6),
]
QUIET += [
    Shape("TW207", "float() and int() of Python numbers and of a periodic log in the loop", d("""
        import torch
        for step, (x, y) in enumerate(loader):
            loss = model(x.cuda()).mean()
            loss.backward()
            optimizer.step()
            lr = float(args.lr) * int(step / 100)
            if step % 100 == 0:
                print(float(loss))
    """)),
]
PROJECTS += [
    ProjectShape("TW207", "speech synthesis: a hand-written clip_grad_value_ reads every parameter's norm; train.py calls "
                 "it every step", {
        "commons.py": d("""
            import torch
            def clip_grad_value_(parameters, clip_value, norm_type=2):
                parameters = list(filter(lambda p: p.grad is not None, parameters))
                total_norm = 0
                for p in parameters:
                    param_norm = p.grad.data.norm(norm_type)
                    total_norm += param_norm.item() ** norm_type
                return total_norm ** (1. / norm_type)
        """),
        "train.py": d("""
            import torch
            import commons
            for x, y in loader:
                loss = net(x.cuda(), y.cuda())
                loss.backward()
                grad_norm = commons.clip_grad_value_(net.parameters(), None)
                optim.step()
        """),
    }, (("commons.py", 7),)),
    ProjectShape("TW207", "time series: a wrapper optimizer's step() sums math.pow of each gradient norm", {
        "Optim.py": d("""
            import math
            import torch
            class Optim(object):
                def __init__(self, params, lr, max_grad_norm):
                    self.params = list(params)
                    self.optimizer = torch.optim.Adam(self.params, lr=lr)
                def step(self):
                    grad_norm = 0
                    for param in self.params:
                        grad_norm += math.pow(param.grad.data.norm(), 2)
                    self.optimizer.step()
                    return math.sqrt(grad_norm)
        """),
        "main.py": d("""
            import torch
            import Optim
            model = Net().cuda()
            optim = Optim.Optim(model.parameters(), 0.001, 10.)
            for X, Y in loader:
                loss = criterion(model(X.cuda()), Y.cuda())
                loss.backward()
                optim.step()
        """),
    }, (("Optim.py", 10),)),
    ProjectShape("TW207", "the same helper called only by a periodic diagnostic stays quiet", {
        "commons.py": d("""
            import torch
            def grad_norms(parameters):
                return [p.grad.norm().item() for p in parameters]
            def total_grad_norm(parameters):
                total = 0
                for p in parameters:
                    total += p.grad.norm().item() ** 2
                return total ** 0.5
        """),
        "train.py": d("""
            import torch
            import commons
            for step, (x, y) in enumerate(loader):
                loss = net(x.cuda(), y.cuda())
                loss.backward()
                optim.step()
            print(commons.total_grad_norm(net.parameters()))
        """),
    }),
]
_FULL_BATCH = d("""
    import torch
    import torch.nn.functional as F
    model = GAT(nfeat=features.shape[1]).cuda()
    features, adj, labels = features.cuda(), adj.cuda(), labels.cuda()
    def train(epoch):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        if not args.fastmode:
            model.eval()
            output = model(features, adj)
        loss_val = F.nll_loss(output[idx_val], labels[idx_val])
        print('loss_train: {:.4f}'.format(loss_train.data.item()))
        return loss_val.data.item()
    for epoch in range(args.epochs):
        loss_values.append(train(epoch))
""")
QUIET += [
    Shape("TW207", "graph networks: full-batch training whose step function evaluates itself each epoch", _FULL_BATCH),
]
FIND += [
    Shape("TW207", "the same full-batch step without its own evaluation reads the loss every step",
          _FULL_BATCH.replace("    if not args.fastmode:\n        model.eval()\n        output = model(features, adj)\n", ""), 14),
]

# ----------------------------------------------------------------------------------- TW103
FIND += [
    Shape("TW103", "BERT re-implementations: forward() on the loop variable over a ModuleList of blocks", d("""
        import torch.nn as nn
        class BERT(nn.Module):
            def __init__(self, hidden, n_layers):
                super().__init__()
                self.transformer_blocks = nn.ModuleList([TransformerBlock(hidden) for _ in range(n_layers)])
            def forward(self, x, mask):
                for transformer in self.transformer_blocks:
                    x = transformer.forward(x, mask)
                return x
    """), 8),
    Shape("TW103", "the same: a submodule's forward() inside a lambda handed to a sublayer", d("""
        import torch.nn as nn
        from .attention import MultiHeadedAttention
        class TransformerBlock(nn.Module):
            def __init__(self, hidden, attn_heads):
                super().__init__()
                self.attention = MultiHeadedAttention(h=attn_heads, d_model=hidden)
                self.input_sublayer = SublayerConnection(size=hidden)
            def forward(self, x, mask):
                return self.input_sublayer(x, lambda _x: self.attention.forward(_x, _x, _x, mask=mask))
    """), 9),
]
QUIET += [
    Shape("TW103", "a loop over a list of plain helpers and a helper object's forward in a plain class", d("""
        import torch.nn as nn
        class Pipeline:
            def __init__(self):
                self.stage = Stage()
            def run(self, x):
                return self.stage.forward(x)
        class Net(nn.Module):
            def __init__(self, hooks):
                super().__init__()
                self.steps = [h for h in hooks]
                self.scale = 2.0
            def forward(self, x):
                for step in self.steps:
                    x = step.forward(x)
                return x
    """)),
]

# ----------------------------------------------------------------------------------- TW207 in forward passes
_SPGAT = d("""
    import torch
    import torch.nn as nn
    class SpGraphAttentionLayer(nn.Module):
        def forward(self, input, adj):
            N = input.size()[0]
            edge = adj.nonzero().t()
            h = torch.mm(input, self.W)
            assert not torch.isnan(h).any()
            return h
    model = SpGAT().cuda()
""")
FIND += [
    Shape("TW207", "sparse graph attention: nonzero() of the adjacency in every forward", _SPGAT, 6),
    Shape("TW207", "the same: an assert that no value is NaN, every forward", _SPGAT, 8),
    Shape("TW207", "detection losses: if positive_indices.sum() > 0 per image in the loss module's forward", d("""
        import torch
        import torch.nn as nn
        class FocalLoss(nn.Module):
            def forward(self, classifications, regressions, anchors, annotations):
                losses = []
                for j in range(classifications.shape[0]):
                    IoU = calc_iou(anchors[0, :, :], annotations[j, :, :4])
                    IoU_max, IoU_argmax = torch.max(IoU, dim=1)
                    positive_indices = torch.ge(IoU_max, 0.5)
                    if positive_indices.sum() > 0:
                        losses.append(regressions[j].abs().mean())
                return torch.stack(losses).mean()
        model = RetinaNet().cuda()
    """), 10),
]
QUIET += [
    Shape("TW207", "shape questions in a forward and a NumPy transform's __call__ are no host reads", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def forward(self, x, mask):
                if x.size(0) > 0 and x.dim() == 3:
                    x = x.flatten(1)
                assert x.shape[-1] == self.width
                return self.fc(x)
        class RandomCrop:
            def __call__(self, image, boxes):
                overlap = jaccard_numpy(boxes, rect)
                if overlap.min() < 0.1:
                    return image
                mask = (boxes[:, 0] < 10)
                if not mask.any():
                    return image
                return image[mask]
        model = Net().cuda()
    """)),
]

# ----------------------------------------------------------------------------------- TW205 observations
# Round 13 (sets 15 and 16, which count host data that has to cross anyway - env observations,
# NumPy batches - as no TW205 pitfall): `torch.as_tensor(x, device=...)` copies the same data from the host,
# so these are look-alikes now (recall_corpus26 has the class).
QUIET += [
    Shape("TW205", "look-alike (round 13): PPO agents' torch.FloatTensor(state).to(device) in select_action", d("""
        import torch
        device = torch.device('cuda:0')
        class PPO:
            def select_action(self, state):
                with torch.no_grad():
                    state = torch.FloatTensor(state).to(device)
                    action, logprob = self.policy_old.act(state)
                return action.item()
    """)),
]
QUIET += [
    Shape("TW205", "a typed constructor of a data array read in a data set's __getitem__ stays quiet", d("""
        import torch
        class Wavs:
            def __getitem__(self, i):
                wav = load(self.paths[i])
                return torch.FloatTensor(wav).cuda()
            def action_names(self, labels):
                return labels
    """)),
]

# ----------------------------------------------------------------------------------- torch through a star import
FIND += [
    Shape("TW305", "Kaggle pipelines: torch comes only through `from alaska2 import *` (the file imports from torch too)", d("""
        from torch import nn
        from torch.utils.data import DataLoader
        from alaska2 import *
        def main():
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
    """), 5, "oof_predictions.py"),
]
QUIET += [
    Shape("TW305", "a star import in a file that never imports from torch: `torch` may be anything", d("""
        from mylib import *
        def main():
            torch.backends.cudnn.deterministic = True
    """), path="oof_predictions.py"),
]

# ----------------------------------------------------------------------------------- TW203 across modules
_BERT_TRAINER = d("""
    import torch
    class BERTTrainer:
        def __init__(self, bert, train_dataloader, test_dataloader=None, with_cuda=True):
            cuda_condition = torch.cuda.is_available() and with_cuda
            self.device = torch.device("cuda:0" if cuda_condition else "cpu")
            self.model = bert.to(self.device)
            self.train_data = train_dataloader
        def iteration(self, epoch, data_loader, train=True):
            for i, data in enumerate(data_loader):
                data = {key: value.to(self.device) for key, value in data.items()}
""")
PROJECTS += [
    ProjectShape("TW203", "BERT pre-training: the loaders built in __main__.py go to a trainer class of another module", {
        "bert_pytorch/trainer/pretrain.py": _BERT_TRAINER,
        "bert_pytorch/__main__.py": d("""
            from torch.utils.data import DataLoader
            from .trainer import BERTTrainer
            def train():
                train_data_loader = DataLoader(train_dataset, batch_size=args.batch_size, num_workers=args.num_workers)
                test_data_loader = DataLoader(test_dataset, batch_size=args.batch_size) if test_dataset is not None else None
                trainer = BERTTrainer(bert, train_dataloader=train_data_loader, test_dataloader=test_data_loader)
        """),
    }, (("bert_pytorch/__main__.py", 4), ("bert_pytorch/__main__.py", 5))),
    ProjectShape("TW203", "the same loaders handed to a framework's Trainer stay quiet", {
        "bert_pytorch/trainer/pretrain.py": _BERT_TRAINER,
        "bert_pytorch/__main__.py": d("""
            from torch.utils.data import DataLoader
            from transformers import Trainer
            def train():
                train_data_loader = DataLoader(train_dataset, batch_size=args.batch_size, num_workers=args.num_workers)
                trainer = Trainer(model, train_dataloader=train_data_loader)
        """),
    }),
]

# ----------------------------------------------------------------------------------- TW104 shared loop
_SHARED_LOOP = d("""
    import torch
    class BERTTrainer:
        def train(self, epoch):
            self.iteration(epoch, self.train_data)
        def test(self, epoch):
            self.iteration(epoch, self.test_data, train=False)
        def iteration(self, epoch, data_loader, train=True):
            for i, data in enumerate(data_loader):
                data = {key: value.to(self.device) for key, value in data.items()}
                next_sent_output, mask_lm_output = self.model.forward(data["bert_input"], data["segment_label"])
                loss = self.criterion(next_sent_output, data["is_next"])
                if train:
                    self.optim.zero_grad()
                    loss.backward()
                    self.optim.step()
""")
FIND += [
    Shape("TW104", "BERT trainers: test() reuses the training loop with train=False and no no_grad", _SHARED_LOOP, 10),
]
QUIET += [
    Shape("TW104", "the same loop switching autograd with the flag", _SHARED_LOOP.replace(
        "        for i, data in enumerate(data_loader):\n",
        "        torch.set_grad_enabled(train)\n        for i, data in enumerate(data_loader):\n")),
]
PROJECTS += [
    ProjectShape("TW403", "the GPU-only project with a logging module (json.dumps is no 'mps' device)", {
        "main.py": _GPU_MAIN, "score/fid.py": _GPU_SCORE, "log.py": "import json\nprint(json.dumps({'timestamps': []}))\n"}),
]

# ----------------------------------------------------------------------------------- TW207 Lightning
_LIGHTNING = d("""
    import pytorch_lightning as pl
    class VAEXperiment(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            real_img, labels = batch
            self.curr_device = real_img.device
            train_loss = self.model.loss_function(*self.forward(real_img))
            self.log_dict({key: val.item() for key, val in train_loss.items()}, sync_dist=True)
            return train_loss['loss']
""")
FIND += [
    Shape("TW207", "VAE zoos on Lightning: training_step logs {k: v.item()} every step", _LIGHTNING, 7),
]
QUIET += [
    Shape("TW207", "the same logging the tensors themselves", _LIGHTNING.replace("val.item()", "val.detach()")),
    Shape("TW207", "a plain class's training_step is not Lightning's", _LIGHTNING.replace(
        "import pytorch_lightning as pl\nclass VAEXperiment(pl.LightningModule):", "class VAEXperiment:")),
]
FIND += [
    Shape("TW205", "detection losses: torch.ones(shape) * -1, then moved under a GPU check, per image every step", d("""
        import torch
        import torch.nn as nn
        class FocalLoss(nn.Module):
            def forward(self, classifications, annotations):
                for j in range(classifications.shape[0]):
                    classification = classifications[j, :, :]
                    targets = torch.ones(classification.shape) * -1
                    if torch.cuda.is_available():
                        targets = targets.cuda()
    """), 9),
]

# ----------------------------------------------------------------------------------- TW402 best reload
_BEST_RELOAD = d("""
    import glob
    import os
    import torch
    import train
    cnn = model.CNN_Text(args).cuda()
    best_acc = train.train(train_iter, dev_iter, cnn, args)
    best_files = glob.glob(os.path.join(args.save_dir, 'best_steps_*.pt'))
    best_path = max(best_files, key=os.path.getmtime)
    cnn.load_state_dict(torch.load(best_path, weights_only=True))
""")
QUIET += [
    Shape("TW402", "text classifiers: the best snapshot reloaded right after the training call", _BEST_RELOAD),
]
FIND += [
    Shape("TW402", "the same script loading a snapshot given on the command line", _BEST_RELOAD.replace(
        "best_acc = train.train(train_iter, dev_iter, cnn, args)\n",
        "cnn.load_state_dict(torch.load(args.snapshot, weights_only=True))\n"), 6),
]
