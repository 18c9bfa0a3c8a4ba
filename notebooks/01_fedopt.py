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
# FedAvg's new model is the average of the clients'. Reddi et al. read the average move as a **pseudo-gradient** and
# give the server an optimizer of its own: momentum (FedAvgM) or Adagrad, Adam or Yogi (FedAdagrad, FedAdam, FedYogi).
# They prove a rate of $O(1/\sqrt{mKT})$ for FedAdagrad and FedAdam, and report on seven tasks that adaptive servers
# match or beat FedAvg, converge faster and tune more easily.
#
# This notebook (1) tests the rate on federated least squares (two seeds); (2) compares libraries' "FedAdam" (one
# seed: an illustration); (3) runs Table 1's rows that fit a CPU, on a Fashion-MNIST stand-in; (4) reruns Table 11;
# (5) measures "easier to tune"; (6) offers a live run; (7) judges the claims.
#
# **Parameters.** `SCALE`: `smoke` (CI), `small` (2 CPU cores, about 14.5 minutes from an empty store:
# shown here), `medium` (adds Shakespeare and two $\tau$; recorded in `results/medium/`) or `paper` (a GPU). Judging
# runs use five seeds (ExpDecay's three at `small`), compared in pairs. Other seeds: `-y "SEEDS: [5, 6, 7, 8, 9]"`.

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
import dataclasses
import functools
import inspect
import operator

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

import fedcore
from fedcore import comparisons, objectives, plots, server_opt
from fedcore.explore import LIVE_RUN, disable_unused, grid_options, live_problem
from fedcore.store import default_store
from papers import claims, common, records
from papers import figures as common_figures
from papers.fedopt import experiment, explore, figures, paper, theory, tuning

store = default_store(STORE)
plt.rcParams["figure.dpi"] = 75  # many figures: keeps the committed notebook under 1 MB
scale = common.scale_at(experiment.SCALES, SCALE)
print(f"SCALE={SCALE}: {scale}")

# %% [markdown]
# ## 1. The algorithms and what is proved
#
# In round $t$ the server sends $x_t$ to $m$ sampled clients; each takes $K$ SGD steps at the client rate $\eta_l$,
# and the server forms the pseudo-gradient $\Delta_t = \sum_i w_i (x^i_{t,K} - x_t)$ (Algorithm 1) and runs a server
# optimizer on it at the server rate $\eta$ (Algorithm 2, $m_{-1} = 0$, $v_{-1} = \tau^2$, squares per coordinate):
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
# FedAvg is $x_{t+1} = x_t + \eta \Delta_t$ ($\eta = 1$: McMahan et al.); FedAvgM adds server momentum $m_t = \beta
# m_{t-1} + \Delta_t$. One fedcore class runs all five; its server rule is the paper's lines:

# %%
print(inspect.getsource(fedcore.algorithms.FedOpt.server_round))
print(inspect.getsource(server_opt.Adaptive.update))

# %% [markdown]
# > **Why an adaptive server step helps, and when it cannot.** Dividing by $\sqrt{v_t}$ scales each coordinate of the
# > pseudo-gradient by its own typical size, so every coordinate moves by about $\eta$. That helps where update sizes
# > differ by orders of magnitude across coordinates: sparse features, embeddings, language models (Table 1's Stack
# > Overflow rows). It cannot where $\tau \gg \sqrt{v_t}$: the step is then $\eta\, m_t / \tau$, server momentum SGD
# > at rate $\eta (1 - \beta_1) / \tau$, i.e. FedAvgM. Nor can it where $v_t$ is about the same for every
# > coordinate: one rate for all, momentum SGD again; by the spread of their denominators nearly all our runs were so
# > (sections 3 and 5). FedAvgM helps because momentum averages the noisy pseudo-gradients across rounds. The
# > adaptive rules differ in how $v_t$ forgets: Adagrad's sum never does, so its steps only shrink; Adam forgets at
# > rate $1 - \beta_2$; Yogi moves $v_t$ by at most $(1 - \beta_2)\Delta_t^2$, forgetting more slowly.
#
# The adaptive methods differ only in $v_t$; FedAvgM is server momentum:

# %%
for rule in (server_opt.Adaptive.next_v, server_opt.SGDM):
    print(inspect.getsource(rule))

# %% [markdown]
# **What is proved** (Corollaries 1-2, for $L$-smooth non-convex $f$, gradients bounded by $G$, local and client
# variances $\sigma_l^2$, $\sigma_g^2$): with $\eta_l = \Theta\big(1 / (K L \sqrt T)\big)$,
# $\eta = \Theta(\sqrt{K m})$ and $\tau = G / L$, FedAdagrad and FedAdam satisfy (as the slides print it), with
# $\sigma^2 = \sigma_l^2 + 6 K \sigma_g^2$, $m$ clients a round, $K$ local steps, $T$ rounds:
#
# $$\min_{0 \le t < T} \mathbb E \|\nabla f(x_t)\|^2 \;=\; O\!\left(
# \frac{f(x_0) - f(x^*)}{\sqrt{m K T}} + \frac{2 \sigma_l^2 L}{G^2 \sqrt{m K T}} + \frac{\sigma^2}{G K T}
# + \frac{\sigma^2 L \sqrt m}{G^2 \sqrt{K T}^{\,3/2}} \right).$$
#
# The first two terms give the headline slope of $-1/2$ in each of $m$, $K$, $T$ on log-log axes. The third does not
# fall with $m$, nor its $6 K \sigma_g^2$ part with $K$; the fourth grows as $\sqrt m$. So $-1/2$ holds in $T$ once
# $T$ is large, fades in $K$ as clients differ, and is not promised in $m$.
#
# The test: least squares over 50 clients with their own data and optima (heterogeneity 1), $m$ sampled per round,
# each method at the corollaries' rates; we record the mean $\|\nabla f(x_t)\|^2$ over the rounds (it bounds the
# minimum) as $T$, $m$, $K$ vary from $T = 200$, $m = 10$, $K = 5$. Least squares is strongly convex, a special case
# of the non-convex setting: the bound applies, loosely, so the test checks its exponents, not its constant.
# FedAvgM runs at the server rate that makes its first step FedAdam's:

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
# FedAdam's slopes against the rate's $-1/2$:

# %%
for name, slope in scaling.slopes.loc["FedAdam"].items():
    falls = bool((tables[name]["mean squared gradient norm"].diff().dropna() < 0).all())
    print(f"{name}: slope {slope:+.2f}, {'at least as steep as' if slope <= -0.5 else 'flatter than'} the rate's -0.5; "
          f"{'falls at every step' if falls else 'does not fall at every step (it rises somewhere)'}")

# %% [markdown]
# Why FedAvgM: here a client moves at most $K \eta_l G = \tau / \sqrt T$ per coordinate, so FedAdam's $v_t$ (from
# $\tau^2$) stays below $\tau^2$ and its step is FedAvgM's at rate $\eta (1 - \beta_1) / (2 \tau)$, within a factor
# of 2:

# %%
low, high = theory.denominator_ratio(task)
print(f"sqrt(v_t) / tau over the rounds and coordinates: {low:.3f} to {high:.3f}, so the denominator lies within "
      f"[{1 + low:.3f}, {1 + high:.3f}] tau")
gaps = (scaling.slopes.loc["FedAvgM"] - scaling.slopes.loc["FedAdam"]).abs()
print("largest difference of FedAvgM's fitted slope from FedAdam's:", f"{gaps.max():.3f} (in {gaps.idxmax()})")

# %% [markdown]
# The same fits with the clients' optima spread less (heterogeneity 0) and more (3):

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
# As the optima spread, more local steps buy less: each client drifts towards its own optimum (the $6 K \sigma_g^2$
# term). More clients per round buy more: they cannot average the drift away, but they shrink the sampling noise,
# which grows with the clients' spread (outside the bound).

# %% [markdown]
# The slides' second takeaway: heterogeneity's effect "can be reduced by choosing sufficiently $\eta_l$ and a
# reasonably large $\eta$" (read: a small $\eta_l$). FedAdam at the corollary's rates times $c$ (client) and $1/c$
# (server), $T = 200$, $K = 10$, the final $\|\nabla f\|^2$ (the first seed). Left: all 50 clients every round; right:
# 10 of 50.

# %%
constants = [10 ** (k / 2) for k in range(-2, 5)] if SCALE != "smoke" else [0.1, 10.0]
point = dict(theory.TRADEOFF, rounds=200 if SCALE != "smoke" else 20)
tradeoffs = {f"{m} of 50 clients per round":
             theory.rate_tradeoff(levels, constants, seeds=scaling_seeds[:1], point=dict(point, clients_per_round=m),
                                  store=store)
             for m in (50, 10)}
tradeoff = figures.TradeoffDisplay.from_tables(tradeoffs, target=1e-3).plot()
plots.savefig(tradeoff.figure_, "01_rate_tradeoff.png", FIGURES)
for name, slopes in tradeoff.slopes.iterrows():
    print(f"{name}: slope in c per heterogeneity level {list(slopes.index)}: "
          + ", ".join(f"{slope:+.2f}" for slope in slopes) + "; largest c reaching ||grad f||^2 <= 1e-3 (nan: none "
          "does): " + ", ".join(f"{value:.3g}" for value in tradeoff.reach.loc[name]))

# %% [markdown]
# Left: a smaller client constant leaves a lower final gradient (slopes +1.87, +1.78, +1.77: drift grows with the square
# of the client step), and heterogeneity lifts the line, so the same target takes a smaller client rate and a larger
# server rate: the takeaway, measured with all 50 clients. Right: sampling noise sets the floor, the split moves it far
# less (slopes +0.30, +0.14, +0.16), and no constant reaches $10^{-3}$ at heterogeneity 1 or 3 (one seed).

# %% [markdown]
# ## 2. "FedAdam" is not one optimizer
#
# The authors' experiments used Keras' optimizers (bias correction, $v_{-1} = 0$); Flower's FedAdam counts bias
# correction from $t = 2$; TFF's Adagrad puts $\tau$ inside the root. fedcore makes each an option:

# %%
with pd.option_context("display.max_colwidth", None):
    display(experiment.variants_table())

# %% [markdown]
# Each reading at the paper's EMNIST CR rates and $\tau$, with its own $\beta$s, on a small task: Fashion-MNIST on 20
# clients (Dirichlet 0.5 label skew), a logistic regression, 5 clients per round, 5 local steps of 32.

# %%
live = live_problem()
grid_scale = common.scale_at(tuning.GRIDS, SCALE)  # the learning-rate grids' scale (section 5)
variant_options = dict(LIVE_RUN, rounds=grid_scale.rounds, progress=False, store=store)
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
# Test accuracy in %, the mean over rounds 11-30 (the last 4 evaluations), one run each, one seed: an illustration.
# Keras' and Flower's Adagrad drop momentum ($\beta_1 = 0$): FedAdagrad's readings spread most, 7.78 points. Bias
# correction and $v_{-1} = 0$ change the first steps, Keras' $\beta_2 = 0.999$ makes $v_t$ follow $\Delta_t^2$ more
# slowly, and $\tau$ inside the root shrinks Adagrad's step. A published "FedAdam" number carries its library's reading.
#
# ## 3. Table 1: the rows that can run here
#
# **EMNIST CR** and **AE** run on **Fashion-MNIST as a stand-in** (EMNIST cannot be fetched here): 500 clients of 120
# images, two classes each. At `small` the models are ours and lighter, so that the methods learn on a CPU: an MLP for
# CR (the paper's CNN costs about 55 times as much per round), a one-layer autoencoder for AE (the paper's deep one did
# not beat the mean image within our budget). 300 rounds against the paper's 1500-3000:

# %%
tasks = experiment.tasks(scale, partition_seed=PARTITION_SEED, device=DEVICE)  # {name: common.Task}
seeds = scale.seeds_or(SEEDS)  # the judging seeds of Table 1 (the rate check, ExpDecay and centralized runs: theirs)
results = functools.reduce(operator.or_, [  # a common.Results: results[task][method] -> [History per seed]
    experiment.run(task, experiment.make_builders(task, scale), seeds, store=store, progress=PROGRESS)
    for task in tasks.values()])
with pd.option_context("display.max_colwidth", None):
    display(experiment.settings_beside(results))

# %% [markdown]
# **One window rule**: a run's score is the mean of its last 4 test evaluations, every 25 rounds: the paper's window of
# 100 rounds (a third of our runs):

# %%
for name, task in tasks.items():
    print(f"{name}: {common.window_rounds(task.settings)}, {task.data.test_targets.shape[0]:,} test samples")

# %% [markdown]
# Every run's rates and $\tau$: the paper's best per task, tuned on its models, not ours (checked below):

# %%
experiment.hyperparameter_table(list(tasks))

# %% [markdown]
# Table 1 beside ours (`fedcore`: mean ± sd over the seeds), in Table 1's units (% accuracy; MSE x1000, lower is
# better), with what a model that learned nothing scores (the most frequent class; the mean image):

# %%
scores = results.scores()  # (task, method) x seed, Table 1's units
baselines = {name: task.baseline for name, task in tasks.items()}  # in Table 1's units
table1 = experiment.table1_beside(results)  # recorded as "table1" in section 7
print(records.status("01_fedopt", "table1"))
records.beside(table1, "01_fedopt", "table1", label=f"ours, {SCALE}")

# %% [markdown]
# **What we see.** On the CR stand-in FedYogi (83.75) and FedAdam (83.57) lead, the paper's top two too; FedAdagrad
# (82.79) is within the noise of FedAvg (82.05). FedAvgM comes last (81.26 ± 1.13; -0.79 [-2.01, +0.44] against
# FedAvg, within the noise), where the paper has it above FedAvg. On the AE stand-in the order is the paper's but
# for the top two swapped: FedAdam 13.76 before FedYogi 13.89. Only the order compares with the paper.
#
# Every seed's score (dots) and the mean (ticks):

# %%
shown = common_figures.ScoresDisplay.from_scores(scores.rename(index=lambda t: paper.PAPER_TASKS.get(t, {}).get(
    "name", t), level="task"), "score in Table 1's units").plot(
    baselines={paper.PAPER_TASKS[t]["name"]: b for t, b in baselines.items()}, baseline_label="trivial baseline")
plots.savefig(shown.figure_, "01_table1_seeds.png", FIGURES)

# %% [markdown]
# Each method minus FedAvg on the same seeds: the mean paired difference, its 95% interval and p (this comparison's
# alone; section 7 corrects within each claim: p_Holm), positive when the method is better:

# %%
paired = results.paired("FedAvg", words={comparisons.CONFIRMED: "better", comparisons.CONTRADICTED: "worse",
                                          **dict.fromkeys(comparisons.UNDECIDED, "undecided")}).rename(
    index=lambda t: paper.PAPER_TASKS[t]["name"])
paired

# %% [markdown]
# **Were the adaptive methods adaptive?** Each adaptive run reports every round a typical coordinate's
# $\sqrt{v_t} / \tau$ (the geometric mean) and the spread of its denominators $\sqrt{v_t} + \tau$ over the coordinates
# (their geometric sd). A spread near 1 means one rate for every coordinate: momentum SGD, however large $v_t$ is. Our
# bands, read on the spread at the end (last round, mean over the seeds): up to 1.5 one rate, above 3 per-coordinate,
# mildly per-coordinate between. The largest spread is over every round and seed:

# %%
# each adaptive run reports both every round (server_opt.adam(report=True)); the bands: experiment.regime
experiment.regime_table(results).rename(index=lambda t: paper.PAPER_TASKS.get(t, {}).get("name", t), level="task")

# %% [markdown]
# Every run but FedAdagrad on AE took nearly one rate for all coordinates (spreads at the end 1.07 to 1.34, in the
# one-rate band): momentum SGD in effect, with $\sqrt{v_t}$ near $\tau$ (typical ratios 0.39 to 1.58; FedAdagrad's
# $v_t$ on CR hardly left its start $\tau^2$). FedAdagrad on AE (typical ratio 22.7) ended at a spread of 2.01
# (largest 2.44): mildly per-coordinate.
#
# The autoencoder's MSE as a % of the mean image's (100 minus it: how much of that error each method removes):

# %%
if "emnist_ae" in tasks:
    relative = 100 * results.means().loc["emnist_ae"] / baselines["emnist_ae"]
    print("EMNIST AE stand-in, MSE as % of the mean image's:", relative.round(1).to_dict())

# %% [markdown]
# The paper's rows not run here:

# %%
with pd.option_context("display.max_colwidth", None):
    display(pd.Series(experiment.not_run(SCALE), name=f"not run at SCALE={SCALE}").to_frame())

# %% [markdown]
# The curves: mean over the seeds, a one-sd band, the trivial baseline dashed.

# %%
curves = figures.Table1CurvesDisplay.from_results(results).plot()
plots.savefig(curves.figure_, "01_table1_curves.png", FIGURES)

# %% [markdown]
# **Faster convergence** (the slides' summary): the rounds each run needs to first reach a target set half-way
# through FedAvg's runs (their mean score there), not by any method's final score; a run that never does counts one
# evaluation past its end. Evaluations come every 25 rounds: a smaller difference cannot show.

# %%
convergence, targets = experiment.convergence_table(results)
print("targets in Table 1's units (FedAvg's mean score half-way):", {task: round(value, 2) for task, value in
                                                                     targets.items()})
common.mean_sd(convergence, digits=0).reindex(list(paper.METHODS)).rename(
    columns=lambda task: paper.PAPER_TASKS[task]["name"])

# %% [markdown]
# This section's verdicts, by section 7's rules:

# %%
scope = experiment.scope(tasks, SCALE, seeds)  # tasks, scale, models, rounds, seeds
table1_evidence = paper.Evidence(table1=scores, baselines=baselines, convergence=convergence, scope=scope)
claims.show(paper.claims_table(table1_evidence, paper.CLAIMS[:4]))

# %% [markdown]
# **Were the paper's rates right for our models?** The scores at the paper's client rate times $10^{-0.5}$, 1 and
# $10^{+0.5}$ (every method on AE, FedAvg and FedAvgM on CR), on tuning seed 100: CR in % accuracy (higher is
# better), AE in MSE x1000 (lower is better):

# %%
rate_checks = {name: experiment.tune(task, experiment.make_builders(task, scale), experiment.rate_grids(name),
                                     scale.tuning_seeds, store=store, progress=PROGRESS)
               for name, task in tasks.items() if experiment.rate_grids(name)}  # {task: common.Tuning}
experiment.rate_table(rate_checks)

# %% [markdown]
# Table 1's claims again, each checked method at its best client rate:

# %%
at_best = functools.reduce(operator.or_, [experiment.run(
    task, common.bind(experiment.make_builders(task, scale), rate_checks.get(name, {}), seeds), seeds, store=store,
    progress=PROGRESS) for name, task in tasks.items()])
best_convergence, _ = experiment.convergence_table(at_best)
best_scope = dataclasses.replace(experiment.scope(tasks, SCALE, seeds, rates="client rates checked"),
                                 tuning_seeds=scale.tuning_seeds)
best_evidence = paper.Evidence(table1=at_best.scores(), baselines=baselines, convergence=best_convergence,
                               scope=best_scope)
claims.show(paper.claims_table(best_evidence, paper.at_best_rates(paper.CLAIMS[:4])))

# %% [markdown]
# FedAvgM's best client rate (CR and AE) and FedAvg's (AE) lie half a decade above the paper's, at the edge of the
# check. Against them the paper's question drops from holds to partly (on CR FedYogi - FedAvgM +1.31 [+0.06, +2.57],
# p_Holm 0.131), FedAdam's lead over FedAvg on AE from +12.26 to +5.07; the other verdicts stay.

# %% [markdown]
# ## 4. Table 11: centralized training, and ExpDecay
#
# **Centralized training is FedOpt with one client** holding all the data and taking one local step at client rate 1:
# then $\Delta_t = -g_t$, and the server optimizer *is* the centralized optimizer. The centralized rows run each
# method's Algorithm 2 rule so (printed below), one step per federated local step on a minibatch of 200, at rates of
# ours. They see one pool of data, the federated runs two-class clients: the gap mixes federation and heterogeneity, as
# the paper's does.
#
# **ExpDecay** multiplies the client rate by 0.1 every 500 of the paper's 1500 rounds, once the constant-rate runs
# have levelled off. Ours still climb at a third of their 300 rounds, so the rate is cut once, at two thirds. If the
# constant-rate runs' median gain from the cut to the end exceeds 1 point, they had not levelled off: not testable
# here.

# %%
# torch's optimizers give these rules with other options (Adagrad without momentum, v_-1 = 0: to 1e-12; Adam with
# Keras' bias correction, v_-1 = 0: to 2e-7 over six steps): tests/test_fedopt_experiment.py. The centralized rates,
# ours: experiment.CENTRALIZED_LRS (Adagrad 0.01, Adam and Yogi 0.001, SGDM 0.01, SGD 0.1). The plateau gate's 1 point:
# paper.PLATEAU
cr_task = tasks["emnist_cr"]
central_seeds = scale.centralized_seeds(SEEDS)  # the first one at small
central = experiment.run(experiment.centralized_task(cr_task), experiment.centralized_builders(), central_seeds,
                         store=store, progress=PROGRESS)  # one client, one step a round
decay_seeds = scale.decayed_seeds(SEEDS)  # the first three at small (a claim the plateau gate decides there)
decayed = experiment.run(cr_task, experiment.decay_builders(cr_task, scale), decay_seeds, store=store,
                         progress=PROGRESS)
decay_scores = pd.concat({"constant": scores.loc["emnist_cr"][decay_seeds],
                          "ExpDecay": decayed.scores().loc["emnist_cr"]})  # paired on the same seeds
decay_scope = experiment.scope({"emnist_cr": cr_task}, SCALE, decay_seeds)
table11 = pd.DataFrame({"centralized": central.means().iloc[0], "constant": results.means().loc["emnist_cr"],
                        "ExpDecay": decayed.means().loc["emnist_cr"]})
table11_beside = pd.concat({"paper": paper.TABLE11.set_axis(["centralized", "constant", "ExpDecay"], axis=1),
                            f"fedcore (mean over seeds {claims.seed_list(seeds)}; ExpDecay: seeds "
                            f"{claims.seed_list(decay_seeds)}; centralized: seed"
                            f"{'s' * (len(central_seeds) > 1)} {claims.seed_list(central_seeds)})": table11}, axis=1)
table11_beside.index = [f"{m} (centrally: {paper.CENTRALIZED_NAMES[m]})" for m in table11_beside.index]
display(table11_beside.round(2))
with pd.option_context("display.max_colwidth", None):
    display(pd.Series(experiment.CENTRALIZED_RULES, name="what the centralized row runs here").to_frame())
first_cut = experiment.decay_every("emnist_cr", cr_task.settings["rounds"], scale.decay)
after_cut = 1 - first_cut / cr_task.settings["rounds"]  # the share of the run after the cut
decay_gain = {m: 100 * float(pd.Series([paper.late_gain(h, "test_accuracy", after_cut, common.SCORE_EVALUATIONS)
                                        for h in runs]).mean()) for m, runs in results["emnist_cr"].items()}
print(f"what the constant-rate runs gained from the cut (round {first_cut}) to the end, the score's window there "
      "against the same window at the cut (points, mean over the seeds):", {m: round(g, 1) for m, g in
                                                                           decay_gain.items()})

# %% [markdown]
# **What we see.** Centralized training beats federated by 3.6 to 5.6 points (printed below; the paper: 2.3 to 2.9).
# Paired on seeds 0-2 (Table 11's "constant" averages seeds 0-4: don't subtract its columns), ExpDecay ends above the
# constant rate for every method, by +1.39 (FedYogi) to +3.11 (FedAvgM; after Holm only FedAvg's +2.13 is
# confirmed), but the constant-rate runs still gained 1.1 to 2.1 points after the cut: not testable here.
#
# The paper's schedule, cuts at rounds 100 and 200, beside one late cut, seeds 0-4, p uncorrected (an illustration;
# run at `medium`, shown from its record): the paper's two cuts end below the late one for every method.

# %%
schedules = {}  # recorded at medium (section 7); small shows medium's record
if scale.paper_schedule:  # at `paper` the table above runs the paper's schedule itself; `small` cannot afford it
    proportional = experiment.run(cr_task, experiment.decay_builders(cr_task, scale, schedule="paper"), decay_seeds,
                                  store=store, progress=PROGRESS)
    every = experiment.decay_every("emnist_cr", cr_task.settings["rounds"], "paper")
    schedules["schedules"] = experiment.schedules_table({
        "constant": scores.loc["emnist_cr"], f"the paper's cuts ({every}, {2 * every})":
        proportional.scores().loc["emnist_cr"], f"one late cut ({first_cut})": decayed.scores().loc["emnist_cr"]})
    display(schedules["schedules"])
elif scale.decay != "paper":
    if (found := records.recorded("01_fedopt", "schedules")) is not None:
        print(f"medium: recorded at commit {found.commit} on {found.date}; SCALE={SCALE} runs no schedule of its own")
        display(found.table.rename_axis(found.label))
    else:
        print(records.status("01_fedopt", "schedules"))

# %%
gap = table11["centralized"] - table11["constant"]
paper_gap = paper.TABLE11.iloc[:, 0] - paper.TABLE11.iloc[:, 1]
print(f"centralized minus federated (constant rate): {gap.min():.1f} to {gap.max():.1f} points here, "
      f"{paper_gap.min():.1f} to {paper_gap.max():.1f} in the paper")

# %%
claims.show(paper.claims_table(paper.Evidence(decay=decay_scores, decay_gain=decay_gain, decay_scope=decay_scope),
                               paper.CLAIMS[4:5]))  # this section's verdict, by the rules of section 7

# %% [markdown]
# ## 5. Ease of tuning (Figures 2 and 6)
#
# The paper's heat maps (Stack Overflow NWP, CIFAR-100, $\tau = 10^{-3}$) show a larger region of good client and
# server rates for the adaptive methods. Our grid (6 client by 7 server rates, half-decades) runs on section 2's
# convex task, every cell over five seeds; it chooses nothing, so it runs on the judging seeds. **A good cell**
# reaches the best mean cell of all grids minus two points:

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
# Mean accuracy in % per cell, good cells outlined in red. Counted on the means (a best cell on an edge means the good
# region may extend beyond the grid):

# %%
print(f"good cell: accuracy at least {100 * threshold:.2f}% (the best mean cell of all grids minus "
      f"{100 * tuning.NEAR_BEST:g} points)")
summary = tuning.tuning_summary(grids, threshold)
summary

# %% [markdown]
# Good cells (of 42) as the margin below the best grows; a fast-growing count means a flat landscape just below the
# best:

# %%
tuning.good_cells_by_margin(grids, [0.01, 0.02, 0.05, 0.1])

# %% [markdown]
# Per seed, the share of each method's cells at the threshold, which the claim compares in pairs. The counts above take
# cells whose mean clears it (FedAdagrad 12, FedAdam 13); here the shares average 31% and 30%: the order flips.

# %%
shares = pd.DataFrame({method: tuning.good_shares(table, threshold) for method, table in tunings[TAU].tables.items()})
(100 * shares.T).round(1).rename(columns=lambda seed: f"seed {seed} (%)")

# %% [markdown]
# Each grid's best and good cells per $\tau$ (`medium` adds 0.01 and 0.1: its record beside ours). The box in section 1
# expects the best server rate to grow with $\tau$ once $\tau$ dominates $\sqrt{v_t}$; at `medium` it does, tenfold per
# step for FedAdam and FedYogi (0.003, 0.03, 0.3):

# %%
adaptive = [method for method in grids if method in paper.ADAPTIVE]
by_tau = pd.concat({f"tau {tau:g}": tuning.tuning_summary({method: grids_by_tau[tau][method] for method in adaptive},
                                                          threshold)[["best accuracy (%)", "best client lr",
                                                                      "best server lr", "good cells"]]
                    for tau in taus}, axis=1)
print(records.status("01_fedopt", "tuning_by_tau"))
records.beside(by_tau, "01_fedopt", "tuning_by_tau", label=f"ours, {SCALE}")


# %% [markdown]
# This section's verdict, by section 7's rules:

# %%
tuning_scope = common.scope({grid_task.name: grid_task}, SCALE, grid_seeds, grid_task.model_label)
claims.show(paper.claims_table(paper.Evidence(tuning=tunings[TAU], tuning_scope=tuning_scope),
                               paper.CLAIMS[5:]))  # this section's verdict, by the rules of section 7

# %% [markdown]
# A cell's heat map and learning curve (first seed): once headless, then behind widgets (with a running kernel).

# %%
def grid_curve(method, tau, client_lr, server_lr):
    return fedcore.simulate(grid_task.problem(grid_seeds[0]), builders[tau][method](client_lr, server_lr),
                            seed=grid_seeds[0], store=store, progress=False, **grid_task.settings)


explore.explore_tuning("FedAdam", TAU, client_lrs[-2], server_lrs[1], grids_by_tau, grid_curve)
plt.gcf().set_dpi(60)  # fewer pixels than the live explorer below: the committed notebook stays under 1 MB
plots.savefig(plt.gcf(), "01_tuning_cell.png", FIGURES)

# %% [markdown]
# At each adaptive grid's best cell ($\tau = 10^{-3}$; one run each, seed 0), which term set the step:

# %%
best_cells = {f"best cell, tau {TAU:g}": {method: [grid_curve(method, TAU, row["best client lr"],
                                                              row["best server lr"])]
                                          for method, row in summary.loc[adaptive].iterrows()}}
experiment.regime_table(best_cells).join(summary.loc[adaptive, ["best client lr", "best server lr"]], on="method")

# %% [markdown]
# Spreads ended at 1.08 to 1.29: nearly one rate for all coordinates, though FedAdagrad's typical $\sqrt{v_t}/\tau$
# ended at 8.9 (its $v_t$ grew alike on every coordinate) and its spread peaked at 1.67, mildly per-coordinate.

# %%
cell_explorer = widgets.interactive(
    explore.explore_tuning,
    method=widgets.Dropdown(options=list(grids), value="FedAdam", description="method"),
    tau=widgets.Dropdown(options=taus, value=TAU, description="τ"),
    client_lr=widgets.SelectionSlider(options=grid_options(client_lrs), value=client_lrs[-2],
                                      description="client lr"),
    server_lr=widgets.SelectionSlider(options=grid_options(server_lrs), value=server_lrs[1],
                                      description="server lr"),
    grids=widgets.fixed(grids_by_tau), curve=widgets.fixed(grid_curve),
)
display(cell_explorer)

# %% [markdown]
# ## 6. Explorer: a live run
#
# A method at the sliders' rates, $\tau$ and $\beta$s on the EMNIST CR stand-in for 60 rounds, beside FedAvg at the same
# client rate, starting at the paper's best FedAdam values. Once headless, then live:

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
display(disable_unused(live_explorer, explore.FEDOPT_METHODS, chooser="method"))

# %% [markdown]
# ## 7. The paper's claims beside ours
#
# Every check compares two methods **on the same seeds**: the mean difference and its own (uncorrected) 95% paired t
# interval. It counts when its p, Holm-corrected within the claim (p_Holm), is at most 0.05: *confirmed* if beyond what
# the claim asks, *contradicted* if short of it; so an interval clear of the margin can still be "within the noise". A
# claim **holds** if every check is confirmed ("most tasks": more than half), **does not hold** if one is
# contradicted, is **not decidable at n seeds** if an interval is wider than the margin's room, **partly** otherwise,
# and **not testable here** where no check could fail ("~n seeds would decide": at the measured spread). For "an"
# adaptive method one confirmed suffices. Tasks where
# most methods fail to beat the trivial baseline by 0.5 are left out. Rows 6-9 rerun rows 0-3 at the checked client
# rates. By its own tables, the paper's answer is "holds" for rows 0-2 and 4.

# %%
# the rules: papers.claims; the claims: paper.CLAIMS; the paper's own verdicts, from its tables' bold
# marks: tests/test_fedopt_experiment.py
print("trivial baselines in Table 1's units:", {task: round(value, 2) for task, value in baselines.items()})
evidence = paper.Evidence(table1=scores, baselines=baselines, convergence=convergence, decay=decay_scores,
                          decay_gain=decay_gain, decay_scope=decay_scope, tuning=tunings[TAU], scope=scope,
                          tuning_scope=tuning_scope)
claims_table = pd.concat([paper.claims_table(evidence),  # the paper's rates, then the checked ones
                          paper.claims_table(best_evidence, paper.at_best_rates(paper.CLAIMS[:4]))], ignore_index=True)
records.record({**claims.as_tables(claims_table), "table1": table1, "paired": paired, "tuning": summary,
                "tuning_by_tau": by_tau, **schedules}, "01_fedopt", SCALE)
claims.show(claims_table)

# %% [markdown]
# **What differs from the paper, and why it matters.**
#
# | what | here, and why it matters |
# |---|---|
# | Data | Fashion-MNIST in 500 two-class clients for EMNIST's 3,400 writers: harsher skew, 10 classes not 62 |
# | Models | Ours, lighter (Shakespeare: one LSTM layer, not two): a verdict is about these models |
# | Rounds | 300 against 1500-3000: early training, EMNIST CR still climbing |
# | Metric | Test set, last 4 evaluations every 25 rounds: the paper's window, on validation data |
# | Rates | The paper's best, tuned on its models; a half-decade client-rate check reruns the claims |
# | Weighting | By samples, not $1/\lvert S\rvert$: the same on equal clients, not on Shakespeare, sections 2 and 5 |
# | ExpDecay | One cut, not two; runs still climbing after it, so not testable |
# | Readings | Good cell: 2 points below best; faster: to FedAvg's half-way score; within 0.5%: points, 0.5% of MSE |
# | Grids | A convex model, 30 rounds, not deep models on Stack Overflow and CIFAR-100 |
# | Shakespeare (`medium`) | Our parser: 705 roles (the paper: 715), 100 of them used |
#
# ## What we learned (at `small`, unless said)
#
# - **Held:** an adaptive server beats FedAvg on both stand-ins, at the paper's and at checked rates.
# - **Held only at the paper's rates:** the best adaptive method beats the best non-adaptive one; with FedAvgM's rate
#   checked, FedYogi's lead on CR is within the noise.
# - **Partly:** faster convergence (AE: x3.1; CR: x1.6, within the noise) and ease of tuning (every adaptive grid
#   beats FedAvg's; against FedAvgM only FedYogi's lead is confirmed).
# - **Not decidable at 5 seeds:** FedYogi within 0.5% of the best (about 6 and 14 seeds would decide).
# - **Not testable here:** ExpDecay, on runs still climbing.
# - **The bound's $-1/2$** showed in $T$ (-0.71); in $K$ the slope faded as clients differed (-0.22, -0.12, -0.01 at
#   heterogeneity 0, 1, 3), as its other terms predict; in $m$ it neared $-1/2$ only at 3 (-0.24, -0.35, -0.53).
# - **Adaptive in name:** by their denominators' spread, every adaptive run but one ended with nearly one rate for
#   all coordinates: their gains need not be adaptivity.
# - **Shakespeare, at `medium`** (`results/medium/01_fedopt/`): FedAvgM scored highest (50.5%), above every adaptive
#   method (FedAdam -0.45 [-0.69, -0.21]); FedAdam beat FedAvg (+1.05 [+0.74, +1.36]); all 7-9 points below the
#   paper, with one LSTM layer where it has two.
# - **Not tested:** CIFAR, Stack Overflow.
