# Doctor bug corpus, pair "zero_grad_hand_update" (class: grads_not_cleared, hand-updated weights).
# Modelled on https://github.com/greebear/pytorch-learning/issues/1: a linear-regression demo
# that updates w and b by hand never zeroed their .grad, and the reporter saw the loss not
# decreasing steadily even with a learning rate of 1e-6.
# No torch.optim here: the weights are updated with p.data.add_(). buggy.py never clears the
# gradients; fixed.py zeroes them after each update.
# Run: python buggy.py (or fixed.py); the last line prints the final mean squared error.
import torch

torch.manual_seed(0)
true_w = torch.tensor([[2.0], [-3.4], [1.5]])
features = torch.randn(1000, 3)
targets = features @ true_w + 4.2 + 0.01 * torch.randn(1000, 1)

w = torch.zeros(3, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr = 0.03
batch_size = 10

for epoch in range(8):
    order = torch.randperm(len(features))
    for start in range(0, len(features), batch_size):
        idx = order[start:start + batch_size]
        prediction = features[idx] @ w + b
        loss = ((prediction - targets[idx]) ** 2).mean() / 2
        loss.backward()
        for p in (w, b):
            p.data.add_(p.grad, alpha=-lr)
    with torch.no_grad():
        mse = ((features @ w + b - targets) ** 2).mean().item()
    print(f"epoch {epoch + 1}: mse {mse:.6f}")
print(f"final: mse={mse:.6f}")
