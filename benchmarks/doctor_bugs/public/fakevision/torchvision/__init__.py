"""A stand-in for torchvision used only by the doctor benchmark's public-script runs.

torchvision is not installed here and nothing may be downloaded, so the public example scripts
import this package instead (it is put on PYTHONPATH for those runs only). ``datasets`` serves
synthetic, learnable data with the shapes, class counts and attributes of the real datasets;
``transforms`` applies the usual transforms to tensors; ``utils.save_image`` writes nothing.
Dataset sizes: a tenth of the real ones (MNIST 6000/1000, CIFAR-10 5000/1000), or
TORCHWISE_FAKE_TRAIN / TORCHWISE_FAKE_TEST samples.
"""

from . import datasets, transforms, utils  # noqa: F401

__version__ = "0.0+torchwise.fake"
