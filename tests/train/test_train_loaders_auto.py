"""Loader preparation (GPU defaults, seekable per-epoch sampler, sharding) and the "auto" settings."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, WeightedRandomSampler

from train_helpers import data, loader, make_trainer

from torchwise.core.errors import DataError
from torchwise.train.auto import AutoSettings, decide
from torchwise.train.loaders import EpochSampler, ShardSampler, prepare_loader

CPU, CUDA = torch.device("cpu"), torch.device("cuda", 0)


def _indices(prepared, epoch, start=0):
    return [int(i) for _, y in prepared.epoch_iter(epoch, start) for i in y]


def test_gpu_training_pins_memory_and_adds_workers_when_left_at_defaults(monkeypatch):
    import torchwise.train.loaders as loaders_mod

    monkeypatch.setattr(loaders_mod.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    p = prepare_loader(loader(batch_size=4), train=True, device=CUDA, seed=0)
    assert p.loader.pin_memory
    assert p.loader.num_workers == 4 and p.loader.persistent_workers  # min(4, 8 cores - 1)
    monkeypatch.setattr(loaders_mod.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    small = prepare_loader(loader(batch_size=4), train=True, device=CUDA, seed=0)
    assert small.loader.num_workers == 1  # 2 cores: one left for the training process
    user = prepare_loader(loader(batch_size=4, num_workers=2), train=True, device=CUDA, seed=0)
    assert user.loader.num_workers == 2  # an explicit choice is kept
    cpu = prepare_loader(loader(batch_size=4, pin_memory=True), train=True, device=CPU, seed=0)
    assert not cpu.loader.pin_memory and cpu.loader.num_workers == 0


def test_tuned_loader_overrides_apply():
    p = prepare_loader(loader(batch_size=4), train=True, device=CPU, seed=0, overrides={"batch_size": 16, "num_workers": 0})
    assert p.batch_size == 16 and len(p) == 4
    assert [len(y) for _, y in p.epoch_iter(0)] == [16] * 4


@pytest.mark.parametrize("n, size, drop_last, shuffle", [(32, 4, False, True), (30, 4, False, True), (30, 4, True, True), (30, 7, False, False), (5, 8, False, True), (5, 8, True, True)])
def test_sliced_batches_are_the_batches_of_a_batch_sampler(n, size, drop_last, shuffle):
    """The training loader cuts its batches from the index list: the very batches BatchSampler makes
    over the same sampler, tails and drop_last included, from any start inside an epoch."""
    from torch.utils.data import BatchSampler

    from torchwise.train.loaders import SlicedBatches

    ds = data(n=n)
    p = prepare_loader(loader(ds, batch_size=size, shuffle=shuffle, drop_last=drop_last), train=True, device=CPU, seed=3)
    assert type(p.loader.batch_sampler) is SlicedBatches
    for epoch in (0, 1):
        for start in (0, 1, 2):
            p.sampler.set_epoch(epoch)
            p.sampler.set_start(start * size)
            sliced = list(p.loader.batch_sampler)
            p.sampler.set_epoch(epoch)
            p.sampler.set_start(start * size)
            assert sliced == list(BatchSampler(p.sampler, size, drop_last))
    assert len(p) == len(BatchSampler(p.sampler, size, drop_last))


def test_a_loader_the_trainer_rebuilt_can_be_prepared_again():
    ds = data(n=30)
    ds.tensors = (ds.tensors[0], torch.arange(30))
    first = prepare_loader(loader(ds, batch_size=4, shuffle=True, drop_last=True), train=True, device=CPU, seed=5)
    again = prepare_loader(first.loader, train=True, device=CPU, seed=5)
    assert isinstance(again.sampler, EpochSampler) and again.batch_size == 4 and len(again) == 7
    assert _indices(again, 0) == _indices(first, 0) and len(_indices(again, 0)) == 28
    assert _indices(again, 1, start=2) == _indices(first, 1)[8:]


def test_epoch_order_depends_on_seed_and_epoch_and_can_start_mid_epoch():
    ds = data(n=32)
    ds.tensors = (ds.tensors[0], torch.arange(32))  # targets = sample index
    p = prepare_loader(loader(ds, batch_size=4, shuffle=True), train=True, device=CPU, seed=7)
    assert isinstance(p.sampler, EpochSampler)
    e0, e1 = _indices(p, 0), _indices(p, 1)
    assert sorted(e0) == list(range(32)) and e0 != e1
    assert _indices(p, 0) == e0  # reproducible
    assert _indices(p, 1, start=3) == e1[12:]  # resumed after 3 batches of 4
    q = prepare_loader(loader(ds, batch_size=4, shuffle=True), train=True, device=CPU, seed=8)
    assert _indices(q, 0) != e0
    seq = prepare_loader(loader(ds, batch_size=4, shuffle=False), train=True, device=CPU, seed=7)
    assert _indices(seq, 0) == list(range(32))


def test_distributed_shards_cover_the_data_once():
    ds = data(n=30)
    ds.tensors = (ds.tensors[0], torch.arange(30))
    shards = [prepare_loader(loader(ds, batch_size=4, shuffle=True), train=True, device=CPU, seed=0, num_replicas=2, rank=r) for r in (0, 1)]
    a, b = _indices(shards[0], 0), _indices(shards[1], 0)
    assert len(a) == len(b) == 15 and sorted(a + b) == list(range(30))
    evals = [prepare_loader(loader(ds, batch_size=4), train=False, device=CPU, seed=0, num_replicas=2, rank=r) for r in (0, 1)]
    assert all(isinstance(e.loader.sampler, ShardSampler) for e in evals)
    got = sorted(int(i) for e in evals for _, y in e.loader for i in y)
    assert got == list(range(30))  # evaluation: no padding, no duplicates


def test_loaders_that_cannot_be_rebuilt_are_used_as_they_are():
    ds = data(n=16)
    custom = DataLoader(ds, batch_size=4, sampler=WeightedRandomSampler(torch.ones(16), 16))
    p = prepare_loader(custom, train=True, device=CPU, seed=0)
    assert p.sampler is None and isinstance(p.loader.batch_sampler.sampler, WeightedRandomSampler)

    class Stream(IterableDataset):
        def __iter__(self):
            return iter([(torch.zeros(2, 6), torch.zeros(2, dtype=torch.long))] * 3)

    it = DataLoader(Stream(), batch_size=None)
    assert prepare_loader(it, train=True, device=CPU, seed=0).loader is it
    batches = [(torch.zeros(2, 6), torch.zeros(2, dtype=torch.long))]
    assert prepare_loader(batches, train=True, device=CPU, seed=0).loader is batches


def test_iterable_loader_without_length_trains_with_a_partial_last_window():
    class Stream(IterableDataset):
        def __iter__(self):
            x, y = data(n=40).tensors
            return iter([(x[i:i + 8], y[i:i + 8]) for i in range(0, 40, 8)])

    t = make_trainer(accumulate=2)
    r = t.fit(DataLoader(Stream(), batch_size=None), epochs=2)
    assert r.steps == 6  # 5 batches per epoch -> windows 2, 2, 1


def test_one_shot_iterators_are_refused():
    gen = ((torch.zeros(2, 6), torch.zeros(2, dtype=torch.long)) for _ in range(3))
    with pytest.raises(DataError, match="one-shot iterator"):
        prepare_loader(gen, train=True, device=CPU, seed=0)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x).mean((2, 3))


def test_auto_decisions():
    kw = dict(conv2d=True, four_d=True, shapes_fixed=True)
    assert decide("auto", device_type="cuda", **kw)
    assert not decide("auto", device_type="cpu", **kw)
    assert not decide("auto", device_type="cuda", conv2d=False, four_d=True, shapes_fixed=True)
    assert not decide("auto", device_type="cuda", conv2d=True, four_d=True, shapes_fixed=False)
    assert decide(True, device_type="cpu", conv2d=False, four_d=False, shapes_fixed=False)


def test_auto_turns_on_for_fixed_4d_conv_inputs_and_off_when_shapes_vary():
    saved = torch.backends.cudnn.benchmark
    model = ConvNet()
    auto = AutoSettings("auto", "auto", device_type="cuda")
    auto.start(model, torch.zeros(8, 3, 16, 16))
    try:
        assert auto.channels_last and auto.cudnn_benchmark and torch.backends.cudnn.benchmark
        assert model.conv.weight.is_contiguous(memory_format=torch.channels_last)
        auto.observe(torch.zeros(8, 3, 16, 16))
        auto.observe(torch.zeros(5, 3, 16, 16))  # a smaller last batch is not variation
        assert auto.channels_last and auto.cudnn_benchmark
        auto.observe(torch.zeros(8, 3, 20, 20))
        assert not auto.channels_last and not auto.cudnn_benchmark and not auto.watching
        assert torch.backends.cudnn.benchmark == saved
        assert model.conv.weight.is_contiguous()
        assert len(auto.events) == 2
    finally:
        auto.finish()
        torch.backends.cudnn.benchmark = saved


def test_auto_is_off_for_deterministic_runs_and_mlps():
    auto = AutoSettings("auto", "auto", device_type="cuda", deterministic=True)
    auto.start(ConvNet(), torch.zeros(2, 3, 8, 8))
    assert auto.channels_last and not auto.cudnn_benchmark
    auto = AutoSettings("auto", "auto", device_type="cuda")
    auto.start(nn.Linear(4, 2), torch.zeros(2, 4))
    assert not auto.channels_last and not auto.cudnn_benchmark
