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
# 3. runs the rows of Table 1 that can run here, on stand-in data where the paper's is not reachable, five seeds
#    each, and reads the slides' "faster convergence" on the same runs;
# 4. reruns Table 11: centralized training against federated, a constant client learning rate against ExpDecay;
# 5. measures the claim that adaptive methods are easier to tune (Figures 2 and 6) on learning-rate grids;
# 6. lets you move the learning rates of a live run;
# 7. sets the paper's claims beside our results, with verdicts, and says what differs.
#
# **Parameters.** `SCALE` is `smoke` (CI, about a minute), `small` (a 2-core CPU, about 13 minutes from an empty results
# store: what you see here, with lighter models than the paper's for Table 1), `medium` (`small` and Shakespeare's row: about 1.5
# hours more on a CPU) or `paper` (the paper's models and settings, for a GPU and the original data). Every
# trained result is repeated over five seeds (the centralized runs, which feed no verdict: one) and judged on the
# paired differences. Rerun with, e.g., `papermill 01_fedopt.ipynb out.ipynb -p SCALE small -y "SEEDS: [5, 6, 7,
# 8, 9]"`. Finished runs are kept in the results store (`fedcore.store`), so a rerun recomputes only what changed;
# `-p STORE off` recomputes everything.

# %% tags=["parameters"]
import os

SCALE = os.environ.get("FEDCORE_SCALE", "small")  # smoke | small | medium | paper
DEVICE = "cpu"  # "cuda" on a GPU
PARTITION_SEED = 0  # the data partitions and the kept test samples: the tasks', the same for every run
SEEDS = None  # None: the scale's seeds (0-4); each seed draws a run's initial model, client sampling, minibatches
TAU = 1e-3  # tau of the learning-rate heat maps (the paper's Figures 2 and 6)
TAUS = None  # the taus whose grids the tuning explorer offers (None: the scale's; TAU is added if missing)
PROGRESS = False  # tqdm progress bars during training
STORE = os.environ.get("FEDCORE_STORE", "")  # results store: "" build/store.sqlite, "off" none, or a file path
FIGURES = os.environ.get("FEDCORE_FIGURES")  # a folder to save the figures into (None: don't save)
DECLARED = sorted(name for name in globals() if name.isupper())  # the parameters above

# %%
from fedcore.checks import check_notebook_parameters

check_notebook_parameters(globals(), DECLARED)  # a name given with papermill -p that is not above: stop

# %%
import functools
import inspect
import operator

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

import fedcore
from fedcore import explore, objectives, plots, server_opt
from fedcore.experiments import claims, common, records
from fedcore.experiments import figures as common_figures
from fedcore.experiments.fedopt import experiment, figures, paper, theory, tuning
from fedcore.store import default_store

store = default_store(STORE)
plt.rcParams["figure.dpi"] = 80  # many figures: keeps the committed notebook under 1 MB
scale = common.scale_at(experiment.SCALES, SCALE)
print(f"SCALE={SCALE}: {scale}")

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
# Shakespeare's roles, which differ in length, nor on the 20-client live task of sections 2 and 5 (a
# Dirichlet split, whose clients differ in size). In fedcore one class runs all five (`fedcore.algorithms.FedOpt`: the shared
# client loop, then the server optimizer), and the server rule is the paper's lines:

# %%
print(inspect.getsource(fedcore.algorithms.FedOpt.server_round))
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
scaling_seeds = (0, 1)
if SCALE == "smoke":  # two points a slope, one seed: smoke only shows the code runs
    ranges, scaling_seeds = {name: values[:2] for name, values in ranges.items()}, (0,)
by_method = {method: {theory.VARIED[name]: theory.scaling(task, name, values, seeds=scaling_seeds, store=store,
                                                           method=method) for name, values in ranges.items()}
             for method in theory.METHODS}
tables = by_method["FedAdam"]
scaling = figures.ScalingDisplay.from_tables(by_method).plot()
plots.savefig(scaling.figure_, "01_corollary_scaling.png", FIGURES)
scaling.slopes.round(3).rename_axis(index="method", columns="fitted exponent")

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
levels = [0.0, 1.0, 3.0] if SCALE != "smoke" else [0.0, 3.0]
exponents = theory.exponents_by_heterogeneity(levels, {name: ranges[name] for name in ("clients_per_round",
                                                                                          "local_steps")},
                                              seeds=scaling_seeds, store=store)
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
tradeoff = figures.TradeoffDisplay.from_tables(tradeoffs, target=1e-3).plot()
plots.savefig(tradeoff.figure_, "01_rate_tradeoff.png", FIGURES)
for name, slopes in tradeoff.slopes.iterrows():
    print(f"{name}: slope in c per heterogeneity level {list(slopes.index)}: "
          + ", ".join(f"{slope:+.2f}" for slope in slopes) + "; largest c reaching ||grad f||^2 <= 1e-3 (nan: none "
          "does): " + ", ".join(f"{value:.3g}" for value in tradeoff.reach.loc[name]))

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
grid_scale = common.scale_at(tuning.GRIDS, SCALE)  # the learning-rate grids' scale (section 5)
variant_options = dict(explore.LIVE_RUN, rounds=grid_scale.rounds, progress=False, store=store)
readings = figures.VariantsDisplay.from_runs({
    variant: {method: fedcore.simulate(live, build(), **variant_options)
              for method, build in experiment.paper_builders("emnist_cr", variant=variant).items()}
    for variant in paper.VARIANTS})
readings.scores.round(2).astype(object).fillna("")  # empty: a reading without that method

# %%
plots.savefig(readings.plot().figure_, "01_fedadam_variants.png", FIGURES)
print("largest spread between readings of one method (accuracy points): "
      f"{(readings.scores.max(axis=1) - readings.scores.min(axis=1)).max():.2f}")

# %% [markdown]
# Same names, same learning rates, different optimizers: the table is the test accuracy in % by the notebook's one
# window rule (the mean of a run's last 4 evaluations: section 3), one run each (an illustration on one seed, not
# a verdict); FedAdagrad has three distinct readings (Keras' and Flower's agree,
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
#   `fedcore.data.load_shakespeare`), cut as TFF cuts it for the paper (non-overlapping 80-character chunks, every
#   next character predicted), with the paper's batch 4 and learning rates, at `SCALE=medium` and `paper`: one
#   epoch of a char-LSTM is too costly for `small`'s budget (the reason is printed below);
# - **EMNIST CR** and **EMNIST AE** run on **Fashion-MNIST as a stand-in** (EMNIST cannot be fetched here):
#   500 clients of 120 images holding 2 classes each, the paper's EMNIST learning rates;
# - **CIFAR-10/100** run at `SCALE=paper` where torchvision has the files (ResNet-18 with GroupNorm);
# - **Stack Overflow** is not reachable: no copy, no network.
#
# At `small` the models are ours, lighter than the paper's, so that the methods learn within the budget of a
# 2-core CPU: an MLP for EMNIST CR (the paper's CNN costs about 55 times as much per round), a one-layer
# autoencoder for EMNIST AE (the paper's deep sigmoid network did not beat the mean image in 30 rounds of 5
# clients, all the budget held for it) and,
# at `medium`, a one-layer char-LSTM of 128 for Shakespeare; `paper` trains the paper's models. The paper's
# settings beside ours: 10 clients per round as in the paper, one local epoch as $K$ (each Fashion-MNIST
# client's 120 images are 6 steps of 20), the paper's batch sizes, and 300 rounds against the paper's 1500-3000:

# %%
tasks = experiment.tasks(scale, partition_seed=PARTITION_SEED, device=DEVICE)  # {name: common.Task}
seeds = scale.seeds_or(SEEDS)  # every run below is repeated over these seeds
results = functools.reduce(operator.or_, [  # a common.Results: results[task][method] -> [History per seed]
    experiment.run(task, experiment.make_builders(task, scale), seeds, store=store, progress=PROGRESS)
    for task in tasks.values()])
with pd.option_context("display.max_colwidth", None):
    display(experiment.settings_beside(results))

# %% [markdown]
# **One window rule for the whole notebook**: a run's score is the mean of its last 4 evaluations on the full
# test set (`fedcore.experiments.common.window_score`). Evaluated every 25 rounds, that is the paper's own window
# at `small` and at `paper`, the last 100 rounds (a fifteenth to a thirtieth of the paper's runs of these tasks, a
# third of ours). The same rule scores every trained run below, and the readings of section 2 (section 1's
# quadratics record the gradient norm, the bound's own quantity):

# %%
for name, task in tasks.items():
    print(f"{name}: {common.window_rounds(task.settings)}, {task.data.test_targets.shape[0]:,} test samples")

# %% [markdown]
# The learning rates and $\tau$ of every run: the paper's best values per task (Table 1's runs; log10 as the
# paper reports them, and the value), found on the paper's data and models, not tuned on ours:

# %%
experiment.hyperparameter_table(list(tasks))

# %% [markdown]
# Table 1 beside ours (columns `fedcore`), the methods in the paper's order, each row in Table 1's unit (% accuracy;
# for the autoencoder the MSE x1000, lower is better): ours the mean ± standard deviation over the seeds, with
# what a model that learned nothing scores on our test set (`trivial baseline`: the most frequent class or next
# character; for the autoencoder, predicting the mean image); medium adds Shakespeare's row:

# %%
scores = results.scores()  # (task, method) x seed, Table 1's units
baselines = {name: task.baseline for name, task in tasks.items()}  # in Table 1's units
table1 = experiment.table1_beside(results)  # recorded as "table1" in section 7
print(records.status("01_fedopt", "table1"))
records.beside(table1, "01_fedopt", "table1", label=f"ours, {SCALE}")

# %% [markdown]
# Every seed's score (dots) and their mean (ticks): how far apart the methods are, beside how far one method
# moves with the seed.

# %%
shown = common_figures.ScoresDisplay.from_scores(scores.rename(index=lambda t: paper.PAPER_TASKS.get(t, {}).get(
    "name", t), level="task"), "score in Table 1's units").plot(
    baselines={paper.PAPER_TASKS[t]["name"]: b for t, b in baselines.items()}, baseline_label="trivial baseline")
plots.savefig(shown.figure_, "01_table1_seeds.png", FIGURES)

# %% [markdown]
# Each method against FedAvg on the same seeds (the same initial model, clients and minibatches): the mean paired
# difference with its 95% interval and p, positive when the method is better (lower MSE for the autoencoder);
# `undecided` when the interval holds 0:

# %%
paired = results.paired("FedAvg", words={claims.CONFIRMED: "better", claims.CONTRADICTED: "worse",
                                          **dict.fromkeys(claims.UNDECIDED, "undecided")}).rename(
    index=lambda t: paper.PAPER_TASKS[t]["name"])
paired

# %% [markdown]
# The autoencoder's MSE as a share of the mean image's (our trivial baseline), to read its scale: the paper's
# EMNIST numbers cannot be put on it, since EMNIST's mean-image MSE cannot be computed here.

# %%
if "emnist_ae" in tasks:
    relative = 100 * results.means().loc["emnist_ae"] / baselines["emnist_ae"]
    print("EMNIST AE stand-in, MSE as % of the mean image's:", relative.round(1).to_dict())

# %% [markdown]
# The rows of the paper not run here, with the reason:

# %%
with pd.option_context("display.max_colwidth", None):
    display(pd.Series(experiment.not_run(SCALE), name=f"not run at SCALE={SCALE}").to_frame())

# %% [markdown]
# The curves in Table 1's units (accuracy in %, the autoencoder's MSE x1000): the mean over the seeds with a band
# of one standard deviation, and the trivial baseline dashed.

# %%
curves = figures.Table1CurvesDisplay.from_results(results).plot()
plots.savefig(curves.figure_, "01_table1_curves.png", FIGURES)

# %% [markdown]
# **Faster convergence** (the slides' summary) is read on the same runs: per task, the rounds each run needs to
# first reach a target that every method holds on average, the worst of the methods' mean scores (the lowest
# accuracy, the highest MSE; a run that never reaches it counts one evaluation period past its end, in its
# favour). Rounds are counted at the evaluations, every 25 rounds; the table gives the mean ± standard deviation
# over the seeds. Where FedAvg itself is the worst, the target is its own final score and fewer rounds restates the
# first claim: that task is not testable.

# %%
convergence, targets = experiment.convergence_table(results)
print("targets in Table 1's units:", {task: round(value, 2) for task, value in targets.items()})
common.mean_sd(convergence, digits=0).reindex(list(paper.METHODS)).rename(
    columns=lambda task: paper.PAPER_TASKS[task]["name"])

# %% [markdown]
# This section's verdicts, by the rules of section 7 (a task on which most methods do not beat the trivial
# baseline is left out; every check a paired comparison over the seeds):

# %%
scope = experiment.scope(tasks, SCALE, seeds)  # tasks, scale, models, rounds, seeds
table1_evidence = paper.Evidence(table1=scores, baselines=baselines, convergence=convergence, scope=scope)
with pd.option_context("display.max_colwidth", None):
    display(paper.claims_table(table1_evidence, paper.CLAIMS[:3]))

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
# 2e-7 over six steps, the gap being where $\epsilon$ is added). The table names each row's rule. Each
# centralized run sees as many samples as a federated run of section 3, on the EMNIST CR stand-in: one step per
# federated local step, of a minibatch as large as the round's 10 clients' together (rounds x K steps of 200);
# the centralized learning rates are ours (the paper does not report them): Adagrad 0.01, Adam and Yogi 0.001,
# SGD with momentum 0.01, SGD 0.1. The centralized runs see the data as one pool, the federated ones two-class
# clients: the gap mixes federation and heterogeneity, as the paper's does.
#
# **ExpDecay** multiplies the client rate by 0.1 every 500 of the paper's 1500 rounds (as a reproduction of
# the paper's runs reads it; the paper's own sentence was not found), where the constant-rate runs have
# levelled off. A 300-round run is still climbing at a third of its rounds, and a cut there only slows it, so
# here the rate is cut once, late: at two thirds of the run (the paper's second cut). Whether the runs had
# levelled off by then is measured below (the constant-rate runs' median gain from the cut to the end, against 1
# point: `paper.PLATEAU`). Where they had not, a cut that fails to help is not held against the claim, so the
# check cannot fail: not testable at this scale, whether the cut helped or not.

# %%
cr_task = tasks["emnist_cr"]
central_seeds = scale.centralized_seeds(SEEDS)  # the first one at small
central = experiment.run(experiment.centralized_task(cr_task), experiment.centralized_builders(), central_seeds,
                         store=store, progress=PROGRESS)  # one client, one step a round
decayed = experiment.run(cr_task, experiment.decay_builders(cr_task, scale), seeds, store=store, progress=PROGRESS)
decay_scores = pd.concat({"constant": scores.loc["emnist_cr"], "ExpDecay": decayed.scores().loc["emnist_cr"]})
table11 = pd.DataFrame({"centralized": central.means().iloc[0], "constant": results.means().loc["emnist_cr"],
                        "ExpDecay": decayed.means().loc["emnist_cr"]})
table11_beside = pd.concat({"paper": paper.TABLE11.set_axis(["centralized", "constant", "ExpDecay"], axis=1),
                            f"fedcore (mean over seeds {claims.seed_list(seeds)}; centralized: seed"
                            f"{'s' * (len(central_seeds) > 1)} {claims.seed_list(central_seeds)})": table11}, axis=1)
table11_beside.index = [f"{m} (centrally: {paper.CENTRALIZED_NAMES[m]})" for m in table11_beside.index]
display(table11_beside.round(2))
with pd.option_context("display.max_colwidth", None):
    display(pd.Series(experiment.CENTRALIZED_RULES, name="what the centralized row runs here").to_frame())
first_cut = experiment.decay_every("emnist_cr", cr_task.settings["rounds"], scale.decay)
after_cut = 1 - first_cut / cr_task.settings["rounds"]  # the share of the run after the cut
decay_gain = {m: 100 * float(pd.Series([common.late_gain(h, "test_accuracy", after_cut) for h in runs]).mean())
              for m, runs in results["emnist_cr"].items()}
print(f"what the constant-rate runs gained from round {first_cut} (the cut) to the end (points, mean over the "
      "seeds):", {m: round(g, 1) for m, g in decay_gain.items()})

# %%
gap = table11["centralized"] - table11["constant"]
paper_gap = paper.TABLE11.iloc[:, 0] - paper.TABLE11.iloc[:, 1]
print(f"centralized minus federated (constant rate): {gap.min():.1f} to {gap.max():.1f} points here, "
      f"{paper_gap.min():.1f} to {paper_gap.max():.1f} in the paper")

# %%
with pd.option_context("display.max_colwidth", None):  # this section's verdict, by the rules of section 7
    display(paper.claims_table(paper.Evidence(decay=decay_scores, decay_gain=decay_gain, scope=scope),
                               paper.CLAIMS[3:4]))

# %% [markdown]
# ## 5. Ease of tuning (Figures 2 and 6)
#
# The paper's heat maps show validation accuracy over a grid of client and server learning rates
# ($\tau = 10^{-3}$) on Stack Overflow NWP and CIFAR-100, and it claims that the adaptive methods have a
# larger region of good learning rates. We cannot run those tasks on a CPU; the grid here runs on the small
# Fashion-MNIST task of section 2 (a logistic regression on 20 clients: a convex model, so every
# method's landscape is kinder than a ResNet's or an LSTM's), in half-decades (6 client rates up to 1, 7 server
# rates up to $10^{0.5}$, where FedAvg's best lies in the paper's CIFAR-100 grid), through the grid search every
# notebook shares (`fedcore.experiments.common.tune`, every run through the results store), every cell over five
# seeds, each run scored by the notebook's window rule (its last 4 evaluations: rounds 19-30). The grids are the
# evidence and choose nothing (every other run takes the paper's values), so they run on judging seeds. **A good
# cell** is one whose score reaches a threshold shared by every method: the best mean cell of all the grids minus two
# points. The heat maps are at the figures' $\tau$; at `medium` the grids also run at $\tau$ = 0.01 and 0.1 for the
# explorer below:

# %%
grid = tuning.grid(grid_scale)  # {"client_lr": [...], "server_lr": [...]}
client_lrs, server_lrs = grid["client_lr"], grid["server_lr"]
grid_task = tuning.grid_task(grid_scale, live.data)  # the live task of section 2 as a common.Task
grid_seeds = grid_scale.seeds_or()
taus = sorted({TAU, *(grid_scale.taus if TAUS is None else TAUS)})
builders = {tau: experiment.grid_builders(tau) for tau in taus}  # FedAvg's and FedAvgM's runs ignore tau: stored once
tunings = {tau: experiment.tune(grid_task, builders[tau], {method: grid for method in builders[tau]}, grid_seeds,
                                store=store) for tau in taus}  # a common.Tuning per tau
grids_by_tau = {tau: tuning.heatmaps(tunings[tau]) for tau in taus}  # each method's mean scores as a heat map
heatmaps = figures.HeatmapsDisplay.from_grids(grids_by_tau[TAU]).plot()  # one threshold for every method
grids, threshold = heatmaps.grids, heatmaps.threshold
plots.savefig(heatmaps.figure_, "01_tuning_heatmaps.png", FIGURES)

# %% [markdown]
# Each cell prints its accuracy in % (the mean over the seeds); red outlines mark the good cells; all five
# grids share one colour scale and its one colour bar, which spans FedAvg's worst cells, so the adaptive grids'
# differences show in the printed numbers more than in the colours. Counted on the means (a best cell on the grid's edge means
# the good region may extend beyond the grid):

# %%
print(f"good cell: accuracy at least {100 * threshold:.2f}% (the best mean cell of all grids minus "
      f"{100 * tuning.NEAR_BEST:g} points)")
summary = tuning.tuning_summary(grids, threshold)
summary

# %% [markdown]
# Where "good" starts is a choice: the count of good cells per method (of 42) as the margin below the best cell
# of all grids grows; a count that grows fast has many cells just below the best, a flat landscape (the verdict
# below uses 2 points, on each seed):

# %%
tuning.good_cells_by_margin(grids, [0.01, 0.02, 0.05, 0.1])

# %% [markdown]
# And per seed: the share of each method's cells that reach the threshold on that seed, the numbers the claim
# compares (paired by seed):

# %%
shares = pd.DataFrame({method: tuning.good_shares(table, threshold) for method, table in tunings[TAU].tables.items()})
(100 * shares.T).round(1).rename(columns=lambda seed: f"seed {seed} (%)")

# %% [markdown]
# How $\tau$ moves the adaptive methods (FedAvg and FedAvgM do not use it): each grid's best mean cell, where it
# lies, and the grid's good cells against the threshold of the $\tau = 10^{-3}$ grids above:

# %%
adaptive = [method for method in grids if method in paper.ADAPTIVE]
by_tau = pd.concat({f"tau {tau:g}": tuning.tuning_summary({method: grids_by_tau[tau][method] for method in adaptive},
                                                          threshold)[["best accuracy (%)", "best client lr",
                                                                      "best server lr", "good cells"]]
                    for tau in taus}, axis=1)
by_tau if len(taus) > 1 else print(f"SCALE={SCALE} runs the grids at tau {TAU:g} only (medium adds 0.01 and 0.1)")


# %% [markdown]
# $\tau$ is the floor under the adaptive denominator $\sqrt{v_t} + \tau$: once $\tau$ dominates $\sqrt{v_t}$,
# the server step tends to $\eta\, m_t / \tau$, server momentum SGD (at rate $\eta (1 - \beta_1) / \tau$ in
# FedAvgM's form), and the method loses what made it adaptive; its best server rate then grows with $\tau$,
# which a grid of fixed range can push off its edge. Read the best server rates above with that in mind.

# %%
tuning_scope = common.scope({grid_task.name: grid_task}, SCALE, grid_seeds, grid_task.model_label)
with pd.option_context("display.max_colwidth", None):  # this section's verdict, by the rules of section 7
    display(paper.claims_table(paper.Evidence(tuning=tunings[TAU], tuning_scope=tuning_scope),
                               paper.CLAIMS[4:]))

# %% [markdown]
# Pick a method, a $\tau$ and a cell to see its heat map (the chosen cell outlined in black, the good cells of
# that $\tau$'s grids in red) and the cell's learning curve on the first seed (the runs are read back from the
# store): once headless, then behind widgets, which need a running kernel (a saved notebook shows only their
# description).

# %%
def grid_curve(method, tau, client_lr, server_lr):
    return fedcore.simulate(grid_task.problem(grid_seeds[0]), builders[tau][method](client_lr, server_lr),
                            seed=grid_seeds[0], store=store, progress=False, **grid_task.settings)


explore.explore_tuning("FedAdam", TAU, client_lrs[-2], server_lrs[1], grids_by_tau, grid_curve)
plt.gcf().set_dpi(60)  # this preview at fewer pixels than the live explorer below: the committed notebook stays under 1 MB
plots.savefig(plt.gcf(), "01_tuning_cell.png", FIGURES)

# %%
cell_explorer = widgets.interactive(
    explore.explore_tuning,
    method=widgets.Dropdown(options=list(grids), value="FedAdam", description="method"),
    tau=widgets.Dropdown(options=taus, value=TAU, description="τ"),
    client_lr=widgets.SelectionSlider(options=explore.grid_options(client_lrs), value=client_lrs[-2],
                                      description="client lr"),
    server_lr=widgets.SelectionSlider(options=explore.grid_options(server_lrs), value=server_lrs[1],
                                      description="server lr"),
    grids=widgets.fixed(grids_by_tau), curve=widgets.fixed(grid_curve),
)
display(cell_explorer)

# %% [markdown]
# ## 6. Explorer: a live run
#
# `fedcore.explore.explore_fedopt` runs a method with the sliders' learning rates, $\tau$ and $\beta$s on the
# EMNIST CR stand-in of section 3 (the MLP, 10 of its 500 two-class clients per round, 6 local steps of 20) for
# 60 rounds (a few seconds on 2 CPU cores), beside FedAvg with the same client rate (not FedAvg's own best, which
# the paper puts at $10^{-1}$ for EMNIST CR: move the slider to see it), from the first seed; the
# loss panel shows the training loss's running mean over 10 rounds (one round's loss is its 10 clients'); each
# legend entry ends with that run's final test accuracy; sliders a method does not use are greyed out. It starts
# at FedAdam's best values for EMNIST CR in the paper. Once headless, then live (with a running kernel):

# %%
live_cr = dict(problem=cr_task.problem(seeds[0]), rounds=60, smooth=10, store=store,
               settings={**{k: v for k, v in cr_task.settings.items() if k != "rounds"}, "eval_every": 5})
explore.explore_fedopt("fedadam", client_lr=10**-1.5, server_lr=10**-2.5, tau=1e-4, beta1=0.9, beta2=0.99, **live_cr)
plots.savefig(plt.gcf(), "01_live_run.png", FIGURES)

# %%
live_explorer = widgets.interactive(
    explore.explore_fedopt,
    method=widgets.Dropdown(options=list(explore.FEDOPT_METHODS), value="fedadam", description="method"),
    client_lr=widgets.FloatLogSlider(value=10**-1.5, base=10, min=-3, max=0.5, step=0.5, description="client lr"),
    server_lr=widgets.FloatLogSlider(value=10**-2.5, base=10, min=-3, max=0.5, step=0.5, description="server lr"),
    tau=widgets.FloatLogSlider(value=1e-4, base=10, min=-5, max=0, step=0.5, description="τ"),
    beta1=widgets.FloatSlider(value=0.9, min=0.0, max=0.99, step=0.01, description="β₁"),
    beta2=widgets.FloatSlider(value=0.99, min=0.5, max=0.999, step=0.001, readout_format=".3f", description="β₂"),
    **{name: widgets.fixed(value) for name, value in live_cr.items()},
)
display(explore.disable_unused(live_explorer, explore.FEDOPT_METHODS, chooser="method"))

# %% [markdown]
# ## 7. The paper's claims beside ours
#
# Each verdict is computed from the tables above (`paper.CLAIMS`) by the rules every notebook shares
# (`fedcore.experiments.claims`). Every check compares two methods **on the same seeds** (the same initial model,
# client sampling and minibatches; the data partition fixed) by the 95% paired t interval of the mean difference,
# Holm-corrected within a claim: *confirmed* when the interval lies beyond what the claim asks, *contradicted* when
# it lies short of it, undecided otherwise (*not decidable* where it is wider than a margin's room; the text gives
# the seeds that would decide). A claim **holds** if every check is confirmed (for "most tasks": more than half, a
# task counting when both its checks are), **does not hold** if one is contradicted (saying where it held; for
# "most": too few can pass), is **inconclusive** or **not decidable at n seeds** if none is decided, **partly**
# otherwise, and **not testable here** where a gate leaves no check that could fail (a task at its trivial baseline;
# FedAvg the worst method, its own score the convergence target; ExpDecay in runs still climbing). Each claim quotes
# the slides and says how we read it; `ours` lists its checks (Table 1's units; lower MSE for the autoencoder). Tasks
# on which most methods do not beat a trivial baseline by more than 0.5 (a model that learned nothing: the most
# frequent class or character, the mean image; printed below) are left out of the Table 1 claims: there the order of
# the methods is noise. Each row says its scope: the tasks it judged, the scale, the model, the rounds of a run, the
# seeds and the comparisons Holm corrected. The paper's own Tables 1 and 11 give "holds" for the first and the fourth
# and "partly" for the second: by its own bold marks FedYogi is within 0.5% of the best on 6 of the 7 tasks but
# FedAdam on 3 (tests/test_fedopt_experiment.py).

# %%
print("trivial baselines in Table 1's units:", {task: round(value, 2) for task, value in baselines.items()})
evidence = paper.Evidence(table1=scores, baselines=baselines, convergence=convergence, decay=decay_scores,
                          decay_gain=decay_gain, tuning=tunings[TAU], scope=scope, tuning_scope=tuning_scope)
claims_table = paper.claims_table(evidence)
records.record({"claims": claims_table, "table1": table1, "paired": paired, "tuning": summary}, "01_fedopt", SCALE)
with pd.option_context("display.max_colwidth", None):
    display(claims_table)

# %% [markdown]
# **What differs from the paper, and why it matters.**
#
# - **Data.** EMNIST CR and AE run on Fashion-MNIST split into 500 two-class clients: harsher label skew than
#   EMNIST's writers, clothing instead of characters, 10 classes instead of 62. Shakespeare runs on its own
#   texts but with our parser and client counts (705 roles with the defaults; the paper has 715), at `medium`
#   on 100 of them, chunked per role rather than per line and without TFF's begin and end tokens. 500 stand-in
#   clients against EMNIST's 3,400 writers.
# - **Models.** At `small` and `medium` ours, lighter than the paper's (section 3); `paper` trains the paper's
#   CNN, deep autoencoder and two-layer char-LSTM. A verdict at `small` is about these methods on these models.
# - **Scale.** At `small` every Table 1 run is 300 rounds of 10 clients with one local epoch, against the
#   paper's 1500-3000 rounds for these tasks: late early-training numbers, EMNIST CR still climbing (the curves).
# - **Metric.** Test accuracy (and MSE) on the full test set, the mean of the last 4 evaluations, every 25
#   rounds: the paper's window of 100 rounds, on the test set where the paper reports validation performance.
# - **Weighting.** Clients are weighted by their samples where the paper's Algorithm 1 writes $1/|S|$: the same
#   on the Fashion-MNIST stand-ins (120 images each), not on the 20-client task of sections 2 and 5.
# - **ExpDecay.** At `small` one cut, at two thirds of the run, where the paper cuts at a third and at two
#   thirds of 1500 rounds, in runs that had levelled off; our constant-rate runs were still gaining after the
#   cut (section 4 prints how much), which leaves the claim not testable at this scale.
# - **Centralized rows.** Algorithm 2's rules on one client (not torch's Adagrad and Adam), at learning rates
#   we chose (the paper reports none), on the same pool of data: the gap to federated training in section 4
#   carries these choices too.
# - **Our readings.** Where the paper gives no rule, the rules are ours and stated where used: "good" cells
#   (2 points below the best cell of all grids), the target of "faster convergence" (the worst method's mean
#   score), "within 0.5%" (points of accuracy, a relative 0.5% of the MSE).
# - **Hyperparameters.** The paper's best values for each task, found on the paper's data, models and runs; on
#   the stand-ins they are not tuned, and may suit some methods better than others.
# - **Seeds.** Five seeds per run (one for the centralized runs, which feed no verdict), compared in pairs (the
#   paper reports one number per configuration). Rerun with other seeds: `-y "SEEDS: [5, 6, 7, 8, 9]"`.
# - **Reproducibility.** Rerun from scratch (`-p STORE off`) with torch on 2 threads, as here, Table 1's runs
#   gave back every printed digit; on 1 thread only the sixth decimal of a score moved (checked on EMNIST AE at
#   commit ef83f30), below the two decimals printed.
# - **Tuning grids.** Figures 2 and 6 are on Stack Overflow and CIFAR-100 with deep models; ours is a convex
#   model on Fashion-MNIST, where every method has an easier landscape, with 30-round runs; a best cell on the
#   grid's edge makes the good region a lower bound.
