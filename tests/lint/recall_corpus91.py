"""The recall corpus, round 27 part D: classes sets 43 and 44 showed for TW501, TW509, TW109 and
TW209 - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW501 torchvision.models.utils
# Backbone modules of 2019-2020 that fetched weights with torchvision's re-export of the hub helper.
FIND += [
    Shape("TW501", "the hub helper imported from torchvision.models.utils", d("""
        import torch.nn as nn
        from torchvision.models.utils import load_state_dict_from_url
        def backbone(url):
            net = nn.Linear(2, 2)
            net.load_state_dict(load_state_dict_from_url(url))
            return net
    """), 2),
    Shape("TW501", "torchvision.models.utils imported as a module", d("""
        import torchvision.models.utils as tv_utils
        def weights(url):
            return tv_utils.load_state_dict_from_url(url, progress=False)
    """), 1),
]
QUIET += [
    Shape("TW501", "look-alike: the helper imported from torch.hub", d("""
        from torch.hub import load_state_dict_from_url
        def weights(url):
            return load_state_dict_from_url(url)
    """)),
    Shape("TW501", "look-alike: torchvision's private _utils module, which still exists", d("""
        from torchvision.models._utils import IntermediateLayerGetter
        def trunk(net):
            return IntermediateLayerGetter(net, {"layer4": "out"})
    """)),
    Shape("TW501", "look-alike: the old import only as the fallback when torch.hub lacks it", d("""
        try:
            from torch.hub import load_state_dict_from_url
        except ImportError:
            from torchvision.models.utils import load_state_dict_from_url
    """)),
]

# ------------------------------------------------------------- TW509 a builder from a zoo module's namespace
# A segmentation factory imports one module of torchvision's zoo and picks the builder by name.
FIND += [
    Shape("TW509", "builder looked up in the namespace of torchvision.models.resnet", d("""
        from torchvision.models import resnet
        def trunk(name, pretrained_backbone=True):
            return resnet.__dict__[name](
                pretrained=pretrained_backbone,
                replace_stride_with_dilation=[False, True, True])
    """), 4),
    Shape("TW509", "builder fetched with getattr from torchvision.models.vgg", d("""
        import torchvision
        def features(depth, use_imagenet):
            return getattr(torchvision.models.vgg, f"vgg{depth}_bn")(pretrained=use_imagenet).features
    """), 3),
]
QUIET += [
    Shape("TW509", "look-alike: the project's own module named resnet", d("""
        import torchvision
        from nets import resnet
        def trunk(name):
            return resnet.__dict__[name](pretrained=True)
    """)),
    Shape("TW509", "look-alike: a zoo module's builder called with weights=", d("""
        from torchvision.models import resnet
        def trunk(name):
            return resnet.__dict__[name](weights=None)
    """)),
]

# ------------------------------------------------------------- TW109 a freeze whose calls are commented out
_DET_MODEL = d("""
    import torch.nn as nn
    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))
        def freeze_bn(self):
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
        def forward(self, x):
            return self.body(x)
""")
PROJECTS += [
    ProjectShape("TW109", "look-alike: freeze_bn() whose only calls in the training script are commented out", {
        "model.py": _DET_MODEL,
        "train.py": d("""
            from model import Detector
            def train(loader, opt):
                model = Detector()
                model.train()
                # if multi_gpu:
                #     model.module.freeze_bn()
                # else:
                #     model.freeze_bn()
                for x in loader:
                    opt.zero_grad()
                    model(x).mean().backward()
                    opt.step()
        """),
    }),
    ProjectShape("TW109", "a freeze_bn() the training script does call (also with a comment after it)", {
        "model.py": _DET_MODEL,
        "train.py": d("""
            from model import Detector
            def train(loader, opt):
                model = Detector()
                model.train()
                model.freeze_bn()  # keep the statistics
                for x in loader:
                    opt.zero_grad()
                    model(x).mean().backward()
                    opt.step()
        """),
    }, (("model.py", 9),)),
]

# ------------------------------------------------------------- TW209 a conv bound to a name, then Sequential
# A SegNet-style block class: the conv is built first (its bias a parameter that defaults to True),
# then put into a Sequential with a BatchNorm.
FIND += [
    Shape("TW209", "conv bound to a local name, bias parameter on by default, then Sequential with BatchNorm", d("""
        import torch.nn as nn
        class ConvBlock(nn.Module):
            def __init__(self, cin, cout, k, bias=True, with_bn=True):
                super().__init__()
                layer = nn.Conv2d(cin, cout, k, padding=k // 2, bias=bias)
                if with_bn:
                    self.unit = nn.Sequential(layer, nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
                else:
                    self.unit = nn.Sequential(layer, nn.ReLU(inplace=True))
            def forward(self, x):
                return self.unit(x)
    """), 5),
    Shape("TW209", "linear bound to a name, then Sequential with BatchNorm1d", d("""
        import torch.nn as nn
        def head(d_in, d_out):
            fc = nn.Linear(d_in, d_out)
            return nn.Sequential(fc, nn.BatchNorm1d(d_out), nn.ReLU())
    """), 3),
]
QUIET += [
    Shape("TW209", "look-alike: the named conv turns its bias off", d("""
        import torch.nn as nn
        class ConvBlock(nn.Module):
            def __init__(self, cin, cout, k):
                super().__init__()
                layer = nn.Conv2d(cin, cout, k, bias=False)
                self.unit = nn.Sequential(layer, nn.BatchNorm2d(cout), nn.ReLU())
    """)),
    Shape("TW209", "look-alike: the bias parameter defaults to False", d("""
        import torch.nn as nn
        class ConvBlock(nn.Module):
            def __init__(self, cin, cout, k, bias=False):
                super().__init__()
                layer = nn.Conv2d(cin, cout, k, bias=bias)
                self.unit = nn.Sequential(layer, nn.BatchNorm2d(cout), nn.ReLU())
    """)),
]

# ------------------------------------------------------------- TW209 calls of a conv helper with bias and bn flags
# A pose or segmentation network's helper: the list of layers starts with the conv (bias a
# parameter on by default), a BatchNorm appended under a flag; the model module calls it.
_HELPER = d("""
    from torch import nn
    def conv_unit(cin, cout, k=3, pad=1, use_bn=True, dil=1, act=True, bias=True):
        parts = [nn.Conv2d(cin, cout, k, 1, pad, dil, bias=bias)]
        if use_bn:
            parts.append(nn.BatchNorm2d(cout))
        if act:
            parts.append(nn.ReLU(inplace=True))
        return nn.Sequential(*parts)
""")
_NET = d("""
    from torch import nn
    from blocks.units import conv_unit
    class Stage(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.first = conv_unit(c, c, k=1, pad=0, use_bn=False)
            self.trunk = nn.Sequential(
                conv_unit(c, c),
                conv_unit(c, c, dil=2, pad=2),
                conv_unit(c, c, bias=False),
            )
        def forward(self, x):
            return self.trunk(self.first(x))
""")
PROJECTS += [
    ProjectShape("TW209", "calls of an imported conv helper that leave bias and BatchNorm on", {
        "blocks/__init__.py": "", "blocks/units.py": _HELPER, "net.py": _NET,
    }, (("net.py", 8), ("net.py", 9))),
    ProjectShape("TW209", "look-alike: the helper's BatchNorm is off by default and no call turns it on", {
        "blocks/__init__.py": "", "blocks/units.py": _HELPER.replace("use_bn=True", "use_bn=False"), "net.py": _NET,
    }),
    ProjectShape("TW209", "look-alike: the helper's bias is off by default and no call turns it on", {
        "blocks/__init__.py": "", "blocks/units.py": _HELPER.replace("bias=True", "bias=False"), "net.py": _NET,
    }),
]
FIND += [
    Shape("TW209", "a helper of the same file called with its defaults", d("""
        import torch.nn as nn
        def conv_bn(cin, cout, stride=1, bias=True, bn=True):
            seq = [nn.Conv2d(cin, cout, 3, stride, 1, bias=bias)]
            if bn:
                seq.append(nn.BatchNorm2d(cout))
            return nn.Sequential(*seq)
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = conv_bn(3, 32, stride=2)
    """), 10),
]
QUIET += [
    Shape("TW209", "look-alike: every call passes a variable for the flag", d("""
        import torch.nn as nn
        def conv_bn(cin, cout, stride=1, bias=True, bn=True):
            seq = [nn.Conv2d(cin, cout, 3, stride, 1, bias=bias)]
            if bn:
                seq.append(nn.BatchNorm2d(cout))
            return nn.Sequential(*seq)
        class Net(nn.Module):
            def __init__(self, norm):
                super().__init__()
                self.stem = conv_bn(3, 32, bias=not norm, bn=norm)
    """)),
    Shape("TW209", "look-alike: the helper appends a GroupNorm, not a BatchNorm", d("""
        import torch.nn as nn
        def conv_gn(cin, cout, bias=True, norm=True):
            seq = [nn.Conv2d(cin, cout, 3, 1, 1, bias=bias)]
            if norm:
                seq.append(nn.GroupNorm(8, cout))
            return nn.Sequential(*seq)
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = conv_gn(3, 32)
    """)),
]
