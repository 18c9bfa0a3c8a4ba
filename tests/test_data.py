"""Tests of fedcore.data: partitioners, FederatedData batching, IDX reading, loaders."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch

from fedcore.data import FederatedData, leaf_synthetic, load, sources
from fedcore.data import partition as partition_module
from fedcore.data.partition import PARTITIONERS, dirichlet, iid, partition, shards, similarity
from fedcore.data.sources import from_arrays, load_fashion_mnist, load_torchvision, read_idx

SCHEMES = [
    ("iid", {}),
    ("dirichlet", {"alpha": 0.5}),
    ("dirichlet", {"alpha": 0.1, "min_size": 5}),
    ("shards", {"classes_per_client": 2}),
    ("shards", {"classes_per_client": 10}),
    ("similarity", {"s": 0.5}),
    ("similarity", {"s": 0.0}),
    ("lda", {"alpha": 0.1}),
    ("pachinko", {"coarse": [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]}),
]
SCHEME_IDS = [f"{name}-{kw}" for name, kw in SCHEMES]


def balanced_labels(n: int = 10_000, num_classes: int = 10, seed: int = 0) -> torch.Tensor:
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return (torch.arange(n) % num_classes)[order]


LABELS = balanced_labels()


def label_tv(parts: list[torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """Total-variation distance between each client's label distribution and the global one."""
    num_classes = int(labels.max()) + 1
    overall = torch.bincount(labels, minlength=num_classes).double()
    overall /= overall.sum()
    hists = torch.stack([torch.bincount(labels[p], minlength=num_classes).double() for p in parts])
    return 0.5 * (hists / hists.sum(1, keepdim=True) - overall).abs().sum(1)


# ---------------------------------------------------------------- partitioners


@pytest.mark.parametrize("scheme,kwargs", SCHEMES, ids=SCHEME_IDS)
def test_partition_is_disjoint_cover_without_empty_clients(scheme, kwargs):
    parts = partition(LABELS, scheme, 20, seed=3, **kwargs)
    assert len(parts) == 20
    assert all(p.dtype == torch.long and p.dim() == 1 and p.numel() > 0 for p in parts)
    merged = torch.cat(parts)
    assert merged.numel() == LABELS.numel()
    assert torch.equal(merged.sort().values, torch.arange(LABELS.numel()))
    if scheme == "dirichlet":
        assert min(p.numel() for p in parts) >= kwargs.get("min_size", 1)


@pytest.mark.parametrize("scheme,kwargs", SCHEMES, ids=SCHEME_IDS)
def test_partition_reproducible_from_seed(scheme, kwargs):
    first = PARTITIONERS[scheme](LABELS, 20, seed=7, **kwargs)
    again = PARTITIONERS[scheme](LABELS, 20, seed=7, **kwargs)
    other = PARTITIONERS[scheme](LABELS, 20, seed=8, **kwargs)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))


def test_lda_gives_equal_clients_whose_skew_falls_as_alpha_grows():
    """TFF's CIFAR split: n / N rows per client; alpha = 0.1 gives each client few classes, alpha = 100 about
    the global mix (mean total-variation distance to it)."""
    from fedcore.data.partition import lda

    labels = torch.arange(2000) % 10
    skewed, mixed = lda(labels, 20, alpha=0.1, seed=0), lda(labels, 20, alpha=100.0, seed=0)
    assert {p.numel() for p in skewed} == {100} == {p.numel() for p in mixed}
    assert label_tv(skewed, labels).mean() > 0.6 > 0.2 > label_tv(mixed, labels).mean()
    assert max(len(labels[p].unique()) for p in skewed) <= 5


def test_pachinko_concentrates_coarse_labels_and_spreads_fine_ones():
    """TFF's CIFAR-100 split: equal clients; alpha = 0.1 puts each client on few coarse labels, alpha = 100 on
    all; beta = 10 spreads a client's rows of a coarse label over its fine labels."""
    from fedcore.data.partition import pachinko

    labels, coarse = torch.arange(4000) % 20, [c // 4 for c in range(20)]  # 5 coarse labels of 4 fine ones
    groups = torch.tensor(coarse)

    def coarse_labels_held(parts):  # per client: coarse labels holding at least 10% of its rows
        return torch.tensor([float((torch.bincount(groups[labels[p]], minlength=5) >= 0.1 * p.numel()).sum())
                             for p in parts])

    focused, spread = pachinko(labels, 40, coarse, alpha=0.1, seed=0), pachinko(labels, 40, coarse, alpha=100.0)
    assert {p.numel() for p in focused} == {100}
    assert coarse_labels_held(focused).mean() < 2 < 4.5 < coarse_labels_held(spread).mean()
    fine_shares = [torch.bincount(labels[p], minlength=20).float() for p in focused]
    main = [share.view(5, 4)[share.view(5, 4).sum(1).argmax()] for share in fine_shares]
    assert sum(int((row > 0).sum()) for row in main) / len(main) > 3  # the main coarse label: most fine ones
    with pytest.raises(ValueError, match="coarse must give a coarse label"):
        pachinko(labels, 40, coarse[:5])


def test_cifar100_coarse_reads_the_pairs_from_the_training_file(tmp_path):
    import pickle

    from fedcore.data.sources import cifar100_coarse

    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    fine = list(range(100)) * 2
    with open(folder / "train", "wb") as handle:
        pickle.dump({"fine_labels": fine, "coarse_labels": [f % 20 for f in fine]}, handle)
    assert cifar100_coarse(tmp_path) == [f % 20 for f in range(100)]
    with pytest.raises(FileNotFoundError, match="cifar-100-python/train not found"):
        cifar100_coarse(tmp_path / "cifar-100-python")


def test_partition_dispatch_equals_direct_call():
    direct = dirichlet(LABELS, 10, alpha=0.3, seed=2)
    dispatched = partition(LABELS, "dirichlet", 10, seed=2, alpha=0.3)
    assert all(torch.equal(a, b) for a, b in zip(direct, dispatched, strict=True))


def test_iid_sizes_and_label_histograms():
    parts = iid(LABELS, 7, seed=1)
    sizes = torch.tensor([p.numel() for p in parts])
    assert int(sizes.max() - sizes.min()) <= 1
    assert float(label_tv(parts, LABELS).max()) < 0.1  # 1,400 rows a client: TV ~ 0.04


def test_dirichlet_small_alpha_far_more_skewed_than_large():
    skewed = label_tv(dirichlet(LABELS, 10, alpha=0.1, seed=0), LABELS).mean()
    mild = label_tv(dirichlet(LABELS, 10, alpha=100.0, seed=0), LABELS).mean()
    # measured over seeds 0-4: alpha=0.1 gives 0.62-0.73, alpha=100 gives 0.033-0.038
    assert skewed > 0.45
    assert mild < 0.08
    assert skewed > 5 * mild


def test_dirichlet_gives_up_with_clear_error(monkeypatch):
    monkeypatch.setattr(partition_module, "MAX_DIRICHLET_DRAWS", 3)
    with pytest.raises(ValueError, match="larger alpha"):
        dirichlet(balanced_labels(200), 50, alpha=0.01, min_size=4)


@pytest.mark.parametrize("per_client", [1, 2, 5, 10])
def test_shards_give_exactly_classes_per_client_and_balanced_holders(per_client):
    parts = shards(LABELS, 20, classes_per_client=per_client, seed=4)
    distinct = [LABELS[p].unique().numel() for p in parts]
    assert distinct == [per_client] * 20
    holders = torch.zeros(10, dtype=torch.long)
    for p in parts:
        holders[LABELS[p].unique()] += 1
    assert int(holders.max() - holders.min()) <= 1
    sizes = torch.tensor([p.numel() for p in parts])
    assert int(sizes.max() - sizes.min()) <= per_client  # balanced classes: near-equal clients


def test_similarity_one_is_iid_and_zero_is_sorted():
    iid_like = similarity(LABELS, 10, s=1.0, seed=0)
    sizes = torch.tensor([p.numel() for p in iid_like])
    assert int(sizes.max() - sizes.min()) <= 1
    assert float(label_tv(iid_like, LABELS).max()) < 0.1
    # s = 0: 20 contiguous chunks of 500 of the label-sorted rows -> one class each
    sorted_parts = similarity(LABELS, 20, s=0.0, seed=0)
    assert [LABELS[p].unique().numel() for p in sorted_parts] == [1] * 20
    # s = 0.5: each client holds 250 rows of one class plus 250 iid -> TV = 0.45
    half = label_tv(similarity(LABELS, 20, s=0.5, seed=0), LABELS).mean()
    assert 0.4 < float(half) < 0.5


# ---------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: dirichlet(LABELS, 10, alpha=0), r"alpha=0 must be > 0"),
        (lambda: similarity(LABELS, 10, s=1.5), r"s=1\.5 not in \[0, 1\]"),
        (lambda: iid(LABELS, 0), r"num_clients=0 must be in \[1, 10000\]"),
        (lambda: iid(LABELS[:5], 6), r"num_clients=6 must be in \[1, 5\]"),
        (lambda: shards(LABELS, 10, 11), r"classes_per_client=11 must be in \[1, 10\]"),
        (lambda: shards(LABELS, 2, 1), r"some class would belong to no client"),
        (lambda: partition(LABELS, "zipf", 10), r"scheme='zipf' not one of \['dirichlet'"),
        (lambda: partition(LABELS, "dirichlet", 10), r"needs argument\(s\) \['alpha'\]"),
        (lambda: partition(LABELS, "iid", 10, alpha=1.0), r"unknown argument\(s\) \['alpha'\]"),
        (lambda: iid(LABELS.float(), 10), r"labels must be a 1-D integer tensor"),
        (lambda: iid(LABELS.view(100, 100), 10), r"labels must be a 1-D integer tensor"),
        (lambda: dirichlet(LABELS, 10, 1.0, min_size=2000), r"min_size=2000 must be in"),
        (lambda: load("imagenet"), r"name='imagenet' not one of \['cifar10'"),
        (lambda: load_torchvision("svhn"), r"name='svhn' not one of"),
        (lambda: leaf_synthetic(1, 1, test_fraction=1.0), r"test_fraction=1\.0 not in \[0, 1\)"),
        (lambda: leaf_synthetic(-1, 1), r"alpha=-1 not in \[0, inf\)"),
    ],
)
def test_bad_arguments_name_argument_value_and_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---------------------------------------------------------------- FederatedData


def indexed_data(sizes: list[int]) -> FederatedData:
    """Row r has input [r, r] and target r % 3; client k owns rows offsets[k] + [0, sizes[k])."""
    n = sum(sizes)
    rows = torch.arange(n, dtype=torch.float32)
    return FederatedData(
        rows[:, None].repeat(1, 2), torch.arange(n) % 3, torch.tensor(sizes),
        torch.zeros(4, 2), torch.zeros(4, dtype=torch.long), num_classes=3,
    )


def test_sample_batches_shapes_ownership_and_distinct_rows():
    data = indexed_data([5, 12, 30, 8])
    clients = torch.tensor([2, 0, 1])
    inputs, targets = data.sample_batches(clients, steps=4, batch_size=8)
    assert inputs.shape == (3, 4, 8, 2) and targets.shape == (3, 4, 8)
    rows = inputs[..., 0].long()
    for s, k in enumerate(clients.tolist()):
        start, size = int(data.offsets[k]), int(data.sizes[k])
        assert bool(((rows[s] >= start) & (rows[s] < start + size)).all())
        if size >= 8:
            assert all(step.unique().numel() == 8 for step in rows[s])
        else:  # 5 samples for 8 slots: all 5 appear, repeated
            assert all(step.unique().numel() == size for step in rows[s])
    assert torch.equal(targets, rows % 3)


def test_sample_batches_full_client_and_seeded_generator():
    data = indexed_data([5, 12, 30, 8])
    inputs, _ = data.sample_batches(torch.tensor([1]), steps=3, batch_size=12)
    for step in inputs[0, :, :, 0].long():
        assert torch.equal(step.sort().values, torch.arange(5, 17))
    first = data.sample_indices(torch.tensor([0, 3]), 5, 4, torch.Generator().manual_seed(9))
    again = data.sample_indices(torch.tensor([0, 3]), 5, 4, torch.Generator().manual_seed(9))
    other = data.sample_indices(torch.tensor([0, 3]), 5, 4, torch.Generator().manual_seed(10))
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_a_round_draws_each_client_without_replacement():
    data = indexed_data([5, 12, 30, 8])
    rows = data.sample_indices(torch.tensor([2, 1]), steps=3, batch_size=8, generator=torch.Generator().manual_seed(4))
    assert rows[0].unique().numel() == 24  # 24 of client 2's 30 samples, none twice
    many = data.sample_indices(torch.tensor([1]), steps=4, batch_size=8, generator=torch.Generator().manual_seed(4))
    counts = torch.bincount(many.flatten() - 5, minlength=12)  # 32 draws from 12 samples
    assert int(counts.min()) == 2 and int(counts.max()) == 3 and int(counts.sum()) == 32
    # a uniform permutation: over many rounds every sample leads the round equally often
    generator = torch.Generator().manual_seed(0)
    first = torch.stack([data.sample_indices(torch.tensor([0]), 1, 1, generator)[0, 0, 0] for _ in range(2000)])
    share = torch.bincount(first, minlength=5).float() / 2000
    assert float((share - 0.2).abs().max()) < 0.04


def test_label_counts_match_bincount():
    data = FederatedData.from_partition(
        torch.randn(LABELS.numel(), 3), LABELS, dirichlet(LABELS, 6, 0.5, seed=1),
        torch.zeros(1, 3), torch.zeros(1, dtype=torch.long), num_classes=10,
    )
    counts = data.label_counts()
    assert counts.shape == (6, 10)
    for k in range(6):
        assert torch.equal(counts[k], torch.bincount(data.client(k)[1], minlength=10))
    assert torch.equal(counts.sum(0), torch.bincount(LABELS, minlength=10))


# ---------------------------------------------------------------- IDX files


def idx_bytes(array: np.ndarray) -> bytes:
    magic = 2051 if array.ndim == 3 else 2049
    header = np.array([magic, *array.shape], dtype=">u4").tobytes()
    return header + array.astype(np.uint8).tobytes()


def write_idx(path: Path, array: np.ndarray, compress: bool) -> Path:
    data = idx_bytes(array)
    if compress:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def write_fake_fashion_mnist(folder: Path, compress: bool = True, n_train: int = 40,
                             n_test: int = 10) -> None:
    """The four Fashion-MNIST IDX files with random pixels and balanced labels."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, (n, 28, 28))
        write_idx(folder / f"{prefix}-images-idx3-ubyte", images, compress)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte", np.arange(n) % 10, compress)


@pytest.mark.parametrize("compress", [True, False], ids=["gz", "plain"])
def test_read_idx_round_trip(tmp_path, compress):
    images = np.random.default_rng(1).integers(0, 256, (6, 28, 28)).astype(np.uint8)
    labels = np.array([3, 1, 4, 1, 5, 9], dtype=np.uint8)
    images_path = write_idx(tmp_path / "images-idx3-ubyte", images, compress)
    labels_path = write_idx(tmp_path / "labels-idx1-ubyte", labels, compress)
    assert np.array_equal(read_idx(images_path, "images"), images)
    assert np.array_equal(read_idx(labels_path), labels)


def test_read_idx_rejects_bad_files(tmp_path):
    good = idx_bytes(np.zeros((4, 28, 28)))
    bad_magic = tmp_path / "bad-magic"
    bad_magic.write_bytes(b"\x00\x00\x08\x04" + good[4:])
    with pytest.raises(ValueError, match=r"bad-magic: magic number 2052"):
        read_idx(bad_magic)
    truncated = tmp_path / "truncated.gz"
    truncated.write_bytes(gzip.compress(good[:-100]))
    with pytest.raises(ValueError, match=r"truncated\.gz: .*truncated or corrupt"):
        read_idx(truncated)
    cut_gzip = tmp_path / "cut-gzip.gz"
    cut_gzip.write_bytes(gzip.compress(good)[:-20])
    with pytest.raises(ValueError, match=r"cut-gzip\.gz: not a readable gzip file"):
        read_idx(cut_gzip)
    labels = tmp_path / "labels"
    labels.write_bytes(idx_bytes(np.zeros(4)))
    with pytest.raises(ValueError, match=r"labels: magic number 2049, expected 2051"):
        read_idx(labels, "images")


def test_fashion_mnist_loader_reads_root_and_rejects_count_mismatch(tmp_path):
    write_fake_fashion_mnist(tmp_path / "FashionMNIST" / "raw", compress=False)
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte: its content \(SHA-256 .*\) is not the "
                                         r"published file's .*reinstall it .*or pass verify=False"):
        load_fashion_mnist(num_clients=4, partition="iid", root=tmp_path)
    data = load_fashion_mnist(num_clients=4, partition="iid", root=tmp_path, verify=False)
    assert data.inputs.shape == (40, 1, 28, 28) and data.test_inputs.shape == (10, 1, 28, 28)
    assert data.num_clients == 4 and data.info["partition"] == "iid"
    assert data.info["source"].endswith("FashionMNIST/raw")
    write_fake_fashion_mnist(tmp_path / "bad")
    write_idx(tmp_path / "bad" / "train-labels-idx1-ubyte", np.arange(39) % 10, True)
    with pytest.raises(ValueError, match=r"holds 40 images but .*train-labels-idx1-ubyte\.gz"):
        load_fashion_mnist(num_clients=4, partition="iid", root=tmp_path / "bad", verify=False)


def test_fashion_mnist_env_var_and_missing_files(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "DEBIAN_FASHION_MNIST", tmp_path / "no-debian")
    monkeypatch.setattr(sources, "DATA_DIR", tmp_path / "no-repo-data")
    monkeypatch.delenv("FEDCORE_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist") as error:
        load_fashion_mnist(num_clients=2, partition="iid")  # no folder named: the defaults, listed
    assert "no-debian" in str(error.value) and "no-repo-data" in str(error.value)
    # a named folder that does not exist, or lacks the files, is an error naming it (no fall back)
    with pytest.raises(FileNotFoundError, match=r"root='.*nowhere' is not an existing folder"):
        load_fashion_mnist(num_clients=2, partition="iid", root=tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"root='.*empty' holds no Fashion-MNIST") as error:
        load_fashion_mnist(num_clients=2, partition="iid", root=tmp_path / "empty")
    assert "no-debian" not in str(error.value)
    with pytest.raises(TypeError, match=r"root=5 must be a folder path"):
        load_fashion_mnist(num_clients=2, partition="iid", root=5)
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path / "typo"))
    with pytest.raises(FileNotFoundError, match=r"FEDCORE_DATA='.*typo' is not an existing folder"):
        load_fashion_mnist(num_clients=2, partition="iid")
    write_fake_fashion_mnist(tmp_path / "env")
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path / "env"))
    data = load_fashion_mnist(num_clients=2, partition="shards", classes_per_client=5, verify=False)
    assert data.info["source"] == str(tmp_path / "env")
    assert data.info["partition_kwargs"] == {"classes_per_client": 5}
    # the real copy in Debian's folder is not used when the named folder lacks the files
    monkeypatch.setattr(sources, "DEBIAN_FASHION_MNIST", tmp_path / "env")
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match=r"FEDCORE_DATA='.*empty' holds no Fashion-MNIST"):
        load_fashion_mnist(num_clients=2, partition="iid")


@pytest.mark.skipif(not sources.DEBIAN_FASHION_MNIST.is_dir(),
                    reason="needs `apt-get install dataset-fashion-mnist`")
def test_fashion_mnist_from_debian_package():
    data = load_fashion_mnist(num_clients=20, partition="dirichlet", alpha=0.5, seed=0)
    assert data.inputs.shape == (60000, 1, 28, 28) and data.inputs.dtype == torch.float32
    assert data.test_inputs.shape == (10000, 1, 28, 28) and data.test_targets.dtype == torch.long
    assert abs(float(data.inputs.mean())) < 0.01 and abs(float(data.inputs.std()) - 1) < 0.01
    assert torch.equal(data.label_counts().sum(0), torch.full((10,), 6000))
    assert torch.equal(torch.bincount(data.test_targets), torch.full((10,), 1000))
    assert data.name == "fashion_mnist" and data.info["class_names"][9] == "Ankle boot"
    assert data.info["partition_kwargs"] == {"alpha": 0.5}


@pytest.mark.skipif(not sources.DEBIAN_FASHION_MNIST.is_dir(),
                    reason="needs `apt-get install dataset-fashion-mnist`")
@pytest.mark.parametrize("stem", ["train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"])
def test_altered_fashion_mnist_files_are_named_with_the_rebuild(tmp_path, stem):
    """One changed label or pixel in a copy of the real files: the loader names the file and how to reinstall
    it, instead of training on other data."""
    import shutil

    for name in sources.FASHION_MNIST_SHA256:
        shutil.copy(sources.DEBIAN_FASHION_MNIST / f"{name}.gz", tmp_path / f"{name}.gz")
    content = bytearray(gzip.decompress((tmp_path / f"{stem}.gz").read_bytes()))
    content[-1] = (content[-1] + 1) % 10
    (tmp_path / f"{stem}.gz").unlink()
    (tmp_path / stem).write_bytes(bytes(content))
    with pytest.raises(ValueError, match=rf"{stem}: its content \(SHA-256 [0-9a-f]{{16}}\.\.\.\) is not the "
                                         r"published file's .*apt-get install --reinstall dataset-fashion-mnist"):
        load_fashion_mnist(num_clients=2, partition="iid", root=tmp_path)
    assert load_fashion_mnist(num_clients=2, partition="iid", root=tmp_path, verify=False).num_clients == 2


# ---------------------------------------------------------------- conversion and torchvision


def test_from_arrays_cifar_shaped_hwc_to_normalized_nchw():
    train = np.zeros((30, 32, 32, 3), dtype=np.uint8)
    train[..., 0], train[..., 1], train[..., 2] = 255, 51, 0  # channel values 1.0, 0.2, 0.0
    mean, std = (0.5, 0.2, 0.1), (0.5, 0.1, 0.05)
    data = from_arrays(train, np.arange(30) % 10, train[:7], list(range(7)), 10, 3, "iid", 0,
                       "cifar10", mean, std)
    assert data.inputs.shape == (30, 3, 32, 32) and data.inputs.dtype == torch.float32
    assert data.test_inputs.shape == (7, 3, 32, 32) and data.test_targets.dtype == torch.long
    per_channel = data.inputs.mean(dim=(0, 2, 3))
    assert torch.allclose(per_channel, torch.tensor([1.0, 0.0, -2.0]), atol=1e-5)
    assert data.num_clients == 3 and data.num_classes == 10


def test_crop_images_central_for_test_and_random_windows_with_flips_for_training():
    """Reddi et al.'s 24x24 CIFAR crops: each image's pixels are distinct numbers, so a crop is checked
    against every window of its source (a naive search over offsets and the two orientations)."""
    from fedcore.data.sources import crop_images

    def window(image, top, left, flip):
        cut = image[:, top:top + 5, left:left + 5]
        return cut.flip(2) if flip else cut

    images = torch.arange(40 * 3 * 8 * 8, dtype=torch.float32).view(40, 3, 8, 8)
    central = crop_images(images, 6)
    assert torch.equal(central, images[:, :, 1:7, 1:7])
    crops = crop_images(images, 5, seed=3)
    assert crops.shape == (40, 3, 5, 5) and torch.equal(crops, crop_images(images, 5, seed=3))
    found = set()
    for image, crop in zip(images, crops):
        windows = [(top, left, flip) for top in range(4) for left in range(4) for flip in (False, True)
                   if torch.equal(crop, window(image, top, left, flip))]
        assert len(windows) == 1  # a window of its own image, mirrored or not
        found.add(windows[0])
    assert len({f[:2] for f in found}) > 8 and {f[2] for f in found} == {False, True}  # offsets and flips vary
    assert not torch.equal(crops, crop_images(images, 5, seed=4))
    whole = crop_images(images, 8, seed=1)  # the full size: each image itself or its mirror
    assert bool((whole.eq(images).all((1, 2, 3)) | whole.eq(images.flip(3)).all((1, 2, 3))).all())
    with pytest.raises(ValueError, match=r"crop=9 is larger than the images \(8x8\)"):
        crop_images(images, 9)
    with pytest.raises(ValueError, match="crop=0"):
        crop_images(images, 0)


def test_from_arrays_crops_training_and_test_images():
    train = torch.randint(0, 256, (30, 32, 32, 3), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    data = from_arrays(train, torch.arange(30) % 10, train[:7], list(range(7)), 10, 3, "iid", 0, "cifar10",
                       (0.0,), (1.0,), crop=24)
    assert data.inputs.shape == (30, 3, 24, 24) and data.info["crop"] == 24
    assert torch.allclose(data.test_inputs, train[:7].permute(0, 3, 1, 2)[:, :, 4:28, 4:28].float() / 255)
    with pytest.raises(ValueError, match="crop=40 is larger"):
        from_arrays(train, torch.arange(30) % 10, train[:7], list(range(7)), 10, 3, "iid", 0, "cifar10",
                    (0.0,), (1.0,), crop=40)


def test_from_arrays_mnist_shaped_and_fake_torchvision_mnist(tmp_path):
    images = torch.randint(0, 256, (50, 28, 28), dtype=torch.uint8)
    data = from_arrays(images, torch.arange(50) % 10, images[:5], torch.arange(5), 10, 5,
                       "dirichlet", 1, "mnist", (0.1307,), (0.3081,), alpha=1.0)
    assert data.inputs.shape == (50, 1, 28, 28) and data.num_clients == 5
    expected = (images.float() / 255 - 0.1307) / 0.3081
    assert torch.allclose(data.inputs.sort(0).values[:, 0], expected.sort(0).values, atol=1e-5)
    pytest.importorskip("torchvision")
    # MNIST's raw files have the same names as Fashion-MNIST's; torchvision checks no MD5 here
    write_fake_fashion_mnist(tmp_path / "MNIST" / "raw", compress=False)
    data = load_torchvision("mnist", num_clients=4, partition="iid", root=tmp_path)
    assert data.inputs.shape == (40, 1, 28, 28) and data.num_classes == 10
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="download=True"):
        load_torchvision("cifar10", num_clients=4, partition="iid", root=tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match=r"root='.*typo' is not an existing folder"):
        load_torchvision("cifar10", num_clients=4, partition="iid", root=tmp_path / "typo")


# ---------------------------------------------------------------- LEAF Synthetic


def test_leaf_synthetic_shapes_reproducibility_and_labels():
    data = leaf_synthetic(0.5, 0.5, num_clients=12, dim=20, num_classes=5, seed=3)
    assert data.inputs.dtype == torch.float32 and data.inputs.shape[1] == 20
    assert data.targets.dtype == torch.long and data.num_clients == 12
    assert data.test_inputs.shape[0] == int(data.info["test_sizes"].sum()) > 0
    assert data.test_inputs.shape[0] < data.inputs.shape[0] / 3  # test_fraction=0.2
    assert torch.bincount(data.targets, minlength=5).gt(0).sum() >= 3
    again = leaf_synthetic(0.5, 0.5, num_clients=12, dim=20, num_classes=5, seed=3)
    other = leaf_synthetic(0.5, 0.5, num_clients=12, dim=20, num_classes=5, seed=4)
    assert torch.equal(data.inputs, again.inputs) and torch.equal(data.targets, again.targets)
    assert not torch.equal(data.sizes, other.sizes)
    assert load("leaf_synthetic", alpha=0.5, beta=0.5, num_clients=12, dim=20, num_classes=5,
                seed=3).inputs.shape == data.inputs.shape


def test_leaf_synthetic_heterogeneous_labels_unlike_iid():
    def mean_tv(data: FederatedData) -> float:
        counts = data.label_counts().double()
        overall = counts.sum(0) / counts.sum()
        return float((0.5 * (counts / counts.sum(1, keepdim=True) - overall).abs().sum(1)).mean())

    # measured over seeds 0-4: Synthetic(1,1) 0.78-0.83, Synthetic-IID 0.096-0.112
    assert mean_tv(leaf_synthetic(1, 1, seed=0)) > 0.5
    assert mean_tv(leaf_synthetic(1, 1, seed=0, iid=True)) < 0.25


def test_label_skew_by_hand():
    """Two clients: labels (0, 0, 1, 1) and (0, 0, 0, 0). Global shares (3/4, 1/4); client shares (1/2, 1/2)
    and (1, 0): total-variation distances 1/4 and 1/4, mean 0.25. An iid split of equal shares gives 0."""
    labels = torch.tensor([0, 0, 1, 1, 0, 0, 0, 0])
    skewed = FederatedData(torch.zeros(8, 1), labels, torch.tensor([4, 4]), torch.zeros(1, 1),
                           torch.zeros(1, dtype=torch.long), num_classes=2)
    assert skewed.label_skew() == pytest.approx(0.25)
    even = FederatedData(torch.zeros(4, 1), torch.tensor([0, 1, 0, 1]), torch.tensor([2, 2]), torch.zeros(1, 1),
                         torch.zeros(1, dtype=torch.long), num_classes=2)
    assert even.label_skew() == 0.0


def test_from_partition_leaves_out_unassigned_rows_and_says_how_many() -> None:
    inputs, targets = torch.arange(12.0).view(6, 2), torch.arange(6.0)
    with pytest.warns(UserWarning, match="2 of 6 rows are held by no client"):
        data = FederatedData.from_partition(inputs, targets, [torch.tensor([4, 0]), [5, 2]], inputs, targets)
    assert data.sizes.tolist() == [2, 2] and data.targets.tolist() == [4.0, 0.0, 5.0, 2.0]
    assert torch.equal(data.client(1)[0], inputs[[5, 2]])


def test_load_fashion_mnist_with_all_defaults_works(monkeypatch, tmp_path) -> None:
    """``load_fashion_mnist()``: 20 clients, Dirichlet(0.5) label skew (the loaders' default alpha)."""
    write_fake_fashion_mnist(tmp_path, n_train=600)
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path))
    fakes = {stem: hashlib.sha256(gzip.decompress((tmp_path / f"{stem}.gz").read_bytes())).hexdigest()
             for stem in sources.FASHION_MNIST_SHA256}
    monkeypatch.setattr(sources, "FASHION_MNIST_SHA256", fakes)  # the fakes verified as the real files would be
    data = load_fashion_mnist()
    assert data.num_clients == 20 and data.info["partition"] == "dirichlet"
    assert data.info["partition_kwargs"] == {"alpha": 0.5}
    assert load_fashion_mnist(alpha=5.0).info["partition_kwargs"] == {"alpha": 5.0}

