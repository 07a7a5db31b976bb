# Doctor bug corpus, pair "label_leak_lm" (class: label_leakage).
# Modelled on https://github.com/songlab-cal/tape/issues/32: the language-modelling targets were
# the inputs themselves; the maintainer noted that targets not shifted against the inputs give
# zero loss very quickly (see also https://github.com/speechbrain/speechbrain/issues/1243, an LM
# whose train and validation loss reached 0).
# A small character-level GRU language model on generated text. buggy.py uses the input
# characters as the targets (the model only has to copy its input); fixed.py predicts the next
# character.
# Run: python buggy.py (or fixed.py); the last line prints the next-character accuracy on new text.
import torch
import torch.nn as nn

WORDS = "the quick brown fox jumps over a lazy dog while seven small birds sing in green trees".split()


def make_text(n_words, generator):
    picks = torch.randint(0, len(WORDS), (n_words,), generator=generator).tolist()
    return " ".join(WORDS[i] for i in picks)


g = torch.Generator().manual_seed(0)
text, held_out = make_text(6000, g), make_text(600, g)
chars = sorted(set(text + held_out))
encode = {c: i for i, c in enumerate(chars)}
data = torch.tensor([encode[c] for c in text])
test = torch.tensor([encode[c] for c in held_out])


class CharLM(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.embed = nn.Embedding(vocab, 32)
        self.rnn = nn.GRU(32, 64, batch_first=True)
        self.out = nn.Linear(64, vocab)

    def forward(self, tokens):
        hidden, _ = self.rnn(self.embed(tokens))
        return self.out(hidden)


def batch(source, size=32, length=40):
    starts = torch.randint(0, len(source) - length - 1, (size,))
    inputs = torch.stack([source[s:s + length] for s in starts])
    targets = torch.stack([source[s + 1:s + length + 1] for s in starts])
    return inputs, targets


torch.manual_seed(0)
model = CharLM(len(chars))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()
for step in range(600):
    inputs, targets = batch(data)
    optimizer.zero_grad()
    loss = criterion(model(inputs).reshape(-1, len(chars)), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        print(f"step {step}: loss {loss.item():.4f}")

inputs, targets = test[:-1].unsqueeze(0), test[1:].unsqueeze(0)
with torch.no_grad():
    accuracy = (model(inputs).argmax(-1) == targets).float().mean().item()
print(f"final: next_char_acc={accuracy:.4f}")
