# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · Quickstart: federated optimization with fedcore
#
# This notebook is a tour of `fedcore`, the small library behind the paper notebooks:
#
# 1. what federated optimization is, the simulator's round loop, and the FedOpt update of Reddi et al. (ICLR 2021) beside
#    the code that implements it;
# 2. a federated data set: Fashion-MNIST dealt out to 20 clients with label skew;
# 3. three algorithms trained on it (FedAvg, FedAdam, SCAFFOLD) and compared;
# 4. an explorer: how a server optimizer moves the model on a 2-D problem you can see.
#
# Every number and figure below comes from `fedcore`; the notebook defines no training loop and no algorithm.
#
# **Parameters.** The next cell holds everything a reader may want to change. `SCALE` picks the size of the
# experiment: `smoke` (CI, well under a minute), `small` (a laptop CPU, minutes: what you see here), `medium` (as
# `small` here) or `paper` (a CNN and more rounds, for a GPU: pass `-p DEVICE cuda`). Rerun with papermill, e.g.
# `papermill 00_quickstart.ipynb out.ipynb -p SCALE smoke -p SEED 1`. Finished training runs are kept in a results
# store (`fedcore.store`), so a rerun with the same settings reads them back instead of training again;
# `-p STORE off` recomputes.

# %% tags=["parameters"]
import os

SCALE = os.environ.get("FEDCORE_SCALE", "small")  # smoke | small | medium (as small) | paper
DEVICE = "cpu"  # "cuda" on a GPU
SEED = 0  # data partition, model initialization, client sampling and minibatches
NUM_CLIENTS = 20
DIRICHLET_ALPHA = 0.5  # label skew: smaller is more heterogeneous
CLIENT_LR = 0.1  # eta_l, the same for every algorithm
FEDADAM_SERVER_LR = 0.01  # eta
FEDADAM_TAU = 1e-3  # tau, FedAdam's adaptivity
ROUNDS = None  # None: the scale's number of rounds
PROGRESS = False  # tqdm progress bars during training
STORE = os.environ.get("FEDCORE_STORE", "")  # results store: "" build/store.sqlite, "off" none, or a file path
FIGURES = os.environ.get("FEDCORE_FIGURES")  # a folder to save the figures into (None: don't save)
DECLARED = sorted(name for name in globals() if name.isupper())  # the parameters above

# %%
from fedcore.checks import check_notebook_parameters

check_notebook_parameters(globals(), DECLARED)  # a name given with papermill -p that is not above: stop

# %%
SCALES = {
    "smoke": {"model": ("logistic_regression", {}), "rounds": 5, "clients_per_round": 5, "local_steps": 5,
              "batch_size": 20, "eval_every": 1},
    "small": {"model": ("mlp", {"hidden": (100,)}), "rounds": 150, "clients_per_round": 10, "local_steps": 10,
              "batch_size": 32, "eval_every": 5},
    "paper": {"model": ("cnn", {}), "rounds": 500, "clients_per_round": 10, "local_steps": 20,
              "batch_size": 32, "eval_every": 10},
}
SCALES["medium"] = SCALES["small"]  # nothing here needs more than small
if SCALE not in SCALES:
    raise ValueError(f"SCALE={SCALE!r} not one of {list(SCALES)} (set it with FEDCORE_SCALE or papermill -p SCALE)")
settings = dict(SCALES[SCALE], **({"rounds": ROUNDS} if ROUNDS else {}))
model_name, model_options = settings.pop("model")
print(f"SCALE={SCALE}: model={model_name!r}, model options={model_options}, {settings}")

# %%
import inspect

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

import fedcore
import fedcore.engine.loop
from fedcore import explore, plots, toy
from fedcore.store import default_store
from papers.figures import MetricsDisplay

# %% [markdown]
# ## 1. Federated optimization
#
# $N$ clients each hold their own data $\mathcal D_i$ and never share it. Together they minimize
#
# $$\min_{x \in \mathbb R^d} f(x) = \sum_{i=1}^N p_i f_i(x), \qquad f_i(x) = \mathbb E_{\xi \sim \mathcal D_i} F(x; \xi),
# \qquad p_i = n_i / n .$$
#
# A server holds the model $x_t$. In round $t$ it sends $x_t$ to a sample $\mathcal S_t$ of $S$ clients; each
# client takes $K$ local steps of SGD from it, $x_{i,k+1} = x_{i,k} - \eta_l\, g_i(x_{i,k})$ with $x_{i,0} = x_t$,
# and sends back how far it moved. The server averages the moves into a **pseudo-gradient**
#
# $$\Delta_t = \sum_{i \in \mathcal S_t} w_i \,(x_{i,K} - x_t), \qquad w_i = n_i \big/ \textstyle\sum_{j \in \mathcal S_t} n_j ,$$
#
# and treats it like a (negative) gradient for a **server optimizer**. FedAvg (McMahan et al. 2017) simply takes
# the step, $x_{t+1} = x_t + \eta\, \Delta_t$ with $\eta = 1$. Reddi et al., *Adaptive Federated Optimization*
# (ICLR 2021, Algorithm 2) give the server the memory of an adaptive optimizer: with $m_{-1} = 0$,
# $v_{-1} = \tau^2$ and squares taken per coordinate,
#
# $$
# \begin{aligned}
# m_t &= \beta_1 m_{t-1} + (1 - \beta_1)\, \Delta_t \\
# v_t &= v_{t-1} + \Delta_t^2 && \text{FedAdagrad} \\
# v_t &= v_{t-1} - (1 - \beta_2)\, \Delta_t^2 \operatorname{sign}(v_{t-1} - \Delta_t^2) && \text{FedYogi} \\
# v_t &= \beta_2 v_{t-1} + (1 - \beta_2)\, \Delta_t^2 && \text{FedAdam} \\
# x_{t+1} &= x_t + \eta\, \frac{m_t}{\sqrt{v_t} + \tau}
# \end{aligned}
# $$
#
# $\tau$ sets how adaptive the step is: for $\tau \gg \sqrt{v_t}$ it is momentum SGD with step $\eta / \tau$;
# for small $\tau$ each coordinate moves by about $\eta$, whatever the size of its gradient.
#
# In `fedcore` the server optimizers are frozen dataclasses of their hyperparameters with `init` and `update`,
# acting on flat vectors, written as the paper writes them. This is the code, as committed, behind those five lines:

# %%
print(inspect.getsource(fedcore.server_opt.Adaptive))

# %% [markdown]
# Every algorithm runs inside one loop, the first code of fedcore worth reading: each round it samples every run's
# clients and their minibatches (each run from its own random streams), runs one federated round (the algorithm's
# clients' part, then its server's part), stops a run whose loss or model goes bad (that run keeps the round
# before), evaluates and records the new models, and appends a row to each run's history. It runs R runs at once
# (R = 1 for `fedcore.simulate`; a sweep puts runs that differ only in their hyperparameters' values in one pass):

# %%
print(inspect.getsource(fedcore.engine.loop.run_pass))

# %% [markdown]
# and one round of FedOpt (Algorithm 1), written as the clients' part and the server's part (the same two parts
# run in different processes on Flower's engine, `fedcore.flower`): $K$ local steps on all sampled clients at once,
# as a matrix $X \in \mathbb R^{S \times d}$ (`train_clients`, the client loop every algorithm shares, here with the
# client rule "SGD with step $\eta_l$"), then the pseudo-gradient and the server step (`server_step`; the round's training loss, the clients' mean losses weighted, is added by the framework, `fedcore.algorithms.contract`). FedAvg,
# FedAdam and friends are this one class with a different server optimizer; other families plug another client
# rule into the same loop (`fedcore.algorithms.client`):

# %%
print(inspect.getsource(fedcore.algorithms.FedOpt.client_run))
print(inspect.getsource(fedcore.algorithms.FedOpt.server_round))
print(inspect.getsource(fedcore.algorithms.client.train_clients))
print(inspect.getsource(fedcore.algorithms.server_step))

# %% [markdown]
# ## 2. A federated data set
#
# Fashion-MNIST (60,000 training images of 10 kinds of clothing) split among 20 clients by a Dirichlet(0.5)
# draw over labels (Hsu et al. 2019): each class is dealt out in proportions drawn from
# $\mathrm{Dir}(\alpha)$, so a client holds a few classes in bulk and others barely or not at all. The
# test set (10,000 images) stays whole, on the server. All client data sits in one tensor and is gathered by
# index each round.

# %%
data = fedcore.data.load_fashion_mnist(NUM_CLIENTS, "dirichlet", SEED, alpha=DIRICHLET_ALPHA, device=DEVICE)
print(data)

# %% [markdown]
# The split is the same for every run with the same seed (this cell's output is checked by the tests):

# %%
# NBVAL_CHECK_OUTPUT
counts = pd.DataFrame(data.label_counts().cpu().numpy(), columns=data.info["class_names"]).rename_axis("client")
summary = pd.DataFrame({
    "samples": counts.sum(axis=1),
    "labels with >= 5%": (counts.div(counts.sum(axis=1), axis=0) >= 0.05).sum(axis=1),
    "largest label share": (counts.max(axis=1) / counts.sum(axis=1)).round(2),
})
print(summary.to_string())

# %%
ax = plots.label_distribution(data)
plots.savefig(ax.figure, "00_label_distribution.png", FIGURES)

# %% [markdown]
# ## 3. FedAvg, FedAdam and SCAFFOLD
#
# Three algorithms, one model and one budget: the same client learning rate $\eta_l$, the same clients sampled
# in the same rounds and the same minibatches (all runs share `SEED`).
#
# - **FedAvg**: $x_{t+1} = x_t + \Delta_t$.
# - **FedAdam**: the adaptive server step above, with $\beta_1 = 0.9$, $\beta_2 = 0.99$.
# - **SCAFFOLD** (Karimireddy et al., ICML 2020): each client corrects its local gradient by control variates,
#   $g_i(y) - c_i + c$, to cancel the drift of its local steps toward its own optimum; the server takes the FedAvg step.
#
# `smoke` trains a logistic regression, `small` and `medium` (the same) a one-hidden-layer MLP, on the CPU; `paper`
# trains Reddi et al.'s CNN.

# %%
model = fedcore.models.make(model_name, (1, 28, 28), data.num_classes, seed=SEED, **model_options)
problem = fedcore.Problem(data, model)
algorithms = {
    "FedAvg": fedcore.algorithms.fedavg(CLIENT_LR),
    "FedAdam": fedcore.algorithms.fedadam(CLIENT_LR, server_lr=FEDADAM_SERVER_LR, tau=FEDADAM_TAU),
    "SCAFFOLD": fedcore.algorithms.scaffold(CLIENT_LR),
}
print(problem)

# %% [markdown]
# The first gradient a Python process computes pays a one-time start-up cost (torch initializes itself and
# prepares the batched `vmap` gradient): a second or two, which would land in the first run's time.
# `fedcore.warm_up` pays it on two samples, before the runs, so that their `seconds` compare:

# %%
print(f"one-time start-up cost, paid before the runs: {fedcore.warm_up(problem):.1f} s")

# %%
histories = {
    name: fedcore.simulate(problem, algorithm, **settings, seed=SEED, progress=PROGRESS, store=default_store(STORE))
    for name, algorithm in algorithms.items()
}

# %%
curves = MetricsDisplay.from_results({"Fashion-MNIST": {name: [run] for name, run in histories.items()}}, {
    "test accuracy": {"metric": "test_accuracy"}, "train loss": {"metric": "train_loss", "logy": True}})
plots.savefig(curves.plot(width=7, height=3).figure_, "00_fedavg_fedadam_scaffold.png", FIGURES)

# %%
pd.DataFrame({
    name: {
        "final test accuracy": history.final("test_accuracy"),
        "best test accuracy": history.frame["test_accuracy"].max(),
        "final test loss": history.final("test_loss"),
        "seconds": history.frame["seconds"].sum(),
    }
    for name, history in histories.items()
}).T.round(4)

# %% [markdown]
# What to read into this: at `small` scale (an MLP, 150 rounds, 10 of 20 clients per round) all three learn
# Fashion-MNIST to within a few points of each other, and none is tuned: one $\eta_l$ for all, FedAdam's
# $\eta$ and $\tau$ picked once. Reddi et al. tune every method's learning rates on a grid before comparing;
# `01_fedopt` does that. The train loss is the mean client loss during local steps, so it is noisy from round
# to round (other clients, other batches). `seconds` is the simulator's wall time for the run, start-up cost
# excluded (a run read back from the results store shows the time it took when it was computed).

# %% [markdown]
# ## 4. Explorer: what the server optimizer does
#
# A 2-D federated least-squares problem (`fedcore.toy`): 10 clients share one design matrix but have different
# targets, so their optima differ while their Hessians agree. Its loss is a tilted valley
# ($f(x) - f^* = \tfrac12 (x - x^*)^\top H (x - x^*)$, condition number 9.5) whose floor runs along the diagonal.
# Every round all clients take 5 full-batch steps with $\eta_l = 0.1$, and the server applies the chosen
# optimizer to $\Delta_t$: the run is deterministic, and you see every server model $x_t$.
#
# The left panel draws the path $x_0, x_1, \dots$ over the contours of $f$; the right one the loss gap against
# rounds, beside FedAvg (server SGD with $\eta = 1$) in grey. This is `fedcore.explore.explore_server_optimizer`
# with fixed values:

# %%
explore.explore_server_optimizer("adam", server_lr=0.1, tau=1e-3, beta1=0.9)
plots.savefig(plt.gcf(), "00_server_optimizer_adam.png", FIGURES)

# %% [markdown]
# The same function behind sliders (run the notebook live to move them); the sliders an optimizer does not
# use are greyed out (`fedcore.explore.disable_unused`). `sgd` uses only $\eta$; `sgdm`
# (FedAvgM) takes $\beta_1$ as its momentum $\beta$; `adagrad`, `adam` and `yogi` use $\eta$, $\beta_1$ and
# $\tau$; `amsgrad` (FedAMS) has no $\tau$ but a floor $\varepsilon$ under $\hat v_t$ and gets
# $\varepsilon = \tau^2$. Things to try:
#
# - `adam` with $\tau$ from $10^{-5}$ up to $1$: small $\tau$ makes a sign-like step of size about $\eta$ that
#   ends in a ring around $x^*$; large $\tau$ turns it into momentum SGD with step $\eta / \tau$;
# - `sgd` with $\eta$ from 1 to 3: a server step longer than FedAvg's extrapolates the clients' move; it is
#   fastest near $\eta = 2$ and diverges beyond about $\eta = 2.8$;
# - `sgdm` with $\beta_1 = 0.9$ against $0.5$: momentum overshoots along the steep direction of the valley.

# %%
explorer = widgets.interactive(
    explore.explore_server_optimizer,
    optimizer=widgets.Dropdown(options=toy.SERVER_OPTIMIZERS, value="adam", description="optimizer"),
    server_lr=widgets.FloatLogSlider(value=0.1, base=10, min=-3, max=1, step=0.1, description="η (server lr)"),
    tau=widgets.FloatLogSlider(value=1e-3, base=10, min=-5, max=0, step=0.25, description="τ"),
    beta1=widgets.FloatSlider(value=0.9, min=0.0, max=0.99, step=0.01, description="β₁"),
    rounds=widgets.fixed(50),
    reference=widgets.fixed(True),
)
display(explore.disable_unused(explorer, toy.SLIDERS_USED))

# %% [markdown]
# ## Where next
#
# - `01_fedopt` reproduces what can be reproduced here of Reddi et al.'s comparison of FedAvg, FedAvgM,
#   FedAdagrad, FedAdam and FedYogi, puts their convergence rate to the test, and maps how easy each is to tune;
# - `04_fafed` takes the same tools to a faster adaptive federated method (Wu et al., AAAI 2023): why
#   adaptive steps on the clients can diverge, and the shared preconditioner that fixes it;
# - `02_padamfed` asks whether step sizes can be chosen without knowing the problem's constants (Yan et al.,
#   ICLR 2025): normalized local steps, control variates and a shared momentum, untuned against tuned baselines;
# - `03_fedli` tests FedLi's claims: Armijo line-search clients whose descent should carry over to the server,
#   a server that computes its own step, and where local descent stops being global descent.
#
# In your own code: `fedcore.simulate(fedcore.Problem(data, model), fedcore.algorithms.make("fedyogi", client_lr=0.1),
# rounds=..., clients_per_round=..., local_steps=..., batch_size=...)` returns a `History`, whose `.frame` is a
# pandas table with one row per round.
