"""Label partitioners: split a data set's rows among clients, reproducibly from a seed.

Every partitioner takes the training labels (a 1-D integer tensor) and returns one
``LongTensor`` of row indices per client, sorted ascending.  Together they are a
partition of all rows: disjoint, covering, and no client is empty.  The same ``seed``
gives the same split (a ``numpy.random.default_rng(seed)`` drives every draw).

Schemes (and the papers that use them):

- :func:`iid`: shuffled, near-equal sizes.
- :func:`dirichlet`: label skew drawn from Dir(alpha) per class (Hsu, Qi & Brown 2019,
  "Measuring the effects of non-identical data distribution"; Reddi et al. 2021 call it
  Latent Dirichlet Allocation over labels; FedLi and PAdaMFed use alpha = 0.5 or 1).
- :func:`lda`: equal-sized clients whose label mixtures are drawn from Dir(alpha p) (TFF's CIFAR
  split, Reddi et al. 2021 with alpha = 0.1).
- :func:`pachinko`: equal-sized clients by two-level Pachinko allocation over coarse and fine labels
  (TFF's CIFAR-100 split, Reddi et al. 2021 with alpha = 0.1, beta = 10).
- :func:`shards`: McMahan et al. 2017's pathological non-IID split, each client holding
  ``classes_per_client`` classes (FAFED's high heterogeneity: 5 of 10 classes).
- :func:`similarity`: SCAFFOLD's (Karimireddy et al. 2020) ``s`` similarity: a fraction
  ``s`` dealt iid, the rest sorted by label (FAFED's low heterogeneity: s = 0.95).

:func:`partition` dispatches by name over :data:`PARTITIONERS`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from fedcore.checks import check_choice, check_int, check_positive, check_range, check_seed

MAX_DIRICHLET_DRAWS = 1000


def _labels_array(labels: Tensor) -> np.ndarray:
    """``labels`` as a 1-D int64 numpy array of non-negative class ids (checked)."""
    if not isinstance(labels, Tensor):
        raise TypeError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
    if labels.dim() != 1 or labels.dtype.is_floating_point or labels.dtype.is_complex:
        raise ValueError(
            f"labels must be a 1-D integer tensor, got shape {tuple(labels.shape)} "
            f"and dtype {labels.dtype}"
        )
    if labels.dtype == torch.bool or labels.numel() == 0:
        raise ValueError(f"labels must be a non-empty integer tensor, got {labels.dtype} "
                         f"with {labels.numel()} rows")
    array = labels.detach().cpu().numpy().astype(np.int64)
    if array.min() < 0:
        raise ValueError(f"labels must be >= 0, found {int(array.min())}")
    return array


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(check_seed("seed", seed))


def _check_clients(num_clients: int, num_rows: int) -> int:
    return check_int("num_clients", num_clients, 1, num_rows)


def _group(owner: np.ndarray, num_clients: int) -> list[Tensor]:
    """Row indices of each client, given ``owner[row]`` = the client that row goes to."""
    order = np.argsort(owner, kind="stable")
    sizes = np.bincount(owner, minlength=num_clients)
    assert sizes.min() > 0, f"internal error: empty clients {np.flatnonzero(sizes == 0)[:10]}"
    return [torch.from_numpy(rows) for rows in np.split(order, np.cumsum(sizes)[:-1])]


def _deal(num_rows: int, num_clients: int) -> np.ndarray:
    """Owner of each of ``num_rows`` positions cut into ``num_clients`` contiguous
    chunks whose sizes differ by at most one."""
    return np.arange(num_rows) * num_clients // num_rows


def iid(labels: Tensor, num_clients: int, seed: int = 0) -> list[Tensor]:
    """Shuffle the rows and deal them out: client sizes differ by at most one."""
    y = _labels_array(labels)
    _check_clients(num_clients, y.size)
    owner = np.empty(y.size, dtype=np.int64)
    owner[_rng(seed).permutation(y.size)] = _deal(y.size, num_clients)
    return _group(owner, num_clients)


def _dirichlet_owner(y: np.ndarray, num_clients: int, alpha: float, rng) -> np.ndarray:
    """One draw: each class's shuffled rows cut by proportions ~ Dir(alpha * 1)."""
    owner = np.empty(y.size, dtype=np.int64)
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        cuts = (np.cumsum(rng.dirichlet(np.full(num_clients, alpha)))[:-1] * rows.size)
        positions = np.arange(rows.size)
        owner[rows] = np.searchsorted(cuts.astype(np.int64), positions, side="right")
    return owner


def dirichlet(
    labels: Tensor, num_clients: int, alpha: float, seed: int = 0, min_size: int = 1
) -> list[Tensor]:
    """Label skew by a Dirichlet prior (Hsu et al. 2019; "LDA over labels", Reddi et al. 2021).

    For each class ``c``, proportions ``p ~ Dir(alpha, ..., alpha)`` over the clients are
    drawn and the class's shuffled rows are cut at ``cumsum(p) * n_c``.  Small ``alpha``
    (0.1) gives each client few classes; large ``alpha`` (100) approaches iid label
    proportions (client sizes still vary).  The whole draw is repeated until every
    client holds at least ``min_size`` rows; after ``MAX_DIRICHLET_DRAWS`` failed draws
    a ``ValueError`` suggests a larger ``alpha`` or fewer clients.
    """
    y = _labels_array(labels)
    _check_clients(num_clients, y.size)
    check_positive("alpha", alpha)
    check_int("min_size", min_size, 1, y.size // num_clients)
    rng = _rng(seed)
    for _ in range(MAX_DIRICHLET_DRAWS):
        owner = _dirichlet_owner(y, num_clients, float(alpha), rng)
        if np.bincount(owner, minlength=num_clients).min() >= min_size:
            return _group(owner, num_clients)
    raise ValueError(
        f"dirichlet(alpha={alpha}, num_clients={num_clients}, min_size={min_size}) left some "
        f"client with fewer than {min_size} of the {y.size} rows in {MAX_DIRICHLET_DRAWS} "
        "draws; use a larger alpha, fewer clients or a smaller min_size"
    )


def _balanced_class_sets(
    num_clients: int, num_classes: int, classes_per_client: int, rng
) -> np.ndarray:
    """``[num_clients, classes_per_client]`` distinct classes per client, every class
    chosen by ``num_clients * classes_per_client / num_classes`` clients (+-1).

    Each client in turn takes the least-used classes so far, ties broken at random.
    """
    uses = np.zeros(num_classes)
    chosen = np.empty((num_clients, classes_per_client), dtype=np.int64)
    for k in range(num_clients):
        chosen[k] = np.argsort(uses + 0.5 * rng.random(num_classes))[:classes_per_client]
        uses[chosen[k]] += 1
    return chosen


def shards(
    labels: Tensor, num_clients: int, classes_per_client: int, seed: int = 0
) -> list[Tensor]:
    """Pathological non-IID split (McMahan et al. 2017): each client holds few classes.

    McMahan cuts the label-sorted rows into ``num_clients * classes_per_client`` shards
    and deals them at random, so a client may get two shards of one class.  This version
    guarantees each client **exactly** ``classes_per_client`` distinct labels: clients
    pick classes so that every class is held by about the same number of clients
    (``num_clients * classes_per_client / num_classes``, +-1), and each class's shuffled
    rows are split evenly among its holders.  Client sizes are then near-equal when the
    classes are balanced.  Needs ``num_clients * classes_per_client >= num_classes``
    (else some class would have no client) and at least as many rows of each class as
    it has holders.  ``num_classes`` counts the distinct labels present.
    """
    y = _labels_array(labels)
    _check_clients(num_clients, y.size)
    classes, class_of_row = np.unique(y, return_inverse=True)
    check_int("classes_per_client", classes_per_client, 1, classes.size)
    if num_clients * classes_per_client < classes.size:
        raise ValueError(
            f"num_clients={num_clients} * classes_per_client={classes_per_client} < "
            f"{classes.size} classes: some class would belong to no client"
        )
    rng = _rng(seed)
    chosen = _balanced_class_sets(num_clients, classes.size, classes_per_client, rng)
    owner = np.empty(y.size, dtype=np.int64)
    for c in range(classes.size):
        holders = rng.permutation(np.flatnonzero((chosen == c).any(axis=1)))
        rows = rng.permutation(np.flatnonzero(class_of_row == c))
        if rows.size < holders.size:
            raise ValueError(
                f"class {classes[c]} has {rows.size} rows for {holders.size} clients; "
                "use fewer clients or fewer classes_per_client"
            )
        owner[rows] = holders[_deal(rows.size, holders.size)]
    return _group(owner, num_clients)


def similarity(labels: Tensor, num_clients: int, s: float, seed: int = 0) -> list[Tensor]:
    """SCAFFOLD's similarity split (Karimireddy et al. 2020, Sec. 7): ``s`` in [0, 1].

    A random fraction ``s`` of the rows is shuffled and dealt iid; the remaining
    ``1 - s`` is sorted by label and dealt in contiguous near-equal chunks, client ``k``
    taking the ``k``-th chunk.  ``s = 1`` is :func:`iid`; ``s = 0`` gives each client a
    contiguous run of the sorted labels (one or two classes when clients >= classes);
    ``s = 0.95`` is "95% similarity" (FAFED's low heterogeneity).
    """
    y = _labels_array(labels)
    _check_clients(num_clients, y.size)
    check_range("s", s, 0, 1, high_closed=True)
    perm = _rng(seed).permutation(y.size)
    num_iid = round(float(s) * y.size)
    shuffled, rest = perm[:num_iid], perm[num_iid:]
    rest = rest[np.argsort(y[rest], kind="stable")]
    owner = np.empty(y.size, dtype=np.int64)
    if shuffled.size:
        owner[shuffled] = _deal(shuffled.size, num_clients)
    if rest.size:
        owner[rest] = _deal(rest.size, num_clients)
    return _group(owner, num_clients)


def lda(labels: Tensor, num_clients: int, alpha: float, seed: int = 0) -> list[Tensor]:
    """Equal-sized clients with label mixtures drawn from a Dirichlet: the LDA split of TFF's CIFAR tasks,
    which Reddi et al. (2021) use with ``alpha = 0.1`` (500 clients of 100 images).

    Each client in turn draws its class proportions ``q ~ Dir(alpha p)`` (``p`` the global class
    shares) and takes its ``n / N`` rows one at a time: a class drawn from ``q`` restricted to the
    classes with rows left, a row of that class at random.  Sizes differ by at most one; small ``alpha``
    gives each client few classes, large ``alpha`` the global mix."""
    y = _labels_array(labels)
    _check_clients(num_clients, y.size)
    check_positive("alpha", alpha)
    rng = _rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    pools = [list(rng.permutation(np.flatnonzero(y == c))) for c in classes]
    left = counts.astype(np.int64)
    prior = counts / counts.sum()
    owner = np.empty(y.size, dtype=np.int64)
    sizes = np.bincount(_deal(y.size, num_clients), minlength=num_clients)
    for client, size in enumerate(sizes):
        mixture = rng.dirichlet(alpha * prior)
        for _ in range(size):
            c = rng.choice(classes.size, p=_renormalized(mixture, left > 0))
            owner[pools[c].pop()] = client
            left[c] -= 1
    return _group(owner, num_clients)


def pachinko(labels: Tensor, num_clients: int, coarse: Sequence[int], alpha: float = 0.1, beta: float = 10.0,
             seed: int = 0) -> list[Tensor]:
    """Equal-sized clients drawn by two-level Pachinko allocation (Li & McCallum 2006), TFF's CIFAR-100 split
    in Reddi et al. (2021): ``alpha = 0.1`` over coarse labels, ``beta = 10`` over the fine labels of each.

    ``coarse[c]`` is the coarse label of fine class ``c`` (CIFAR-100: its 20 superclasses).  Each client
    draws coarse proportions ``~ Dir(alpha)`` and, per coarse label, fine proportions ``~ Dir(beta)``, then
    takes its ``n / N`` rows one at a time: a coarse label, then one of its fine labels, among those with rows
    left (proportions renormalized as labels run out), and a row of that fine label at random."""
    y = _labels_array(labels)
    _check_clients(num_clients, y.size)
    check_positive("alpha", alpha)
    check_positive("beta", beta)
    coarse_of = np.asarray(coarse, dtype=np.int64)
    if coarse_of.ndim != 1 or coarse_of.size <= int(y.max()) or coarse_of.min() < 0:
        raise ValueError(f"coarse must give a coarse label >= 0 to each of the {int(y.max()) + 1} fine classes, "
                         f"got {coarse_of.size} entries")
    rng = _rng(seed)
    groups = [np.flatnonzero(coarse_of == g) for g in np.unique(coarse_of)]
    pools = [list(rng.permutation(np.flatnonzero(y == c))) for c in range(coarse_of.size)]
    left = np.array([len(pool) for pool in pools], dtype=np.int64)
    owner = np.empty(y.size, dtype=np.int64)
    for client, size in enumerate(np.bincount(_deal(y.size, num_clients), minlength=num_clients)):
        coarse_mix = rng.dirichlet(np.full(len(groups), alpha))
        fine_mix = [rng.dirichlet(np.full(group.size, beta)) for group in groups]
        for _ in range(size):
            available = np.array([left[group].sum() > 0 for group in groups])
            g = rng.choice(len(groups), p=_renormalized(coarse_mix, available))
            f = groups[g][rng.choice(groups[g].size, p=_renormalized(fine_mix[g], left[groups[g]] > 0))]
            owner[pools[f].pop()] = client
            left[f] -= 1
    return _group(owner, num_clients)


def _renormalized(weights: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """``weights`` restricted to ``allowed`` and summing to 1 (uniform over ``allowed`` if they are all 0)."""
    kept = weights * allowed
    return kept / kept.sum() if kept.sum() > 0 else allowed / allowed.sum()


PARTITIONERS: dict[str, Callable[..., list[Tensor]]] = {
    "iid": iid,
    "dirichlet": dirichlet,
    "lda": lda,
    "pachinko": pachinko,
    "shards": shards,
    "similarity": similarity,
}


EXAMPLE_ARGUMENTS: dict[str, object] = {"alpha": 0.5, "classes_per_client": 2, "s": 0.5,
                                        "coarse": [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]}
"""A value of each argument a partition requires, for the example call of its error message (``coarse``: the
coarse group of each of 10 fine labels)."""


def check_partition_kwargs(scheme: str, kwargs: dict, caller: Callable | None = None) -> None:
    """The partition's own arguments in ``kwargs`` are known and complete; an unknown one is named with
    what ``caller`` (a loader passing ``**partition_kwargs`` on) and the partition take."""
    check_choice("partition", scheme, PARTITIONERS)
    fn = PARTITIONERS[scheme]
    params = inspect.signature(fn).parameters
    allowed = [p for p in params if p not in ("labels", "num_clients", "seed")]
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown and caller is not None:
        own = [p for p in inspect.signature(caller).parameters if p != "partition_kwargs"]
        raise TypeError(f"{caller.__name__}() got unknown argument(s) {unknown}: it takes {own}, and partition "
                        f"{scheme!r} takes {allowed or 'no arguments of its own'}")
    if unknown:
        raise ValueError(f"partition {scheme!r} got unknown argument(s) {unknown}; "
                         f"it takes {allowed}")
    missing = [p for p in allowed if params[p].default is inspect.Parameter.empty
               and p not in kwargs]
    if missing:
        example = ", ".join(f"{name}={EXAMPLE_ARGUMENTS.get(name, '...')!r}" for name in missing)
        raise ValueError(f"partition {scheme!r} needs argument(s) {missing}, e.g. "
                         f"partition(labels, {scheme!r}, num_clients, {example})")


def partition(
    labels: Tensor, scheme: str, num_clients: int, seed: int = 0, **kwargs
) -> list[Tensor]:
    """Split rows among ``num_clients`` clients with the partitioner named ``scheme``.

    ``partition(y, "dirichlet", 100, alpha=0.5)``; the scheme's own arguments
    (``alpha``, ``min_size``, ``classes_per_client``, ``s``) go in ``kwargs``.
    """
    check_choice("scheme", scheme, PARTITIONERS)
    fn = PARTITIONERS[scheme]
    check_partition_kwargs(scheme, kwargs)
    return fn(labels, num_clients, seed=seed, **kwargs)
