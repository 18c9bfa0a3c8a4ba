"""Each server optimizer against its update rule written out independently (numpy, float64)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedcore import server_opt


def reference(rule: str, deltas: np.ndarray, lr: float, beta1: float = 0.9, beta2: float = 0.99,
              tau: float = 1e-3, bias: str = "none", inside: bool = False, v0: str = "tau^2",
              beta: float = 0.9, eps: float = 1e-6) -> np.ndarray:
    """The rules of Reddi et al. (2021, Alg. 2), FedAvgM and FedAMS, one line each, in numpy."""
    m = np.zeros(deltas.shape[1])
    v = np.full(deltas.shape[1], tau**2 if v0 == "tau^2" else 0.0)
    v_hat = np.full(deltas.shape[1], eps)
    x, path = np.zeros(deltas.shape[1]), []
    for t, d in enumerate(deltas, start=1):
        if rule == "sgd":
            x = x + lr * d
        elif rule == "sgdm":
            m = beta * m + d
            x = x + lr * m
        elif rule == "amsgrad":
            m = beta1 * m + (1 - beta1) * d
            v = beta2 * v + (1 - beta2) * d**2
            v_hat = np.maximum(v_hat, v)
            x = x + lr * m / np.sqrt(v_hat)
        else:
            m = beta1 * m + (1 - beta1) * d
            if rule == "adagrad":
                v = v + d**2
            elif rule == "adam":
                v = beta2 * v + (1 - beta2) * d**2
            elif rule == "yogi":
                v = v - (1 - beta2) * d**2 * np.sign(v - d**2)
            s = t + 1 if bias == "flower" else t
            b2 = 0.0 if rule == "adagrad" else beta2
            eta = lr if bias == "none" else lr * np.sqrt(1 - b2**s) / (1 - beta1**s)
            x = x + eta * m / (np.sqrt(v + tau) if inside else np.sqrt(v) + tau)
        path.append(x.copy())
    return np.array(path)


def run(optimizer: server_opt.ServerOptimizer, deltas: np.ndarray) -> np.ndarray:
    x = torch.zeros(deltas.shape[1], dtype=torch.float64)
    state, path = optimizer.init(x), []
    for d in deltas:
        step, state = optimizer.update(torch.from_numpy(d), state)
        x = x + step
        path.append(x.numpy().copy())
    return np.array(path)


DELTAS = np.random.default_rng(0).normal(size=(12, 7)) * np.array([1e-4, 1e-3, 0.01, 0.1, 1, 3, 10])

CASES = [
    ("sgd", dict(lr=0.7), {}),
    ("sgdm", dict(lr=0.5, beta=0.8), dict(beta=0.8)),
    ("adagrad", dict(lr=0.1), {}),
    ("adagrad", dict(lr=0.1, beta1=0.0), dict(beta1=0.0)),  # Flower/Keras: no momentum
    ("adam", dict(lr=0.03), {}),
    ("yogi", dict(lr=0.03), {}),
    ("adam", dict(lr=0.03, bias_correction="keras"), dict(bias="keras")),
    ("adam", dict(lr=0.03, bias_correction="flower", initial_v="zero"), dict(bias="flower", v0="zero")),
    ("adagrad", dict(lr=0.1, tau_inside_sqrt=True), dict(inside=True)),  # TFF's Adagrad
    ("yogi", dict(lr=0.03, initial_v="zero", tau=1e-2), dict(v0="zero", tau=1e-2)),
    ("yogi", dict(lr=0.03, bias_correction="keras", tau_inside_sqrt=True), dict(bias="keras", inside=True)),
    ("amsgrad", dict(lr=0.02), dict(v0="zero")),  # FedAMS: v_{-1} = 0, v_hat_{-1} = eps
]


@pytest.mark.parametrize("rule, kwargs, ref_kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_independent_formula(rule: str, kwargs: dict, ref_kwargs: dict) -> None:
    ours = run(server_opt.make(rule, **kwargs), DELTAS)
    theirs = reference(rule, DELTAS, kwargs["lr"], **ref_kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def test_first_fedadam_step_by_hand() -> None:
    """m = 0.1 * 1; v = 0.99 * 1e-6 + 0.01 * 1 = 0.01000099; step = 0.1 * 0.1 / (sqrt(v) + 1e-3).
    sqrt(0.01000099) = 0.1000049498775..., so step = 0.01 / 0.1010049498775 = 0.09900505..."""
    step, _ = server_opt.adam(lr=0.1).update(torch.ones(1, dtype=torch.float64),
                                             server_opt.adam(lr=0.1).init(torch.zeros(1, dtype=torch.float64)))
    assert float(step) == pytest.approx(0.01 / (0.01000099**0.5 + 1e-3), rel=1e-12)
    assert float(step) == pytest.approx(0.0990050, abs=1e-7)


def test_options_change_the_step() -> None:
    """Each option of the adaptive family is live: switching it changes the second step."""
    base = run(server_opt.adam(lr=0.1), DELTAS[:2])
    for option in (dict(bias_correction="keras"), dict(tau_inside_sqrt=True), dict(initial_v="zero")):
        assert not np.allclose(run(server_opt.adam(lr=0.1, **option), DELTAS[:2]), base), option
    keras = run(server_opt.adam(lr=0.1, bias_correction="keras"), DELTAS[:2])
    flower = run(server_opt.adam(lr=0.1, bias_correction="flower"), DELTAS[:2])
    assert not np.allclose(keras, flower)


def test_state_is_tensors_only() -> None:
    """Server state must checkpoint with torch.save(weights_only load)."""
    for name in server_opt.SERVER_OPTIMIZERS:
        optimizer = server_opt.make(name)
        state = optimizer.init(torch.zeros(3))
        _, state = optimizer.update(torch.ones(3), state)
        assert all(isinstance(v, torch.Tensor) for v in state.values()), name


@pytest.mark.parametrize("rule", ["adagrad", "adam", "yogi"])
def test_reported_ratio_is_the_median_of_sqrt_v_over_tau_and_changes_no_step(rule: str) -> None:
    """``report=True``: each round's state holds the geometric mean over j of ``sqrt(v_t,j) / tau`` and the geometric
    sd of the denominators, v_t by the numpy rule above; the steps are those of the rule without them, and the
    rule's name shows the report only when it is on."""
    tau, x = 1e-2, torch.zeros(DELTAS.shape[1], dtype=torch.float64)
    plain, reporting = server_opt.make(rule, lr=0.1, tau=tau), server_opt.make(rule, lr=0.1, tau=tau, report=True)
    assert reporting.reports == ("sqrt_v_over_tau", "denominator_spread") and plain.reports == ()
    assert reporting.report is True and plain.report is False and "report" not in plain.name
    v = np.full(DELTAS.shape[1], tau**2)
    state_plain, state = plain.init(x), reporting.init(x)
    assert float(state["sqrt_v_over_tau"]) == pytest.approx(1.0)  # v_{-1} = tau^2: every denominator 2 tau
    assert float(state["denominator_spread"]) == pytest.approx(1.0)
    for d in DELTAS:
        v = {"adagrad": v + d**2, "adam": 0.99 * v + 0.01 * d**2, "yogi": v - 0.01 * d**2 * np.sign(v - d**2)}[rule]
        step_plain, state_plain = plain.update(torch.from_numpy(d), state_plain)
        step, state = reporting.update(torch.from_numpy(d), state)
        assert torch.equal(step, step_plain)
        assert float(state["sqrt_v_over_tau"]) == pytest.approx(np.prod(np.sqrt(v) / tau) ** (1 / len(v)), rel=1e-10)
        # the geometric sd (n - 1 in the sd, torch's default) of sqrt(v) + tau
        assert float(state["denominator_spread"]) == pytest.approx(np.exp(np.log(np.sqrt(v) + tau).std(ddof=1)),
                                                                   rel=1e-10)
    with pytest.raises(TypeError, match="report='yes' must be True or False"):
        server_opt.adam(report="yes")


def test_a_reporting_run_records_the_ratio_alone_and_in_a_pass() -> None:
    """``fedadam(..., report=True)``: the history gains the column, the model's path is the run without it; a pass of
    two server rates reports each run's own ratio, as each run alone does."""
    from fedcore import algorithms, objectives
    from fedcore.run import simulate, simulate_runs

    problem = objectives.quadratic_task(num_clients=6, dim=4, samples_per_client=10).problem
    settings = dict(rounds=4, clients_per_round=3, local_steps=2, batch_size=4, progress=False)
    plain = simulate(problem, algorithms.fedadam(0.1, server_lr=0.03), seed=1, **settings)
    alone = simulate(problem, algorithms.fedadam(0.1, server_lr=0.03, report=True), seed=1, **settings)
    assert {"sqrt_v_over_tau", "denominator_spread"} <= set(alone.frame) and "sqrt_v_over_tau" not in plain.frame
    assert torch.equal(alone.final_state["x"], plain.final_state["x"])
    ratios = alone.frame["sqrt_v_over_tau"].dropna()
    assert len(ratios) == 4 and (ratios > 0).all()
    pair = simulate_runs(problem, [algorithms.fedadam(0.1, server_lr=lr, report=True) for lr in (0.03, 0.3)],
                         seeds=(1, 1), batch=2, **settings)
    other = simulate(problem, algorithms.fedadam(0.1, server_lr=0.3, report=True), seed=1, **settings)
    np.testing.assert_allclose(pair[0].frame["sqrt_v_over_tau"].dropna(), ratios, rtol=1e-5)
    np.testing.assert_allclose(pair[1].frame["sqrt_v_over_tau"].dropna(), other.frame["sqrt_v_over_tau"].dropna(),
                               rtol=1e-5)
