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
# # 01 · Adaptive Federated Optimization (Reddi, Charles, Zaheer, Garrett, Rush, Konečný, Kumar & McMahan, ICLR 2021)
#
# FedAvg averages what the clients learned and takes that average as the new model. Reddi et al. read the
# average move as a **pseudo-gradient** and give the server an optimizer of its own: momentum (FedAvgM) or an
# adaptive one, Adagrad, Adam or Yogi (FedAdagrad, FedAdam, FedYogi). They prove that FedAdagrad and FedAdam
# reach a stationary point at the rate $O(1/\sqrt{mKT})$ and report, on seven tasks, that the adaptive servers match
# or beat FedAvg and are easier to tune.
#
# This notebook:
#
# 1. states the algorithms beside the fedcore code that runs them, and puts the convergence rate to the
#    test on a federated least-squares problem;
# 2. shows that "FedAdam" is not one optimizer: the paper, the authors' code, Flower and TFF differ;
# 3. runs the rows of Table 1 that can run here, on stand-in data where the paper's is not reachable;
# 4. reruns Table 11: centralized training against federated, a constant client learning rate against ExpDecay;
# 5. measures the claim that adaptive methods are easier to tune (Figures 2 and 6) on learning-rate grids;
# 6. lets you move the learning rates of a live run;
# 7. sets the paper's claims beside our results, with verdicts, and says what differs.
#
# **Parameters.** `SCALE` is `smoke` (CI, about a minute), `small` (a 2-core CPU, at most 15 minutes: what you
# see here) or `paper` (the paper's settings, for a GPU and the original data). Rerun with, e.g.,
# `papermill 01_fedopt.ipynb out.ipynb -p SCALE small -p SEED 1`. Finished runs are kept in the results store
# (`fedcore.store`), so a rerun recomputes only what changed; `-p STORE off` recomputes everything.

# %% tags=["parameters"]
import os

SCALE = os.environ.get("FEDCORE_SCALE", "small")  # smoke | small | paper
DEVICE = "cpu"  # "cuda" on a GPU
SEED = 0  # data partition, model initialization, client sampling and minibatches
TAU = 1e-3  # tau of the learning-rate heat maps (the paper's Figures 2 and 6)
TAUS = [1e-3, 1e-2, 1e-1]  # the taus whose grids the tuning explorer offers (TAU is added if missing)
PROGRESS = False  # tqdm progress bars during training
STORE = os.environ.get("FEDCORE_STORE", "")  # results store: "" build/store.sqlite, "off" none, or a file path
FIGURES = os.environ.get("FEDCORE_FIGURES")  # a folder to save the figures into (None: don't save)
DECLARED = sorted(name for name in globals() if name.isupper())  # the parameters above

# %%
from fedcore.checks import check_notebook_parameters

check_notebook_parameters(globals(), DECLARED)  # a name given with papermill -p that is not above: stop

# %%
import inspect

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

import fedcore
from fedcore import explore, objectives, plots, server_opt
from fedcore.experiments import common
from fedcore.experiments.fedopt import experiment, figures, paper, theory, tuning
from fedcore.store import default_store

store = default_store(STORE)
plt.rcParams["figure.dpi"] = 80  # many figures: keeps the committed notebook under 1 MB
print(f"SCALE={SCALE}: {experiment.SCALES[SCALE]}")

# %% [markdown]
# ## 1. The algorithms and what is proved
#
# $N$ clients hold their own data; in round $t$ the server sends $x_t$ to $m$ sampled clients, each takes
# $K$ steps of SGD with the client learning rate $\eta_l$ from it, and the server forms the pseudo-gradient
# $\Delta_t = \sum_i w_i (x^i_{t,K} - x_t)$ (Algorithm 1, FedOpt). It then runs a server optimizer on
# $\Delta_t$ with the server learning rate $\eta$ (Algorithm 2, with $m_{-1} = 0$, $v_{-1} = \tau^2$, squares
# per coordinate):
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
# FedAvg is $x_{t+1} = x_t + \eta \Delta_t$ ($\eta = 1$: McMahan et al.), FedAvgM adds server momentum
# $m_t = \beta m_{t-1} + \Delta_t$. Two details of the text, and what fedcore does: the slides print the last
# line as $x_t + \eta\, m_t / \sqrt{v_t + \tau}$, the paper as $\sqrt{v_t} + \tau$ (fedcore's default;
# `tau_inside_sqrt=True` gives the slides'); and the paper averages the clients' updates with $1/|S|$, where
# fedcore weights each client by its number of samples (`weighting="samples"`; `"uniform"` is the paper's
# $1/|S|$): the same on the Table 1 stand-ins of Fashion-MNIST, whose clients hold 120 images each, not on
# Shakespeare's roles, which differ in length, nor on the 20-client live task of sections 2, 5 and 6 (a
# Dirichlet split, whose clients differ in size). In fedcore one class runs all five (`fedcore.algorithms.FedOpt`: the shared
# client loop, then the server optimizer), and the server rule is the paper's lines:

# %%
print(inspect.getsource(fedcore.algorithms.FedOpt.round))
print(inspect.getsource(server_opt._adaptive))

# %% [markdown]
# The three adaptive methods differ in one line only, the second moment $v_t$ (Adagrad, Adam, Yogi, in that
# order), and FedAvgM is plain server momentum (`sgdm`):

# %%
for rule in (server_opt._adagrad_v, server_opt._adam_v, server_opt._yogi_v, server_opt.sgdm):
    print(inspect.getsource(rule))

# %% [markdown]
# **What is proved** (Theorems 1-2, Corollaries 1-2, for $L$-smooth non-convex $f$ with gradients bounded by
# $G$, local variance $\sigma_l^2$ and global (client) variance $\sigma_g^2$): with
# $\eta_l = \Theta\big(1 / (K L \sqrt T)\big)$, $\eta = \Theta(\sqrt{K m})$ and $\tau = G / L$, FedAdagrad
# (Corollary 1) and FedAdam (Corollary 2) satisfy, as the slides print it, with
# $\sigma^2 = \sigma_l^2 + 6 K \sigma_g^2$ (Theorem 1), $m$ clients per round, $K$ local steps, $T$ rounds:
#
# $$\min_{0 \le t < T} \mathbb E \|\nabla f(x_t)\|^2 \;=\; O\!\left(
# \frac{f(x_0) - f(x^*)}{\sqrt{m K T}} + \frac{2 \sigma_l^2 L}{G^2 \sqrt{m K T}} + \frac{\sigma^2}{G K T}
# + \frac{\sigma^2 L \sqrt m}{G^2 \sqrt{K T}^{\,3/2}} \right).$$
#
# (The slides' $\sqrt{KT}^{\,3/2}$ can be read as $\sqrt K\, T^{3/2}$ or as $(KT)^{3/4}$; what follows holds for
# either.) The first two terms are the headline rate $1/\sqrt{m K T}$: they fall as $-1/2$ in each of $m$, $K$,
# $T$ on log-log axes. The other two do not follow it. The third, $\sigma_l^2/(G K T) + 6 \sigma_g^2/(G T)$,
# does not depend on $m$, and its client-variance part does not fall with $K$. The fourth grows as $\sqrt m$
# (all of $\sigma^2$, whatever the variances), and its $6 K \sigma_g^2$ part grows with $K$. So the full $-1/2$
# in $T$ holds once $T$ is large enough for the first two terms to dominate; in $K$ the speed-up fades as the
# client variance $\sigma_g^2$ grows; in $m$ the bound promises less than $-1/2$ at any fixed $T$. One more
# caution: the slides define $m$ as the total number of clients (the analysis has every client in every
# round); below $m$ is the number sampled of 50, which adds a sampling noise the bound does not contain. The
# second takeaway: the client rate must shrink as $1/(K\sqrt T)$ while the server rate grows as $\sqrt{Km}$,
# so the two trade off.
#
# We check the first on a least-squares federation with a known gradient (`fedcore.objectives.quadratic_task`:
# 50 clients with their own designs and optima, noisy targets, minibatches of 4): each method at exactly the
# corollaries' rates, and the average of $\|\nabla f(x_t)\|^2$ over the $T$ rounds (which bounds the minimum),
# varying $T$, $m$ and $K$ in turn from $T = 200$, $m = 10$, $K = 5$, two seeds each, with the clients' optima
# spread by heterogeneity 1 (each client's optimum is a common centre plus 1 times a standard normal vector).
# Three methods (with $\beta_1 = 0.9$, the paper's experiments' value): FedAdam (Corollary 2), FedAdagrad
# (Corollary 1), and FedAvgM with the server rate at which its step equals FedAdam's first one (why: below).

# %%
task = objectives.quadratic_task()
ranges = {"rounds": [25, 50, 100, 200, 400, 800], "clients_per_round": [2, 5, 10, 25, 50],
          "local_steps": [1, 2, 5, 10, 20]}
if SCALE == "smoke":
    ranges = {name: values[:3] for name, values in ranges.items()}
by_method = {method: {theory.VARIED[name]: theory.scaling(task, name, values, seeds=(0, 1), store=store,
                                                           method=method) for name, values in ranges.items()}
             for method in theory.METHODS}
tables = by_method["FedAdam"]
scaling = figures.ScalingDisplay.from_tables(by_method).plot()
plots.savefig(scaling.figure_, "01_corollary_scaling.png", FIGURES)
scaling.slopes.round(3).rename_axis("fitted exponent")

# %% [markdown]
# The rate's $-1/2$ is the exponent of an upper bound, and of its first two terms only; the other two (above)
# predict less in $m$ and $K$ at a fixed $T$. FedAdam's slopes measured against the rate:

# %%
for name, slope in scaling.slopes.loc["FedAdam"].items():
    falls = bool((tables[name]["mean squared gradient norm"].diff().dropna() < 0).all())
    print(f"{name}: slope {slope:+.2f}, {'at least as steep as' if slope <= -0.5 else 'flatter than'} the rate's -0.5; "
          f"{'falls at every step' if falls else 'does not fall at every step (it rises somewhere)'}")

# %% [markdown]
# Why FedAvgM sits beside FedAdam: at these rates a client moves by at most $K \eta_l G = \tau / \sqrt T$ per
# coordinate, so the floor $\tau = G/L$ is large next to the pseudo-gradients, FedAdam's $v_t$ (which starts at
# $\tau^2$) stays below $\tau^2$, and its denominator $\sqrt{v_t} + \tau$ within $[\tau, 2\tau]$: its step is
# FedAvgM's with server rate $\eta (1 - \beta_1) / (2 \tau)$ (`theory.corollary_algorithm`) up to a factor
# between 1 and 2. The corollaries' regime makes FedAdam behave like server momentum SGD. Measured along
# FedAdam's run at the base point:

# %%
low, high = theory.denominator_ratio(task)
print(f"sqrt(v_t) / tau over the rounds and coordinates: {low:.3f} to {high:.3f}, so the denominator lies within "
      f"[{1 + low:.3f}, {1 + high:.3f}] tau")
gaps = (scaling.slopes.loc["FedAvgM"] - scaling.slopes.loc["FedAdam"]).abs()
print("largest difference of FedAvgM's fitted slope from FedAdam's:", f"{gaps.max():.3f} (in {gaps.idxmax()})")

# %% [markdown]
# How much of the speed-up in $m$ and $K$ survives depends on how different the clients are: the same fit on
# federations whose clients' optima spread less and more (heterogeneity 0 gives clients the same optimum but
# still different data; the row for 1 is the experiment above):

# %%
levels = [0.0, 1.0, 3.0]
exponents = theory.exponents_by_heterogeneity(levels, {name: ranges[name] for name in ("clients_per_round",
                                                                                          "local_steps")}, store=store)
display(exponents.round(3))
low, high = exponents.index[0], exponents.index[-1]
print(f"from heterogeneity {low:g} to {high:g}: K's slope {exponents.loc[low, 'K']:+.2f} -> "
      f"{exponents.loc[high, 'K']:+.2f}, m's slope {exponents.loc[low, 'm']:+.2f} -> {exponents.loc[high, 'm']:+.2f}")

# %% [markdown]
# As the clients' optima spread, more local steps buy less: each client walks further towards its own
# optimum, away from the federation's (client drift, a bias that the $6 K \sigma_g^2$ part of the bound
# carries), and the corollaries tie the client step to $K$ (it shrinks as $1/K$) for that reason. More clients
# per round buy more, but not by averaging drift out: the drift of the whole federation is the same whichever
# clients are drawn, and more clients per round cannot shrink it. What they shrink is the sampling noise,
# how far the drawn clients' average update lies from the federation's, which grows with the clients'
# spread; that is why $m$'s slope steepens with heterogeneity (a sampling effect, outside the bound, which has
# every client in every round).

# %% [markdown]
# The paper's second takeaway is about the two rates themselves: the effect of client heterogeneity "can
# be reduced by choosing sufficiently $\eta_l$ and a reasonably large $\eta$" (the slides' words; read: a
# sufficiently small $\eta_l$). Measured on the same
# federations: FedAdam at the corollary's rates with client constant $c$ and server constant $1/c$ (so the
# product of the two rates, the size of a step of plain averaging, stays fixed), $T = 200$, $K = 10$, and the
# final $\|\nabla f\|^2$ (the mean over the last tenth of the rounds, two seeds). Left: every one of the 50
# clients in every round, so that client sampling adds no noise and heterogeneity acts through client drift
# alone; right: 10 of the 50 per round, as in the scaling experiment.

# %%
constants = [10 ** (k / 2) for k in range(-2, 5)] if SCALE != "smoke" else [0.1, 10.0]
point = dict(theory.TRADEOFF, rounds=200 if SCALE != "smoke" else 20)
tradeoffs = {f"{m} of 50 clients per round":
             theory.rate_tradeoff(levels, constants, point=dict(point, clients_per_round=m), store=store)
             for m in (50, 10)}
figure, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained", sharey=True)
for ax, (name, table) in zip(axes, tradeoffs.items()):
    table.plot(ax=ax, logx=True, logy=True, marker="o", title=name, ylabel="final squared gradient norm")
    ax.grid(alpha=0.3, which="both")
plots.savefig(figure, "01_rate_tradeoff.png", FIGURES)
for name, table in tradeoffs.items():
    slopes = ", ".join(f"{theory.fitted_exponent(table, level):+.2f}" for level in table)
    reach = theory.largest_constant_below(table, 1e-3)
    print(f"{name}: slope in c per heterogeneity level {list(table.columns)}: {slopes}; largest c reaching "
          f"||grad f||^2 <= 1e-3: " + ", ".join(f"{value:.3g}" for value in reach))

# %% [markdown]
# Read the left panel along a line: a smaller client constant (with the server constant growing to match)
# leaves a lower final gradient, at about a decade of $\|\nabla f\|^2$ per half-decade of $c$ (a slope near 2:
# drift grows with the square of the client step); more heterogeneity lifts the whole line, so reaching the
# same accuracy takes a smaller client rate and a larger server rate. That is the takeaway, measured. The right
# panel is the caveat: with 10 of 50 clients per round, which clients were sampled sets the floor (sampling
# noise, outside the corollaries' full-participation bound), far above the drift of small client rates, so the
# split of the rates between client and server moves it far less (slopes of at most 0.3 against about 2 on the
# left; 0.05-0.07 for the heterogeneous federations); only the largest client
# constants, whose drift exceeds the sampling noise, lift it again. More clients per round lower it (the left
# panel is the limit, every client in every round).

# %% [markdown]
# ## 2. "FedAdam" is not one optimizer
#
# The paper's Algorithm 2 is one rule; the code people run is another. The authors' own experiments used
# Keras' optimizers (bias correction, $v_{-1} = 0$, Adagrad without momentum), Flower implements FedAdam with
# bias correction counted from $t = 2$ and $v_{-1} = 0$, and TFF's Adagrad puts $\tau$ inside the root.
# fedcore exposes each difference as an option of the server optimizer (`bias_correction`,
# `initial_v`, `tau_inside_sqrt`, and $\beta_1 = 0$ for Adagrad without momentum):

# %%
with pd.option_context("display.max_colwidth", None):
    display(experiment.variants_table())

# %% [markdown]
# The readings with the same learning rates and $\tau$ (the paper's best for EMNIST CR: client rate
# $10^{-1.5}$, server rate $10^{-2.5}$ for FedAdam and FedYogi and $10^{-1}$ for FedAdagrad, $\tau$ as
# published), each with its own $\beta$s (Keras' Adam and Yogi: $\beta_2 = 0.999$; Keras' and Flower's
# Adagrad: no momentum), on one small task: Fashion-MNIST on 20 clients (Dirichlet 0.5 label skew), a logistic
# regression, 5 clients per round, 5 local steps of 32 samples.

# %%
live = explore.live_problem()
variant_options = dict(explore.LIVE_RUN, rounds=tuning.grid_axes(SCALE)[2], progress=False, store=store)
variants = {variant: {method: fedcore.simulate(live, build(), **variant_options)
                      for method, build in experiment.variant_builders("emnist_cr", variant).items()}
            for variant in paper.VARIANTS}
variant_table = pd.DataFrame({variant: {method: history.final("test_accuracy") for method, history in runs.items()}
                              for variant, runs in variants.items()})
variant_table.round(4)

# %%
figure, axes = plt.subplots(1, 3, figsize=(14, 3.8), layout="constrained", sharey=True, dpi=64)
for ax, method in zip(axes, variant_table.index):
    plots.compare({variant: runs[method] for variant, runs in variants.items() if method in runs},
                  "test_accuracy", ax=ax)
    ax.set_title(method)
plots.savefig(figure, "01_fedadam_variants.png", FIGURES)
print(f"largest spread between readings of one method: {(variant_table.max(axis=1) - variant_table.min(axis=1)).max():.4f}")

# %% [markdown]
# Same names, same learning rates, different optimizers: the table is the final test accuracy after the
# same rounds, one run each (one seed); FedAdagrad has three distinct readings (Keras' and Flower's agree,
# and their curves coincide; `tau_inside` exists for Adagrad only, hence the empty cells). Where they differ:
# bias correction divides the first steps' $m_t$ by $1 - \beta_1^{t+1}$ and $v_t$ by $1 - \beta_2^{t+1}$
# (Flower counts from $t = 2$), $v_{-1} = 0$ against the paper's $\tau^2$ changes how large the first
# denominators are, Keras' $\beta_2 = 0.999$ makes $v_t$ follow $\Delta_t^2$ more slowly, and putting $\tau$
# inside the root makes Adagrad's step $\eta\, m / \sqrt{v + \tau}$ far smaller when $\sqrt{v} \ll \sqrt{\tau}$.
# Which reading is ahead depends on the task and the rates; the table shows it for this one. A published
# "FedAdam" number carries its library's reading with it.
#
# ## 3. Table 1: the rows that can run here
#
# Reddi et al. report the average validation performance over the last 100 rounds on seven tasks. Here:
#
# - **Shakespeare** runs on its own data (one client per play and speaking role, from the Gutenberg texts:
#   `fedcore.data.load_shakespeare`), with the paper's char-LSTM, batch 4 and learning rates;
# - **EMNIST CR** and **EMNIST AE** run on **Fashion-MNIST as a stand-in** (EMNIST cannot be fetched here):
#   500 clients of 120 images holding 2 classes each, the paper's CNN (with dropout) and bottleneck
#   autoencoder (MSE on pixels in $[0, 1]$), the paper's EMNIST learning rates;
# - **CIFAR-10/100** run at `SCALE=paper` where torchvision has the files (ResNet-18 with GroupNorm);
# - **Stack Overflow** is not reachable: no copy, no network.
#
# The settings per task and scale beside the paper's (one local epoch becomes a fixed number $K$ of local steps,
# capped at `small`), seed `SEED`; the metric: the mean over the evaluations in the last third of the rounds at
# `small` (the paper's last 100 rounds are 1/12 to 1/30 of its runs; so small a share of 30 rounds would hold a
# single evaluation; at `paper` the last 100 rounds):

# %%
tasks = experiment.tasks(SCALE, SEED, DEVICE)  # {name: common.Task}: data, model(seed), round settings, metric
histories = experiment.run(tasks, SEED, store=store, progress=PROGRESS)  # {task: {method: History}}
experiment.settings_beside(tasks)

# %% [markdown]
# The learning rates and $\tau$ of every run below: the paper's best values per task (Table 1's runs; log10 as
# the paper reports them, and the value):

# %%
experiment.hyperparameter_table(list(tasks))

# %% [markdown]
# Table 1 beside ours, the methods in the paper's order, with what a model that learned nothing scores on our
# test set (`trivial baseline`: the most frequent class or next character; for the autoencoder, predicting the
# mean image):

# %%
ours = experiment.results_table(histories, SCALE)[list(paper.METHODS)]
baselines = {name: task.baseline for name, task in tasks.items()}  # in Table 1's units
paper_rows = paper.TABLE1.loc[list(ours.index)]
beside = pd.concat({"paper": paper_rows, "fedcore": ours}, axis=1).swaplevel(axis=1)
beside = beside[[(method, source) for method in paper.METHODS for source in ("paper", "fedcore")]]
beside[("trivial baseline", "fedcore")] = [baselines[task] for task in beside.index]
beside.index = [f"{paper.PAPER_TASKS[t]['name']} ({paper.TABLE1_METRIC[t]}; ours: "
                f"{experiment.STAND_INS[t]['data']})" for t in beside.index]
beside.round(2)

# %% [markdown]
# Shakespeare's column is worth a second look: a model that always predicts the most frequent next character
# scores

# %%
print(f"{baselines['shakespeare']:.2f}% of the test windows (the most frequent character); ours after "
      f"{tasks['shakespeare'].settings['rounds']} rounds: {ours.loc['shakespeare'].round(2).to_dict()}")

# %% [markdown]
# Where a method's number equals that share, its char-LSTM has not yet learned more than the most frequent
# character: at `small` the runs are far too short for this task (the paper trains 1200 rounds). The paper's
# rows we cannot run, with the reason:

# %%
unreachable = {paper.PAPER_TASKS[t]["name"]: "needs the CIFAR files (torchvision) and a GPU: SCALE=paper"
               for t in experiment.CIFAR if t not in tasks}
unreachable |= {paper.PAPER_TASKS[t]["name"]: reason for t, reason in paper.UNREACHABLE.items()}
with pd.option_context("display.max_colwidth", None):
    display(pd.Series(unreachable, name="not run here").to_frame())

# %%
figure, axes = plt.subplots(1, len(histories), figsize=(5 * len(histories), 3.8), layout="constrained", dpi=64)
for ax, (name, runs) in zip(axes, histories.items()):
    metric = tasks[name].metric
    plots.compare(runs, metric, ax=ax, legend=False, logy=metric == "test_loss")
    ax.axhline(experiment.from_paper_units(name, baselines[name]), color="grey", linestyle="--",
               label="trivial baseline")
    if ax is axes[-1]:
        ax.legend(fontsize="small")
    ax.set_title(f"{paper.PAPER_TASKS[name]['name']}" + ("" if name == "shakespeare" else " (Fashion-MNIST)"),
                 fontsize="small")
    if metric == "test_loss":
        ax.set_ylabel("test loss: half the MSE (Table 1: 2000 x this)")
plots.savefig(figure, "01_table1_curves.png", FIGURES)

# %% [markdown]
# This section's verdicts, by the rules of section 7 (a task where no method beats its trivial baseline is left
# out; one run per cell):

# %%
scope = experiment.scope(tasks, SCALE, [SEED])
with pd.option_context("display.max_colwidth", None):
    display(paper.claims_table(paper.Evidence(table1=ours, baselines=baselines, scope=scope), paper.CLAIMS[:2]))

# %% [markdown]
# ## 4. Table 11: centralized training, and ExpDecay
#
# **Centralized training is FedOpt with one client.** Give one client all the data, let it take one local step
# with client rate 1: then $\Delta_t = -g_t$, the minibatch gradient, and the server optimizer *is* the
# centralized optimizer. The rows below run each method's own server rule so (Algorithm 2's, with fedcore's
# default options: Adagrad with momentum 0.9, no bias correction, $v_{-1} = \tau^2$, $\tau = 10^{-3}$; the
# federated rows use the paper's per-task $\tau$):
# for SGD and SGD with momentum that is `torch.optim.SGD`, for Adagrad, Adam and Yogi it is *not* torch's
# optimizers, which need other options (fedcore checks that with them it is: tests/test_fedopt_experiment.py,
# Adagrad without momentum and $v_{-1} = 0$ to 1e-12; Adam with Keras' bias correction and $v_{-1} = 0$ to
# 2e-7 over six steps, the gap being where $\epsilon$ is added). The table names each row's rule. Here each
# centralized run sees as many minibatches of the same
# size as the federated run of section 3 (rounds x clients per round x local steps), on the EMNIST CR
# stand-in; the centralized learning rates are ours (the paper does not report them): Adagrad 0.01,
# Adam and Yogi 0.001, SGD with momentum 0.01, SGD 0.1. The centralized runs see the data as one pool, the
# federated ones two-class clients: the gap mixes federation and heterogeneity, as the paper's does.
#
# **ExpDecay** multiplies the client rate by 0.1 every 500 of the paper's 1500 rounds (as a reproduction of
# the paper's runs reads it; the paper's own sentence was not found); here every third of the run, the same
# fraction. In the paper the cuts come where the constant-rate runs have levelled off; a cut in a run that is
# still climbing slows it, so the claim is judged only where the constant-rate runs have plateaued: their median
# gain from the first cut to the end of the run at most 1 point (`paper.PLATEAU`; measured below).

# %%
cr_task = tasks["emnist_cr"]
central = experiment.run_centralized(cr_task, SEED, store=store, progress=PROGRESS)  # one client, one step a round
decayed = experiment.run({"emnist_cr": cr_task}, SEED, decay=True, store=store, progress=PROGRESS)["emnist_cr"]
window = experiment.window(SCALE)
table11 = pd.DataFrame({
    "centralized": {m: 100 * common.last_rounds_average(h, "test_accuracy", window) for m, h in central.items()},
    "constant": ours.loc["emnist_cr"],
    "ExpDecay": {m: 100 * common.last_rounds_average(h, "test_accuracy", window) for m, h in decayed.items()},
})
table11_beside = pd.concat({"paper": paper.TABLE11.set_axis(["centralized", "constant", "ExpDecay"], axis=1),
                            "fedcore": table11}, axis=1)
table11_beside.index = [f"{m} (centrally: {paper.CENTRALIZED_NAMES[m]})" for m in table11_beside.index]
display(table11_beside.round(2))
with pd.option_context("display.max_colwidth", None):
    display(pd.Series(experiment.CENTRALIZED_RULES, name="what the centralized row runs here").to_frame())
first_cut = experiment.decay_every("emnist_cr", cr_task.settings["rounds"])  # the schedule's first cut
after_cut = 1 - first_cut / cr_task.settings["rounds"]  # the share of the run after it
decay_gain = {m: 100 * common.late_gain(h, "test_accuracy", after_cut) for m, h in histories["emnist_cr"].items()}
print(f"what the constant-rate runs gained from round {first_cut} (the first cut) to the end (points):",
      {m: round(g, 1) for m, g in decay_gain.items()})

# %%
gap = table11["centralized"] - table11["constant"]
paper_gap = paper.TABLE11.iloc[:, 0] - paper.TABLE11.iloc[:, 1]
helped = [m for m in table11.index if table11.loc[m, "ExpDecay"] > table11.loc[m, "constant"]]
print(f"centralized minus federated (constant rate): {gap.min():.1f} to {gap.max():.1f} points here, "
      f"{paper_gap.min():.1f} to {paper_gap.max():.1f} in the paper; ExpDecay raised the number of "
      f"{len(helped)} of {len(table11)} methods ({', '.join(helped) or 'none'})")

# %%
with pd.option_context("display.max_colwidth", None):  # this section's verdict, by the rules of section 7
    display(paper.claims_table(paper.Evidence(decay=table11[["constant", "ExpDecay"]], decay_gain=decay_gain,
                                              scope=scope), paper.CLAIMS[2:3]))

# %% [markdown]
# The paper's federated runs come within a few points of centralized training after 1500 rounds; ours are
# early-training numbers on two-class clients, where the federated runs still trail by far. The same
# shortness leaves ExpDecay untestable here: the first cut comes while the runs still climb, so what the cut
# does cannot be told from what they still learn (four of the five methods ended lower with it, FedAvgM higher;
# see "What differs" below).
#
# ## 5. Ease of tuning (Figures 2 and 6)
#
# The paper's heat maps show validation accuracy over a grid of client and server learning rates
# ($\tau = 10^{-3}$) on Stack Overflow NWP and CIFAR-100, and it claims that the adaptive methods have a
# larger region of good learning rates. We cannot run those tasks on a CPU; the grid here runs on the small
# Fashion-MNIST task of section 2 (a logistic regression on 20 clients: a convex model, so every
# method's landscape is kinder than a ResNet's or an LSTM's), in half-decades (6 client rates up to 1, 7 server
# rates up to $10^{0.5}$, where FedAvg's best lies in the paper's CIFAR-100 grid), through the grid search every
# notebook shares (`fedcore.experiments.common.tune`, every run through the results store), each cell scored by
# the mean test accuracy over the last third of its rounds. The heat maps are at the figures' $\tau$; the grids
# are also run at the other values of `TAUS` for the explorer below:

# %%
client_lrs, server_lrs, grid_rounds = tuning.grid_axes(SCALE)
grid_task = tuning.grid_task(SCALE, live.data)  # the live task of section 2 as a common.Task
taus = sorted({TAU, *TAUS})
builders = {tau: experiment.grid_builders(tau) for tau in taus}  # FedAvg's and FedAvgM's runs ignore tau: stored once
tunings = {tau: tuning.tune(grid_task, builders[tau], client_lrs, server_lrs, [SEED], store=store) for tau in taus}
grids_by_tau = {tau: tuning.tuning_grids(tunings[tau]) for tau in taus}  # each method's table as a heat map
grids = grids_by_tau[TAU]
plots.savefig(figures.tuning_heatmaps(grids), "01_tuning_heatmaps.png", FIGURES)

# %% [markdown]
# Each cell prints its accuracy in points; red outlines mark the cells within two points of the method's best;
# all five grids share one colour scale and its one colour bar. Counted (a best cell on the grid's edge means the good region may extend beyond the grid, and the
# count is then a lower bound):

# %%
tuning.tuning_summary(grids)

# %% [markdown]
# How $\tau$ moves the good region of the adaptive methods (FedAvg and FedAvgM do not use it): cells within
# two points of each grid's own best, and that best, per $\tau$:

# %%
adaptive = [method for method in grids if method in paper.ADAPTIVE]
pd.concat({f"tau {tau:g}": tuning.tuning_summary({method: grids_by_tau[tau][method] for method in adaptive})
           [["best accuracy", f"cells within {100 * tuning.NEAR_BEST:g} points of best"]] for tau in taus}, axis=1)


# %% [markdown]
# $\tau$ is the floor under the adaptive denominator $\sqrt{v_t} + \tau$: once $\tau$ dominates $\sqrt{v_t}$,
# the server step tends to $\eta\, m_t / \tau$, server momentum SGD (at rate $\eta (1 - \beta_1) / \tau$ in
# FedAvgM's form), and
# the method loses what made it adaptive. Read the table with that in mind: at `small`, the larger $\tau$
# widened FedAdam's and FedYogi's good region (more cells within two points of their best) and lowered their
# best accuracy, by about as much as that two-point band: a wider region around a lower peak.

# %%
tuning_scope = experiment.scope({grid_task.name: grid_task}, SCALE, [SEED], model=grid_task.model_label)
with pd.option_context("display.max_colwidth", None):  # this section's verdict, by the rules of section 7
    display(paper.claims_table(paper.Evidence(grids=grids, tuning_scope=tuning_scope), paper.CLAIMS[3:]))

# %% [markdown]
# Pick a method, a $\tau$ and a cell to see its heat map (the chosen cell outlined in black, the cells within
# two points of that grid's best in red) and the cell's learning curve (the runs are read back from the
# store): once headless, then behind widgets, which need a running kernel (a saved notebook shows only their
# description).

# %%
def grid_curve(method, tau, client_lr, server_lr):
    return fedcore.simulate(grid_task.problem(SEED), builders[tau][method](client_lr, server_lr), seed=SEED,
                            store=store, progress=False, **grid_task.settings)


explore.explore_tuning("FedAdam", TAU, client_lrs[-2], server_lrs[1], grids_by_tau, grid_curve)
plots.savefig(plt.gcf(), "01_tuning_cell.png", FIGURES)

# %%
cell_explorer = widgets.interactive(
    explore.explore_tuning,
    method=widgets.Dropdown(options=list(grids), value="FedAdam", description="method"),
    tau=widgets.Dropdown(options=taus, value=TAU, description="τ"),
    client_lr=widgets.SelectionSlider(options=client_lrs, value=client_lrs[-2], description="client lr"),
    server_lr=widgets.SelectionSlider(options=server_lrs, value=server_lrs[1], description="server lr"),
    grids=widgets.fixed(grids_by_tau), curve=widgets.fixed(grid_curve),
)
display(cell_explorer)

# %% [markdown]
# ## 6. Explorer: a live run
#
# `fedcore.explore.explore_fedopt` runs a method with the sliders' learning rates, $\tau$ and $\beta$s on the
# same small task (30 rounds, a couple of seconds on 2 CPU cores) beside FedAvg with the same client rate;
# each legend entry ends with that run's final test accuracy; sliders a method does not use are greyed out.
# Once headless, then live (with a running kernel):

# %%
explore.explore_fedopt("fedadam", client_lr=0.1, server_lr=0.01, tau=1e-3, beta1=0.9, beta2=0.99, store=store)
plots.savefig(plt.gcf(), "01_live_run.png", FIGURES)

# %%
live_explorer = widgets.interactive(
    explore.explore_fedopt,
    method=widgets.Dropdown(options=list(explore.FEDOPT_METHODS), value="fedadam", description="method"),
    client_lr=widgets.FloatLogSlider(value=0.1, base=10, min=-3, max=0.5, step=0.5, description="client lr"),
    server_lr=widgets.FloatLogSlider(value=0.01, base=10, min=-3, max=0.5, step=0.5, description="server lr"),
    tau=widgets.FloatLogSlider(value=1e-3, base=10, min=-5, max=0, step=0.5, description="τ"),
    beta1=widgets.FloatSlider(value=0.9, min=0.0, max=0.99, step=0.01, description="β₁"),
    beta2=widgets.FloatSlider(value=0.99, min=0.5, max=0.999, step=0.001, description="β₂"),
    rounds=widgets.fixed(30), problem=widgets.fixed(None), store=widgets.fixed(store),
)
display(explore.disable_unused(live_explorer, explore.FEDOPT_METHODS, chooser="method"))

# %% [markdown]
# ## 7. The paper's claims beside ours
#
# Each verdict is computed from the tables above (`paper.CLAIMS`), over a set of checks: **holds** if
# every check passes, **partly** if some do, **does not hold** if none does, **not testable here** if a gate
# leaves no check (every task at its trivial baseline; ExpDecay's runs still climbing at the first cut). Each
# claim quotes the slides and says how we read it. The checks: per task, the best adaptive method beats FedAvg
# (in Table 1's units; lower MSE for the autoencoder); per task, FedAdam and FedYogi are both within 0.5 of the
# best, in Table 1's units (accuracy points, MSE x1000; this one holds if more than half the tasks pass, the
# paper's "most"); per method, ExpDecay improves its EMNIST CR number (judged only where the constant-rate runs
# had plateaued at the first cut, section 4); per pair of an adaptive and a non-adaptive method, the adaptive one
# has the larger share of good cells in its grid ("What differs" below says why one seed cannot settle it).
# Tasks on which no method beats a trivial baseline by more than 0.5 (a model that learned nothing: the most
# frequent class or character, the mean image; printed below) are left out of the first two: there the order
# of the methods is noise. Each row says its scope: the tasks it judged, the scale, the rounds of a run and the
# seed (one run per cell, so each check is a single comparison without a noise estimate).
# The paper's own Tables 1 and 11 give "holds" for the first three.

# %%
print("trivial baselines in Table 1's units:", {task: round(value, 2) for task, value in baselines.items()})
evidence = paper.Evidence(table1=ours, decay=table11[["constant", "ExpDecay"]], grids=grids, baselines=baselines,
                          decay_gain=decay_gain, scope=scope, tuning_scope=tuning_scope)
with pd.option_context("display.max_colwidth", None):
    display(paper.claims_table(evidence))

# %% [markdown]
# **What differs from the paper, and why it matters.**
#
# - **Data.** EMNIST CR and AE run on Fashion-MNIST split into 500 two-class clients: harsher label skew than
#   EMNIST's writers, clothing instead of characters, 10 classes instead of 62. Shakespeare runs on its own
#   texts but with our parser and client counts (705 roles with the defaults; the paper has 715), and at
#   `small` on 100 of them. CIFAR and Stack Overflow do not run here.
# - **Scale.** At `small` every Table 1 run is 30 rounds of 5 clients with at most 3 local steps, against the
#   paper's 1200-3000 rounds of 10 clients (for these three tasks) and a full local epoch (sections 2, 5 and 6 run the 30-round live
#   task: 5 of 20 clients, 5 local steps of 32): the numbers are early-training numbers, and
#   rankings between methods within a point or two of each other are not meaningful. The metric is the mean
#   over the last third of the rounds (the paper: the last 100 rounds).
# - **ExpDecay.** At `small` it cuts the client rate at a third and at two thirds of a 30-round run, while
#   section 3's curves are still rising; the paper cuts at rounds 500 and 1000 of 1500. The claim is judged only
#   where the constant-rate runs had plateaued at the first cut (section 4 prints what they gained after it).
# - **The autoencoder** has not learned yet at `small`: every method's MSE is far above the paper's and no
#   better than predicting the mean image (the trivial baseline printed in section 7), so its Table 1 row says
#   nothing about the methods; a deep sigmoid network needs many more rounds.
# - **Hyperparameters.** The paper's best values for each task, found on the paper's data and runs; on the
#   stand-ins they are not tuned, which favours no method in particular but may hurt any.
# - **Seeds.** One seed per run (the paper: its best run per configuration). Rerun with `-p SEED 1`.
# - **Tuning grids.** Figures 2 and 6 are on Stack Overflow and CIFAR-100 with deep models; ours is a convex
#   model on Fashion-MNIST, where every method has an easier landscape. One seed per cell: counts that differ
#   by a cell or two of 42 are within what another seed moves, so a verdict on ease of tuning that rests on
#   such a margin (read the counts in section 5) is not established by this run, whichever way it reads; a
#   best cell on the grid's edge makes its count a lower bound.
