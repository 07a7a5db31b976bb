# Doctor bug corpus, pair "dead_relu_output" (class: dead_relu).
# Modelled on https://github.com/jvargasmu/population_estimation/issues/68: the model sometimes
# predicted only zeros because of a ReLU activation, and then no gradients emerged; the authors
# proposed a softplus instead.
# A count regressor (counts must not be negative) ends in a ReLU in buggy.py; its last layer starts
# negative for every sample, so the ReLU passes no gradient and the prediction stays 0. fixed.py
# ends in a Softplus.
# Run: python buggy.py (or fixed.py); the last line prints the test mean absolute error.
import torch
import torch.nn as nn

torch.manual_seed(0)
features = torch.rand(4000, 8)
counts = 40 * features[:, :3].sum(1, keepdim=True) + 5 * torch.rand(4000, 1)


class CountNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.scale = nn.Linear(32, 1)
        nn.init.constant_(self.scale.bias, -2.0)  # start from a low count
        self.activation = nn.ReLU()

    def forward(self, x):
        return self.activation(self.scale(self.body(x)))


model = CountNet()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(8):
    order = torch.randperm(3200)
    for start in range(0, 3200, 32):
        idx = order[start:start + 32]
        optimizer.zero_grad()
        loss = nn.functional.l1_loss(model(features[idx]), counts[idx])
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: l1 {loss.item():.3f}")

with torch.no_grad():
    mae = (model(features[3200:]) - counts[3200:]).abs().mean().item()
print(f"final: test_mae={mae:.3f}")
