"""Data set loaders that return :class:`~fedcore.data.FederatedData`.

- :func:`load_fashion_mnist` reads the four IDX files itself (gzip + numpy), from
  ``root`` or ``$FEDCORE_DATA`` when one is named (then nowhere else), otherwise the Debian
  package ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist/``) or
  ``<repo>/data/raw``; or a torchvision download.
- :func:`load_torchvision` wraps torchvision's MNIST, Fashion-MNIST, CIFAR-10/100 and
  EMNIST for users who have the files or internet.
- :func:`from_arrays` is the pure conversion both use: images to normalized NCHW
  float32, labels to long, training rows split among clients by a partitioner.
- :func:`load` dispatches by data set name over :data:`LOADERS`.

See ``data/README.md`` for where the files come from and the normalization constants.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from fedcore.checks import check_bool, check_choice, check_device, check_int, check_path, check_seed
from fedcore.data.federated import FederatedData
from fedcore.data.leaf_synthetic import leaf_synthetic
from fedcore.data.partition import check_partition_kwargs
from fedcore.data.partition import partition as split_rows
from fedcore.data.paths import DATA_DIR, named_folder
from fedcore.data.shakespeare import load_shakespeare

DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
IDX_MAGIC = {"images": 2051, "labels": 2049}
FASHION_MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
FASHION_MNIST_SHA256 = {  # of the decompressed files; the publisher's .gz have MD5 8d4fb7e6.., 25c81989.., ...
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
"""SHA-256 of the four IDX files as published (Xiao et al. 2017; Zalando's archives, whose gzip MD5s are the
ones torchvision checks: 8d4fb7e6c68d591d4c3dfef9ec88bf0d, 25c81989df183df01b3e8a0aad5dffbe,
bef4ecab320f06d8554ea6380940ec79, bb300cfdad3c16e7a12a480ee83cd310), decompressed.  Debian's package
recompresses them (other gzip bytes), with the same content."""
FASHION_MNIST_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)

# Per-channel (mean, std) of the training images scaled to [0, 1].  CIFAR's std is the
# per-pixel one (not the often copied 0.2023, 0.1994, 0.2010); EMNIST's is the byclass
# value commonly used for every split.
NORMALIZATION: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "mnist": ((0.1307,), (0.3081,)),
    "fashion_mnist": ((0.2860,), (0.3530,)),
    "emnist": ((0.1736,), (0.3317,)),
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
}
EMNIST_SPLITS = ("balanced", "byclass", "bymerge", "digits", "letters", "mnist")
TORCHVISION_CLASSES = {
    "mnist": "MNIST", "fashion_mnist": "FashionMNIST", "emnist": "EMNIST",
    "cifar10": "CIFAR10", "cifar100": "CIFAR100",
}


LOADER_PARTITION_DEFAULTS: dict[str, dict[str, float]] = {"dirichlet": {"alpha": 0.5}}
"""What the loaders use when a partition's own argument is not given: ``load_fashion_mnist()``
splits by ``dirichlet`` with ``alpha=0.5`` (Hsu et al. 2019's moderate label skew); the value used
is in ``data.info['partition_kwargs']``."""


# ---------------------------------------------------------------- IDX files


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic ``1f 8b``."""
    raw = path.read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as err:
        raise ValueError(f"{path}: not a readable gzip file ({err})") from err


def read_idx(path: str | Path, kind: str | None = None, sha256: str | None = None, remedy: str = "") -> np.ndarray:
    """Read an IDX file (LeCun's MNIST format, ``.gz`` or plain) as a ``uint8`` array.

    Images (magic 2051, 16-byte header) give ``[n, rows, cols]``; labels (magic 2049,
    8-byte header) give ``[n]``.  ``kind`` (``"images"`` or ``"labels"``) demands one.
    A wrong magic number, a size that disagrees with the header, or content whose SHA-256 is not
    ``sha256`` (when given) raises ``ValueError`` naming the file (and ``remedy``).
    """
    path = check_path("path", path)
    data = _read_bytes(path)
    if sha256 is not None and (found := hashlib.sha256(data).hexdigest()) != sha256:
        raise ValueError(f"{path}: its content (SHA-256 {found[:16]}...) is not the published file's "
                         f"({sha256[:16]}...): it was altered or damaged, or holds other data; {remedy}")
    magic = int.from_bytes(data[:4], "big") if len(data) >= 8 else None
    if magic not in IDX_MAGIC.values():
        raise ValueError(f"{path}: magic number {magic} is neither 2051 (IDX images) "
                         f"nor 2049 (IDX labels), or the file is shorter than 8 bytes")
    if kind is not None and magic != IDX_MAGIC[check_choice("kind", kind, IDX_MAGIC)]:
        raise ValueError(f"{path}: magic number {magic}, expected {IDX_MAGIC[kind]} ({kind})")
    header = 16 if magic == IDX_MAGIC["images"] else 8
    shape = tuple(int(v) for v in np.frombuffer(data[4:header], ">u4"))
    expected = header + int(np.prod(shape))
    if len(data) != expected:
        raise ValueError(f"{path}: {len(data)} bytes, but its header {shape} needs {expected} "
                         "(truncated or corrupt file)")
    return np.frombuffer(data, np.uint8, offset=header).reshape(shape).copy()


def _idx_path(folder: Path, stem: str) -> Path | None:
    """``folder/stem`` or ``folder/stem.gz``, whichever exists."""
    for path in (folder / stem, folder / f"{stem}.gz"):
        if path.is_file():
            return path
    return None


REINSTALL_FASHION_MNIST = ("reinstall it (`sudo apt-get install --reinstall dataset-fashion-mnist`, or delete the file "
                           "and pass download=True), or pass verify=False to read the files as they are")


def _read_idx_pair(folder: Path, images_stem: str, labels_stem: str, verify: bool) -> tuple[Tensor, Tensor]:
    """Images ``[n, 28, 28]`` uint8 and labels ``[n]`` long, checked against each other (and, with ``verify``,
    against :data:`FASHION_MNIST_SHA256`)."""
    images_path = _idx_path(folder, images_stem)
    labels_path = _idx_path(folder, labels_stem)
    digests = FASHION_MNIST_SHA256 if verify else {}
    images = read_idx(images_path, "images", digests.get(images_stem), REINSTALL_FASHION_MNIST)
    labels = read_idx(labels_path, "labels", digests.get(labels_stem), REINSTALL_FASHION_MNIST)
    if images.shape[1:] != (28, 28):
        raise ValueError(f"{images_path}: images are {images.shape[1:]}, expected (28, 28)")
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{images_path} holds {images.shape[0]} images but {labels_path} "
                         f"holds {labels.shape[0]} labels")
    return torch.from_numpy(images), torch.from_numpy(labels).long()


# ---------------------------------------------------------------- Fashion-MNIST files


def _fashion_mnist_folders(root: str | Path | None) -> tuple[list[Path], str | None]:
    """Where to look, and how the folder was named: only ``root`` (or ``$FEDCORE_DATA``) when one is
    named; otherwise Debian's package, then ``<repo>/data/raw``.  Each with its torchvision layout."""
    named = named_folder(root)
    bases = [named[0]] if named else [DEBIAN_FASHION_MNIST, DATA_DIR / "raw"]
    return [folder for base in bases for folder in (base, base / "FashionMNIST" / "raw")], named and named[1]


def _has_fashion_mnist(folder: Path) -> bool:
    stems = [stem for pair in FASHION_MNIST_FILES.values() for stem in pair]
    return all(_idx_path(folder, stem) is not None for stem in stems)


def find_fashion_mnist(root: str | Path | None = None, download: bool = False) -> Path:
    """The first folder holding the four Fashion-MNIST IDX files (see module docstring).

    A folder named by ``root=`` or ``$FEDCORE_DATA`` is the only place looked in (and where
    ``download=True`` puts the files): it must exist, and lacking the files is an error naming it.
    """
    check_bool("download", download)
    folders, named = _fashion_mnist_folders(root)
    for folder in folders:
        if _has_fashion_mnist(folder):
            return folder
    if download:
        from torchvision.datasets import FashionMNIST

        target = folders[0] if named else DATA_DIR / "raw"
        for train in (True, False):
            FashionMNIST(root=str(target), train=train, download=True)
        return target / "FashionMNIST" / "raw"
    looked = "\n  ".join(str(folder) for folder in folders)
    where = f"{named} holds no" if named else "No"
    raise FileNotFoundError(
        f"{where} Fashion-MNIST IDX files (train-images-idx3-ubyte[.gz] and the three others); looked in:\n  "
        f"{looked}\nGet them with `sudo apt-get install dataset-fashion-mnist`, or pass download=True (needs "
        "internet), or root=<folder holding the four files>, or set FEDCORE_DATA to such a folder."
    )


@functools.lru_cache(maxsize=4)
def _decoded_fashion_mnist(folder: str, verify: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(train_x, train_y, test_x, test_y)`` decoded (and verified) once per process and folder."""
    train = _read_idx_pair(Path(folder), *FASHION_MNIST_FILES["train"], verify)
    test = _read_idx_pair(Path(folder), *FASHION_MNIST_FILES["test"], verify)
    return (*train, *test)


# ---------------------------------------------------------------- conversion


def _to_nchw(images: Tensor) -> Tensor:
    """``[n, H, W]`` -> ``[n, 1, H, W]``; ``[n, H, W, C]`` with C in {1, 3} -> NCHW."""
    if images.dim() == 3:
        return images.unsqueeze(1)
    if images.dim() == 4 and images.shape[-1] in (1, 3) and images.shape[1] not in (1, 3):
        return images.permute(0, 3, 1, 2)
    if images.dim() == 4:
        return images
    raise ValueError(f"images must be [n, H, W], [n, H, W, C] or [n, C, H, W], "
                     f"got shape {tuple(images.shape)}")


def normalize_images(images, mean: Sequence[float], std: Sequence[float]) -> Tensor:
    """NCHW float32: integer pixels scaled by 1/255 (floats taken as already in [0, 1]),
    then ``(x - mean[c]) / std[c]`` per channel."""
    x = _to_nchw(torch.as_tensor(images))
    pixel = 1 / 255 if not x.dtype.is_floating_point else 1.0
    channels = x.shape[1]
    mean_t, std_t = torch.tensor(mean, dtype=torch.float64), torch.tensor(std, dtype=torch.float64)
    if mean_t.numel() not in (1, channels) or std_t.numel() not in (1, channels):
        raise ValueError(f"mean={mean} and std={std} need 1 or {channels} entries "
                         f"for {channels}-channel images")
    scale = (pixel / std_t).float().expand(channels).view(1, -1, 1, 1)
    shift = (-mean_t / std_t).float().expand(channels).view(1, -1, 1, 1)
    out = torch.empty(x.shape, dtype=torch.float32)
    return torch.addcmul(shift, x.to(torch.float32), scale, out=out)


def crop_images(images: Tensor, size: int, seed: int | None = None) -> Tensor:
    """``size x size`` crops of NCHW ``images``: the central crop when ``seed`` is None (a test set),
    otherwise one random crop per image, each mirrored left-right with probability 1/2, drawn once from
    ``seed`` (a training set).

    TFF's CIFAR pipeline, which Reddi et al. (ICLR 2021) train on, takes 24x24 crops: random crops and flips
    of the training images, drawn anew every epoch, and central crops of the test images.  fedcore's batches
    are gathered from resident tensors without a per-batch transform, so each training image keeps the one
    crop drawn here: the same distribution of inputs, less variety over a long run.
    """
    size = check_int("crop", size)
    height, width = images.shape[-2:]
    if size > min(height, width):
        raise ValueError(f"crop={size} is larger than the images ({height}x{width}): give at most {min(height, width)}")
    if seed is None:
        top, left = (height - size) // 2, (width - size) // 2
        return images[..., top:top + size, left:left + size].contiguous()
    generator = torch.Generator().manual_seed(check_seed("seed", seed))
    n = images.shape[0]
    tops = torch.randint(0, height - size + 1, (n,), generator=generator)
    lefts = torch.randint(0, width - size + 1, (n,), generator=generator)
    flips = torch.rand(n, generator=generator) < 0.5
    rows = (tops.view(n, 1) + torch.arange(size)).view(n, 1, size, 1).expand(n, images.shape[1], size, width)
    columns = lefts.view(n, 1) + torch.arange(size)
    columns = torch.where(flips.view(n, 1), columns.flip(1), columns).view(n, 1, 1, size)
    taller = images.gather(2, rows)
    return taller.gather(3, columns.expand(n, images.shape[1], size, size))


def from_arrays(
    train_x, train_y, test_x, test_y, num_classes: int, num_clients: int, partition: str,
    seed: int, name: str, mean: Sequence[float], std: Sequence[float], *,
    device: str | torch.device = "cpu", class_names: Sequence[str] | None = None, crop: int | None = None,
    **partition_kwargs,
) -> FederatedData:
    """Images and labels (numpy or tensors) -> a partitioned :class:`FederatedData`.

    Images as in torchvision's ``.data`` (``uint8 [n, H, W]`` or ``[n, H, W, C]``)
    become normalized NCHW float32 (:func:`normalize_images`); labels become long.  The
    training rows are split by ``partition(train_y, partition, num_clients, seed,
    **partition_kwargs)`` (``alpha=0.5`` for ``"dirichlet"`` unless given:
    :data:`LOADER_PARTITION_DEFAULTS`); the test set stays whole.  ``crop`` (an int) cuts every
    image to ``crop x crop`` (:func:`crop_images`: random crops and flips of the training images from
    ``seed``, central crops of the test images).
    """
    train_y = torch.as_tensor(np.asarray(train_y)).long()
    partition_kwargs = {**LOADER_PARTITION_DEFAULTS.get(partition, {}), **partition_kwargs}
    clients = split_rows(train_y, partition, num_clients, seed, **partition_kwargs)
    info = {
        "class_names": list(class_names) if class_names is not None else None,
        "partition": partition, "partition_kwargs": dict(partition_kwargs), "seed": seed,
        "mean": tuple(mean), "std": tuple(std), "crop": crop,
    }
    train_images, test_images = normalize_images(train_x, mean, std), normalize_images(test_x, mean, std)
    if crop is not None:
        train_images, test_images = crop_images(train_images, crop, seed), crop_images(test_images, crop)
    data = FederatedData.from_partition(
        train_images, train_y, clients, test_images, torch.as_tensor(np.asarray(test_y)).long(),
        num_classes, name, info,
    )
    return data.to(device)


# ---------------------------------------------------------------- loaders


def load_fashion_mnist(
    num_clients: int = 20, partition: str = "dirichlet", seed: int = 0,
    root: str | Path | None = None, download: bool = False,
    device: str | torch.device = "cpu", verify: bool = True, **partition_kwargs,
) -> FederatedData:
    """Fashion-MNIST (Xiao et al. 2017): 60000 train / 10000 test 28x28 images, 10 classes.

    With ``verify`` (the default) the four files must be the published ones (:data:`FASHION_MNIST_SHA256`;
    about 0.1 s, once per process): altered pixels or labels are an error naming the file and how to reinstall
    it.  ``verify=False`` reads other IDX files of the same layout as they are (a subset, a test's fakes).

    Inputs ``[n, 1, 28, 28]`` float32, scaled to [0, 1] and normalized by mean 0.2860,
    std 0.3530.  ``partition_kwargs`` go to the partitioner (``alpha`` for ``"dirichlet"``,
    0.5 by default; ``classes_per_client``; ``s``): ``load_fashion_mnist()`` gives 20 clients
    with Dirichlet(0.5) label skew.  Files are found by
    :func:`find_fashion_mnist`; decoded arrays are cached in memory per process.
    """
    check_device("device", device)
    check_bool("verify", verify)
    check_partition_kwargs(partition, {**LOADER_PARTITION_DEFAULTS.get(partition, {}), **partition_kwargs},
                           load_fashion_mnist)
    folder = find_fashion_mnist(root, download)
    train_x, train_y, test_x, test_y = _decoded_fashion_mnist(str(folder.resolve()), verify)
    mean, std = NORMALIZATION["fashion_mnist"]
    data = from_arrays(
        train_x, train_y, test_x, test_y, 10, num_clients, partition, seed, "fashion_mnist",
        mean, std, device=device, class_names=FASHION_MNIST_CLASSES, **partition_kwargs,
    )
    data.info["source"] = str(folder)
    return data


def _torchvision_split(name: str, root: Path, train: bool, download: bool, emnist_split: str):
    """``(images, labels, class_names)`` of one split of a torchvision data set."""
    import torchvision.datasets

    dataset_cls = getattr(torchvision.datasets, TORCHVISION_CLASSES[name])
    extra = {"split": emnist_split} if name == "emnist" else {}
    try:
        dataset = dataset_cls(root=str(root), train=train, download=download, **extra)
    except RuntimeError as err:
        raise FileNotFoundError(
            f"{name} not found under {root} ({err}); pass download=True (needs internet) "
            "or root=<folder in torchvision's layout>"
        ) from err
    images = torch.as_tensor(dataset.data)
    if name == "emnist":  # EMNIST's images are stored transposed
        images = images.transpose(1, 2)
    return images, dataset.targets, list(dataset.classes)


def load_torchvision(
    name: str, num_clients: int = 20, partition: str = "dirichlet", seed: int = 0,
    root: str | Path | None = None, download: bool = False,
    device: str | torch.device = "cpu", emnist_split: str = "byclass", crop: int | None = None,
    **partition_kwargs,
) -> FederatedData:
    """MNIST, Fashion-MNIST, EMNIST (``emnist_split``, default byclass: 62 classes),
    CIFAR-10 or CIFAR-100 through torchvision, normalized by :data:`NORMALIZATION`; ``crop=24`` gives
    Reddi et al.'s 24x24 CIFAR crops (:func:`crop_images`).

    ``root`` defaults to ``$FEDCORE_DATA`` or ``<repo>/data/raw``; a named folder must exist.  torchvision is
    imported only here.  EMNIST's images are transposed upright.
    """
    check_choice("name", name, TORCHVISION_CLASSES)
    check_device("device", device)
    check_bool("download", download)
    check_choice("emnist_split", emnist_split, EMNIST_SPLITS)
    if crop is not None:
        check_int("crop", crop)
    check_partition_kwargs(partition, {**LOADER_PARTITION_DEFAULTS.get(partition, {}), **partition_kwargs},
                           load_torchvision)
    named = named_folder(root)
    root = named[0] if named else DATA_DIR / "raw"
    train_x, train_y, class_names = _torchvision_split(name, root, True, download, emnist_split)
    test_x, test_y, _ = _torchvision_split(name, root, False, download, emnist_split)
    mean, std = NORMALIZATION[name]
    return from_arrays(
        train_x, train_y, test_x, test_y, len(class_names), num_clients, partition, seed, name,
        mean, std, device=device, class_names=class_names, crop=crop, **partition_kwargs,
    )


def cifar100_coarse(root: str | Path | None = None) -> list[int]:
    """The coarse label (one of 20 superclasses) of each of CIFAR-100's 100 fine classes, read from the
    training file of torchvision's layout (``<root>/cifar-100-python/train``, ``coarse_labels`` beside
    ``fine_labels``); the :func:`~fedcore.data.partition.pachinko` split needs it."""
    import pickle

    named = named_folder(root)
    path = (named[0] if named else DATA_DIR / "raw") / "cifar-100-python" / "train"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: load CIFAR-100 once with load_torchvision('cifar100', "
                                "download=True) (needs internet), or pass root=<folder in torchvision's layout>")
    with open(path, "rb") as handle:
        batch = pickle.load(handle, encoding="latin1")  # noqa: S301 -- the CIFAR file format is a pickle
    pairs = dict(zip(batch["fine_labels"], batch["coarse_labels"]))
    return [int(pairs[fine]) for fine in range(100)]


LOADERS: dict[str, Callable[..., FederatedData]] = {
    "fashion_mnist": load_fashion_mnist,
    **{
        name: functools.partial(load_torchvision, name)
        for name in ("mnist", "emnist", "cifar10", "cifar100")
    },
    "leaf_synthetic": leaf_synthetic,
    "shakespeare": load_shakespeare,
}


def load(name: str, **kwargs) -> FederatedData:
    """Load the data set ``name`` (a key of :data:`LOADERS`) with the loader's ``kwargs``."""
    check_choice("name", name, LOADERS)
    return LOADERS[name](**kwargs)
