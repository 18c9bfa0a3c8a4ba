"""FedLi-LS and FedLi-LU (*Towards Hyper-parameter-free Federated Learning*, arXiv 2408.17145) and FedExP
(Jhunjhunwala et al., ICLR 2023), checked against independent computations; the paper's convex claims are
tested where they hold and shown failing where they do not."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from conftest import blobs

from fedcore import algorithms, models
from fedcore.algorithms import RoundBatch
from fedcore.data import FederatedData, federated_quadratic
from fedcore.engine.passes import run_state
from fedcore.params import GradientOracle
from fedcore.run import Problem, simulate
from papers.fedli import theory as fedli_theory

F64 = torch.float64


def least_squares(num_clients: int = 6, dim: int = 3, samples: int = 8, seed: int = 0) -> FederatedData:
    """Least squares, each client its own design and optimum (float64)."""
    return federated_quadratic(num_clients=num_clients, dim=dim, samples_per_client=samples, heterogeneity=1.0,
                               shared_design=False, seed=seed)


def problem_of(data: FederatedData) -> Problem:
    return Problem(data, models.linear_regression((data.inputs.shape[1],)).double())


# ---- an independent least-squares loss (no fedcore code) --------------------------------------------------------


def loss(w: torch.Tensor, A: torch.Tensor, y: torch.Tensor) -> float:
    """0.5 mean((A w - y)^2): fedcore's mse on a linear model without bias."""
    return float(0.5 * (A @ w - y).pow(2).mean())


def gradient(w: torch.Tensor, A: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return A.T @ (A @ w - y) / len(y)


def rounds_of(
    data: FederatedData, clients: list[list[int]], K: int, B: int, weights: list[float] | None = None,
) -> list[RoundBatch]:
    """Fixed rounds on the given clients (weights unequal unless given), each recording the clients' models."""
    batches = []
    for t, ids in enumerate(clients):
        ids = torch.tensor(ids)
        w = torch.tensor(weights or [0.2, 0.5, 0.3][:len(ids)], dtype=F64)
        inputs, targets = data.sample_batches(ids, K, B, torch.Generator().manual_seed(10 + t))
        batches.append(RoundBatch.of(t, ids, w / w.sum(), inputs, targets, data.num_clients, trace=[]))
    return batches


def run_rounds(algorithm, data: FederatedData, batches: list[RoundBatch], x0: torch.Tensor, backend: str = "loop"):
    """The rounds through the algorithm's own API: ``[(x_t, state after, metrics)]``."""
    oracle = GradientOracle(problem_of(data).model, backend)
    state, out = algorithm.init(x0, data.num_clients), []
    for batch in batches:
        x = state["x"]
        state, metrics = algorithm.round(state, batch, oracle)
        if batch.trace is not None:
            batch.trace[:] = [models[0] for models in batch.trace]  # the one run's [S, d] (the batch keeps [R, S, d])
        out.append((x.reshape(-1), run_state(state, 0), {name: float(value) for name, value in metrics.items()}))
    return out


# ---- FedLi-LS: the clients' line search -------------------------------------------------------------------------


@pytest.mark.parametrize("server_step_size", ["one", "max_client_step"])
def test_every_accepted_step_satisfies_armijo_and_is_the_largest_tried(server_step_size: str) -> None:
    """From the trace, each client's move is ``eta g`` with ``g`` its minibatch gradient (recomputed here); then on
    the same minibatch ``F(w - eta g) <= F(w) - c eta ||g||^2``, ``eta = start beta^j`` with ``start = min(eta_max,
    growth eta_prev)``, and for j > 0 the step ``eta / beta`` tried before it fails the condition: a client stops at
    its first success.  The metrics: ``loss_evaluations_per_step`` = mean over steps of the most tries any client
    needed (j + 1); the step-size metrics are the clients' last steps; ``x_{t+1} = x_t + eta_g Delta``."""
    c, beta, eta_max, growth = 0.1, 0.9, 10.0, 2 ** 0.5
    algorithm = algorithms.fedli_ls(eta_max=eta_max, batches_per_epoch=2, server_step_size=server_step_size)
    data = least_squares()
    batches = rounds_of(data, [[4, 0, 2], [1, 4, 5]], K=5, B=4)
    backtracked = set()
    for batch, (x, state, metrics) in zip(batches, run_rounds(algorithm, data, batches, torch.zeros(3, dtype=F64))):
        models_after = [x.expand(3, -1), *batch.trace]
        eta_prev, tries = [algorithm.init_step_size] * 3, []  # SLS: every round's first step grows from 1
        for k in range(batch.local_steps):
            tries.append(0)
            for s in range(3):
                A, y, w = batch.inputs[s, k], batch.targets[s, k], models_after[k][s]
                g = gradient(w, A, y)
                eta = float((w - models_after[k + 1][s]) @ g / (g @ g))
                torch.testing.assert_close(models_after[k + 1][s], w - eta * g, rtol=0, atol=1e-12)
                assert loss(w - eta * g, A, y) <= loss(w, A, y) - c * eta * float(g @ g) + 1e-12
                start = min(eta_max, growth * eta_prev[s])
                j = round(math.log(eta / start) / math.log(beta))
                assert eta == pytest.approx(start * beta**j, rel=1e-9)
                if j > 0:
                    assert loss(w - eta / beta * g, A, y) > loss(w, A, y) - c * eta / beta * float(g @ g)
                    backtracked.add(j)
                tries[-1] = max(tries[-1], j + 1)
                eta_prev[s] = eta
        assert metrics["loss_evaluations_per_step"] == pytest.approx(sum(tries) / len(tries))
        last = torch.tensor(eta_prev)
        assert (metrics["client_step_min"], metrics["client_step_max"]) == pytest.approx((min(eta_prev), max(eta_prev)))
        assert metrics["client_step_mean"] == pytest.approx(float(last.mean()))
        eta_g = 1.0 if server_step_size == "one" else max(eta_prev)
        assert metrics["eta_g"] == pytest.approx(eta_g)
        torch.testing.assert_close(state["x"], x + eta_g * batch.weights.reshape(-1) @ (batch.trace[-1] - x))
    assert len(backtracked) > 1  # the search did backtrack, by differing amounts


def test_sls_constants_let_the_largest_client_step_extrapolate_and_a_cap_of_one_cannot() -> None:
    """With SLS's start 1 and cap 10 a client that never backtracks grows to gamma^(K b / n) = 2 over one epoch, so
    the "largest client step" server rule can step beyond the clients' average (eta_g > 1); with a cap of 1 it can
    only damp (eta_g <= 1).  A flat least-squares problem (inputs scaled by 0.1: L ~ 0.01) never backtracks."""
    data = least_squares(samples=8)
    data = type(data)(data.inputs * 0.1, data.targets, data.sizes, data.test_inputs, data.test_targets, None,
                      "flat")
    settings = dict(rounds=2, clients_per_round=3, local_steps=4, batch_size=2, weighting="uniform", progress=False)
    sls = simulate(problem_of(data), algorithms.fedli_ls(server_step_size="max_client_step"), **settings)
    growth = 2 ** (2 / 8)  # gamma^(b/n): b = 2 of n = 8 samples, one epoch in K = 4 steps
    assert sls.frame["eta_g"].dropna().tolist() == pytest.approx([growth**4] * 2)  # = 2: 1 grown over an epoch
    capped = simulate(problem_of(data), algorithms.fedli_ls(server_step_size="max_client_step", eta_max=1.0),
                      **settings)
    assert capped.frame["eta_g"].dropna().tolist() == pytest.approx([1.0, 1.0])


def test_reset_growth_uses_each_clients_epoch() -> None:
    """gamma^(b / n_i) per client from the round's sizes (clients of 3, 5, 4 and 8 samples, b = 2); one
    batches_per_epoch for all when given; gamma^(1/K) when the batch does not know the sizes."""
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(20, 3, generator=generator, dtype=F64)
    targets = torch.randn(20, generator=generator, dtype=F64)
    data = FederatedData(inputs, targets, torch.tensor([3, 5, 4, 8]), inputs[:2], targets[:2], None, "uneven")
    clients = torch.tensor([[3, 0, 2]])
    batch = RoundBatch(0, clients, torch.full((1, 3), 1 / 3, dtype=F64), data.sample_indices(clients[0], 5, 2)[None],
                       data.inputs, data.targets, 4, sizes=data.sizes)
    algorithm = algorithms.fedli_ls(gamma=2.0)
    torch.testing.assert_close(algorithm.growth(batch), torch.tensor([[[2 ** (2 / 8)], [2 ** (2 / 3)], [2 ** (2 / 4)]]],
                                                                    dtype=F64))
    assert algorithms.fedli_ls(gamma=2.0, batches_per_epoch=4).growth(batch) == pytest.approx(2 ** 0.25)
    unknown = RoundBatch(0, clients, batch.weights, batch.rows, data.inputs, data.targets, 4)
    assert algorithm.growth(unknown) == pytest.approx(2 ** (1 / 5))  # K = 5
    x = torch.zeros(3, dtype=F64)  # the round runs with the per-client growth (its steps stay Armijo steps)
    state, metrics = algorithm.round(algorithm.init(x, 4), batch, GradientOracle(problem_of(data).model))
    assert torch.isfinite(state["x"]).all() and metrics["client_step_max"].item() <= algorithm.eta_max


# ---- the paper's convex claims: two convex clients (our instance) -------------------------------------------------


def client_reference(a: Fraction, b: float, x: float, K: int, accept_ties: bool, growth: int = 2) -> float:
    """K Armijo steps on f(x) = a (x - b)^2 from eta_max = 1, c = 0.1, beta = 0.9.  For this f the condition
    ``f(x - eta g) <= f(x) - c eta g^2`` is exactly ``eta <= (1 - c) / a`` (expand (1 - 2 a eta)^2 <= 1 - 4 c a eta),
    compared here in exact arithmetic: ``accept_ties`` decides ``eta = (1 - c) / a`` itself."""
    limit, eta = (1 - Fraction(1, 10)) / a, Fraction(1)
    for _ in range(K):
        eta = min(Fraction(1), growth * eta)
        while x != b and (eta > limit or (eta == limit and not accept_ties)):
            eta *= Fraction(9, 10)
        x = x - float(eta) * 2 * float(a) * (x - b)
    return x


def run_two_clients(a, b, x0: float, K: int, rounds: int):
    """FedLi-LS (batches_per_epoch = n / b = 1: the reset growth is gamma = 2) with server step 1, uniform weights:
    the server iterates and the run's History (with the clients' traces)."""
    run = fedli_theory.two_client_run(a, b, x0, local_steps=K, rounds=rounds)
    return run.x, run.history


def test_two_convex_clients_ascend_the_global_objective_while_each_descends_its_own() -> None:
    """f_1 = 0.01 (x - 10)^2, f_2 = x^2, x_0 = 0, K = 10: the global objective rises every round (0.500, 0.831, ...)
    while each client's own loss falls, and x settles near 1.56-1.70, far from x* = 10/101 = 0.099.  Client 2's
    Armijo bound is eta <= 0.9 exactly, a tie that floating point decides either way: the sequence lies between
    the exact runs that reject ties (0.500, 0.831, 1.214, 1.414, ...) and accept them (0.500, 0.831, 1.270, 1.533,
    ...); a hand computation's 1.219, 1.421 is a rounding-dependent mix inside that band."""
    a, b = (Fraction(1, 100), Fraction(1)), (10.0, 0.0)
    F = lambda x: (0.01 * (x - 10) ** 2 + x**2) / 2  # noqa: E731
    xs, history = run_two_clients((0.01, 1.0), b, 0.0, K=10, rounds=30)
    bands = []
    for ties in (False, True):
        x, band = 0.0, []
        for _ in range(31):
            band.append(F(x))
            x = sum(client_reference(a_i, b_i, x, 10, ties) for a_i, b_i in zip(a, b)) / 2
        bands.append(band)
    values = [F(x) for x in xs]
    assert [round(v, 3) for v in values[:2]] == [0.5, 0.831]
    assert all(low - 1e-9 <= v <= high + 1e-9 for v, low, high in zip(values, *bands))
    assert all(bands[0][t] <= doc <= bands[1][t] for t, doc in ((2, 1.219), (3, 1.421)))
    assert all(later > earlier for earlier, later in zip(values[:7], values[1:7]))  # ascent, round after round
    assert 1.5 < xs[-1] < 1.75 and F(xs[-1]) - F(10 / 101) > 1.0  # no convergence to x*, no linear rate
    for t, (clients, models_after) in enumerate(history.trace):  # [K, S, 1]: each client descends its own objective
        finals = models_after[-1, clients.argsort(), 0].tolist()  # client 0, client 1
        own = [0.01 * (finals[0] - 10) ** 2, finals[1] ** 2]
        start = [0.01 * (xs[t] - 10) ** 2, xs[t] ** 2]
        assert own[0] < start[0] and (own[1] < start[1] or start[1] == 0.0)
        assert F(xs[t + 1]) <= (F(finals[0]) + F(finals[1])) / 2 + 1e-12  # Jensen: Lemma 3's convexity step holds,
        assert F(finals[0]) > F(xs[t])  # but client 1's point raises the *global* objective: f_1 is not f


def test_off_the_tie_the_two_clients_ascend_every_round_and_converge_linearly_to_a_biased_point() -> None:
    """The instance moved off the Armijo tie: f_2 = 1.1 x^2 (the condition is eta <= 0.9 / 1.1, never a
    tie at 0.9^j).  Its numbers, computed by hand independently: the global objective 0.500, 0.873, 1.345, 1.620,
    1.757, ..., 1.874, rising every round, x_10 = 1.666; linear_fit reads the rate (about 0.45 per round) and the
    limit, 1.57 away from x* = 10 / 111: a linear rate holds, the optimum is missed."""
    run = fedli_theory.two_client_run(a=(0.01, 1.1), b=(10.0, 0.0), local_steps=10, rounds=10)
    objective = run.global_objective
    assert [round(v, 3) for v in objective[:5]] == [0.500, 0.873, 1.345, 1.620, 1.757]
    assert round(objective[-1], 3) == 1.874 and all(b > a for a, b in zip(objective, objective[1:]))
    assert round(run.x[-1], 3) == 1.666
    factor, limit = fedli_theory.linear_fit(run.x)
    assert factor == pytest.approx(0.45, abs=0.005)
    x_star = 10 * 0.01 / (0.01 + 1.1)  # the minimizer of f_1 + f_2
    assert abs(limit - x_star) > 1.5 and abs(limit - run.x[-1]) < 2e-3


def test_linear_fit_reads_a_geometric_sequence_exactly() -> None:
    xs = [2 + 3 * 0.4**t for t in range(12)]
    assert fedli_theory.linear_fit(xs) == pytest.approx((0.4, 2.0))
    assert fedli_theory.linear_fit([1.0, 1.0, 1.0]) == (0.0, 1.0)  # stopped: no rate to read
    alternating = [5 + (-0.5) ** t for t in range(10)]
    assert fedli_theory.linear_fit(alternating) == pytest.approx((-0.5, 5.0))
    with pytest.raises(ValueError, match="do not contract"):
        fedli_theory.linear_fit([2.0**t for t in range(6)])
    with pytest.raises(ValueError, match="xs has 2 iterates"):
        fedli_theory.linear_fit([1.0, 2.0])


@pytest.mark.parametrize("start", [1.0, 10.0])
def test_remark_2_with_the_line_searchs_own_steps_also_ascends(start: float) -> None:
    """Each client's step is the largest start * 0.9^j meeting the Armijo condition on its own double well
    (searched here by hand); both clients descend their own objective and the average ascends the global one,
    from SLS's start 1 and from the cap 10 alike."""
    from fedcore.objectives import double_well, double_well_slope

    x0, tilt = fedli_theory.REMARK2["x0"], fedli_theory.REMARK2["tilt"]
    step = fedli_theory.remark2_line_search(x0, tilt, start=start)
    for key, t in (("eta1", tilt), ("eta2", -tilt)):
        g, j = double_well_slope(x0, t), 0
        while double_well(x0 - start * 0.9**j * g, t) > double_well(x0, t) - 0.1 * start * 0.9**j * g * g:
            j += 1
        assert step[key] == pytest.approx(start * 0.9**j, rel=1e-12)
    assert step["client 1 descends"] and step["client 2 descends"] and step["client 1 Armijo"]
    assert not step["global descends"] and step["f(x_bar)"] > step["f(x0)"]


def test_one_local_step_descends_from_the_start_then_drifts() -> None:
    """K = 1, same start: 0.500 -> 0.495 (x_1 = 0.1), as computed by hand; in round 2 the objective rises again
    (both exact tie rules agree), and x settles at 0.11-0.12, not x* = 0.099: the clients' unequal Armijo steps
    (1 and 0.81-0.9) bias the fixed point even with one local step."""
    xs, _ = run_two_clients((0.01, 1.0), (10.0, 0.0), 0.0, K=1, rounds=20)
    F = lambda x: (0.01 * (x - 10) ** 2 + x**2) / 2  # noqa: E731
    assert (round(F(xs[0]), 3), round(F(xs[1]), 3)) == (0.5, 0.495) and xs[1] == pytest.approx(0.1)
    assert F(xs[2]) > F(xs[1])
    assert 0.105 < xs[-1] < 0.125


def test_one_local_step_can_multiply_the_global_objective() -> None:
    """K = 1 and exact gradients are not enough for Lemma 3: f_1 = 10 x^2, f_2 = 0.8 (x + 10)^2, x_0 = -1.
    Armijo accepts eta <= 0.9 / a: client 1 backtracks to 0.9^23 = 0.0886 (0.9^22 = 0.098 > 0.09), client 2 keeps
    eta = 1 (1 < 1.125) and overshoots to -1 - 1.6 * 9 = -15.4.  Both descend their own objective; the mean
    x_1 = (0.772 - 15.4) / 2 raises F = (f_1 + f_2) / 2 from 37.4 to about 270."""
    xs, history = run_two_clients((10.0, 0.8), (0.0, -10.0), -1.0, K=1, rounds=1)
    x1, x2 = -1 + 0.9**23 * 20, -1 - 1.6 * 9
    assert xs[1] == pytest.approx((x1 + x2) / 2, rel=1e-12)
    F = lambda x: (10 * x**2 + 0.8 * (x + 10) ** 2) / 2  # noqa: E731
    assert 10 * x1**2 < 10 and 0.8 * (x2 + 10) ** 2 < 0.8 * 81  # local descent on both clients
    assert F(xs[1]) > 7 * F(xs[0])
    assert history.final("client_step_min") == pytest.approx(0.9**23) and history.final("client_step_max") == 1.0


def suboptimality_run(data: FederatedData, algorithm, K: int, rounds: int, clients: int):
    """``f(x_t) - f*`` after every round on full batches (f: the sample-weighted mean of the clients' losses)."""
    A, y = data.inputs, data.targets
    x_star = torch.linalg.lstsq(A, y.unsqueeze(1)).solution.squeeze(1)
    gaps = [loss(torch.zeros(A.shape[1], dtype=F64), A, y) - loss(x_star, A, y)]
    history = simulate(problem_of(data), algorithm, rounds=rounds, clients_per_round=clients, local_steps=K,
                       batch_size=int(data.sizes.min()), progress=False, x0=torch.zeros(A.shape[1], dtype=F64),
                       callback=lambda t, state: gaps.append(loss(state["x"], A, y) - loss(x_star, A, y)))
    return gaps, history


def test_homogeneous_clients_descend_every_round_at_the_linear_rate() -> None:
    """Lemma 3's argument (convexity, then each client's Armijo descent) is sound when every f_i is f: four clients
    holding the same 8 samples, full batches, K = 5, eta_max = 10 (so the search backtracks).  Each accepted step
    satisfies eta >= eta_lo = min(eta_max, 2 beta (1 - c) / L) and f(w - eta g) <= f(w) - c eta ||g||^2 <=
    (1 - 2 c mu eta)(f(w) - f*) (Polyak-Lojasiewicz), so every round
    f(x_{t+1}) - f* <= (1 - 2 c mu eta_lo)^K (f(x_t) - f*): a linear rate, with mu, L the extreme eigenvalues of
    A^T A / n."""
    base = least_squares(num_clients=1, dim=3, samples=8, seed=4)
    A, y = base.inputs, base.targets
    data = FederatedData.from_partition(A.repeat(4, 1), y.repeat(4), [torch.arange(8 * i, 8 * i + 8) for i in range(4)],
                                        A, y)
    mu, L = torch.linalg.eigvalsh(A.T @ A / 8)[[0, -1]].tolist()
    rate = (1 - 2 * 0.1 * mu * min(10.0, 2 * 0.9 * 0.9 / L)) ** 5
    gaps, history = suboptimality_run(data, algorithms.fedli_ls(eta_max=10.0), K=5, rounds=12, clients=4)
    assert history.frame["loss_evaluations_per_step"].iloc[1:].max() > 1  # it backtracked
    for before, after in zip(gaps, gaps[1:]):
        if before > 1e-12:
            assert after <= rate * before + 1e-14, (after / before, rate)
    assert gaps[0] > 1 and gaps[-1] < 1e-6


def test_one_local_step_with_equal_steps_descends_every_round_on_heterogeneous_clients() -> None:
    """K = 1, exact gradients and eta_max = 1 / max_i lambda_max(H_i): no client backtracks (the quadratic's Armijo
    bound is at least 1.8 / lambda_max), so all take the same step and the round is gradient descent on f with a
    step below 1 / L_f: f(x - eta g) <= f - (eta / 2)||g||^2 <= (1 - eta mu)(f - f*) every round, on six clients
    with different designs and optima."""
    data = least_squares(num_clients=6, dim=3, samples=8, seed=1)
    designs = data.inputs.view(6, 8, 3)
    eta = 1 / max(float(torch.linalg.eigvalsh(D.T @ D / 8)[-1]) for D in designs)
    mu = float(torch.linalg.eigvalsh(data.inputs.T @ data.inputs / 48)[0])
    gaps, history = suboptimality_run(data, algorithms.fedli_ls(eta_max=eta), K=1, rounds=15, clients=6)
    frame = history.frame.iloc[1:]
    assert (frame["loss_evaluations_per_step"] == 1).all() and (frame["client_step_min"] == eta).all()
    for before, after in zip(gaps, gaps[1:]):
        assert after <= (1 - eta * mu) * before + 1e-14


# ---- FedLi-LU: the server's Deep-Frank-Wolfe step ---------------------------------------------------------------


def lu_reference(x: torch.Tensor, batches: list[RoundBatch], client_lr: float, eta: float, mu: float, wd: float,
                 eps: float):
    """Clients: K SGD steps, each reporting the mean of its K minibatch losses; server: the DFW step and momentum,
    written out.  Returns x, z and the gammas."""
    z, gammas = torch.zeros_like(x), []
    for batch in batches:
        finals, losses = [], []
        for s in range(batch.clients.numel()):
            w, seen = x.clone(), []
            for k in range(batch.local_steps):
                A, y = batch.inputs[s, k], batch.targets[s, k]
                seen.append(loss(w, A, y))
                w = w - client_lr * gradient(w, A, y)
            finals.append(w)
            losses.append(sum(seen) / len(seen))
        weights = batch.weights.reshape(-1).tolist()
        d = -sum(weight * (w - x) for weight, w in zip(weights, finals))
        L = sum(weight * value for weight, value in zip(weights, losses))
        r = wd * x
        gamma = min(1.0, max(0.0, (L - eta * float(d @ r)) / (eta * float(d @ d) + eps)))
        z = mu * z - eta * gamma * (d + r)
        x = x - eta * (r + gamma * d) + mu * z
        gammas.append(gamma)
    return x, z, gammas


@pytest.mark.parametrize(("hyperparameters", "x0", "clipped"), [
    (dict(eta=5.0, mu=0.9, weight_decay=0.1), [0.5, -1.0, 2.0], "inside"),  # L < eta ||d||^2: gamma in (0, 1)
    (dict(eta=0.01, mu=0.9, weight_decay=1e-5), [0.5, -1.0, 2.0], "one"),  # the authors' constants: clipped at 1
    (dict(eta=1.0, mu=0.5, weight_decay=1.0), [100.0, 100.0, 100.0], "zero"),  # eta <d, r> > L: clipped at 0
])
def test_fedli_lu_rounds_match_a_hand_computation(hyperparameters: dict, x0: list[float], clipped: str) -> None:
    data = least_squares()
    batches = rounds_of(data, [[4, 0, 2], [1, 4, 5]], K=3, B=4)
    algorithm = algorithms.fedli_lu(client_lr=0.2, **hyperparameters, eps=1e-5)
    results = run_rounds(algorithm, data, batches, torch.tensor(x0, dtype=F64))
    x, z, gammas = lu_reference(torch.tensor(x0, dtype=F64), batches, 0.2, eps=1e-5, mu=hyperparameters["mu"],
                                eta=hyperparameters["eta"], wd=hyperparameters["weight_decay"])
    state = results[-1][1]
    torch.testing.assert_close(state["x"], x, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(state["server"]["z"], z, rtol=1e-10, atol=1e-12)
    assert [m["gamma"] for _, _, m in results] == pytest.approx(gammas, rel=1e-10, abs=1e-14)
    first = gammas[0]
    assert {"inside": 0 < first < 1, "one": first == 1.0, "zero": first == 0.0}[clipped]


@pytest.mark.parametrize(("losses", "capped"), [([0.9, 1.1], True), ([1e-4, 3e-4], False)])
def test_fedli_lu_step_is_a_polyak_step_capped_at_eta(losses: list[float], capped: bool) -> None:
    """Without weight decay and momentum, and eps negligible, DFW's plain step is ``min(eta, L / ||d||^2) d``:
    Polyak's step with f* = 0 and the clients' loss average L for f(x), capped at eta; the scale option divides the
    clients' move first (d = -Delta / scale)."""
    server = algorithms.deep_frank_wolfe(eta=0.5, mu=0.0, weight_decay=0.0, eps=1e-300)
    x = torch.tensor([[[1.0, -2.0]]], dtype=F64)
    delta = torch.tensor([[[0.03, -0.04]]], dtype=F64)  # ||d||^2 = 0.0025
    client_losses = torch.tensor([[[losses[0]], [losses[1]]]], dtype=F64)
    weights = torch.tensor([[[0.25, 0.75]]], dtype=F64)
    L = 0.25 * losses[0] + 0.75 * losses[1]  # 1.05, or 2.5e-4
    step, state = server.update(delta, server.init(x), x=x, client_losses=client_losses, weights=weights)
    polyak = min(0.5, L / 0.0025)  # 0.5 (capped: gamma = 1), or 0.1 (gamma = 0.2)
    torch.testing.assert_close(step, polyak * delta, rtol=1e-12, atol=0)  # x - eta gamma d = x + polyak Delta
    assert float(state["gamma"]) == pytest.approx(1.0 if capped else 0.2, rel=1e-12)
    scaled = algorithms.deep_frank_wolfe(eta=0.5, mu=0.0, weight_decay=0.0, eps=1e-300, scale=0.1)
    step, state = scaled.update(delta, scaled.init(x), x=x, client_losses=client_losses, weights=weights)
    d_squared = 0.0025 / 0.01  # d = -Delta / 0.1
    torch.testing.assert_close(step, min(0.5, L / d_squared) * delta / 0.1, rtol=1e-12, atol=0)
    assert scaled.scale == 0.1 and server.scale == 1.0 and "scale=0.1" in scaled.name
    with pytest.raises(ValueError, match="scale=0.0 must be > 0"):
        algorithms.fedli_lu(0.1, pseudo_gradient_scale=0.0)


def test_fedli_lu_gamma_stays_in_the_unit_interval() -> None:
    """Over 25 rounds with sampled clients and minibatches, for a server step that saturates (eta = 0.01) and one
    that does not (eta = 5): gamma in [0, 1] every round, and with eta = 5 it is strictly inside in some rounds."""
    data = least_squares(num_clients=8)
    for eta, inside in ((0.01, False), (5.0, True)):
        history = simulate(problem_of(data), algorithms.fedli_lu(client_lr=0.2, eta=eta), rounds=25,
                           clients_per_round=3, local_steps=3, batch_size=4, progress=False)
        gamma = history.frame["gamma"].iloc[1:]
        assert len(gamma) == 25 and ((gamma >= 0) & (gamma <= 1)).all()
        assert bool(((gamma > 0) & (gamma < 1)).any()) == inside


# ---- FedExP -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("eps", "convention", "weights"), [
    (1e-3, "paper", None), (1e-3, "code", None), (algorithms.exp_decay(0.1, 0.1, 1), "paper", None),
    (1e-3, "paper", [1.0, 1.0, 1.0]),
])
def test_fedexp_server_step_is_the_formula_and_at_least_one(eps, convention: str, weights) -> None:
    """From the trace: Delta_i = x_i,K - x_t; eta_g = max(1, sum_i w_i ||Delta_i||^2 / (2 (||Delta_bar||^2 + eps')))
    with eps' = eps (paper) or S eps (the authors' code); with uniform weights, checked in the paper's own form
    sum_i ||Delta_i||^2 / (2 S (||Delta_bar||^2 + eps)).  Started at the federation's optimum, where the clients
    disagree most, eta_g > 1 in some round; x_{t+1} = x_t + eta_g Delta_bar; eval_point = (x_{t+1} + x_t) / 2."""
    data = least_squares()
    batches = rounds_of(data, [[4, 0, 2], [1, 4, 5], [0, 3, 5]], K=3, B=4, weights=weights)
    algorithm = algorithms.fedexp(client_lr=0.1, eps=eps, eps_convention=convention)
    x0 = data.info["x_star"]
    assert torch.equal(algorithm.eval_point(algorithm.init(x0, data.num_clients)).reshape(-1), x0)
    above_one = False
    for t, (batch, (x, state, metrics)) in enumerate(zip(batches, run_rounds(algorithm, data, batches, x0))):
        moves = batch.trace[-1] - x
        mean_move = batch.weights.reshape(-1) @ moves
        eps_t = eps(t) if callable(eps) else eps
        if weights is None:
            spread = sum(float(w) * float(m @ m) for w, m in zip(batch.weights.reshape(-1), moves))
            ratio = spread / (2 * (float(mean_move @ mean_move) + eps_t * (3 if convention == "code" else 1)))
        else:
            ratio = sum(float(m @ m) for m in moves) / (2 * 3 * (float(mean_move @ mean_move) + eps_t))
        eta_g = max(1.0, ratio)
        assert metrics["eta_g"] == pytest.approx(eta_g, rel=1e-10) and metrics["eta_g"] >= 1.0
        torch.testing.assert_close(state["x"], x + eta_g * mean_move, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(algorithm.eval_point(state), (state["x"] + x) / 2)
        above_one |= eta_g > 1.0
    assert above_one


def test_fedexp_is_evaluated_at_the_mean_of_its_last_two_iterates() -> None:
    """The simulator's test loss after round t is the loss at (x_t + x_{t-1}) / 2 (round 0: at x_0)."""
    data = least_squares()
    xs = [torch.zeros(3, dtype=F64)]
    history = simulate(problem_of(data), algorithms.fedexp(client_lr=0.1), rounds=3, clients_per_round=3,
                       local_steps=3, batch_size=4, progress=False, x0=xs[0],
                       callback=lambda t, state: xs.append(state["x"].clone()))
    A, y = data.test_inputs, data.test_targets
    expected = [loss(xs[0], A, y)] + [loss((xs[t] + xs[t - 1]) / 2, A, y) for t in (1, 2, 3)]
    assert history.frame["test_loss"].tolist() == pytest.approx(expected, rel=1e-10)
    assert loss(xs[3], A, y) != pytest.approx(expected[3], rel=1e-6)  # the last iterate alone differs


# ---- both backends, bad inputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "hyperparameters"), [
    ("fedli_ls", dict(eta_max=10.0, server_step_size="max_client_step")),
    ("fedli_lu", dict(client_lr=0.2, eta=5.0)),
    ("fedexp", dict(client_lr=0.2)),
])
def test_loop_and_vmap_backends_agree_on_models_and_metrics(name: str, hyperparameters: dict) -> None:
    """The same run under both gradient backends: the same line-search decisions, gamma and eta_g (an MLP on
    class blobs, no dropout)."""
    histories = []
    for backend in ("loop", "vmap"):
        problem = Problem(blobs(), models.make("mlp", (8,), 3, hidden=(6,)))
        histories.append(simulate(problem, algorithms.make(name, **hyperparameters), rounds=4, clients_per_round=3,
                                  local_steps=3, batch_size=4, backend=backend, progress=False))
    loop, vmap = histories
    torch.testing.assert_close(loop.final_state["x"], vmap.final_state["x"], rtol=1e-5, atol=1e-5)
    columns = [c for c in loop.frame.columns if c not in ("seconds", "test_loss", "test_accuracy")]
    assert len(columns) > 1
    for column in columns:
        assert loop.frame[column].iloc[1:].tolist() == pytest.approx(vmap.frame[column].iloc[1:].tolist(), rel=1e-5)


@pytest.mark.parametrize(("factory", "kwargs", "error", "message"), [
    (algorithms.fedli_ls, dict(c=0.0), ValueError, r"c=0.0 not in \(0, 1\)"),
    (algorithms.fedli_ls, dict(backtrack=1.0), ValueError, r"backtrack=1.0 not in \(0, 1\)"),
    (algorithms.fedli_ls, dict(eta_max=-1.0), ValueError, "eta_max=-1.0 must be > 0"),
    (algorithms.fedli_ls, dict(gamma=0.5), ValueError, r"gamma=0.5 not in \[1, inf\)"),
    (algorithms.fedli_ls, dict(batches_per_epoch=0), ValueError, "batches_per_epoch=0 must be >= 1"),
    (algorithms.fedli_ls, dict(batches_per_epoch=2.5), TypeError, "batches_per_epoch=2.5 must be an int"),
    (algorithms.fedli_ls, dict(max_backtracks=0), ValueError, "max_backtracks=0 must be >= 1"),
    (algorithms.fedli_ls, dict(init_step_size=0.0), ValueError, "init_step_size=0.0 must be > 0"),
    (algorithms.fedli_ls, dict(fallback_step_size=-1e-6), ValueError, "fallback=-1e-06 must be > 0"),
    (algorithms.fedli_ls, dict(server_step_size="max"), ValueError,
     r"server_step_size='max' not one of \['max_client_step', 'one'\]"),
    (algorithms.fedli_lu, dict(client_lr=0.0), ValueError, "client_lr=0.0 must be > 0"),
    (algorithms.fedli_lu, dict(client_lr=0.1, eta=0.0), ValueError, "eta=0.0 must be > 0"),
    (algorithms.fedli_lu, dict(client_lr=0.1, mu=1.0), ValueError, r"mu=1.0 not in \[0, 1\)"),
    (algorithms.fedli_lu, dict(client_lr=0.1, weight_decay=-1e-5), ValueError, r"weight_decay=-1e-05 not in \[0,"),
    (algorithms.fedli_lu, dict(client_lr=0.1, eps=float("nan")), ValueError, "eps=nan must be finite"),
    (algorithms.fedexp, dict(client_lr=-0.1), ValueError, "client_lr=-0.1 must be > 0"),
    (algorithms.fedexp, dict(client_lr=0.1, eps=0.0), ValueError, "eps=0.0 must be > 0"),
    (algorithms.fedexp, dict(client_lr=0.1, eps="small"), TypeError, "eps='small' must be a number"),
    (algorithms.fedexp, dict(client_lr=0.1, eps_convention="authors"), ValueError,
     r"eps_convention='authors' not one of \['code', 'paper'\]"),
])
def test_bad_hyperparameters_name_the_argument(factory, kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        factory(**kwargs)


def test_make_builds_all_three_and_names_missing_arguments() -> None:
    assert algorithms.make("fedli_ls").name == "FedLi-LS"
    assert algorithms.make("fedli_lu", client_lr=0.1).name == "FedLi-LU"
    assert algorithms.make("fedexp", client_lr=0.1).name == "FedExP"
    with pytest.raises(TypeError, match=r"make\('fedli_lu'\) needs argument\(s\) \['client_lr'\]"):
        algorithms.make("fedli_lu")
    with pytest.raises(TypeError, match=r"make\('fedli_ls'\) got unknown argument\(s\) \['client_lr'\]"):
        algorithms.make("fedli_ls", client_lr=0.1)
