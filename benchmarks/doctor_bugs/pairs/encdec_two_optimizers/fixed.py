# Doctor bug corpus, pair "encdec_two_optimizers" (class: grads_not_cleared, two models with two optimizers).
# Modelled on https://github.com/wiseodd/controlled-text-generation/issues/27: after one loss's
# backward only the generator's gradients were cleared, so the encoder's gradient from that pass
# stayed and was added to the next (the reporter: the encoder's gradient is doubled); the
# separate encoder/decoder optimizers follow the seq2seq tutorial discussed in
# https://github.com/spro/practical-pytorch/issues/113.
# An autoencoder on the digits with an encoder and a decoder, an optimizer each. buggy.py clears
# only the decoder's gradients; fixed.py clears both.
# Run: python buggy.py (or fixed.py); the last line prints the test reconstruction error.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = torch.tensor(load_digits().data, dtype=torch.float32) / 16.0
train, test = data[:1500], data[1500:]
loader = DataLoader(TensorDataset(train), batch_size=50, shuffle=True)

encoder = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
decoder = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 64), nn.Sigmoid())
encoder_optimizer = torch.optim.SGD(encoder.parameters(), lr=0.5, momentum=0.9)
decoder_optimizer = torch.optim.SGD(decoder.parameters(), lr=0.5, momentum=0.9)
criterion = nn.MSELoss()

for epoch in range(30):
    total = 0.0
    for (batch,) in loader:
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        loss = criterion(decoder(encoder(batch)), batch)
        loss.backward()
        encoder_optimizer.step()
        decoder_optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: reconstruction loss {total / len(loader):.5f}")

with torch.no_grad():
    error = criterion(decoder(encoder(test)), test).item()
print(f"final: test_mse={error:.5f}")
