# Doctor bug corpus, pair "labels_mask_grey" (class: labels_out_of_range).
# Modelled on https://github.com/milesial/Pytorch-UNet/issues/291: training failed with
# "IndexError: Target 192 is out of bounds"; the maintainer pointed out that the masks were loaded
# as raw grey values (0-255), not class indices 0..n_classes-1.
# A tiny segmentation net learns to mark a bright square in noisy 16x16 images; the masks are
# stored as 8-bit images (0 or 255). buggy.py uses the stored values as class indices; fixed.py
# turns them into 0/1.
# Run: python buggy.py (or fixed.py); the last line prints the test pixel accuracy.
import torch
import torch.nn as nn


def make_images(n, generator):
    images = 0.3 * torch.randn(n, 1, 16, 16, generator=generator)
    masks = torch.zeros(n, 16, 16, dtype=torch.uint8)
    corners = torch.randint(0, 11, (n, 2), generator=generator)
    for i, (r, c) in enumerate(corners.tolist()):
        images[i, 0, r:r + 5, c:c + 5] += 1.0
        masks[i, r:r + 5, c:c + 5] = 255
    return images, masks


g = torch.Generator().manual_seed(0)
train_images, train_masks = make_images(1024, g)
test_images, test_masks = make_images(128, g)

torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 1))
optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(4):
    order = torch.randperm(len(train_images))
    for start in range(0, len(order), 16):
        idx = order[start:start + 16]
        target = train_masks[idx].long()
        optimizer.zero_grad()
        loss = criterion(net(train_images[idx]), target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (net(test_images).argmax(1) == (test_masks // 255).long()).float().mean().item()
print(f"final: pixel_acc={accuracy:.4f}")
