"""Snippets per rule: POSITIVE ones must be flagged (at the marked line when given), NEGATIVE
ones look alike but are correct and must not be.

A positive case is ``(source, line)`` where ``line`` is the 1-based line the finding must start on
(None: anywhere); a negative case is just the source.
"""

from __future__ import annotations

import textwrap


def d(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

POSITIVE: dict[str, list[tuple[str, int | None]]] = {}
NEGATIVE: dict[str, list[str]] = {}

# ----------------------------------------------------------------------------------- TW101
POSITIVE["TW101"] = [
    # an epoch total of backwarded losses, returned as an average: still the graphs pile up
    (d("""
        def train_epoch(model, loader, opt):
            total = 0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                opt.step()
                total += loss
            avg = total / len(loader)
            return avg
    """), 7),
    # backwarded, but the total is never reset inside the loop: it grows for the whole run
    (d("""
        import torch.nn.functional as F
        running = 0
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            running += loss
            loss.backward()
            optimizer.step()
        print(running)
    """), 5),
    (d("""
        import torch.nn as nn
        criterion = nn.CrossEntropyLoss()
        def train(model, loader, opt):
            total = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                opt.step()
                total += loss
            return total / len(loader)
    """), 9),
    (d("""
        from torch import nn
        def train(model, loader, opt):
            crit = nn.MSELoss()
            loss_fn = crit          # passed along within the function
            running = 0
            for x, y in loader:
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                running = running + loss
            print(running)
    """), 11),
    (d("""
        import torch.nn.functional as F
        losses = []
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            losses.append(loss)
    """), 6),
    (d("""
        def fit(model, data, opt):
            history = {"loss": 0}
            for batch in data:
                out = model(batch)
                loss = out.mean()
                loss.backward()
                opt.step()
                history["loss"] += loss
    """), 8),
]
NEGATIVE["TW101"] = [
    # loss terms of one computation summed and returned through a name and a dict
    d("""
        import torch.nn.functional as F
        def mask_losses(preds, gts):
            losses = {}
            loss_mask = 0
            for p, g in zip(preds, gts):
                loss_mask += F.binary_cross_entropy_with_logits(p, g, reduction="sum")
            losses["loss_mask"] = loss_mask / len(preds)
            return losses
        def l1_mean(criterion, xs):
            loss_sum = 0
            for x in xs:
                loss_sum += criterion(x, torch.zeros_like(x))
            loss_mean = loss_sum / len(xs)
            return loss_mean
    """),
    # the parts of one step's loss, rebound every iteration (DeiT's distillation terms)
    d("""
        for x, y in loader:
            outputs = model(x)
            loss = criterion(outputs[0], y)
            loss = loss + 0.25 * criterion(outputs[1], y)
            loss_scaler(loss, optimizer)
    """),
    # gradient accumulation: each micro-step's loss is backwarded (buffers freed) and the total
    # restarts at every optimizer step, so nothing piles up (torchtune recipes)
    d("""
        import torch.nn.functional as F
        for epoch in range(3):
            running_loss = 0
            for idx, batch in enumerate(loader):
                current_loss = F.cross_entropy(model(batch), batch) * n_tokens
                running_loss += current_loss
                current_loss.backward()
                if (idx + 1) % accum == 0:
                    optimizer.step()
                    print(running_loss.detach().item())
                    running_loss = 0
    """),
    # losses collected for one later backward pass through all of them (MC dropout, accumulation)
    d("""
        import torch
        def closure(self):
            losses = []
            for k in range(2):
                loss = self.loss(self(x))
                losses.append(loss)
                self.manual_backward(loss, retain_graph=True)
            loss = torch.stack(losses).mean()
            self.manual_backward(loss)
    """),
    d("""
        import torch.nn.functional as F
        losses = []
        for it in range(n):
            out = ddp_model(x)
            loss = F.mse_loss(out, y)
            losses.append(loss)
        for it in range(n):
            loss = losses[it]
            accelerator.backward(loss)
    """),
    # .item() and .detach() are the fixes
    d("""
        import torch.nn as nn
        criterion = nn.CrossEntropyLoss()
        total = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            total += loss.item()
            total += loss.detach()
            total += float(loss)
    """),
    # summing losses for ONE backward pass is the point there
    d("""
        import torch.nn.functional as F
        def step(model, heads, x, y):
            total = 0
            for head in heads:
                total += F.cross_entropy(head(model(x)), y)
            total.backward()
    """),
    d("""
        import torch.nn.functional as F
        def multi_loss(outs, y):
            total = 0
            for out in outs:
                total += F.mse_loss(out, y)
            return total
    """),
    # the name was rebound to a float before accumulating
    d("""
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            loss = loss.item()
            total += loss
    """),
    # under no_grad there is no graph to keep alive
    d("""
        import torch
        with torch.no_grad():
            for x, y in loader:
                val += criterion(model(x), y)
    """),
    # not a loss at all
    d("""
        total = 0
        for x in xs:
            total += x
        for step in range(10):
            count = count + step
    """),
    # outside any loop
    d("""
        loss = criterion(out, y)
        loss.backward()
        total += loss
    """),
]

# ----------------------------------------------------------------------------------- TW102
POSITIVE["TW102"] = [
    (d("""
        import torch.nn as nn
        import torch.nn.functional as F
        def run(model, data, y, lf):
            return lf(F.softmax(model(data), dim=1), y)
        run(net, x, y, nn.CrossEntropyLoss())
    """), 4),
    (HEADER + "loss = F.cross_entropy(F.softmax(logits, dim=1), y)\n", 4),
    (HEADER + "crit = nn.CrossEntropyLoss()\nprobs = logits.softmax(dim=-1)\nloss = crit(probs, y)\n", 6),
    (HEADER + "loss = nn.CrossEntropyLoss()(torch.softmax(x, 1), y)\n", 4),
    (HEADER + "loss = F.nll_loss(F.softmax(x, dim=1), y)\n", 4),
    (HEADER + "loss = F.cross_entropy(F.log_softmax(x, dim=1), y)\n", 4),
    (d("""
        from torch import nn
        model = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))
        criterion = nn.CrossEntropyLoss()
        loss = criterion(model(x), y)
    """), 4),
    (d("""
        import torch.nn as nn
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.criterion = nn.CrossEntropyLoss()
            def loss(self, out, y):
                p = out.softmax(1)
                return self.criterion(p, y)
    """), 8),
]
NEGATIVE["TW102"] = [
    # the function is called with different losses: not evidently cross-entropy
    d("""
        import torch.nn as nn
        import torch.nn.functional as F
        def run(model, data, y, lf):
            return lf(F.softmax(model(data), dim=1), y)
        run(net, x, y, nn.CrossEntropyLoss())
        run(net, x, y, nn.MSELoss())
    """),
    HEADER + "loss = F.cross_entropy(logits, y)\nprobs = F.softmax(logits, dim=1)\n",
    HEADER + "loss = F.nll_loss(F.log_softmax(x, dim=1), y)\n",
    HEADER + "crit = nn.NLLLoss()\nloss = crit(torch.log_softmax(x, 1), y)\n",
    # softmax fed to a loss that wants probabilities
    HEADER + "loss = F.binary_cross_entropy(torch.sigmoid(x), y)\nkl = F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1))\n",
    # the name was rebound to logits
    HEADER + "out = x.softmax(1)\nout = model(x)\nloss = F.cross_entropy(out, y)\n",
]

# ----------------------------------------------------------------------------------- TW103
POSITIVE["TW103"] = [
    (HEADER + "out = model.forward(x)\n", 4),
    (HEADER + "enc = nn.Linear(3, 4)\ny = enc.forward(x)\n", 5),
    (d("""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = nn.LSTM(4, 8)
            def forward(self, x):
                return self.encoder.forward(x)
        net = Net()
        out = net.forward(x)
    """), 7),
]
NEGATIVE["TW103"] = [
    # an OpenCV DNN net copied onto the instance with self.__dict__.update(locals())
    d("""
        import cv2
        import torch.nn as nn
        class Backend(nn.Module):
            def __init__(self, w):
                super().__init__()
                net = cv2.dnn.readNetFromONNX(w)
                self.__dict__.update(locals())
            def forward(self, im):
                self.net.setInput(im)
                return self.net.forward()
    """),
    "import cv2\nnet = cv2.dnn.readNet(path)\nout = net.forward()\n",
    d("""
        import torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                return super().forward(x)
            def predict(self, x):
                return self.forward(x)
    """),
    # not modules: an autograd Function, some other object with a forward method
    d("""
        import torch
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * x
        y = Square.forward(None, x)
        z = pipeline.forward(batch)
        out = model(x)
    """),
]

# ----------------------------------------------------------------------------------- TW104
POSITIVE["TW104"] = [
    # evaluate() called once per epoch by the function that trains: still evaluation
    (d("""
        import torch
        def main():
            def evaluate(loader):
                model.eval()
                for data in loader:
                    out = model(data.to(device))
            for epoch in range(10):
                model.train()
                for data in train_loader:
                    loss = criterion(model(data.to(device)), data.y)
                    loss.backward()
                    optimizer.step()
                val_acc = evaluate(val_loader)
    """), 6),
    # attack examples computed beforehand: the evaluation itself needs no graph
    (d("""
        import torch
        def advtest_fast(model, loader):
            model.eval()
            for batch, label, adv_batch, adv_label in loader:
                out_clean = model(batch.cuda())
                out_adv = model(adv_batch.cuda())
    """), 5),
    # predict() that the training step of this file never uses
    (d("""
        import torch
        class Runner:
            def update(self, x, y, opt):
                loss = self.loss_fn(self.network(x), y)
                loss.backward()
                opt.step()
            def predict(self, x):
                return self.network(x)
            def report(self, x):
                return self.predict(x).argmax(1)
    """),8),
    # a plain helper that is called directly, with no no_grad anywhere
    (d("""
        import torch
        from contextlib import ExitStack
        def evaluate(model, loader):
            with ExitStack() as stack:
                stack.enter_context(open("log.txt", "w"))
                for x in loader:
                    out = model(x)
        evaluate(net, val_loader)
    """), 7),
    # a factory name does not hide the real forward pass after it
    (d("""
        def validate(args, loader):
            model = create_model(args.model)
            model.eval()
            for x in loader:
                out = model(x)
    """), 5),
    (d("""
        import torch
        def evaluate(model, loader):
            model.eval()
            correct = 0
            for x, y in loader:
                out = model(x)
                correct += (out.argmax(1) == y).sum().item()
            return correct
    """), 6),
    (d("""
        def validate(net, batches):
            losses = []
            for xb, yb in batches:
                losses.append(float(criterion(net(xb), yb)))
            return losses
    """), 4),
    (d("""
        import torch
        model = torch.nn.Linear(3, 2)
        model.eval()
        for x in data:
            preds = model(x)
    """), 5),
    (d("""
        class Runner:
            def run_inference(self, x):
                self.model.eval()
                return self.model(x)
    """), 4),
]
NEGATIVE["TW104"] = [
    # predict() of an algorithm class whose own update step trains through it (DomainBed style)
    d("""
        import torch
        import torch.nn.functional as F
        class ERM(Algorithm):
            def update(self, minibatches, opt):
                x = torch.cat([d[0].cuda() for d in minibatches])
                y = torch.cat([d[1].cuda() for d in minibatches])
                loss = F.cross_entropy(self.predict(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            def predict(self, x):
                return self.network(x)
    """),
    # robustness evaluation that runs a gradient attack (advertorch's perturb) on the model
    d("""
        import torch
        def advtest(model, loader, adversary):
            model.eval()
            for batch, label in loader:
                batch = batch.cuda()
                out_clean = model(batch)
                advbatch = adversary.perturb(batch, label)
                out_adv = model(advbatch)
    """),
    # a prediction helper of a transformers model class: part of its forward, the caller sets grad mode
    d("""
        from transformers import PreTrainedModel
        class PrismaticBase(PreTrainedModel):
            pass
        class ActionModel(PrismaticBase):
            def _run_diffusion_prediction(self, input_embeddings, labels):
                out = self.language_model(inputs_embeds=input_embeddings, labels=labels)
                return out
    """),
    # no_grad entered through an ExitStack (detectron2's inference_on_dataset)
    d("""
        import torch
        from contextlib import ExitStack
        def inference_on_dataset(model, data_loader):
            with ExitStack() as stack:
                stack.enter_context(torch.no_grad())
                for inputs in data_loader:
                    outputs = model(inputs)
    """),
    # a test helper with a leading underscore
    d("""
        class E2ETest:
            def _test_eval(self, sizes):
                inputs = [make_inputs(s) for s in sizes]
                self.model.eval()
                self.model(inputs)
    """),
    # an evaluation callback returned to an evaluator elsewhere, which sets grad mode
    d("""
        def make_eval_fn(ts_model, schema):
            def eval_wrapper(inputs):
                return schema(ts_model(inputs[0]["image"]))
            return eval_wrapper
    """),
    # a wrapper of this file whose forward already runs under inference_mode
    d("""
        import torch
        import torch.nn as nn
        class FrozenFeatures(nn.Module):
            def __init__(self, backbone):
                super().__init__()
                self.backbone = backbone
            def forward(self, images):
                with torch.inference_mode():
                    return self.backbone(images)
        def run_eval_linear(model, sample):
            feature_model = FrozenFeatures(model)
            out = feature_model(sample.cuda())
    """),
    # forward() of a module that puts a frozen sub-network in eval mode: training still runs through it
    d("""
        import torch.nn as nn
        class Wrapper(nn.Module):
            def __init__(self):
                super().__init__()
                self.backbone = nn.Linear(4, 4)
                self.proj = nn.Linear(4, 2)
            def forward(self, x, freeze=False):
                if freeze:
                    self.backbone.eval()
                return self.proj(self.backbone(x))
    """),
    # a conditional no_grad context chosen by an argument
    d("""
        import torch
        from contextlib import nullcontext
        def embed(model, x, eval_with_no_grad=False):
            if eval_with_no_grad:
                model.eval()
            context = torch.no_grad if eval_with_no_grad else nullcontext
            with context():
                return model(x)
    """),
    # a project decorator that returns torch.inference_mode()(fn), defined here or imported
    d("""
        import torch
        def smart_inference_mode(enabled=True):
            def decorate(fn):
                return (torch.inference_mode if enabled else torch.no_grad)()(fn)
            return decorate
        @smart_inference_mode()
        def run(model, loader):
            model.eval()
            for x in loader:
                y = model(x)
    """),
    d("""
        from utils.torch_utils import smart_inference_mode
        @smart_inference_mode()
        def validate(model, loader):
            for x in loader:
                y = model(x)
    """),
    # a factory call after model.eval() is not a forward pass
    d("""
        import torch
        from timm import create_model
        def validate(args):
            model = create_model(args.model, pretrained=True)
            model.eval()
            teacher = unwrap_model(model)
            model = build_model(args)
    """),
    # predict_masks() of an nn.Module is part of its forward; the caller chooses the grad mode
    d("""
        import torch.nn as nn
        class MaskDecoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.output_upscaling = nn.Sequential(nn.ConvTranspose2d(8, 4, 2))
            def predict_masks(self, src):
                return self.output_upscaling(src)
    """),
    # already grad-free: with-blocks, decorators, set_grad_enabled(False)
    d("""
        import torch
        def evaluate(model, loader):
            model.eval()
            with torch.no_grad():
                for x, y in loader:
                    out = model(x)
        @torch.no_grad()
        def validate(model, loader):
            for x, y in loader:
                out = model(x)
        @torch.inference_mode()
        def predict(model, x):
            model.eval()
            return model(x)
        def infer(model, x):
            torch.set_grad_enabled(False)
            return model(x)
    """),
    # evaluation that needs gradients (saliency maps, adversarial examples)
    d("""
        import torch
        def evaluate_saliency(model, x):
            model.eval()
            x.requires_grad_(True)
            out = model(x)
            out.max().backward()
            return x.grad
    """),
    # a training function (backward/step), even if it calls model.eval() at the end
    d("""
        def train_epoch(model, loader, opt):
            for x, y in loader:
                loss = crit(model(x), y)
                loss.backward()
                opt.step()
            model.eval()
    """),
    # called only under no_grad in this file
    d("""
        import torch
        def evaluate(model, loader):
            model.eval()
            return [model(x) for x in loader]
        with torch.no_grad():
            evaluate(net, val_loader)
    """),
    # pytest tests and framework hooks
    d("""
        def test_eval_mode(model, x):
            model.eval()
            assert model(x).shape == (1, 2)
        class Lit:
            def validation_step(self, batch, idx):
                return self.model(batch)
    """),
    # not a model: solver.model() in a validate() function
    d("""
        def validate(solver, constraints):
            for c in constraints:
                solver.add(c)
            return solver.model()
    """),
    # phase-dependent grad mode
    d("""
        import torch
        def run_epoch(model, loader, phase):
            model.eval()
            for x, y in loader:
                with torch.set_grad_enabled(phase == "train"):
                    out = model(x)
    """),
]

# ----------------------------------------------------------------------------------- TW105
POSITIVE["TW105"] = [
    (HEADER + "logp = torch.log(F.softmax(logits, dim=-1))\n", 4),
    (HEADER + "p = logits.softmax(-1)\nlogp = p.log()\n", 5),
    (HEADER + "ll = torch.log(torch.sigmoid(x))\n", 4),
    (HEADER + "sm = nn.Softmax(dim=1)\nlogp = torch.log(sm(x))\n", 5),
]
NEGATIVE["TW105"] = [
    HEADER + "logp = F.log_softmax(logits, dim=-1)\nll = F.logsigmoid(x)\n",
    HEADER + "p = F.softmax(x, 1)\nlogp = torch.log(p + 1e-8)\nlogq = torch.log(p.clamp_min(1e-12))\n",
    HEADER + "p = F.softmax(x, 1)\np = p.clamp(min=1e-6)\nlogp = torch.log(p)\n",
    "import math, numpy as np\nimport torch\ny = math.log(p)\nz = np.log(torch.softmax(x, 1).numpy())\nlogger.log(10, 'msg')\n",
]

# ----------------------------------------------------------------------------------- TW107
POSITIVE["TW107"] = [
    (HEADER + "y = x.transpose(1, 2).view(b, -1)\n", 4),
    (HEADER + "y = x.permute(0, 2, 1, 3).view(n, -1, d)\n", 4),  # every neighbour pair was reordered
    (HEADER + "y = x.permute(0, 3, 1, 2).view(n, -1)\n", 4),
    (HEADER + "t = x.view(3, 4, 5)\nu = t.transpose(0, 2)\nv = u.view(60)\n", 6),
    (HEADER + "w = x.t().view(-1)\n", 4),
    (HEADER + "w = x.mT.view(-1)\n", 4),
]
NEGATIVE["TW107"] = [
    # NCHW -> NHWC then merging H and W: they stay neighbours in memory, so the view works (DINO)
    HEADER + "y = x.permute(0, 2, 3, 1).view(n, -1, c)\n",
    HEADER + "y = x.transpose(1, 2).contiguous().view(b, -1)\nz = x.transpose(1, 2).reshape(b, -1)\n",
    # a view that only splits dimensions works after a transpose
    HEADER + "q = q.view(t, b * h, d).transpose(0, 1)\nq = q.view(b, h, t, d)\n",
    # view(dtype) reinterprets bits, any layout
    HEADER + "y = x.transpose(0, 1).view(torch.int8)\nz = x.t().view(dtype)\n",
    # identity permutation / transpose of a dim with itself
    HEADER + "y = x.permute(0, 1, 2).view(-1)\nz = x.transpose(1, 1).view(-1)\n",
    # numpy, no torch import: not a tensor
    "import numpy as np\na = arr.transpose(1, 0).view(np.float32)\n",
]

# ----------------------------------------------------------------------------------- TW108
POSITIVE["TW108"] = [
    (HEADER + "h = layer.register_backward_hook(hook)\n", 4),
    (HEADER + "model.fc.register_backward_hook(lambda m, gi, go: None)\n", 4),
    ("from torch.nn.modules.module import register_module_backward_hook\nregister_module_backward_hook(h)\n", 2),
]
NEGATIVE["TW108"] = [
    HEADER + "h = layer.register_full_backward_hook(hook)\nt.register_hook(fn)\n",
    "class M:\n    def register_backward_hook(self, hook):\n        return hook\n",
]

# ----------------------------------------------------------------------------------- TW109
_BN_OVERRIDE = d("""
    import torch.nn as nn
    class Net(nn.Module):
        def train(self, mode=True):
            super().train(mode)
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval(){extra}
            return self
    model.train()
""")
POSITIVE["TW109"] = [
    (d("""
        import torch.nn as nn
        def freeze_bn(model):
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
        freeze_bn(model)
        for epoch in range(10):
            model.train()
            train_one_epoch(model)
    """), 6),
    (d("""
        import torch.nn as nn
        for m in net.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.eval()
        net.train()
    """), 4),
    (d("""
        def set_bn_eval(m):
            classname = m.__class__.__name__
            if classname.find('BatchNorm') != -1:
                m.eval()
        model.apply(set_bn_eval)
        model.train()
    """), 5),
    # round 7 (lead's decision): re-frozen after every train(), but the affine weight and bias
    # keep requires_grad and train - the freeze is half done (a look-alike until round 7a)
    (d("""
        import torch.nn as nn
        def freeze_bn(model):
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
        for epoch in range(10):
            model.train()
            freeze_bn(model)
            train_one_epoch(model)
    """), 5),
    # the train() override that re-applies eval only (a look-alike until round 7)
    (_BN_OVERRIDE.format(extra=""), 7),
    # frozen with eval and never unfrozen, affine parameters still trainable (a look-alike until round 7)
    (d("""
        import torch.nn as nn
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval()
        run(model)
    """), 4),
]
NEGATIVE["TW109"] = [
    # re-frozen after every train(), the affine parameters frozen too
    d("""
        import torch.nn as nn
        def freeze_bn(model):
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
                    m.weight.requires_grad = False
                    m.bias.requires_grad = False
        for epoch in range(10):
            model.train()
            freeze_bn(model)
            train_one_epoch(model)
    """),
    # the train() override pattern, with requires_grad_(False)
    _BN_OVERRIDE.format(extra="\n                m.requires_grad_(False)"),
    # eval of the whole model (evaluation), not a BatchNorm freeze
    d("""
        import torch.nn as nn
        model.eval()
        evaluate(model)
        model.train()
        for m in model.modules():
            if isinstance(m, nn.Linear):
                m.eval()
        model.train()
    """),
    # frozen, never unfrozen, affine parameters turned off in the code that calls the freeze
    d("""
        import torch.nn as nn
        def set_bn_eval(m):
            if isinstance(m, nn.BatchNorm2d):
                m.eval()
        def prepare(model):
            model.apply(set_bn_eval)
            for name, p in model.named_parameters():
                if "bn" in name:
                    p.requires_grad = False
        prepare(model)
    """),
]

# ----------------------------------------------------------------------------------- TW110
POSITIVE["TW110"] = [
    # a fresh optimizer each pass over the same outer model: the model's gradients still pile up
    (d("""
        import torch
        for x, y in loader:
            loss_fn(model(x), y).backward()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            opt.step()
    """), 2),
    (d("""
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """), 1),
    (d("""
        import torch
        def train(model, loader):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            opt.zero_grad()
            for epoch in range(3):
                for x, y in loader:
                    model(x).sum().backward()
                    opt.step()
    """), 6),
    (d("""
        while True:
            scaler.scale(loss_fn(net(x), y)).backward()
            scaler.step(self.optimizer)
            scaler.update()
    """), 1),
]
NEGATIVE["TW110"] = [
    # a test that builds a fresh module and optimizer for each case: one step each
    d("""
        import torch
        for params, case in cases:
            gen = CopyGenerator(**case)
            trainable = {n: p for n, p in gen.named_parameters() if p.requires_grad}
            gen(*inputs(params)).sum().backward()
            dummy_optim = torch.optim.SGD(trainable.values(), 1)
            dummy_optim.step()
    """),
    # distributed autograd: every context keeps its own gradients
    d("""
        import torch.distributed.autograd as dist_autograd
        for x, y in batches():
            with dist_autograd.context() as cid:
                loss = criterion(model(x), y)
                dist_autograd.backward(cid, [loss])
                opt.step(cid)
    """),
    # the zeroing happens in a helper of another module that gets the model
    d("""
        from utils import reset_gradients
        for x, y in loader:
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
            reset_gradients(model)
    """),
    d("""
        for x, y in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """),
    # deliberate accumulation: zeroed every N steps
    d("""
        for i, (x, y) in enumerate(loader):
            (criterion(model(x), y) / 4).backward()
            if (i + 1) % 4 == 0:
                optimizer.step()
                optimizer.zero_grad()
    """),
    # zeroing by hand, in a helper, or in an LBFGS closure
    d("""
        for x, y in loader:
            for p in model.parameters():
                p.grad = None
            loss_fn(model(x), y).backward()
            opt.step()
        def reset(m):
            m.zero_grad()
        for x, y in loader:
            reset(model)
            loss_fn(model(x), y).backward()
            opt.step()
        for x, y in loader:
            def closure():
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                return loss
            opt.step(closure)
    """),
    # a scheduler step is not an optimizer step; RL env.step neither
    d("""
        for x, y in loader:
            loss_fn(model(x), y).backward()
            scheduler.step()
        for t in range(100):
            obs, r, done, info = env.step(action)
    """),
    # the optimizer is handed to code we cannot see
    d("""
        for x, y in loader:
            loss_fn(model(x), y).backward()
            optimizer.step()
            hooks.after_step(optimizer)
    """),
]

# ----------------------------------------------------------------------------------- TW111
POSITIVE["TW111"] = [
    (d("""
        import torch.nn as nn
        for p in model.parameters():
            nn.init.xavier_uniform_(p)
    """), 3),
    (d("""
        from torch.nn import init
        for name, param in net.named_parameters():
            init.kaiming_normal_(param, nonlinearity="relu")
    """), 3),
    (d("""
        import torch
        torch.nn.init.orthogonal_(layer.bias)
    """), 2),
]
NEGATIVE["TW111"] = [
    d("""
        import torch.nn as nn
        for p in model.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        for name, p in model.named_parameters():
            if "bias" in name:
                continue
            nn.init.kaiming_normal_(p)
        for p in model.parameters():
            nn.init.normal_(p, std=0.02)
        nn.init.xavier_uniform_(layer.weight)
        nn.init.zeros_(layer.bias)
    """),
]

# ----------------------------------------------------------------------------------- TW116
POSITIVE["TW116"] = [
    (d("""
        new_state_dict = {}
        for k, v in state_dict.items():
            name = k[7:]  # remove `module.`
            new_state_dict[name] = v
    """), 3),
    (d("""
        import torch
        sd = {k[7:]: v for k, v in torch.load("m.pt", weights_only=True).items()}
    """), 2),
    ("ckpt = load()\nweights = {k[len('module.'):]: v for k, v in ckpt['state_dict'].items()}\n", 2),
]
NEGATIVE["TW116"] = [
    d("""
        sd = {(k[7:] if k.startswith("module.") else k): v for k, v in state_dict.items()}
        sd2 = {k[7:]: v for k, v in state_dict.items() if k.startswith("module.")}
        for k, v in state_dict.items():
            if k.startswith("module."):
                k = k[7:]
        sd3 = {k.removeprefix("module."): v for k, v in state_dict.items()}
    """),
    # slicing something that is not a state-dict key
    d("""
        for line in lines:
            date = line[7:]
        for k, v in headers.items():
            value = v[7:]
    """),
]

# ----------------------------------------------------------------------------------- TW201
POSITIVE["TW201"] = [
    (HEADER + "model = nn.DataParallel(model)\n", 4),
    ("from torch.nn.parallel import DataParallel as DP\nm = DP(net, device_ids=[0, 1])\n", 2),
    ("import torch\nm = torch.nn.DataParallel(net).cuda()\n", 2),
]
NEGATIVE["TW201"] = [
    # a library helper choosing DataParallel for its caller's model and returning it
    d("""
        import torch
        def auto_model(model, **kwargs):
            if torch.cuda.device_count() > 1:
                model = torch.nn.parallel.DataParallel(model, **kwargs)
            return model
    """),
    # a library helper that offers DataParallel; the caller decides
    "from torch.nn import DataParallel\ndef setup_module(module, devices):\n    return DataParallel(module=module, device_ids=devices)\n",
    HEADER + "if isinstance(model, nn.DataParallel):\n    model = model.module\n",
    "from torch.nn.parallel import DistributedDataParallel as DDP\nm = DDP(net)\n",
    "from mylib import DataParallel\nm = DataParallel(net)\n",
]

# ----------------------------------------------------------------------------------- TW202
POSITIVE["TW202"] = [
    # a random window, but read from disk per item: workers help
    (d("""
        import random
        from torch.utils.data import DataLoader, Dataset
        class Clips(Dataset):
            def __getitem__(self, index):
                start = random.randint(0, self.n - 16)
                return read_frames(self.paths[index], start, 16)
        loader = DataLoader(Clips(), batch_size=8)
    """), 7),
    ("from torch.utils.data import DataLoader\nfrom torchvision import datasets\nds = datasets.MNIST('.', transform=tf)\nloader = DataLoader(ds, batch_size=32, shuffle=True)\n", 4),
    ("from torch.utils.data import DataLoader as DL\nimport torchvision.transforms as T\nds = Folder(root, transform=T.ToTensor())\nloader = DL(ds, batch_size=32)\n", 4),
    # a dataset class that decodes files in __getitem__: workers would help
    (d("""
        from torch.utils.data import DataLoader, Dataset
        class Images(Dataset):
            def __getitem__(self, i):
                return load_image(self.paths[i]), self.labels[i]
        loader = DataLoader(Images(), batch_size=8)
    """), 5),
    ("import torch\nimport torchvision\nloader = torch.utils.data.DataLoader(torchvision.datasets.CIFAR10('.'), 64)\n", 3),
]
NEGATIVE["TW202"] = [
    # index batches, next to per-item transforms elsewhere in the file
    d("""
        import torchvision.transforms as T
        from torch.utils.data import DataLoader
        train_idx = data.train_mask.nonzero(as_tuple=False).view(-1)
        train_loader = DataLoader(train_idx, batch_size=16 * 1024, shuffle=True)
        ds = Folder(root, transform=T.ToTensor())
    """),
    # a random window of one in-memory tensor (enwik8 samplers), moved to the GPU per item:
    # nothing for a worker to speed up, and CUDA cannot be used in forked workers
    d("""
        import torch
        import torchvision.transforms as T
        from torch.utils.data import DataLoader, Dataset
        class TextSampler(Dataset):
            def __init__(self, data, seq_len):
                self.data, self.seq_len = data, seq_len
            def __getitem__(self, index):
                start = torch.randint(0, self.data.size(0) - self.seq_len - 1, (1,))
                return self.data[start: start + self.seq_len + 1].long().cuda()
            def __len__(self):
                return self.data.size(0) // self.seq_len
        train_loader = DataLoader(TextSampler(data, 1024), batch_size=4, drop_last=True)
    """),
    # per-item image work, but the collate_fn puts every batch on the GPU
    d("""
        from functools import partial
        import torchvision.transforms as T
        from torch.utils.data import DataLoader, Dataset
        class Images(Dataset):
            def __getitem__(self, i):
                return load_image(self.paths[i])
        def collate(items, device="cpu"):
            return torch.stack(items).to(device)
        collate_on_gpu = partial(collate, device=device)
        loader = DataLoader(Images(), batch_size=8, collate_fn=collate_on_gpu)
    """),
    # tokenised tensors converted with .type() per item, next to a torchvision transform elsewhere
    d("""
        import torchvision.transforms as T
        from torch.utils.data import DataLoader, Dataset
        class Instructions(Dataset):
            def __getitem__(self, i):
                ids = self._data[i]["input_ids"].type(torch.int64)
                return ids, self._data[i]["labels"].type(torch.int64)
        loader = DataLoader(Instructions(), batch_size=2)
    """),
    # a dataset we cannot see, with no sign of per-item work in the file (tokenised text, tensors)
    "from torch.utils.data import DataLoader\nfrom data import get_dataset\nds = get_dataset(cfg)\ndl = DataLoader(ds, batch_size=1)\n",
    # tokenised once with .map(), then only padded per batch (Hugging Face examples)
    d("""
        from torch.utils.data import DataLoader
        tokenized = raw.map(tokenize, batched=True, remove_columns=["text"])
        tokenized = tokenized.rename_column("label", "labels")
        train_dl = DataLoader(tokenized["train"], shuffle=True, collate_fn=pad, batch_size=16)
    """),
    # a subset of a synthetic dataset; a dataset that slices one stored tensor
    d("""
        from torch.utils.data import DataLoader, Dataset, Subset
        class RandomDataset(Dataset):
            def __getitem__(self, i):
                return self.data[i]
        class DM:
            def setup(self):
                self.full = RandomDataset(32, 64)
                self.train = Subset(self.full, range(32))
            def train_dataloader(self):
                return DataLoader(self.train)
    """),
    d("""
        from torch.utils.data import DataLoader, Dataset
        class Text(Dataset):
            def __getitem__(self, index):
                start = index * self.block
                end = start + self.block
                return self.data[start:end], self.data[start + 1:end + 1]
        dl = DataLoader(Text())
    """),
    # an explicit count, 0 included, is a decision
    "from torch.utils.data import DataLoader as DL\nloader = DL(ds, batch_size=32, num_workers=0)\n",
    # in-memory data: tensors, ranges, lists, synthetic datasets, index-only dataset classes
    "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nds = TensorDataset(x, y)\nld = DataLoader(ds, batch_size=4)\n",
    "from torch.utils.data import DataLoader\ndl = DataLoader(range(64), batch_size=8)\n",
    "from torch.utils.data import DataLoader\ndl = DataLoader(list(range(10)), batch_size=1)\n",
    "from torch.utils.data import DataLoader\nfrom lightning.pytorch.demos.boring_classes import RandomDataset\ndl = DataLoader(RandomDataset(32, 64))\n",
    d("""
        from torch.utils.data import DataLoader, Dataset
        class Pairs(Dataset):
            def __getitem__(self, i):
                return self.x[i], self.y[i]
        loader = DataLoader(Pairs(), batch_size=8)
    """),
    # an iterable dataset fed by the main process (each worker would replay the stream)
    d("""
        from torch.utils.data import DataLoader, IterableDataset
        class Stream(IterableDataset):
            def __iter__(self):
                yield from self.queue
        loader = DataLoader(Stream(), batch_size=8)
    """),
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=32, num_workers=4)\n",
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=32, num_workers=args.workers)\n",
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, **loader_kwargs)\n",
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, 32, True, None, None, 8)\n",
    "from mylib import DataLoader\nloader = DataLoader(ds)\n",
]

# ----------------------------------------------------------------------------------- TW203
POSITIVE["TW203"] = [
    # a tensor of features (not indices) copied to the GPU batch by batch
    (d("""
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        features = torch.from_numpy(np.load("feats.npy"))
        loader = DataLoader(TensorDataset(features, labels), batch_size=256, num_workers=0)
        for x, y in loader:
            x = x.to("cuda")
    """), 4),
    # a dataset of this file that reads its stored data per item, moved in the loop: pin it
    (d("""
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Tokens(Dataset):
            def __getitem__(self, index):
                return torch.tensor(self.encoded[index])
        def collate(batch):
            return torch.stack(batch)
        loader = DataLoader(Tokens(), batch_size=8, collate_fn=collate, num_workers=2)
        for x in loader:
            x = x.to("cuda")
    """), 8),
    ("import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\nmodel.cuda()\n", 3),
    ('from torch.utils.data import DataLoader\ndevice = "cuda"\nloader = DataLoader(ds, num_workers=2)\n', 3),
    # the GPU evidence is in the function that builds the loader
    (d("""
        from torch.utils.data import DataLoader
        def train_gpu(ds, model):
            model.cuda()
            loader = DataLoader(ds, num_workers=2)
    """), 4),
]
NEGATIVE["TW203"] = [
    # loaders over positions: index batches that slice data already on the GPU (PyG examples)
    d("""
        import torch
        from torch.utils.data import DataLoader
        data = data.to("cuda")
        train_idx = data.train_mask.nonzero(as_tuple=False).view(-1)
        train_loader = DataLoader(train_idx, batch_size=1024, shuffle=True)
        perm_loader = DataLoader(range(data.num_edges), 8192, shuffle=True)
    """),
    # prompts for sampling class images, from a dataset class of another module
    d("""
        import torch
        from utils.dataset import PromptDataset
        pipeline.to("cuda")
        sample_dataset = PromptDataset(args.class_prompt, num_new_images)
        sample_dataloader = torch.utils.data.DataLoader(sample_dataset, batch_size=args.sample_batch_size)
    """),
    # the collate_fn moves batches to the GPU (pinning a CUDA tensor raises)
    d("""
        from functools import partial
        import torch
        from torch.utils.data import DataLoader
        def collate(batch, device="cpu"):
            inputs = torch.stack([b[0] for b in batch]).to(device)
            return inputs
        device = torch.device("cuda")
        train_loader = DataLoader(train_ds, batch_size=8, collate_fn=partial(collate, device=device), num_workers=0)
    """),
    # a dataset that returns CUDA tensors, and a TensorDataset of a tensor on the GPU
    d("""
        import torch
        from torch.utils.data import DataLoader, Dataset, TensorDataset
        class Sampler(Dataset):
            def __getitem__(self, i):
                return self.data[i: i + 128].long().cuda()
        model = Net().cuda()
        a = DataLoader(Sampler(), batch_size=4)
    """),
    d("""
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        device = torch.device("cuda")
        rgb = torch.from_numpy(img).to(device)
        stacked = torch.stack([rgb] * 10)
        b = DataLoader(TensorDataset(stacked), batch_size=2)
    """),
    # prompts to sample class images from: no tensor in an item
    d("""
        import torch
        from torch.utils.data import DataLoader, Dataset
        class PromptDataset(Dataset):
            def __init__(self, prompt, n):
                self.prompt, self.n = prompt, n
            def __len__(self):
                return self.n
            def __getitem__(self, index):
                example = {}
                example["prompt"] = self.prompt
                example["index"] = index
                return example
        pipeline.to("cuda")
        sample_dataloader = DataLoader(PromptDataset(args.class_prompt, 100), batch_size=4)
    """),
    # a CPU-only function in a file whose other function uses the GPU
    d("""
        import torch
        from torch.utils.data import DataLoader
        def test_cpu(ds):
            return list(DataLoader(ds, batch_size=4))
        def test_gpu(x):
            return x.cuda()
    """),
    # no GPU in sight
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n",
    # pinned, an explicit decision with its reason in a comment, or hidden in kwargs
    'from torch.utils.data import DataLoader\nx = "cuda"\na = DataLoader(ds, pin_memory=True)\n'
    'b = DataLoader(ds, pin_memory=False)  # pin_memory off: the collate returns shared-memory tensors\nc = DataLoader(ds, **kw)\n',
]

# ----------------------------------------------------------------------------------- TW204
POSITIVE["TW204"] = [
    (d("""
        from torch.utils.data import DataLoader
        train_loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)
        for x, y in train_loader:
            x = x.to(device)
            y = y.cuda()
    """), 4),
    (d("""
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=4, pin_memory=True)
        for i, batch in enumerate(loader):
            inputs, labels = batch
            inputs = inputs.to(device)
    """), 5),
]
NEGATIVE["TW204"] = [
    d("""
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=4, pin_memory=True)
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            y = y.cuda(non_blocking=True)
            w = weights.to(device)       # not from the loader
    """),
    # not pinned: non_blocking would not help
    d("""
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=4)
        for x, y in loader:
            x = x.to(device)
    """),
    # .to(dtype) is a conversion, not a copy to a device
    d("""
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, num_workers=4, pin_memory=True)
        for x, y in loader:
            x = x.to(torch.float16)
    """),
]

# ----------------------------------------------------------------------------------- TW205
POSITIVE["TW205"] = [
    # a demo that appends predictions to a log file is no file reader: its length tensor per batch is made
    (d("""
        import torch
        def demo(opt, model, loader, device):
            for images, paths in loader:
                length = torch.IntTensor([opt.batch_max_length] * images.size(0)).to(device)
                preds = model(images.to(device), length)
                log = open("./log_demo_result.txt", "a")
                log.write(str(preds))
    """), 4),
    # a function that reads files still makes a size tensor per item (only parsed values are data)
    (d("""
        import json
        import torch
        def decode_all(model, path):
            with open(path) as f:
                utts = json.load(f)
            for name in utts:
                feats = load_feats(utts[name])
                length = torch.tensor([feats.size(0)], dtype=torch.int)
                length = length.cuda()
                model.recognize(feats.cuda(), length)
    """), 9),
    # starred sizes cannot hold a device
    ("import torch\nfor step in range(n):\n    z = torch.zeros(b, ch, *size).to(device)\n", 3),
    # reshaping methods between the factory and the move, inside forward
    (d("""
        import torch
        import torch.nn as nn
        class Pos(nn.Module):
            def forward(self, x):
                pos = torch.arange(x.shape[1]).unsqueeze(0).repeat(x.shape[0], 1).to(self.device)
                return x + pos
    """), 5),
    ("import torch\nfor x, y in loader:\n    mask = torch.ones(4, 4).cuda()\n", 3),
    ("import torch\ndef sample_noise(b):\n    return torch.randn(b, 3).to(device)\n", 3),  # a helper: may run per step
    ('import torch\nwhile True:\n    idx = torch.arange(10).to("cuda:0")\n', 3),
    ("import torch\ndef forward(self, x):\n    t = torch.tensor([1, 2, 3]).to(x.device)\n", 3),
    ("import torch\nouts = [torch.zeros(3).cuda() for _ in range(8)]\n", 2),  # a comprehension repeats it
]
NEGATIVE["TW205"] = [
    "import torch\nt = torch.tensor([rank + 1]).to(\"cpu\")\n",  # made on the CPU already
    # sampling from a tensor that lives on its device already
    "import torch\nnxt = torch.multinomial(prob, num_samples=1).unsqueeze(1).to(device)\n",
    # a device-holder graph traced on purpose (CLIP)
    "import torch\nholder = torch.jit.trace(lambda: torch.ones([]).to(torch.device(device)), example_inputs=[])\n",
    "import torch\nz = torch.zeros(*shape, **factory_kwargs).to(device)\n",  # **kwargs may hold a device
    "import torch\ny = x.unsqueeze(0).repeat(b, 1).to(device)\n",  # not a factory: existing data
    'import torch\nm = torch.ones(4, 4, device="cuda")\nx = torch.zeros(3).to(torch.float16)\ny = torch.zeros(3).to(other)\n',
    # the tensor was not just created here
    "import torch\nx = batch.cuda()\ny = torch.zeros_like(a).to(device)\nz = torch.from_numpy(arr).cuda()\n",
    # a CPU generator fixes where the numbers are drawn
    "import torch\nr = torch.rand(5, generator=g).to(device)\n",
    # data that may already live on the device
    "import torch\nt = torch.as_tensor(batch).to(device)\nu = torch.tensor(x).cuda()\n",
    # .to() on something else
    "import numpy as np\nz = np.zeros(3).to(device)\n",
    # one-time set-up: module level, __init__, main(), before the loop of a function that loops
    "import torch\nmask = torch.ones(4, 4).cuda()\nnoise = torch.randn(8, 3).to(device)\n",
    d("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("pos", torch.arange(64).to(device))
        def main():
            table = torch.zeros(10).cuda()
        def train(model, loader):
            total = torch.zeros(1).to(device)
            for x, y in loader:
                model(x)
    """),
]

# ----------------------------------------------------------------------------------- TW206
POSITIVE["TW206"] = [
    ("import numpy as np\nimport torch\ndef __getitem__(self, i):\n    return torch.tensor(np.load(self.paths[i]))\n", 4),
    ("import numpy as np\nimport torch\nfor i in range(10):\n    arr = np.zeros((3, 4))\n    t = torch.tensor(arr)\n", 5),
    ("import numpy\nfrom torch import tensor\ndef augment(x):\n    return x + tensor(numpy.random.rand(3, 4))\n", 4),
]
NEGATIVE["TW206"] = [
    # one-time set-up: module level outside loops, a set-up function
    "import numpy as np\nimport torch\nx = torch.tensor(np.load('a.npy'))\n",
    "import numpy as np\nimport torch\nclass M:\n    def __init__(self):\n        self.t = torch.tensor(np.zeros((3, 4)))\n",
    # a dtype change or a device copy copies anyway
    "import numpy as np\nimport torch\nlam = np.ones(4)\nt = torch.tensor(lam, device=x.device, dtype=x.dtype)\n",
    "import numpy as np\nimport torch\nt = torch.from_numpy(np.load('a.npy'))\nu = torch.as_tensor(arr)\n",
    "import numpy as np\nimport torch\nt = torch.tensor([1, 2, 3])\nu = torch.tensor(values)\nv = torch.tensor(np.pi)\n",
]

# ----------------------------------------------------------------------------------- TW207
_LOOP = d("""
    import torch
    def train(model, loader, opt, device):
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss = criterion(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
POSITIVE["TW207"] = [
    # read mid-step, before the loop's own synchronize: the host still stalls between forward and backward
    (d("""
        import torch
        for samples, targets in data_loader:
            samples = samples.cuda(non_blocking=True)
            loss = criterion(model(samples), targets.cuda())
            loss_value = loss.item()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            torch.cuda.synchronize()
    """), 5),
    # data flow, not names: netD is a module because its parameters go to an optimizer (DCGAN)
    (d("""
        import torch
        netD = Discriminator(ngpu).to(device)
        optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4)
        for i, data in enumerate(dataloader):
            real = data[0].to(device)
            output = netD(real).view(-1)
            errD = criterion(output, label)
            errD.backward()
            D_x = output.mean().item()
            optimizerD.step()
    """), 9),
    # Fabric places model and batches; the loop itself moves nothing
    (d("""
        def train(fabric, model, optimizer, loader):
            model, optimizer = fabric.setup(model, optimizer)
            loader = fabric.setup_dataloaders(loader)
            for batch in loader:
                loss = model(batch).mean()
                fabric.backward(loss)
                optimizer.step()
                print(loss.item())
    """), 8),
    # batches come from a helper of this file that moves them to the device (nanoGPT's get_batch)
    (d("""
        import torch
        def get_batch(split):
            x, y = sample(split)
            return x.to(device), y.to(device)
        for it in range(max_iters):
            X, Y = get_batch("train")
            logits = model(X)
            loss = F.cross_entropy(logits, Y)
            loss.backward()
            optimizer.step()
            lossf = loss.item()
    """), 11),
    (_LOOP + "        running += loss.item()\n", 10),
    # the loss gathered across processes for logging (diffusers' training scripts)
    (d("""
        import torch.nn.functional as F
        for step, batch in enumerate(train_dataloader):
            with accelerator.accumulate(unet):
                pred = unet(batch["latents"].to(accelerator.device))
                loss = F.mse_loss(pred.float(), batch["target"].float())
                avg_loss = accelerator.gather(loss.repeat(args.train_batch_size)).mean()
                train_loss += avg_loss.item() / args.gradient_accumulation_steps
                accelerator.backward(loss)
                optimizer.step()
    """), 7),
    # a loss from a wrapper we cannot see, backwarded scaled: (loss / N).backward()
    (d("""
        import torch
        model.cuda()
        for i in range(num_batches):
            for _ in range(accumulate):
                loss = ar_wrapper(next(train_loader))
                (loss / accumulate).backward()
            print(f"training loss: {loss.item()}")
            optim.step()
            optim.zero_grad()
    """), 7),
    # a mask drawn on the batch's device, tested on the host every step
    (d("""
        import torch
        for batch in loader:
            emb = encoder(batch.to(device))
            drop = torch.rand(emb.shape[0], device=emb.device) < 0.1
            if drop.any():
                emb[drop] = 0
            loss = model(emb).mean()
            loss.backward()
            opt.step()
    """), 5),
    # a helper in the test that is not a modulo: runs every step
    (d("""
        import torch
        def is_main(rank):
            return rank == 0
        model = Net().cuda()
        for i in range(num_batches):
            loss = model(next(train_loader))
            loss.backward()
            optim.step()
            if is_main(rank):
                print(loss.item())
    """), 10),
    (_LOOP + "        acc = (out.argmax(1) == y).float().mean().cpu()\n", 10),
    (_LOOP + "        print(loss)\n", 10),
    (_LOOP + "        if torch.isnan(loss):\n            break\n", 10),
    (_LOOP + "        if loss < 0.01:\n            print('small loss')\n", 10),  # (a stop that breaks: R9, the algorithm's own)
    (_LOOP + "        idx = torch.nonzero(out > 0)\n", 10),
    (_LOOP + "        vals = loss.detach().cpu().numpy()\n", 10),
]
NEGATIVE["TW207"] = [
    # the step is synchronised explicitly (to time it) and the value is read after it only once per
    # interval (a synchronize followed by a read every step is reported at the synchronize: recall_corpus24)
    d("""
        import time
        import torch
        for idx, (samples, targets) in enumerate(data_loader):
            start = time.time()
            samples = samples.cuda(non_blocking=True)
            targets = targets.cuda(non_blocking=True)
            loss = criterion(model(samples), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch.cuda.synchronize()
            times.append(time.time() - start)
            if idx % 100 == 0:
                loss_meter.update(loss.item(), targets.size(0))
    """),
    # a timestep drawn on the CPU on purpose, read on the host
    d("""
        import torch
        for batch in loader:
            latents = vae.encode(batch.to(device)).sample()
            timesteps = torch.randint(0, 1000, (1,), device="cpu")
            timestep = timesteps.item()
            loss = model(latents, timestep).mean()
            loss.backward()
            opt.step()
    """),
    # periodic through a helper of the file (lucidrains' divisible_by): once per interval
    d("""
        import torch
        def divisible_by(num, den):
            return (num % den) == 0
        model = Net().cuda()
        for i in range(num_batches):
            loss = model(next(train_loader))
            loss.backward()
            optim.step()
            optim.zero_grad()
            if divisible_by(i, validate_every):
                with torch.no_grad():
                    print(f"validation loss: {model(next(val_loader)).item()}")
    """),
    # a model moved to the CPU to ship its gradients (RPC parameter server), not a value read
    d("""
        for inputs, labels in batches():
            m = get_model().cuda()
            m(inputs.cuda()).sum().backward()
            grads = [p.grad for p in m.cpu().parameters()]
            opt.step()
    """),
    # a helper that returns CPU data does not put the loop on a device
    d("""
        def get_batch(split):
            return sample(split)
        for it in range(n):
            X, Y = get_batch("train")
            loss = model(X).mean()
            loss.backward()
            optimizer.step()
            lossf = loss.item()
    """),
    # once per log interval, or after the loop
    _LOOP + "        if step % 100 == 0:\n            print(loss.item())\n    print(loss.item())\n",
    # values that are on the CPU already (y itself was moved to the device: y.cpu() would wait)
    _LOOP + "        n = lengths.cpu().tolist()\n        labels = batch_labels.tolist()\n",
    # nothing is moved to a device: everything runs on the CPU
    d("""
        def train(model, loader, opt):
            for x, y in loader:
                loss = criterion(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item()
    """),
    # not a training loop
    d("""
        def evaluate(model, loader, device):
            for x, y in loader:
                out = model(x.to(device))
                acc = out.argmax(1).eq(y.to(device)).sum().item()
    """),
    # shape checks and None tests do not sync
    _LOOP + "        if loss is None or out.shape[0] == 0 or out.size(1) > 3:\n            continue\n",
]

# ----------------------------------------------------------------------------------- TW208
POSITIVE["TW208"] = [
    ("optimizer.zero_grad(set_to_none=False)\n", 1),
    ("model.zero_grad(False)\n", 1),
    ("for p in model.parameters():\n    p.grad.data.zero_()\n", 2),
]
NEGATIVE["TW208"] = [
    # the code accumulates into .grad after zeroing: it needs the zeros
    d("""
        import torch
        optimizer.zero_grad(set_to_none=False)
        for p, g in zip(model.parameters(), grads):
            p.grad += g
    """),
    "for p in params:\n    p.grad.zero_()\nfor p, g in zip(params, gs):\n    p.grad.add_(g)\n",
    "optimizer.zero_grad()\noptimizer.zero_grad(set_to_none=True)\nx.zero_()\nbuf.data.zero_()\n",
    # an implementation of both behaviours
    d("""
        def zero_grad(self, set_to_none=True):
            for p in self.params:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()
    """),
]

# ----------------------------------------------------------------------------------- TW209
POSITIVE["TW209"] = [
    (HEADER + "block = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())\n", 4),
    (HEADER + "block = nn.Sequential(nn.Linear(3, 16), nn.BatchNorm1d(16))\n", 4),
    (d("""
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(8, 8, 3)
                self.bn = nn.BatchNorm1d(8)
            def forward(self, x):
                x = self.conv(x)
                x = self.bn(x)
                return x
    """), 5),
    (d("""
        from torch import nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.c = nn.Conv2d(8, 8, 3, bias=True)
                self.n = nn.BatchNorm2d(8)
            def forward(self, x):
                return self.n(self.c(x))
    """), 5),
]
NEGATIVE["TW209"] = [
    HEADER + "block = nn.Sequential(nn.Conv2d(3, 16, 3, bias=False), nn.BatchNorm2d(16))\n",
    HEADER + "block = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.BatchNorm2d(16))\n",
    HEADER + "block = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm1d(16))\n",
    # nn.Linear before BatchNorm1d is covered (ruling R3 of issue 22); without its bias, or before a 2-D norm, it is quiet
    HEADER + "block = nn.Sequential(nn.Linear(3, 16, bias=False), nn.BatchNorm1d(16))\n",
    HEADER + "block = nn.Sequential(nn.Linear(3, 16), nn.BatchNorm2d(16))\n",
    d("""
        import torch.nn as nn
        import torch.nn.functional as F
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(8, 8, 3)
                self.bn = nn.BatchNorm2d(8)
            def forward(self, x):
                return self.bn(F.relu(self.conv(x)))
    """),
]

# ----------------------------------------------------------------------------------- TW213
POSITIVE["TW213"] = [
    (d("""
        import torch
        from torch.nn.utils.rnn import pad_sequence
        torch.backends.cudnn.benchmark = True
        def collate(batch):
            return pad_sequence(batch, batch_first=True)
    """), 3),
]
NEGATIVE["TW213"] = [
    "import torch\ntorch.backends.cudnn.benchmark = True\n",
    "import torch\nfrom torch.nn.utils.rnn import pad_sequence\ntorch.backends.cudnn.benchmark = False\nx = pad_sequence(b)\n",
]

# ----------------------------------------------------------------------------------- TW214
POSITIVE["TW214"] = [
    (d("""
        import torch
        @torch.jit.script
        def fused_gelu(x):
            return x * 0.5 * (1.0 + torch.erf(x / 1.41421))
    """), 2),
    ("import torch\nmodel = torch.jit.script(model)\nout = model(x)\n", 2),
]
NEGATIVE["TW214"] = [
    # scripted for its side effect (registering a class with TorchScript), result thrown away
    d("""
        import torch
        def patch_instances(new_instances):
            _clear_jit_cache()
            _ = torch.jit.script(new_instances)
            torch.jit.script(other_cls)
    """),
    # an opt-in option beside torch.compile
    d("""
        import torch
        if args.torchscript:
            model = torch.jit.script(model)
        elif args.compile:
            model = torch.compile(model)
    """),
    # the TorchScript graph is the point
    "import torch\nscripted = torch.jit.script(lowered)\nprint(scripted.graph)\n",
    # scripting for export
    "import torch\nscripted = torch.jit.script(model)\nscripted.save('m.pt')\ntorch.jit.script(net).save('n.pt')\n",
    "import torch\ndef export(m):\n    s = torch.jit.script(m)\n    return s\n",
    "import torch\nfast = torch.compile(model)\n",
]

# ----------------------------------------------------------------------------------- TW215
POSITIVE["TW215"] = [
    (d("""
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net, device_ids=[rank])
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
    """), 5),
]
NEGATIVE["TW215"] = [
    d("""
        import contextlib
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net, device_ids=[rank])
        for i, (x, y) in enumerate(loader):
            ctx = model.no_sync() if (i + 1) % accum else contextlib.nullcontext()
            with ctx:
                criterion(model(x), y).backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
    """),
    # no accumulation: one all-reduce per step is needed
    d("""
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net)
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    """),
    # accumulation without DDP
    d("""
        for i, (x, y) in enumerate(loader):
            criterion(model(x), y).backward()
            if (i + 1) % 4 == 0:
                optimizer.step()
                optimizer.zero_grad()
    """),
]

# ----------------------------------------------------------------------------------- TW217
POSITIVE["TW217"] = [
    # a condition that is not periodic still runs every step
    (d("""
        import torch
        for x, y in loader:
            loss_fn(model(x), y).backward()
            opt.step()
            opt.zero_grad()
            if args.low_memory:
                torch.cuda.empty_cache()
    """), 7),
    (d("""
        import torch
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            torch.cuda.empty_cache()
    """), 6),
]
NEGATIVE["TW217"] = [
    # periodic validation that deletes a pipeline, and recovery after an out-of-memory error
    d("""
        import torch
        for step, batch in enumerate(loader):
            try:
                loss = model(batch).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
            except RuntimeError as exc:
                if "out of memory" not in str(exc):
                    raise
                torch.cuda.empty_cache()
            if global_step % args.validation_steps == 0:
                pipeline = make_pipeline(model)
                log_validation(pipeline)
                del pipeline
                torch.cuda.empty_cache()
    """),
    d("""
        import torch
        for epoch in range(10):
            for x, y in loader:
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                opt.step()
            torch.cuda.empty_cache()   # once per epoch, between phases
        torch.cuda.empty_cache()
    """),
]

# ----------------------------------------------------------------------------------- TW218
POSITIVE["TW218"] = [
    (d("""
        import torch
        model = Net().cuda().half()
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
    """), 2),
    (d("""
        import torch
        def train(model, loader, opt):
            model = model.to(torch.float16)
            for x, y in loader:
                loss_fn(model(x), y).backward()
                opt.step()
    """), 3),
]
NEGATIVE["TW218"] = [
    # casting a module copy to the input's dtype (a profiler), not fp16 training
    d("""
        import torch
        def profile(m, x, opt):
            m = m.half() if x.dtype is torch.float16 else m
            y = m(x)
            y.sum().backward()
            opt.step()
    """),
    # a round trip that rounds the weights to fp16 precision, training stays fp32
    d("""
        for epoch in range(3):
            model.half().float()
            loss = model(x).sum()
            loss.backward()
            opt.step()
    """),
    # inference only
    "import torch\nmodel = load().half().eval()\nwith torch.inference_mode():\n    out = model(x.half())\n",
    # tensors, not a model; converting in a function that does not train
    d("""
        import torch
        def export(model):
            return model.half().state_dict()
        for x, y in loader:
            x = x.half()
            loss_fn(net(x), y).backward()
            opt.step()
    """),
]

# ----------------------------------------------------------------------------------- TW219
POSITIVE["TW219"] = [
    ("import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)\n", 2),
    ("import torch\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\n", 2),
]
NEGATIVE["TW219"] = [
    "import torch\ntorch.set_default_dtype(torch.float64)\ntorch.set_default_device('cuda')\n",
]

# ----------------------------------------------------------------------------------- TW220
POSITIVE["TW220"] = [
    ("import torch\nscaler = torch.cuda.amp.GradScaler()\n", 2),
    ("import torch\nwith torch.cuda.amp.autocast(dtype=torch.float16):\n    out = model(x)\n", 2),
    ("from torch.cuda.amp import autocast\nwith autocast():\n    out = model(x)\n", 2),
    ("from apex import amp\nmodel, opt = amp.initialize(model, opt)\n", 1),
]
NEGATIVE["TW220"] = [
    # the old-torch fallback of version-dependent code
    d("""
        import torch
        try:
            scaler = torch.amp.GradScaler("cuda")
        except AttributeError:
            scaler = torch.cuda.amp.GradScaler()
    """),
    "import torch\nscaler = torch.amp.GradScaler(device=d) if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()\n",
    d("""
        import torch
        if is_torch_version(">=", "2.3"):
            s = torch.amp.GradScaler("cuda")
        else:
            s = torch.cuda.amp.GradScaler()
    """),
    'import torch\nscaler = torch.amp.GradScaler("cuda")\nwith torch.autocast("cuda", dtype=torch.bfloat16):\n    out = model(x)\n',
    "from torch.amp import autocast\nwith autocast('cuda'):\n    pass\n",
]

# ----------------------------------------------------------------------------------- TW301
POSITIVE["TW301"] = [
    ("import random\nimport torch\ntorch.manual_seed(0)\nrandom.shuffle(files)\n", 4),
    ("import numpy as np\nimport random\nrandom.seed(1)\nnp.random.seed(1)\nx = np.random.rand(3)\nw = __import__('torch')\n"
     "import torch\nmodel = torch.nn.Linear(3, 4)\n", 8),
    ("import numpy as np\nimport torch\ntorch.manual_seed(0)\nrng = np.random.default_rng()\n", 4),
]
NEGATIVE["TW301"] = [
    # everything in use is seeded
    "import random\nimport numpy as np\nimport torch\nrandom.seed(0)\nnp.random.seed(0)\ntorch.manual_seed(0)\n"
    "random.shuffle(a)\nnp.random.rand(3)\ntorch.randn(3)\n",
    # nothing seeded at all: no reproducibility intent to check against
    "import random\nrandom.shuffle(files)\n",
    # a seed-everything helper
    "import random\nfrom lightning import seed_everything\nimport torch\nseed_everything(0)\ntorch.manual_seed(0)\nrandom.shuffle(x)\n",
    # some helper of the project's own that may seed the rest
    "import random\nimport torch\nfrom utils import seed_torch\nrandom.seed(0)\nseed_torch(0)\nx = torch.randn(3)\n",
    # a fresh generator drawn only to pick a seed
    "import numpy as np\nimport torch\ndef pick(seed=None):\n    if seed is None:\n        seed = np.random.RandomState().randint(0, 100)\n    torch.manual_seed(seed)\n",
]

# ----------------------------------------------------------------------------------- TW302
POSITIVE["TW302"] = [
    ("import torch\ntorch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = True\n", 3),
    ("from torch.backends import cudnn\ncudnn.benchmark = True\ncudnn.deterministic = True\n", 2),
]
NEGATIVE["TW302"] = [
    d("""
        import torch
        if args.deterministic:
            torch.backends.cudnn.deterministic = True
        else:
            torch.backends.cudnn.benchmark = True
    """),
    "import torch\ntorch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False\n",
]

# ----------------------------------------------------------------------------------- TW303
POSITIVE["TW303"] = [
    ("import torch\ntorch.cuda.manual_seed(42)\n", 2),
    ("import torch\ndef seed(s):\n    torch.cuda.manual_seed(s)\n", 3),
]
NEGATIVE["TW303"] = [
    "import torch\ntorch.cuda.manual_seed_all(42)\n",
    "import torch\ntorch.manual_seed(42)\ntorch.cuda.manual_seed(42)\n",
]

# ----------------------------------------------------------------------------------- TW305
POSITIVE["TW305"] = [
    ("import torch\ntorch.backends.cudnn.deterministic = True\n", 2),
]
NEGATIVE["TW305"] = [
    "import torch\ntorch.set_deterministic_debug_mode(mode)\ntorch.backends.cudnn.deterministic = True\n",
    "import torch\ntorch.backends.cudnn.deterministic = True\ntorch.use_deterministic_algorithms(True)\n",
    "import torch\ntorch.backends.cudnn.deterministic = False\n",
]

# ----------------------------------------------------------------------------------- TW401
POSITIVE["TW401"] = [
    # a buffer filled from bytes of a model file is foreign data
    (d("""
        import io
        import torch
        def restore(predict_net):
            buf = io.BytesIO(get_arg(predict_net, "serialized_anchor_generator"))
            return torch.load(buf)
    """), 5),
    ("import torch\nsd = torch.load('model.pt')\n", 2),
    ("import torch\nsd = torch.load(path, map_location='cpu', weights_only=False)\n", 2),
    ("from torch import load as tload\nsd = tload(path)\n", 2),
    ("import torch, pickle\nsd = torch.load(f, pickle_module=pickle)\n", 2),
    ("import torch\nsd = torch.serialization.load(f)\n", 2),
]
NEGATIVE["TW401"] = [
    # a deep copy through memory: saved into a fresh buffer right here, then loaded back
    d("""
        import io
        import torch
        def clone_module(module):
            with io.BytesIO() as bytesio:
                torch.save(module, bytesio)
                bytesio.seek(0)
                return torch.load(bytesio, weights_only=False)
    """),
    "import torch\nsd = torch.load('model.pt', weights_only=True)\nx = torch.load(f, **kwargs)\n",
    "import torch, pickle\nsd = torch.load(f, pickle_module=pickle, weights_only=True)\n",
    "import json\ncfg = json.load(f)\nimport numpy as np\na = np.load('a.npy')\n",
]

# ----------------------------------------------------------------------------------- TW402
POSITIVE["TW402"] = [
    ("import torch\nmodel.cuda()\nsd = torch.load('ckpt.pt', weights_only=True)\n", 3),
]
NEGATIVE["TW402"] = [
    # reads back a feature cache this file saved from CPU tensors
    d("""
        import os
        import torch
        model.cuda()
        if args.load_features:
            feats = torch.load(os.path.join(args.load_features, "trainfeat.pth"))
        else:
            feats = extract(model)
            torch.save(feats.cpu(), os.path.join(args.dump, "trainfeat.pth"))
    """),
    "import torch\nmodel.cuda()\nsd = torch.load('ckpt.pt', map_location='cpu')\nsd2 = torch.load(p, 'cpu')\n",
    "import torch\nsd = torch.load('ckpt.pt', weights_only=True)\n",  # no GPU in sight
]

# ----------------------------------------------------------------------------------- TW403
POSITIVE["TW403"] = [
    # moving results back with .cpu() is no CPU fallback for the model
    ("import torch\nmodel = Net().cuda()\npreds = model(x).cpu().numpy()\n", 2),
    ("import torch\nmodel = Net().cuda()\n", 2),
    ('import torch\nx = x.to("cuda")\ndev = torch.device("cuda:0")\n', 2),
    ('import torch\nt = torch.zeros(3, device="cuda")\n', 2),
]
NEGATIVE["TW403"] = [
    "import torch\nif opt.cuda:\n    model = model.cuda()\n    x = x.cuda()\n",  # the user opted in
    # NCCL (and GPU-only engines such as vLLM) mean the code is GPU-only by design
    "import torch\nimport torch.distributed as dist\ndist.init_process_group(backend=\"nccl\")\nmodel.cuda()\n",
    "import torch\nfrom vllm import LLM\nw = torch.empty(4, device=\"cuda\")\n",
    # a Triton kernel module is CUDA-only by nature
    "import torch\nimport triton\nout = torch.empty(n, device=\"cuda\")\n",
    'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\nmodel = Net().to(device)\nx = x.cuda()\n',
    "import torch\ndef run(model, device):\n    model.cuda()\n",
    "import torch\nmodel = Net().to(device)\n",
]

# ----------------------------------------------------------------------------------- TW404
POSITIVE["TW404"] = [
    (d("""
        import os
        import torch
        n = torch.cuda.device_count()
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    """), 4),
    (d("""
        import os
        def main():
            model.cuda()
            os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")
    """), 4),
]
NEGATIVE["TW404"] = [
    d("""
        import os
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        import torch
        n = torch.cuda.device_count()
    """),
    # different functions: order of execution unknown
    d("""
        import os
        import torch
        def a():
            torch.cuda.set_device(0)
        def b():
            os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    """),
]

# ----------------------------------------------------------------------------------- TW405
POSITIVE["TW405"] = [
    (d("""
        import os
        import torch.multiprocessing as mp
        os.environ["MASTER_ADDR"] = "localhost"
        os.environ["MASTER_PORT"] = "12355"
        mp.spawn(worker, nprocs=4)
    """), 5),
]
NEGATIVE["TW405"] = [
    # the port comes from the environment / arguments
    d("""
        import os
        import torch.multiprocessing as mp
        os.environ["MASTER_ADDR"] = args.addr
        os.environ["MASTER_PORT"] = str(find_free_port())
        mp.spawn(worker, nprocs=4)
    """),
    # torchrun-style, no spawn
    "import os\nos.environ['MASTER_PORT'] = '29500'\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n",
]

# ----------------------------------------------------------------------------------- TW406
POSITIVE["TW406"] = [
    (d("""
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(train_set)
        loader = DataLoader(train_set, sampler=sampler, batch_size=32, num_workers=2)
        for epoch in range(epochs):
            for x, y in loader:
                step(x, y)
    """), 2),
]
NEGATIVE["TW406"] = [
    # kept in a dict of loader arguments (the loop may use it through that)
    d("""
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(val_set)
        kwargs = {"sampler": sampler, "batch_size": 8}
        loader = DataLoader(val_set, **kwargs)
        for epoch in range(3):
            run(loader)
    """),
    # the sampler goes to a training function of another module, which calls set_epoch there
    d("""
        from torch.utils.data import DataLoader, DistributedSampler
        from train_utils import train
        sampler = DistributedSampler(ds, shuffle=True)
        loader = DataLoader(ds, sampler=sampler)
        for epoch in range(10):
            train(model, loader, epoch, sampler=sampler)
    """),
    d("""
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(train_set)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            for x, y in DataLoader(train_set, sampler=sampler):
                step(x, y)
    """),
    # no shuffling: the order does not matter
    d("""
        from torch.utils.data import DistributedSampler
        sampler = DistributedSampler(val_set, shuffle=False)
        for epoch in range(epochs):
            evaluate(sampler)
    """),
    # no epoch loop here (a framework drives it)
    "from torch.utils.data import DistributedSampler\nsampler = DistributedSampler(ds)\ntrainer.fit(model, sampler)\n",
]

# ----------------------------------------------------------------------------------- TW501
POSITIVE["TW501"] = [
    ("import torch\nx = torch.solve(b, A)\n", 2),
    ("from torch import symeig\nw, v = symeig(a)\n", 1),
    ("import torch as th\nr = th.matrix_rank(m)\n", 2),
]
NEGATIVE["TW501"] = [
    "import torch\nx = torch.linalg.solve(A, b)\nr = torch.linalg.matrix_rank(m)\n",
    "import numpy as np\nx = np.linalg.solve(A, b)\n",
    "from scipy.linalg import solve\nx = solve(A, b)\n",
]

# ----------------------------------------------------------------------------------- TW502
POSITIVE["TW502"] = [
    ("import torch\nouter = torch.ger(a, b)\n", 2),
    ("import torch\nn = torch.norm(x, dim=1)\n", 2),
    ("from functorch import vmap\nf = vmap(g)\n", 1),
    ("import torch.nn as nn\nconv = nn.utils.weight_norm(nn.Conv1d(4, 4, 3))\n", 2),
    ("import torch\nr = torch.range(0, 10)\n", 2),
    # the method form, in a noisy layer: Tensor.ger
    ("import torch\ndef reset_noise(self):\n    self.weight_epsilon.copy_(eps_out.ger(eps_in))\n", 3),
]
NEGATIVE["TW502"] = [
    # the old-torch branch of version-dependent imports
    "try:\n    from torch import vmap\nexcept ImportError:\n    from functorch import vmap\n",
    "import torch\nouter = torch.outer(a, b)\nn = x.norm(dim=1)\nn2 = torch.linalg.vector_norm(x)\n",
    "from torch.func import vmap\nf = vmap(g)\n",
    "import numpy as np\nn = np.linalg.norm(x)\nr = range(10)\n",
    "import torch.nn as nn\nconv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 4, 3))\n",
    # BLAS's ger of a module (alpha, x, y): not Tensor.ger
    "import torch\nfrom scipy.linalg import blas\na = blas.ger(1.0, x, y)\n",
]

# ----------------------------------------------------------------------------------- TW503
POSITIVE["TW503"] = [
    ("for p in backbone.parameters():\n    p.require_grad = False\n", 2),
    ("model.fc.weight.require_grad = True\n", 1),
]
NEGATIVE["TW503"] = [
    "for p in backbone.parameters():\n    p.requires_grad = False\n",
    "flag = cfg.require_grad\nif x.require_grad:\n    pass\n",  # reads are some other object's attribute
]

# ----------------------------------------------------------------------------------- TW504
POSITIVE["TW504"] = [
    # an unrelated condition is no version fallback
    (d("""
        import torch.utils.checkpoint
        if self.gradient_checkpointing and self.training:
            h = torch.utils.checkpoint.checkpoint(block, x)
        else:
            h = block(x)
    """), 3),
    ("from torch.utils.checkpoint import checkpoint\nh = checkpoint(block, x)\n", 2),
    ("import torch\nh = torch.utils.checkpoint.checkpoint(self.layer, x, mask)\n", 2),
]
NEGATIVE["TW504"] = [
    # the branch for torch < 1.11, which has no use_reentrant argument
    d("""
        import torch.utils.checkpoint
        if is_torch_version(">=", "1.11.0"):
            h = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        else:
            h = torch.utils.checkpoint.checkpoint(block, x)
    """),
    "from torch.utils.checkpoint import checkpoint\nh = checkpoint(block, x, use_reentrant=False)\n",
    "from torch.utils.checkpoint import checkpoint\nh = checkpoint(block, x, **ckpt_kwargs)\n",
    "from mylib import checkpoint\nh = checkpoint(block, x)\n",
    "import torch\ntorch.save(state, 'checkpoint.pt')\n",
]

# ----------------------------------------------------------------------------------- TW505
POSITIVE["TW505"] = [
    ("from torch.utils.data import DataLoader, _utils\nld = DataLoader(ds, collate_fn=_utils.collate.default_collate)\n", 2),
    ("from torch.utils.data._utils.collate import default_collate\nb = default_collate(items)\n", 1),
    ("import torch\nb = torch.utils.data._utils.collate.default_convert(x)\n", 2),
]
NEGATIVE["TW505"] = [
    "from torch.utils.data import default_collate\nb = default_collate(items)\n",
    "from torch.utils.data._utils.collate import collate_tensor_fn\n",  # not public anywhere: no public twin
]

# ----------------------------------------------------------------------------------- TW506
POSITIVE["TW506"] = [
    ("import torch\ny = torch.log(1 + x)\n", 2),
    ("import torch\ny = torch.log(x + 1.0)\n", 2),
]
NEGATIVE["TW506"] = [
    "import torch\ny = torch.log1p(x)\nz = torch.log(2 + x)\nw = torch.log(x + eps)\n",
    "import math\ny = math.log(1 + x)\n",
]

# ----------------------------------------------------------------------------------- TW507
POSITIVE["TW507"] = [
    ("import torch\ny = torch.exp(x) - 1\n", 2),
    ("import torch\nw = 1 - torch.exp(x)\n", 2),  # -torch.expm1(x)
]
NEGATIVE["TW507"] = [
    "import torch\ny = torch.expm1(x)\nz = torch.exp(x) - 2\nw = 2 - torch.exp(x)\n",
    "import numpy as np\ny = np.exp(x) - 1\nw = 1 - np.exp(x)\n",
]

# ----------------------------------------------------------------------------------- TW508
POSITIVE["TW508"] = [
    ("import torch\nlse = torch.log(torch.sum(torch.exp(x), dim=1))\n", 2),
    ("import torch\nlse = torch.log(torch.sum(torch.exp(x), 0))\n", 2),
]
NEGATIVE["TW508"] = [
    "import torch\nlse = torch.logsumexp(x, dim=1)\n",
    "import torch\ntotal = torch.log(torch.sum(torch.exp(x)))\n",  # no dim: logsumexp needs one
]

# ----------------------------------------------------------------------------------- TW509
POSITIVE["TW509"] = [
    ("import torchvision\nm = torchvision.models.resnet50(True)\n", 2),
    ("import torchvision\nmodel = torchvision.models.resnet50(pretrained=True)\n", 2),
    ("from torchvision.models import detection\nm = detection.fasterrcnn_resnet50_fpn(pretrained_backbone=False)\n", 2),
    ("from torchvision import models\nm = models.vgg16(pretrained=args.pretrained)\n", 2),
]
NEGATIVE["TW509"] = [
    "import torchvision\nmodel = torchvision.models.resnet50(weights='DEFAULT')\n",
    "import timm\nmodel = timm.create_model('resnet50', pretrained=True)\n",  # timm keeps pretrained=
]

# ----------------------------------------------------------------------------------- TW510
POSITIVE["TW510"] = [
    ("from torchvision.transforms.v2 import ToTensor\n", 1),
    ("from torchvision.transforms import v2\nt = v2.ToTensor()\n", 2),
]
NEGATIVE["TW510"] = [
    "from torchvision.transforms import ToTensor\nt = ToTensor()\n",  # v1 ToTensor is not deprecated
    "from torchvision.transforms import v2\nt = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])\n",
]

# ----------------------------------------------------------------------------------- TW511
POSITIVE["TW511"] = [
    ("import torchvision.models as models\n", 1),
    ("import torchvision.transforms as transforms\n", 1),
    ("import torchvision.transforms as T\nimport torchvision.models.detection as detection\n", 2),
]
NEGATIVE["TW511"] = [
    "from torchvision import models\n",
    "import torchvision.transforms as T\nimport torchvision.utils as vutils\nimport torchvision\n",
]

# ----------------------------------------------------------------------------------- TW512
POSITIVE["TW512"] = [
    ("import torch.distributed as dist\ndist.all_reduce(grad, async_op=True)\ngrad /= ws\n", 2),
    ("import torch.distributed as dist\ndef f(t):\n    work = dist.broadcast(t, 0, async_op=True)\n    return t\n", 3),
    ("import torch.distributed as dist\ndist.isend(t, dst=1)\n", 2),
]
NEGATIVE["TW512"] = [
    "import torch.distributed as dist\nwork = dist.all_reduce(grad, async_op=True)\nwork.wait()\n",
    "import torch.distributed as dist\nhandles = []\nfor t in ts:\n    handles.append(dist.all_reduce(t, async_op=True))\nfor h in handles:\n    h.wait()\n",
    "import torch.distributed as dist\ndist.all_reduce(grad)\n",
    "import torch.distributed as dist\ndef start(t):\n    return dist.all_reduce(t, async_op=True)\n",
]

# ----------------------------------------------------------------------------------- TW513
POSITIVE["TW513"] = [
    ("import torch\nw = torch.Tensor(out_features, in_features)\n", 2),
    ("import torch\nv = torch.Tensor([1, 2, 3])\n", 2),
]
NEGATIVE["TW513"] = [
    "import torch\ndef f(x: torch.Tensor) -> torch.Tensor:\n    return x if isinstance(x, torch.Tensor) else torch.tensor(x)\n",
    "import torch\nclass MyTensor(torch.Tensor):\n    pass\n",
    "import torch\nw = torch.empty(3, 4)\n",
]

# ----------------------------------------------------------------------------------- TW514
# (checked in test files only: see test_tw514_only_in_test_files in test_precision.py)
POSITIVE["TW514"] = []
NEGATIVE["TW514"] = [
    "import torch\nlib = torch.library.Library('mylib', 'DEF')\n",  # library code, not a test
]
