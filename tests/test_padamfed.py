"""PAdaMFed, PAdaMFed-VR (Yan et al., Algorithm 1, Theorems 1-2), SCAFFOLD-M and SCAFFOLD-M-VR (Cheng et al.)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from fedcore import algorithms, models
from fedcore.algorithms import RoundBatch
from fedcore.algorithms.contract import run_prologue
from fedcore.data import federated_quadratic
from fedcore.engine.passes import run_state
from fedcore.params import GradientOracle
from fedcore.run import Problem, simulate, simulate_runs

VARIANTS = ["padamfed", "padamfed_vr", "scaffold_m", "scaffold_m_vr"]
HAND_SET = dict(eta=0.05, gamma=0.2, beta=0.6)  # the same (eta, gamma, beta) for all four in the hand-checked rounds


def least_squares(num_clients: int = 6, dim: int = 3, samples: int = 8, seed: int = 0):
    """A federated least-squares problem (each client its own design), float64."""
    return federated_quadratic(num_clients=num_clients, dim=dim, samples_per_client=samples, heterogeneity=1.0,
                               shared_design=False, seed=seed)


def problem_of(data) -> Problem:
    return Problem(data, models.linear_regression((data.inputs.shape[1],)).double())


def build(variant: str, **hyperparameters) -> algorithms.PAdaMFed:
    return algorithms.make(variant, **hyperparameters)


# ---- an independent implementation, client by client ---------------------------------------------------------


def gradient(w: torch.Tensor, A: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """grad of 0.5 mean((A w - y)^2): A^T (A w - y) / B (no fedcore code involved)."""
    return A.T @ (A @ w - y) / len(y)


def reference(variant: str, x0, batches, data, eta: float, gamma: float, beta: float,
              initialization: str = "every_client", server_momentum: str = "line16"):
    """Yan et al.'s Algorithm 1 (and its STORM direction; SCAFFOLD-M: no normalization), with explicit loops over
    rounds, clients and steps.  Line 1 as the text writes it ("for any i"): every one of the N clients' gradient at
    theta^0, here on all its samples (the expectation of the mean over K minibatches), c^{-1} their mean
    (``initialization="first_round"``: the round-0 clients on their minibatches, the others c_i = c).  Line 16's
    server momentum, or (``server_momentum="mean_direction"``) the mean over clients and steps of the directions
    g_i^{t,k}.  Returns theta, c, every c_i and g after the rounds."""
    normalized, storm = variant.startswith("padamfed"), variant.endswith("_vr")
    num_clients = data.num_clients
    theta, theta_prev = x0.clone(), x0.clone()
    zero = torch.zeros_like(x0)
    c_i, c, g = [zero] * num_clients, zero, zero
    for t, batch in enumerate(batches):
        clients, K, S = batch.clients.reshape(-1).tolist(), batch.local_steps, batch.clients.numel()  # one run
        A, y = batch.inputs, batch.targets  # [S, K, B, d], [S, K, B]
        if t == 0 and initialization == "every_client":
            c_i = [gradient(theta, *data.client(i)[:2]) for i in range(num_clients)]
            c = g = sum(c_i) / num_clients
        elif t == 0:
            first = [sum(gradient(theta, A[s, k], y[s, k]) for k in range(K)) / K for s in range(S)]
            c = sum(first) / S
            c_i = [c] * num_clients
            for s, i in enumerate(clients):
                c_i[i] = first[s]
            g = c
        finals, c_new, directions = [], {}, zero
        for s, i in enumerate(clients):
            w, total = theta.clone(), zero
            for k in range(K):
                G = gradient(w, A[s, k], y[s, k])
                total = total + G
                if storm:
                    d = G + beta * (c - c_i[i]) + (1 - beta) * (g - gradient(theta_prev, A[s, k], y[s, k]))
                else:
                    d = beta * (G - c_i[i] + c) + (1 - beta) * g
                directions = directions + d / (S * K)
                w = w - eta * (d / d.norm() if normalized else d)
            finals.append(w)
            c_new[i] = total / K
        g_bar = sum(float(batch.weights.reshape(-1)[s]) * (theta - finals[s]) for s in range(S)) / (eta * K)
        change = sum(c_new[i] - c_i[i] for i in clients)
        line_16 = beta * (change / S + c) + (1 - beta) * g
        c, g = c + change / num_clients, line_16 if server_momentum == "line16" else directions
        for i in clients:
            c_i[i] = c_new[i]
        theta_prev, theta = theta, theta - gamma * g_bar
    return theta, c, torch.stack(c_i), g


def two_rounds(data, K: int = 3, B: int = 4, trace: bool = False) -> list[RoundBatch]:
    """Round 0 on clients [4, 0, 2], round 1 on [1, 4, 5] (two never initialized, one again), unequal weights;
    with ``trace`` each batch records the clients' models after every local step."""
    weights = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
    batches = []
    for t, clients in enumerate(([4, 0, 2], [1, 4, 5])):
        clients = torch.tensor(clients)
        rows = data.sample_indices(clients, K, B, torch.Generator().manual_seed(10 + t))
        batches.append(RoundBatch(t, clients, weights, rows, data.inputs, data.targets, data.num_clients,
                                  [] if trace else None, sizes=data.sizes))
    return batches


NON_UNIFORM = "ignore:.*non-uniform client weights:UserWarning"  # two_rounds' weights are unequal on purpose


OPTIONS = [("every_client", "line16"), ("first_round", "line16"), ("every_client", "mean_direction")]


@pytest.mark.filterwarnings(NON_UNIFORM)
@pytest.mark.parametrize("backend", ["loop", "vmap"])
@pytest.mark.parametrize("initialization, server_momentum", OPTIONS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_two_rounds_match_an_independent_implementation(variant: str, initialization: str, server_momentum: str,
                                                        backend: str) -> None:
    data = least_squares()
    oracle = GradientOracle(problem_of(data).model, backend)
    x0 = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    batches = two_rounds(data)
    algorithm = algorithms.PAdaMFed(**HAND_SET, normalized=variant.startswith("padamfed"),
                                    variance_reduction=variant.endswith("_vr"), initialization=initialization,
                                    server_momentum=server_momentum)
    state = algorithm.init(x0, data.num_clients)
    for batch in batches:
        state, _ = algorithm.round(state, batch, oracle)
    state = run_state(state, 0)  # one run's state: x [d], c_i [N, d]
    theta, c, c_i, g = reference(variant, x0, batches, data, **HAND_SET, initialization=initialization,
                                 server_momentum=server_momentum)
    for name, ours, expected in (("x", state["x"], theta), ("c", state["c"], c), ("c_i", state["c_i"], c_i),
                                 ("g", state["g"], g)):
        torch.testing.assert_close(ours, expected, rtol=1e-10, atol=1e-12, msg=lambda m, n=name: f"{n}: {m}")
    torch.testing.assert_close(state["c"], state["c_i"].mean(0))  # c stays the mean of the c_i (line 15)
    assert not torch.allclose(state["c_i"][3], state["c"])  # client 3 was never sampled: it keeps c_3^{-1}, not c
    if variant.endswith("_vr"):
        assert "x_prev" in state  # theta^{t-1}: the model before the last round
        first = run_state(algorithm.round(algorithm.init(x0, 6), batches[0], oracle)[0], 0)
        torch.testing.assert_close(state["x_prev"], first["x"])


# ---- the normalized step ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings(NON_UNIFORM)
@pytest.mark.parametrize("variant", ["padamfed", "padamfed_vr"])
def test_every_normalized_local_step_has_norm_eta(variant: str) -> None:
    data = least_squares()
    oracle = GradientOracle(problem_of(data).model, "loop")
    x0 = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    algorithm = build(variant, **HAND_SET)
    state = algorithm.init(x0, data.num_clients)
    for batch in two_rounds(data, K=4, trace=True):
        start = state["x"]
        state, _ = algorithm.round(state, batch, oracle)
        models_after = torch.stack([start.expand(1, 3, -1), *batch.trace])[:, 0]  # [K + 1, S, d] of the one run
        norms = (models_after[1:] - models_after[:-1]).norm(dim=2)
        assert norms.shape == (4, 3)
        torch.testing.assert_close(norms, torch.full_like(norms, HAND_SET["eta"]), rtol=1e-12, atol=0)
    plain = build(variant.replace("padamfed", "scaffold_m"), **HAND_SET)  # without normalization: other lengths
    batch = two_rounds(data, K=4, trace=True)[0]
    plain.round(plain.init(x0, data.num_clients), batch, oracle)
    assert (batch.trace[0][0] - x0).norm(dim=1).sub(HAND_SET["eta"]).abs().max() > 1e-3


def test_a_zero_direction_takes_no_step() -> None:
    """At a point where every gradient is 0 (x = 0, targets 0), c = c_i = g = 0 and d = 0: no step, no NaN."""
    data = least_squares()
    inputs, _ = data.sample_batches(torch.tensor([0, 1]), 2, 4, torch.Generator().manual_seed(0))
    batch = RoundBatch.of(0, torch.tensor([0, 1]), torch.tensor([0.5, 0.5], dtype=torch.float64), inputs,
                          torch.zeros(inputs.shape[:3], dtype=torch.float64), data.num_clients, trace=[])
    algorithm = algorithms.padamfed(eta=0.1, gamma=0.1, beta=0.5, initialization="first_round")  # a batch by hand
    state, _ = algorithm.round(algorithm.init(torch.zeros(3, dtype=torch.float64), data.num_clients), batch,
                               GradientOracle(problem_of(data).model))
    assert torch.equal(state["x"], torch.zeros(1, 1, 3, dtype=torch.float64))  # one run: [R, 1, d]
    assert all(torch.equal(X, torch.zeros(1, 2, 3, dtype=torch.float64)) for X in batch.trace)


# ---- step sizes from S, K, T ---------------------------------------------------------------------------------


def test_theory_hyperparameters_by_hand() -> None:
    """S = 10, K = 5, T = 100, so SK = 50:
    Theorem 1: eta = 1 / (5 * 10) = 0.02; gamma = 50^(1/4) / 100^(3/4) = (5e-5)^(1/4) = 0.0840896415253715;
               beta = sqrt(50 / 100) = 0.7071067811865476.
    Theorem 2: eta = 1 / (5 * 100) = 0.002; gamma = beta = 50^(1/3) / 100^(2/3) = 0.005^(1/3) = 0.1709975946676697.
    Capped: T = 20 gives sqrt(50 / 20) = 1.58 > 1, so beta = 1; for -VR T = 5 gives gamma = (50 / 25)^(1/3) =
    2^(1/3) = 1.2599210498948732 (not capped) and beta = 1."""
    one = algorithms.theory_hyperparameters("padamfed", 10, 5, 100)
    assert one == pytest.approx({"eta": 0.02, "gamma": 0.0840896415253715, "beta": 0.7071067811865476}, rel=1e-12)
    two = algorithms.theory_hyperparameters("padamfed_vr", 10, 5, 100)
    assert two == pytest.approx({"eta": 0.002, "gamma": 0.1709975946676697, "beta": 0.1709975946676697}, rel=1e-12)
    assert algorithms.theory_hyperparameters("padamfed", 10, 5, 20)["beta"] == 1.0
    capped = algorithms.theory_hyperparameters("padamfed_vr", 10, 5, 5)
    assert capped["beta"] == 1.0 and capped["gamma"] == pytest.approx(1.2599210498948732, rel=1e-12)
    assert algorithms.theory_hyperparameters("padamfed", 10, 5, 100, multiplier=3.0)["eta"] == pytest.approx(0.06)


def test_factories_use_the_theorems_values_and_the_multiplier_scales_eta_only() -> None:
    made = algorithms.make("padamfed", clients_per_round=10, local_steps=5, rounds=100, multiplier=10.0)
    assert (made.eta, made.gamma, made.beta) == pytest.approx((0.2, 0.0840896415253715, 0.7071067811865476))
    assert (made.clients_per_round, made.local_steps, made.rounds, made.normalized) == (10, 5, 100, True)
    # one value overridden, the others from Theorem 2
    vr = algorithms.padamfed_vr(clients_per_round=10, local_steps=5, rounds=100, gamma=0.5)
    assert (vr.eta, vr.gamma, vr.beta, vr.variance_reduction) == pytest.approx((0.002, 0.5, 0.1709975946676697, 1))
    assert vr.name == "PAdaMFed-VR" and algorithms.make("scaffold_m_vr", **HAND_SET).name == "SCAFFOLD-M-VR"
    by_hand = algorithms.padamfed(eta=0.1, gamma=0.2, beta=0.3)
    assert (by_hand.eta, by_hand.gamma, by_hand.beta, by_hand.clients_per_round) == (0.1, 0.2, 0.3, None)


def test_rounds_must_match_the_sizes_the_step_sizes_were_computed_for(monkeypatch) -> None:
    """S, K and T are checked before any work, both ways (step sizes for T = 10 are wrong for 2 rounds too)."""
    data = least_squares()
    options = dict(local_steps=5, batch_size=4, progress=False, x0=torch.zeros(3, dtype=torch.float64))
    calls = []
    monkeypatch.setattr(GradientOracle, "__call__", lambda *a, **k: calls.append(1))  # no oracle call may happen
    for built, rounds, S, message in [
        ((4, 5, 10), 10, 3, r"computed for clients_per_round=4, local_steps=5, rounds=10, but the run has "
                            r"clients_per_round=3, local_steps=5, rounds=10"),
        ((3, 2, 10), 10, 3, r"computed for clients_per_round=3, local_steps=2.*local_steps=5"),
        ((3, 5, 2), 3, 3, r"computed for .*rounds=2, but the run has .*rounds=3"),  # too short: refused at once
        ((3, 5, 10), 2, 3, r"computed for .*rounds=10, but the run has .*rounds=2.*"
                           r"padamfed(_vr)?\(clients_per_round=3"),
    ]:
        built = dict(zip(("clients_per_round", "local_steps", "rounds"), built))
        for factory in (algorithms.padamfed, algorithms.padamfed_vr):
            with pytest.raises(ValueError, match=message):
                simulate(problem_of(data), factory(**built), rounds=rounds, clients_per_round=S, **options)
            with pytest.raises(ValueError, match=message):
                simulate_runs(problem_of(data), [factory(**built)], rounds=rounds, clients_per_round=S,
                              local_steps=5, batch_size=4, progress=False)
    assert calls == []
    monkeypatch.undo()
    simulate(problem_of(data), algorithms.padamfed(clients_per_round=3, local_steps=5, rounds=2), rounds=2,
             clients_per_round=3, **options)
    simulate(problem_of(data), algorithms.scaffold_m(eta=0.1, gamma=0.1, beta=0.5), rounds=3, clients_per_round=3,
             **options)


# ---- SCAFFOLD-M and SCAFFOLD -------------------------------------------------------------------------------


def test_scaffold_m_with_beta_one_is_scaffold_option_two() -> None:
    """beta = 1, gamma = eta K, c = c_i = 0 at the start: each client steps by eta (grad - c_i + c) and sets
    c_i to the mean of its K gradients (SCAFFOLD's option II computes the same from its move), and
    theta - gamma g_bar is the plain mean of the client models.  Partial participation, minibatches, equal sizes."""
    data = least_squares(num_clients=8, samples=12, seed=3)
    eta, K = 0.05, 4
    options = dict(rounds=6, clients_per_round=3, local_steps=K, batch_size=5, weighting="uniform", progress=False,
                   x0=torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64))
    scaffold = simulate(problem_of(data), algorithms.scaffold(client_lr=eta), **options).final_state
    ours = simulate(problem_of(data), algorithms.scaffold_m(eta=eta, gamma=eta * K, beta=1.0, initialization="zeros"),
                    **options).final_state
    for key in ("x", "c", "c_i"):
        torch.testing.assert_close(ours[key], scaffold[key], rtol=1e-10, atol=1e-12)
    assert bool((scaffold["c_i"].abs().sum(1) > 0).sum() >= 3)  # several clients have taken part
    default = simulate(problem_of(data), algorithms.scaffold_m(eta=eta, gamma=eta * K, beta=1.0), **options).final_state
    assert not torch.allclose(default["x"], scaffold["x"])  # the paper's initialization is not SCAFFOLD's


def test_without_normalization_the_momentum_is_the_mean_client_direction() -> None:
    """SCAFFOLD-M: line 16's g^t equals g_bar, the mean of the clients' directions (uniform weights), so
    g^t = (theta^t - theta^{t+1}) / gamma.  (Not for -VR: its STORM term has another mean.)"""
    data = least_squares()
    oracle = GradientOracle(problem_of(data).model)
    batches = two_rounds(data)
    batches = [dataclasses.replace(b, weights=torch.full((3,), 1 / 3, dtype=torch.float64)) for b in batches]
    algorithm = algorithms.scaffold_m(**HAND_SET)
    state = algorithm.init(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64), data.num_clients)
    for batch in batches:
        x, (state, _) = state["x"], algorithm.round(state, batch, oracle)
        torch.testing.assert_close(state["g"], (x - state["x"]) / HAND_SET["gamma"])


@pytest.mark.filterwarnings(NON_UNIFORM)
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_mean_direction_momentum_is_line_16_without_variance_reduction(variant: str) -> None:
    """Line 7 averaged over the K steps and the S clients is line 16 (an identity of the recursion), so
    ``server_momentum="mean_direction"`` changes nothing for PAdaMFed and SCAFFOLD-M; for the STORM direction the
    two differ (the mean of grad F(theta^{t-1}; xi) over the steps is not a c_i)."""
    data = least_squares()
    oracle = GradientOracle(problem_of(data).model)
    x0 = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    final = {}
    for momentum in ("line16", "mean_direction"):
        algorithm = algorithms.PAdaMFed(**HAND_SET, normalized=variant.startswith("padamfed"),
                                        variance_reduction=variant.endswith("_vr"), server_momentum=momentum)
        state = algorithm.init(x0, data.num_clients)
        for batch in two_rounds(data):
            state, _ = algorithm.round(state, batch, oracle)
        final[momentum] = state
    if variant.endswith("_vr"):
        assert not torch.allclose(final["line16"]["g"], final["mean_direction"]["g"], rtol=1e-3)
        assert not torch.allclose(final["line16"]["x"], final["mean_direction"]["x"], rtol=1e-6)
    else:
        for key in ("x", "g", "c"):
            torch.testing.assert_close(final["line16"][key], final["mean_direction"][key], rtol=1e-12, atol=1e-14)


# ---- convergence on the federated quadratic ---------------------------------------------------------------


def quadratic_run(algorithm, rounds: int, clients: int = 10) -> list[float]:
    """||theta^t - x*|| after every round: 10 clients, full batches, from x0 = 0 (||x0 - x*|| = 3.28)."""
    data = federated_quadratic(num_clients=10, dim=5, samples_per_client=20, heterogeneity=1.0, seed=0)
    errors = []
    simulate(problem_of(data), algorithm, rounds=rounds, clients_per_round=clients, local_steps=5, batch_size=20,
             progress=False, eval_every=rounds, x0=torch.zeros(5, dtype=torch.float64),
             callback=lambda t, state: errors.append(float((state["x"] - data.info["x_star"]).norm())))
    return errors


@pytest.mark.parametrize("variant", ["padamfed", "padamfed_vr"])
def test_padamfed_reaches_the_accuracy_its_normalized_step_allows(variant: str) -> None:
    """The server moves by gamma g_bar, and g_bar = (1/(eta S K)) sum_i (theta - theta_i,K) is a mean of K unit steps
    per client divided by K, so ||g_bar|| <= 1: each round moves at most gamma, whatever the gradient.  The iterates
    cannot settle at x*: once there they cycle with steps of at most gamma, so the accuracy is O(gamma), which with
    the theorems' gamma shrinks as T^(-3/4) (Theorem 1) or T^(-2/3) (Theorem 2).  Checked: over the last 10% of the
    rounds ||theta - x*|| <= gamma (measured: about 0.1 gamma for PAdaMFed, whose clients zig-zag at the optimum,
    0.5-0.8 gamma for -VR, whose eta = 1/(KT) is too short for a zig-zag), for T = 100 and 400; the error at T = 400
    is below the one at T = 100; and the last round still moves (by at most gamma): the normalization never stops."""
    tails = []
    for T in (100, 400):
        gamma = algorithms.theory_hyperparameters(variant, 10, 5, T)["gamma"]
        errors = quadratic_run(build(variant, clients_per_round=10, local_steps=5, rounds=T), T)
        assert errors[0] > 2.5  # still far after one round: it had to travel
        tail = max(errors[-T // 10:])
        assert tail <= gamma, f"{variant}, T={T}: ||theta - x*|| = {tail:.3g} > gamma = {gamma:.3g}"
        tails.append(tail)
    assert tails[1] < tails[0]


@pytest.mark.parametrize("variant", ["scaffold_m", "scaffold_m_vr"])
def test_scaffold_m_converges_to_the_optimum(variant: str) -> None:
    """Tuned eta, gamma, beta; no normalization, so x* is a fixed point it reaches (1e-9 after 300 rounds)."""
    errors = quadratic_run(build(variant, eta=0.1, gamma=0.5, beta=0.5), 200)
    assert errors[-1] < 1e-5 and errors[0] > 1.0


# ---- errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("factory", "kwargs", "error", "message"), [
    (algorithms.padamfed, dict(eta=-1.0, gamma=0.1, beta=0.5), ValueError, "eta=-1.0 must be > 0"),
    (algorithms.padamfed, dict(clients_per_round=10, local_steps=5), TypeError,
     r"got \['clients_per_round', 'local_steps'\] but not \['rounds'\]"),
    (algorithms.padamfed, dict(eta=0.1), TypeError, r"needs clients_per_round, .*missing \['gamma', 'beta'\]"),
    (algorithms.padamfed, dict(clients_per_round=10, local_steps=5, rounds=0), ValueError, "rounds=0 must be >= 1"),
    (algorithms.padamfed_vr, dict(clients_per_round=10.0, local_steps=5, rounds=9), TypeError,
     "clients_per_round=10.0 must be an int"),
    (algorithms.padamfed_vr, dict(clients_per_round=10, local_steps=5, rounds=9, multiplier=0), ValueError,
     "multiplier=0 must be > 0"),
    (algorithms.padamfed, dict(clients_per_round=10, local_steps=5, rounds=9, beta=2.0), ValueError,
     r"beta=2.0 not in \(0, 1\]"),
    (algorithms.scaffold_m, dict(eta=0.1, gamma=0.5, beta=0.0), ValueError, r"beta=0.0 not in \(0, 1\]"),
    (algorithms.scaffold_m, dict(eta=0.1, gamma=0.0, beta=0.5), ValueError, "gamma=0.0 must be > 0"),
    (algorithms.scaffold_m_vr, dict(eta=float("nan"), gamma=0.5, beta=0.5), ValueError, "eta=nan must be finite"),
    (algorithms.scaffold_m_vr, dict(eta=0.1, gamma=0.5, beta=0.5, initialization="random"), ValueError,
     r"initialization='random' not one of \['every_client', 'first_round', 'zeros'\]"),
    (algorithms.padamfed_vr, dict(eta=0.1, gamma=0.5, beta=0.5, server_momentum="storm"), ValueError,
     r"server_momentum='storm' not one of \['line16', 'mean_direction'\]"),
    (algorithms.PAdaMFed, dict(eta=0.1, gamma=0.1, beta=0.5, clients_per_round=3), TypeError,
     "local_steps=None must be an int"),
    (algorithms.theory_hyperparameters, dict(variant="fedavg", clients_per_round=1, local_steps=1, rounds=1),
     ValueError, r"variant='fedavg' not one of \['padamfed', 'padamfed_vr'\]"),
])
def test_bad_hyperparameters_name_the_argument(factory, kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        factory(**kwargs)


def test_make_names_unknown_and_missing_arguments() -> None:
    with pytest.raises(TypeError, match=r"make\('padamfed'\) got unknown argument\(s\) \['lr'\]"):
        algorithms.make("padamfed", lr=0.1)
    with pytest.raises(TypeError, match=r"make\('scaffold_m'\) needs argument\(s\) \['beta'\]"):
        algorithms.make("scaffold_m", eta=0.1, gamma=0.5)
    assert math.isclose(algorithms.make("padamfed_vr", clients_per_round=2, local_steps=2, rounds=4).eta, 1 / 8)


# ---- line 1 for every client ---------------------------------------------------------------------------------


def _after_line_1(variant: str, data, clients, initialization: str) -> dict:
    """The state after line 1 (the prologue) for a round-0 batch of ``clients``, K = 2 steps of B = 3."""
    generator = torch.Generator().manual_seed(0)
    rows = data.sample_indices(torch.tensor(clients), 2, 3, generator)
    weights = torch.full((len(clients),), 1 / len(clients), dtype=torch.float64)
    batch = RoundBatch(0, torch.tensor(clients), weights, rows, data.inputs, data.targets, data.num_clients,
                       sizes=data.sizes)
    algorithm = build(variant, **HAND_SET, initialization=initialization)
    x0 = torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64)
    return run_prologue(algorithm, algorithm.init(x0, data.num_clients), batch, GradientOracle(problem_of(data).model))


@pytest.mark.parametrize("variant", VARIANTS)
def test_line_1_for_every_client_is_each_clients_full_gradient_at_theta_0(variant) -> None:
    """``initialization="every_client"``: c_i^{-1} is client i's gradient at theta^0 on all its samples, for all N
    (not only the sampled ones), c^{-1} their mean (1/N, line 15's weighting) and g^{-1} = c^{-1}; computed here
    with the closed form A^T (A w - y) / n, client by client."""
    data = least_squares(num_clients=5, samples=7)
    state = _after_line_1(variant, data, [1, 3], "every_client")
    x0 = torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64)
    expected = torch.stack([gradient(x0, *data.client(i)[:2]) for i in range(data.num_clients)])
    torch.testing.assert_close(state["c_i"][0], expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(state["c"][0, 0], expected.mean(0), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(state["g"], state["c"], rtol=0, atol=0)
    first_round = _after_line_1(variant, data, [1, 3], "first_round")  # the others get c^{-1}: their rows agree
    assert torch.equal(first_round["c_i"][0, 0], first_round["c"][0, 0])
    assert not torch.allclose(first_round["c"], state["c"])  # 2 of 5 clients' minibatches vs all 5 clients


def test_line_1_for_every_client_equals_the_first_round_clients_when_they_are_everyone_on_all_their_data() -> None:
    """With every client sampled (S = N) and one local step of the whole client (B = n_i), the first round's
    clients compute exactly every client's full gradient: the two readings give the same run."""
    data = least_squares(num_clients=4, samples=6)
    settings = dict(rounds=3, clients_per_round=4, local_steps=1, batch_size=6, progress=False)
    problem = problem_of(data)  # one model: one theta^0
    runs = {init: simulate(problem, algorithms.padamfed(**HAND_SET, initialization=init), **settings)
            for init in ("every_client", "first_round")}
    torch.testing.assert_close(runs["every_client"].final_state["x"], runs["first_round"].final_state["x"],
                               rtol=1e-12, atol=1e-14)
    partial = dict(settings, clients_per_round=2)  # 2 of 4 clients: the readings part
    x = {init: simulate(problem, algorithms.padamfed(**HAND_SET, initialization=init), **partial)
         .final_state["x"] for init in ("every_client", "first_round")}
    assert not torch.allclose(x["every_client"], x["first_round"])


def test_line_1_for_every_client_runs_in_a_pass_of_several_runs_as_alone() -> None:
    """Runs batched in one pass (their own seeds and starts) equal each run alone: every client's gradient is
    taken at its own run's theta^0."""
    data = least_squares(num_clients=6, samples=5)
    settings = dict(rounds=2, clients_per_round=3, local_steps=2, batch_size=2, progress=False)
    algorithm = algorithms.padamfed_vr(**HAND_SET, initialization="every_client")
    problem = problem_of(data)
    starts = [torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64), torch.tensor([-1.0, 2.0, 0.1], dtype=torch.float64)]
    together = simulate_runs(problem, [algorithm] * 2, seeds=[0, 1], x0=starts, **settings)  # its own theta^0 each
    for seed, start, history in zip([0, 1], starts, together):
        alone = simulate(problem, algorithm, seed=seed, x0=start, **settings)
        torch.testing.assert_close(history.final_state["x"], alone.final_state["x"], rtol=1e-10, atol=1e-12)


def test_line_1_for_every_client_needs_the_clients_sizes() -> None:
    data = least_squares(num_clients=3, samples=4)
    inputs, targets = data.sample_batches(torch.tensor([0, 1]), 1, 2, torch.Generator().manual_seed(0))
    batch = RoundBatch.of(0, torch.tensor([0, 1]), torch.tensor([0.5, 0.5], dtype=torch.float64), inputs, targets,
                          data.num_clients)  # built by hand: no sizes
    algorithm = algorithms.padamfed(**HAND_SET, initialization="every_client")
    with pytest.raises(ValueError, match="batch.sizes is None"):
        algorithm.round(algorithm.init(torch.zeros(3, dtype=torch.float64), 3), batch,
                        GradientOracle(problem_of(data).model))
    with pytest.raises(ValueError, match="initialization='all' not one of"):
        algorithms.padamfed(**HAND_SET, initialization="all")


@pytest.mark.parametrize("group", [1, 2, 64])
def test_every_client_gradient_on_clients_of_different_sizes(group) -> None:
    """Clients of sizes 3, 5, 4, 5 (grouped by size, ``group`` at a time): each row is that client's closed-form
    gradient on its own rows, for each run's model."""
    from fedcore.algorithms.batch import every_client_gradient
    from fedcore.data import FederatedData

    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(17, 3, generator=generator, dtype=torch.float64)
    targets = torch.randn(17, generator=generator, dtype=torch.float64)
    data = FederatedData(inputs, targets, torch.tensor([3, 5, 4, 5]), inputs[:2], targets[:2], None, "uneven")
    X = torch.randn(2, 1, 3, generator=generator, dtype=torch.float64)  # two runs' models
    batch = RoundBatch(0, torch.tensor([[0, 2], [1, 3]]), torch.full((2, 2), 0.5, dtype=torch.float64),
                       data.sample_indices(torch.tensor([0, 2, 1, 3]), 1, 2).view(2, 2, 1, 2), data.inputs,
                       data.targets, data.num_clients, sizes=data.sizes)
    got = every_client_gradient(X, batch, GradientOracle(problem_of(data).model), group=group)
    for r in range(2):
        for i in range(4):
            torch.testing.assert_close(got[r, i], gradient(X[r, 0], *data.client(i)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_non_uniform_client_weights_warn(variant) -> None:
    """Line 13 with the simulator's weights and lines 15-16 with 1/N and 1/S agree only when the weights are
    uniform: weighting="samples" on clients of different sizes warns (once, in the first round); uniform weights,
    or samples on clients of one size, do not."""
    import warnings

    from fedcore.data import FederatedData

    generator = torch.Generator().manual_seed(2)
    inputs = torch.randn(18, 3, generator=generator, dtype=torch.float64)
    targets = torch.randn(18, generator=generator, dtype=torch.float64)
    uneven = FederatedData(inputs, targets, torch.tensor([3, 6, 4, 5]), inputs[:2], targets[:2], None, "uneven")
    even = least_squares(num_clients=4, samples=5)
    settings = dict(rounds=2, clients_per_round=3, local_steps=1, batch_size=2, progress=False)
    with pytest.warns(UserWarning, match="non-uniform client weights .* run with weighting='uniform'"):
        simulate(problem_of(uneven), build(variant, **HAND_SET), weighting="samples", **settings)
    for data, weighting in ((uneven, "uniform"), (even, "samples")):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            simulate(problem_of(data), build(variant, **HAND_SET), weighting=weighting, **settings)
