"""The recall corpus, round 33 part D: TW104 classes that sets 56-61 still missed - each written in our
own words and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds
these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 a test_* function handed the model
# A script's final `test_xxx(model, feats, labels)` that puts the model it is handed in eval mode and
# scores it once (no loop): the script calls it, so it is no unit test (set 61 SGC).
FIND += [
    Shape("TW104", "test_* helper handed the model: eval() then one scored forward, called by the script", d("""
        import torch
        def test_split(net, feats, labels):
            net.eval()
            return score(net(feats), labels)
        net = build()
        print(test_split(net, x_test, y_test))
    """), 4),
    Shape("TW104", "test_* helper in a __main__ block's call, forward bound to a name first", d("""
        import torch
        def test_model(clf, data, target):
            clf.eval()
            logits = clf(data)
            return (logits.argmax(1) == target).float().mean().item()
        if __name__ == "__main__":
            clf = make_clf()
            acc = test_model(clf, xs, ys)
    """), 4),
]
QUIET += [
    Shape("TW104", "look-alike: a pytest test handed a fixture model (no project code calls it)", d("""
        import torch
        def test_output_shape(model, batch):
            model.eval()
            out = model(batch)
            assert out.shape[0] == batch.shape[0]
    """)),
    Shape("TW104", "look-alike: test_* helper whose loss the caller backpropagates", d("""
        import torch
        def test_time_adapt(net, x):
            net.eval()
            return entropy(net(x))
        for x in stream:
            loss = test_time_adapt(net, x)
            loss.backward()
            opt.step()
    """)),
]

# ------------------------------------------------------------- TW104 single runs beside a script's evaluation loop
# A test script that restores weights, puts the model in eval mode, renders a few single pictures
# and then loops over interpolations: the single runs build a graph as much as the loop's (set 57 siren).
FIND += [
    Shape("TW104", "restored model run once outside the loop that follows, no no_grad anywhere", d("""
        import torch
        net = Field()
        net.eval()
        net.load_state_dict(torch.load(path))
        out = net(first_input)
        save_png(out.detach().cpu().numpy())
        for t in range(8):
            save_png(net(mix(t)).detach().cpu().numpy())
    """), 5),
]
QUIET += [
    Shape("TW104", "look-alike: untrained model run once next to the loop (no weights restored: a smoke check)", d("""
        import torch
        net = Field()
        net.eval()
        print(net(probe).shape)
        for t in range(8):
            with torch.no_grad():
                save_png(net(mix(t)).cpu().numpy())
    """)),
]

# ------------------------------------------------------------- TW104 a model put in eval mode where it is built
# `model = Generator(k).eval()` then weights loaded and the model run on an image or on every video
# frame, in a script that imports `Variable` from torch.autograd but takes no gradients (set 56 SRGAN).
FIND += [
    Shape("TW104", "chain-built eval model restored and run once; Variable imported from torch.autograd", d("""
        import torch
        from torch.autograd import Variable
        gen = Upscaler(4).eval()
        gen.load_state_dict(torch.load(ckpt))
        img = Variable(to_tensor(picture)).unsqueeze(0)
        out = gen(img)
        write(out[0].data.cpu())
    """), 6),
    Shape("TW104", "chain-built eval model run per frame inside the __main__ block", d("""
        import torch
        from torch.autograd import Variable
        if __name__ == "__main__":
            gen = Upscaler(opt.scale).eval().cuda()
            gen.load_state_dict(torch.load(opt.ckpt))
            for frame in frames:
                out = gen(Variable(to_tensor(frame)).cuda())
                writer.write(out.cpu().data[0].numpy())
    """), 7),
]
QUIET += [
    Shape("TW104", "look-alike: chain-built eval model whose input gradient the script takes", d("""
        import torch
        from torch.autograd import Variable
        net = Classifier().eval()
        net.load_state_dict(torch.load(ckpt))
        x = Variable(img, requires_grad=True)
        score = net(x)[0, label]
        grad = torch.autograd.grad(score, x)[0]
    """)),
    Shape("TW104", "look-alike: chain-built eval model run once on untrained weights", d("""
        import torch
        net = Classifier().eval()
        print(net(example).shape)
    """)),
]
