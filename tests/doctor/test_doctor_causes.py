"""Root causes named at run time (issue 19): each planted in a plain training loop run in this process
with the script-mode hooks attached (no child process), next to a healthy look-alike that must stay
quiet. One loss series per objective, steps counted over every optimizer, hand-updated weights."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import realistic as R
from doctor_models import doctored

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def digits():
    x, y = R.digits(flat=True).tensors
    return x, y


def mlp(drop: float = 0.0, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(drop), nn.Linear(64, 10))


def train(model, loader, opt, *, epochs: int = 3, zero_grad: bool = True, accumulate: int = 1, keep=None, evaluate=None):
    """A tutorial-style loop; ``keep`` receives each step's loss (a running total), ``evaluate``
    runs after each epoch."""
    for _ in range(epochs):
        model.train()
        for i, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y) / accumulate
            loss.backward()
            if keep is not None:
                keep(loss)
            if (i + 1) % accumulate == 0:
                opt.step()
                if zero_grad:
                    opt.zero_grad()
        if evaluate is not None:
            evaluate()


# --- TW110: gradients never cleared, told apart from accumulation -------------------------------


def test_tw110_no_zero_grad_is_an_error_and_accumulation_is_not(digits):
    x, y = digits
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = mlp()
    report, _ = doctored(lambda: train(model, loader, torch.optim.SGD(model.parameters(), lr=0.01), zero_grad=False), steps=8)
    [f] = report.by_code("TW110")
    assert f.severity == "error" and f.evidence["count"] == f.evidence["trainable"] == 4 and f.evidence["steps_watched"] >= 2
    assert "zero_grad" in f.fix
    model = mlp()
    report, attached = doctored(lambda: train(model, loader, torch.optim.SGD(model.parameters(), lr=0.01), accumulate=4), steps=4)
    assert not report.by_code("TW110") and attached.backwards == 16  # 4 micro-batches a step


def test_tw110_quiet_for_a_gan_whose_generator_step_leaves_gradients_in_the_discriminator():
    report, attached = doctored(gan_loop(steps=12), steps=12)
    assert not report.by_code("TW110"), [str(f) for f in report.findings]
    assert report.measured["steps_run"] == 12 and report.measured["optimizers"] == 2


def gan_loop(steps: int, d_lr: float = 2e-3):
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
    discriminator = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=d_lr, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()

    def loop():
        for step in range(steps):
            real = torch.randn(64, 2) * 0.5 + 2.0
            fake = generator(torch.randn(64, 8))
            d_loss = bce(discriminator(real), torch.ones(64, 1)) + bce(discriminator(fake.detach()), torch.zeros(64, 1))
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            g_loss = bce(discriminator(fake), torch.ones(64, 1))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
            if step % 5 == 0:
                with torch.no_grad():
                    generator(torch.randn(16, 8))  # samples to look at, in train mode: not an evaluation

    return loop


# --- item 1: one loss series per objective, every optimizer's steps counted --------------------


def test_gan_objectives_are_separate_and_a_rising_generator_loss_is_no_fault():
    report, attached = doctored(gan_loop(steps=60, d_lr=1e-2), steps=60)  # a strong discriminator: the G loss rises
    objectives = {o.name: o for o in attached.watch.result.objectives}
    assert set(objectives) == {"opt_d", "opt_g"} and objectives["opt_g"].steps == objectives["opt_d"].steps == 30
    assert objectives["opt_g"].coupled_with == ["opt_d"] and objectives["opt_g"].models == ["generator"]
    g = objectives["opt_g"].losses
    assert sum(g[-6:]) > 1.5 * sum(g[:3]) * 2  # rising: the old single series called this diverging
    assert not {"TW134", "TW135", "TW136", "TW130", "TW139"} & set(report.codes), [str(f) for f in report.findings]
    assert any("trade off" in s.reason for s in report.skipped if "TW134" in s.codes)


def test_loss_curve_checks_judge_each_objective_on_its_own():
    from test_doctor_dynamics import _loss_ctx

    from torchwise.doctor.checks import tw134_loss_diverging as tw134

    falling = [2.0 * 0.98 ** i for i in range(100)]
    rising = [0.7 + 0.03 * i for i in range(100)]
    [f] = tw134.check(_loss_ctx(falling, rising))
    assert "loss of opt1 is diverging" in f.message and f.where == "loss of opt1"
    skipped = tw134.check(_loss_ctx(falling, rising, coupled=True))
    assert "trade off" in skipped.reason


# --- hand-updated weights ----------------------------------------------------------------------


def hand_loop(digits, zero: bool = True, lr: float = 0.05, batches: int = 40):
    x, y = digits
    model = mlp()

    def loop():
        for i in range(batches):
            xb, yb = x[i * 32:(i + 1) * 32], y[i * 32:(i + 1) * 32]
            if zero:
                model.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)

    return loop


def test_hand_updated_weights_count_backwards_as_steps_and_are_stopped(digits):
    report, attached = doctored(hand_loop(digits), steps=25)
    assert report.measured["steps_run"] == 25 and report.measured["weights_updated_by"] == "hand"
    assert attached.stopped and attached.backwards == 25  # stopped as the 26th backward began
    [objective] = attached.watch.result.objectives
    assert objective.optimizer is None and objective.name.startswith("loss backwarded at ") and "test_doctor_causes.py:" in objective.name
    assert len(objective.losses) == 25 and objective.losses[-1] < objective.losses[0]
    assert not report.by_code("TW110") and not report.by_code("TW133")
    assert any("updated by hand" in s.reason for s in report.skipped if s.codes == ("TW115",))


def test_hand_updated_weights_without_zeroing_the_gradients(digits):
    report, _ = doctored(hand_loop(digits, zero=False), steps=10)
    [f] = report.by_code("TW110")
    assert "by hand" in f.message and f.evidence["count"] == 4 and "p.grad = None" in f.fix


def test_hand_written_model_without_modules(digits):
    """No nn.Module at all: the tensors the loss's graph accumulates into are the weights."""
    x, y = digits
    w = torch.zeros(64, 10, requires_grad=True)
    b = torch.zeros(10, requires_grad=True)

    def loop(clear):
        for i in range(30):
            loss = F.cross_entropy(x[i * 32:(i + 1) * 32] @ w + b, y[i * 32:(i + 1) * 32])
            loss.backward()
            with torch.no_grad():
                w.sub_(0.1 * w.grad)
                b.sub_(0.1 * b.grad)
            if clear:
                w.grad, b.grad = None, None

    report, attached = doctored(lambda: loop(False), steps=10)
    [f] = report.by_code("TW110")
    assert f.where == "w, b" and report.measured["weights_updated_by"] == "hand"
    report, _ = doctored(lambda: loop(True), steps=10)
    assert not report.by_code("TW110")


# --- TW101: a graph kept across steps ----------------------------------------------------------


def test_tw101_running_loss_kept_as_a_tensor(digits):
    x, y = digits
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = mlp()
    total = {"loss": 0.0}

    def keep(loss):
        total["loss"] += loss  # the bug: every step's graph stays attached to the total

    report, _ = doctored(lambda: train(model, loader, torch.optim.Adam(model.parameters()), keep=keep), steps=6)
    [f] = report.by_code("TW101")
    assert "test_doctor_causes.py:" in f.where and f.evidence["operations"] >= 4 and f.evidence["made_at_step"] < f.evidence["used_at_step"]
    assert ".item()" in f.fix

    def keep_number(loss):
        total["loss"] += loss.item()

    total["loss"] = 0.0
    model = mlp()
    report, _ = doctored(lambda: train(model, loader, torch.optim.Adam(model.parameters()), keep=keep_number), steps=6)
    assert not report.by_code("TW101")


def test_tw101_outputs_kept_in_a_list_and_gathered_at_the_end_of_the_epoch(digits):
    x, y = digits
    loader = DataLoader(TensorDataset(x[:640], y[:640]), batch_size=32, shuffle=True)  # 20 batches an epoch
    model = mlp()
    opt = torch.optim.Adam(model.parameters())

    def loop(detach):
        for _ in range(2):
            outputs, labels = [], []
            for xb, yb in loader:
                out = model(xb)
                loss = F.cross_entropy(out, yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                probs = out.softmax(1)  # a metric of this step, after the optimizer step: fine
                outputs.append(probs.detach() if detach else probs)
                labels.append(yb)
            torch.cat(outputs).argmax(1).eq(torch.cat(labels)).float().mean()

    report, _ = doctored(lambda: loop(False), steps=8)  # the epoch ends early after 8 steps: the gathering runs
    [f] = report.by_code("TW101")
    assert f.evidence["function"] == "cat" and f.evidence["earlier_steps_held"] >= 3
    report, _ = doctored(lambda: loop(True), steps=8)
    assert not report.by_code("TW101")


# --- TW139: evaluation in training mode, seen after the steps (the epoch is ended early) ---------


def evaluation_loop(digits, call_eval: bool):
    x, y = digits
    train_loader = DataLoader(TensorDataset(x[:1280], y[:1280]), batch_size=32, shuffle=True)  # 40 batches an epoch
    val_loader = DataLoader(TensorDataset(x[1280:], y[1280:]), batch_size=128)
    model = mlp(drop=0.3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    seen = []

    def evaluate():
        if call_eval:
            model.eval()
        with torch.no_grad():
            seen.append(sum(int((model(xb).argmax(1) == yb).sum()) for xb, yb in val_loader))

    return (lambda: train(model, train_loader, opt, evaluate=evaluate)), seen


def test_tw139_evaluation_without_model_eval_is_seen_after_the_steps(digits):
    loop, seen = evaluation_loop(digits, call_eval=False)
    report, attached = doctored(loop, steps=6)  # the epoch has 40 batches: ended after 6 so that evaluate() runs
    assert len(seen) == 1 and attached.draining and attached.total_steps == 6
    [f] = report.by_code("TW139")
    assert f.evidence["training_layers"] == ["2"] and f.evidence["no_grad"] and f.evidence["other_loader"]
    assert f.evidence["passes"] == 5 and "test_doctor_causes.py:" in f.where and "model.eval()" in f.fix
    assert report.measured["evaluation_passes_after_steps"] == 5


def test_tw139_quiet_with_model_eval(digits):
    loop, seen = evaluation_loop(digits, call_eval=True)
    report, _ = doctored(loop, steps=6)
    assert len(seen) == 1 and not report.by_code("TW139") and not report.by_code("TW104")


def test_tw139_evaluation_on_a_tensor_without_a_loader_and_gan_samples_are_not_evaluation(digits):
    x, y = digits
    model = mlp(drop=0.3)
    opt = torch.optim.Adam(model.parameters())

    def loop(call_eval):
        for i in range(40):
            loss = F.cross_entropy(model(x[i * 32:(i + 1) * 32]), y[i * 32:(i + 1) * 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 10 == 9:
                if call_eval:
                    model.eval()
                with torch.no_grad():
                    (model(x[1500:]).argmax(1) == y[1500:]).float().mean()
                model.train()

    report, _ = doctored(lambda: loop(False), steps=30)
    [f] = report.by_code("TW139")
    assert f.evidence["passes"] == 2 and f.evidence["no_grad"] and not f.evidence["other_loader"]
    report, _ = doctored(lambda: loop(True), steps=30)
    assert not report.by_code("TW139")


def test_tw139_task_mode_evaluate_in_training_mode():
    from torchwise.doctor import doctor

    model = mlp(drop=0.3)

    def evaluate(m, batch):
        with torch.no_grad():
            return m(batch[0]).argmax(1)

    [f] = doctor(model, batch=(torch.randn(16, 64), torch.randint(0, 10, (16,))), loss_fn=nn.CrossEntropyLoss(),
                 evaluate=evaluate, select=["TW139"]).by_code("TW139")
    assert f.evidence["training_layers"] == ["2"]

    def evaluate_right(m, batch):
        m.eval()
        with torch.no_grad():
            return m(batch[0]).argmax(1)

    assert not doctor(model, batch=(torch.randn(16, 64), torch.randint(0, 10, (16,))), loss_fn=nn.CrossEntropyLoss(),
                      evaluate=evaluate_right, select=["TW139"]).findings


# --- TW115: an optimizer that can change no weight ----------------------------------------------


def test_tw115_optimizer_over_frozen_parameters_only_is_an_error(digits):
    x, y = digits
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = mlp()
    model[0].requires_grad_(False)  # "freeze the backbone" ...
    opt = torch.optim.SGD(model[0].parameters(), lr=0.1)  # ... and build the optimizer over it
    report, _ = doctored(lambda: train(model, loader, opt), steps=5)
    [f] = [f for f in report.by_code("TW115") if f.severity == "error"]
    assert "can change no weight" in f.message and f.evidence["trainable_not_in_optimizer"] == ["3.weight", "3.bias"]
    assert not report.by_code("TW133")  # its symptom, folded in


# --- TW140: the learning rate far too high -----------------------------------------------------


def test_tw140_does_not_judge_lbfgs_steps():
    """L-BFGS at lr 0.8 (pytorch/examples' time-sequence example uses it): each step runs several
    iterations and moves the weights far by design, while the loss falls."""
    torch.manual_seed(0)
    t = torch.linspace(0, 20, 400, dtype=torch.float64)
    x, y = torch.sin(t).view(-1, 1), torch.cos(t).view(-1, 1)
    model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1)).double()
    opt = torch.optim.LBFGS(model.parameters(), lr=0.8)

    def loop():
        for _ in range(15):
            def closure():
                opt.zero_grad()
                loss = F.mse_loss(model(x), y)
                loss.backward()
                return loss
            opt.step(closure)

    report, _ = doctored(loop, steps=15)
    assert not report.by_code("TW140") and "TW140" in {c for s in report.skipped for c in s.codes}


def test_tw140_learning_rate_far_too_high_pins_the_loss_at_chance():
    from torchwise.doctor import doctor

    report = doctor(**R.gru_case(lr=0.3), steps=60)  # 100x the usual rate: the loss sits at ln 3
    [f] = report.by_code("TW140")
    assert f.evidence["lrs"] == [0.3] and f.evidence["median_displacement"] > 3 and "chance level" in f.message
    assert not report.by_code("TW135")  # "not decreasing": the symptom, folded into its cause
    assert not doctor(**R.gru_case(), steps=60).by_code("TW140")


# --- TW141: data not shuffled --------------------------------------------------------------------


def test_tw141_sorted_labels_without_shuffle(digits):
    from torchwise.doctor import doctor

    x, y = digits
    order = torch.argsort(y, stable=True)
    sorted_set = TensorDataset(x[order], y[order])
    case = dict(R.mlp_case(inp=64), loader=DataLoader(sorted_set, batch_size=32))
    [f] = doctor(**case).by_code("TW141")  # the default 3 steps: read from the loader's order and labels
    assert f.evidence["sampler"] == "SequentialSampler" and f.evidence["median_majority_share"] == 1.0
    assert "shuffle=True" in f.fix
    case["loader"] = DataLoader(sorted_set, batch_size=32, shuffle=True)
    assert not doctor(**case).by_code("TW141")


def test_tw141_batches_sliced_by_hand_in_order_and_an_imbalanced_shuffled_set(digits):
    x, y = digits
    order = torch.argsort(y, stable=True)
    xs, ys = x[order], y[order]
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def loop(xs=xs, ys=ys):
        for i in range(len(xs) // 32):
            loss = F.cross_entropy(model(xs[i * 32:(i + 1) * 32]), ys[i * 32:(i + 1) * 32])
            opt.zero_grad()
            loss.backward()
            opt.step()

    report, _ = doctored(loop, steps=30)
    [f] = report.by_code("TW141")
    assert f.evidence["majority_classes"] >= 4 and f.where == "the batches the steps trained on"
    g = torch.Generator().manual_seed(0)
    yi = torch.where(torch.rand(len(y), generator=g) < 0.9, 0, y)  # 90% of one class, shuffled
    report, _ = doctored(lambda: loop(x, yi), steps=30)
    assert not report.by_code("TW141")


def test_tw141_binary_targets_sorted_by_class():
    from torchwise.doctor import doctor

    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 8, generator=g)
    y = (x[:, 0] > 0).float().unsqueeze(1)
    order = torch.argsort(y[:, 0], stable=True)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    case = dict(loss_fn=nn.BCEWithLogitsLoss(), optimizer=lambda p: torch.optim.SGD(p, lr=0.1))
    [f] = doctor(model, loader=DataLoader(TensorDataset(x[order], y[order]), batch_size=10), **case).by_code("TW141")
    assert f.evidence["majority_classes"] == 2 and f.evidence["median_majority_share"] == 1.0
    assert not doctor(model, loader=DataLoader(TensorDataset(x[order], y[order]), batch_size=10, shuffle=True), **case).by_code("TW141")


def test_tw115_layers_kept_in_a_plain_list_never_train(digits):
    """LSTM cells kept in a Python list: not in model.parameters(), so not in the optimizer either; the
    loss's graph still trains them. The same model with nn.ModuleList, an input that requires grad (an
    attack) and a learnable temperature the optimizer holds stay quiet."""
    x, y = digits

    class Net(nn.Module):
        def __init__(self, registered: bool) -> None:
            super().__init__()
            cells = [nn.LSTMCell(8, 16), nn.LSTMCell(16, 16)]
            self.cells = nn.ModuleList(cells) if registered else cells
            self.head = nn.Linear(16, 10)

        def forward(self, seq):
            h = [torch.zeros(seq.shape[0], 16) for _ in self.cells]
            c = [torch.zeros(seq.shape[0], 16) for _ in self.cells]
            for t in range(seq.shape[1]):
                inp = seq[:, t]
                for i, cell in enumerate(self.cells):
                    h[i], c[i] = cell(inp, (h[i], c[i]))
                    inp = h[i]
            return self.head(inp)

    def run(registered: bool):
        torch.manual_seed(0)
        model = Net(registered)
        temperature = nn.Parameter(torch.ones(()))
        opt = torch.optim.Adam([*model.parameters(), temperature], lr=1e-3)

        def loop():
            for i in range(6):
                xs = x[i * 32:(i + 1) * 32].view(-1, 8, 8).clone().requires_grad_(True)
                loss = F.cross_entropy(model(xs) / temperature, y[i * 32:(i + 1) * 32])
                opt.zero_grad()
                loss.backward()
                opt.step()

        return doctored(loop, steps=5)[0]

    [f] = [f for f in run(False).by_code("TW115") if "registered in no model" in f.message]
    assert f.severity == "error" and f.evidence["count"] == 8 and "cells[0].weight_ih" in f.where and "plain Python list" in f.message
    assert not [f for f in run(True).by_code("TW115") if f.severity != "hint"]


# --- TW142: bad initialisation -------------------------------------------------------------------


def test_tw142_init_three_times_kaiming_named_with_its_layers(digits):
    x, y = digits
    loader = DataLoader(TensorDataset(x * 16, y), batch_size=32, shuffle=True)  # raw pixel values 0..16, as a tutorial might
    model = mlp()
    report, _ = doctored(lambda: train(model, loader, torch.optim.Adam(model.parameters(), lr=1e-3)), steps=3)
    assert not report.by_code("TW142")  # PyTorch's default init: the first loss is near ln 10
    torch.manual_seed(0)
    wide = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    with torch.no_grad():
        for layer in wide[::2]:
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            layer.weight.mul_(3.0)
    report, _ = doctored(lambda: train(wide, loader, torch.optim.Adam(wide.parameters(), lr=1e-3)), steps=3)
    [f] = report.by_code("TW142")
    assert f.severity == "error" and f.where == "0, 2, 4" and f.evidence["first_loss"] > 30 * f.evidence["expected_first_loss"]
    assert "kaiming" in f.fix


def test_tw142_constant_hidden_weights_and_a_confident_output_bias(digits):
    import math

    x, y = digits
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = mlp()
    nn.init.zeros_(model[0].weight)  # every hidden unit the same: the symmetry is never broken
    report, _ = doctored(lambda: train(model, loader, torch.optim.SGD(model.parameters(), lr=0.05)), steps=3)
    [f] = report.by_code("TW142")
    assert f.evidence["constant_layers"] == ["0"] and "symmetry" in f.message

    g = torch.Generator().manual_seed(0)
    xb = torch.randn(512, 8, generator=g)
    yb = (torch.rand(512, 1, generator=g) < 0.3).float()  # 30% positives
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    nn.init.constant_(model[2].bias, math.log(0.99 / 0.01))  # starts 99% sure of the positive class
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def loop():
        for xs, ys in DataLoader(TensorDataset(xb, yb), batch_size=32, shuffle=True):
            loss = F.binary_cross_entropy_with_logits(model(xs), ys)
            opt.zero_grad()
            loss.backward()
            opt.step()

    report, _ = doctored(loop, steps=5)
    [f] = report.by_code("TW142")
    assert f.where == "2" and "bias" in f.message and f.evidence["compared_with"] == "the chance level ln 2"


def test_tw142_quiet_when_the_training_loss_adds_terms_to_a_healthy_classifier(digits):
    """A discriminator's loss on real and fake (two BCE terms) and a multi-task sum start well above ln 2 /
    ln C with PyTorch's default init: the classification loss itself is near chance, so no init is blamed."""
    x, y = digits
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    odd = (y % 2).float().unsqueeze(1)

    def loop():
        for i in range(20):
            xs, ys = x[i * 32:(i + 1) * 32], odd[i * 32:(i + 1) * 32]
            fake = torch.randn_like(xs) * 3
            loss = F.binary_cross_entropy_with_logits(model(xs), ys) + F.binary_cross_entropy_with_logits(model(fake), torch.zeros_like(ys))
            loss = loss + 0.5 * model(xs).pow(2).mean() + 1.0  # a penalty and a constant: the total starts ~3x ln 2
            opt.zero_grad()
            loss.backward()
            opt.step()

    report, attached = doctored(loop, steps=5)
    losses = attached.watch.result.losses
    assert losses[0] > 2.5 * 0.693 and not report.by_code("TW142"), (losses[:3], report.by_code("TW142"))


def test_tw131_output_relu_shut_and_tw133_lr_decayed_to_nothing(digits):
    x, y = digits
    target = y.float().unsqueeze(1)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1), nn.ReLU())
    nn.init.constant_(model[2].bias, -5.0)  # the output ReLU starts (and stays) at zero
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def loop():
        for i in range(50):
            for group in opt.param_groups:
                group["lr"] *= 0.5  # a decay meant per epoch, applied at every step
            loss = F.l1_loss(model(x[i * 32:(i + 1) * 32]), target[i * 32:(i + 1) * 32])
            opt.zero_grad()
            loss.backward()
            opt.step()

    report, _ = doctored(loop, steps=40)
    [dead] = report.by_code("TW131")
    assert dead.severity == "error" and dead.evidence["output"] is True
    [lr] = [f for f in report.by_code("TW133") if "fell to nothing" in f.message]
    assert lr.evidence["lr_start"] == [5e-4] and lr.evidence["fell_at_step"] == [20]


# --- TW106 over the whole dataset: a bad label in a late batch, found by the default run ----------


def test_tw106_bad_label_late_in_the_dataset_found_by_the_default_task_run(digits):
    from torchwise.doctor import doctor

    x, y = digits
    y = y.clone()
    y[1700] = 10  # in a batch the 3 default steps never reach
    case = dict(R.mlp_case(inp=64), loader=DataLoader(TensorDataset(x, y), batch_size=32))
    [f] = doctor(**case).by_code("TW106")
    assert f.evidence["samples"] == [1700] and f.evidence["bad_values"] == [10] and f.evidence["output_width"] == 10
    assert "sample 1700 has 10" in f.message
    y[1700] = 9
    assert not doctor(**case).by_code("TW106")


def test_tw106_dataset_scan_skips_labels_re_encoded_before_the_loss(digits):
    x, y = digits
    labels = y + 1  # stored 1..10, shifted to 0..9 in the loop: the dataset's values are not the loss's
    loader = DataLoader(TensorDataset(x, labels), batch_size=32, shuffle=True)
    model = mlp()
    opt = torch.optim.Adam(model.parameters())

    def loop():
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb - 1)
            opt.zero_grad()
            loss.backward()
            opt.step()

    report, _ = doctored(loop, steps=3)
    assert not report.by_code("TW106")


# --- script-mode wording and names ---------------------------------------------------------------


def test_tw209_and_tw113_with_two_models_keep_the_model_prefix():
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
    critic = nn.Sequential(nn.Flatten(), nn.Linear(64, 1))
    opt_g, opt_c = torch.optim.Adam(generator.parameters()), torch.optim.Adam(critic.parameters())

    def loop():
        for _ in range(4):
            target = torch.randn(8)
            c_loss = F.smooth_l1_loss(critic(generator(torch.randn(8, 1, 8, 8)).detach()), target)  # (8, 1) against (8,)
            opt_c.zero_grad()
            c_loss.backward()
            opt_c.step()
            g_loss = -critic(generator(torch.randn(8, 1, 8, 8))).mean()
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()

    report, _ = doctored(loop, steps=8)
    [bias] = report.by_code("TW209")
    assert bias.evidence["pairs"] == [["generator.0", "generator.1"]] and bias.evidence["wasted_bias_values"] == 8
    [shape] = report.by_code("TW113")
    assert shape.evidence["prediction_shape"] == [8, 1] and "smooth_l1_loss" in shape.message


def test_script_skip_reasons_say_what_happened(digits):
    report, _ = doctored(hand_loop(digits, batches=5), steps=200)
    reasons = {c: s.reason for s in report.skipped for c in s.codes}
    assert reasons["TW134"] == "watches training over >= 20 optimizer steps; only 5 ran before the script ended"
    assert "use --steps" not in " ".join(reasons.values()) and "no optimizer given" not in reasons["TW115"]


def test_failure_text_is_plain_and_names_the_users_line():
    from torchwise.doctor.script import _describe_failure

    try:
        raise RuntimeError("\x1b[31mCUDA error: device-side assert triggered\x1b[0m\nmore")
    except RuntimeError as exc:
        text = _describe_failure(exc)
    assert text.startswith("RuntimeError: CUDA error: device-side assert triggered (at ") and "\x1b" not in text


def test_tw202_decides_on_time_less_the_run_queue():
    from types import SimpleNamespace

    from torchwise.doctor.checks import tw202_loader_wait as tw202
    from torchwise.doctor.probe import StepRecord

    def ctx(free_wait):  # wall times of a busy machine: 40 ms "waited" a step, 60 ms stepping
        steps = [StepRecord(i, 0.04, 0.06, (), 32, free_wait_s=free_wait, free_step_s=0.01) for i in range(6)]
        loader = SimpleNamespace(num_workers=0, batch_size=32)
        c = SimpleNamespace(batch_given=False, loader=loader, steps=steps, script=False)
        c.timed_steps = steps[1:]
        c.loader_wait = lambda: (sum(s.free_wait_s for s in steps[1:]), sum(s.free_step_s for s in steps[1:]),
                                 free_wait / (free_wait + 0.01))
        return c

    assert tw202.check(ctx(0.0005)) == []  # the waiting was the run queue: a fast loader
    [f] = tw202.check(ctx(0.02))  # 20 ms of loading a step even with the queue left out
    assert f.code == "TW202"


def test_clock_leaves_out_run_queue_time():
    from torchwise.doctor import clock

    wall, free = clock.both()
    assert free <= wall
    if clock.load_free():  # Linux: the run-queue time of this thread so far is subtracted
        assert wall - free >= 0


# --- the script's own exit, run through the child's entry point in this process -----------------

SCRIPT = """
import sys
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,))), batch_size=8)
it = iter(loader)
for step in range(6):
    x, y = next(it)  # no try/except: the epoch the doctor ends shows up here as StopIteration
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
{end}
"""


@pytest.mark.parametrize("end, status, failure", [
    ("sys.exit(3)", 3, "the script exited with status 3"),
    ("raise RuntimeError('\\x1b[31mbad\\x1b[0m thing')", 1, "RuntimeError: bad thing (at train.py:"),
    ("", 0, None),
])
def test_script_exit_status_and_failure(tmp_path, monkeypatch, end, status, failure):
    import json
    import sys

    from torchwise.doctor.script import _child

    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(end=end))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    steps = 3 if status == 0 else 50  # 3: the doctor ends the epoch, the bare next() raises StopIteration
    assert _child(["--steps", str(steps), "--out", str(tmp_path / "r.json"), "--", str(script)]) == status
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["measured"]["script_exit"] == status
    if failure is None:
        assert report["failure"] is None and report["measured"]["stopped_by_doctor"] and report["measured"]["steps_run"] == 3
    else:
        assert report["failure"].startswith(failure) and "\x1b" not in report["failure"]
