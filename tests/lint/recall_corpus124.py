"""The recall corpus, round 35 part C: inference scripts that restore trained weights and run the
model over their data with neither ``.eval()`` nor ``torch.no_grad()`` anywhere (a super-resolution
test script, an NER inference script built on a Lightning checkpoint) - each written in our own
words and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds
these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 a restored model run by a script that trains nothing
_UPSCALE = d("""
    import torch
    from PIL import Image
    from torchvision.transforms import ToTensor
    from nets import Upscaler
    model = Upscaler(factor=3)
    model.load_state_dict(torch.load("weights/best.pt"))
    model = model.cuda()
    for path in sorted(paths):
        y = ToTensor()(Image.open(path).convert("L")).unsqueeze(0).cuda()
        out = model(y)
        Image.fromarray(out.cpu().data[0, 0].numpy()).save(path + ".sr.png")
""")
FIND += [
    Shape("TW104", "test script: load_state_dict(torch.load(...)) then the model upscales every image", _UPSCALE, 10,
          path="test_image.py"),
    Shape("TW104", "eval script: the whole pickled model loaded from a checkpoint dict, moved in the loop, run per image", d("""
        import glob
        import torch
        net = torch.load(opts.ckpt, map_location="cpu")["model"]
        scores = []
        for name in glob.glob("bench/*.npy"):
            x = torch.from_numpy(load(name)).float()[None, None]
            if opts.cuda:
                net = net.cuda()
                x = x.cuda()
            pred = net(x)
            scores.append(psnr(pred.cpu().data[0].numpy(), name))
    """), 10, path="eval.py"),
    Shape("TW104", "inference main(): a Lightning checkpoint restored, its wrapped network run over a test loader", d("""
        import torch
        from systems import SpanTagger
        def main():
            args = parser().parse_args()
            tagger = SpanTagger.load_from_checkpoint(checkpoint_path=args.ckpt, batch_size=1)
            for batch in make_loader(args):
                ids, types, labels = batch
                logits = tagger.model(ids, token_type_ids=types)
                print(decode(logits > 0, ids))
        if __name__ == "__main__":
            main()
    """), 8, path="inference/tag_inference.py"),
    Shape("TW104", "demo script: a restored generator run once on one image", d("""
        import torch
        from nets import Generator
        G = Generator()
        G.load_state_dict(torch.load(args.weights))
        img = to_tensor(args.input)
        fake = G(img)
        save(fake.data.cpu().numpy(), args.output)
    """), 6, path="demo.py"),
]
QUIET += [
    Shape("TW104", "look-alike: the same script under torch.no_grad()", _UPSCALE.replace(
        "for path in sorted(paths):\n", "with torch.no_grad():\n  for path in sorted(paths):\n"), path="test_image.py"),
    Shape("TW104", "look-alike: fine-tuning a restored model (optimizer, backward)", d("""
        import torch
        from nets import Upscaler
        model = Upscaler(factor=3)
        model.load_state_dict(torch.load("weights/best.pt"))
        opt = torch.optim.Adam(model.parameters(), 1e-4)
        for x, y in loader:
            loss = (model(x) - y).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)),
    Shape("TW104", "look-alike: saliency of a restored classifier (gradients with respect to the input)", d("""
        import torch
        from nets import Classifier
        clf = Classifier()
        clf.load_state_dict(torch.load("clf.pt"))
        for img in images:
            img.requires_grad_(True)
            score = clf(img)[0, target]
            sal, = torch.autograd.grad(score, img)
            show(sal.abs())
    """), path="saliency.py"),
    Shape("TW104", "look-alike: a restored model handed to a trainer that fine-tunes it", d("""
        import torch
        from engine import Trainer
        model = build()
        model.load_state_dict(torch.load(args.resume))
        out = model(example_batch)
        trainer = Trainer(model, data, epochs=3)
        trainer.run()
    """), path="finetune.py"),
    Shape("TW104", "look-alike: a restored feature network frozen with requires_grad_(False)", d("""
        import torch
        from nets import Encoder
        enc = Encoder()
        enc.load_state_dict(torch.load("enc.pt"))
        enc.requires_grad_(False)
        for x in batches:
            feats = enc(x)
            dump(feats.numpy())
    """), path="extract.py"),
    Shape("TW104", "look-alike: the name is rebound to a fresh model after the restore of another branch", d("""
        import torch
        if args.kind == "big":
            model = Big()
            model.load_state_dict(torch.load(args.ckpt))
        else:
            model = registry[args.kind]
            model = model(num_classes=10)
        report(model)
    """), path="tools/eval.py"),
]
QUIET += [
    Shape("TW104", "look-alike: a backbone file's __main__ smoke test on a zeros input after restoring weights", d("""
        import torch
        from torch import nn
        class Backbone(nn.Module):
            def forward(self, x):
                return [x]
        if __name__ == "__main__":
            net = Backbone()
            net.load_state_dict(torch.load("ckpt.pth"), strict=False)
            x = torch.zeros(1, 3, 224, 224)
            for y in net(x):
                print(y.shape)
    """), path="backbones/tiny.py"),
]
