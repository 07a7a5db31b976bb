# Doctor bug corpus, pair "param_left_out_list" (class: param_left_out).
# Modelled on https://github.com/zjunlp/HVPNeT/issues/5: the optimizer's parameter list was built
# group by group and the parameters of the crf and fc layers were never appended, so those layers
# were not trained; the authors confirmed it.
# A tagger-like model (embedding, GRU encoder, projection, output layer) whose optimizer groups
# are listed by hand with different learning rates. buggy.py forgets the projection layer's group;
# fixed.py lists it.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, vocab=20, tags=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.encoder = nn.GRU(16, 32, batch_first=True)
        self.projection = nn.Linear(32, 32)
        self.output = nn.Linear(32, tags)

    def forward(self, tokens):
        hidden, _ = self.encoder(self.embed(tokens))
        return self.output(torch.relu(self.projection(hidden)))


def make_batch(n, length=12):
    tokens = torch.randint(0, 20, (n, length))
    tags = (tokens % 4 + torch.roll(tokens, 1, dims=1) % 2) % 4  # depends on this and the previous token
    return tokens, tags


torch.manual_seed(0)
model = Tagger()
groups = [
    {"params": model.embed.parameters(), "lr": 1e-2},
    {"params": model.encoder.parameters(), "lr": 3e-3},
    {"params": model.output.parameters(), "lr": 3e-3},
]
optimizer = torch.optim.Adam(groups)
criterion = nn.CrossEntropyLoss()

for step in range(700):
    tokens, tags = make_batch(32)
    optimizer.zero_grad()
    loss = criterion(model(tokens).reshape(-1, 4), tags.reshape(-1))
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        print(f"step {step}: loss {loss.item():.4f}")

tokens, tags = make_batch(512)
with torch.no_grad():
    accuracy = (model(tokens).argmax(-1) == tags).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
