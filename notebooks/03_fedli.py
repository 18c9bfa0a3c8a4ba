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
# # 03 · FedLi: towards hyper-parameter-free federated learning (arXiv 2408.17145)
#
# Adaptive federated methods (FedAdam and its kin) scale the server's update by a step size that must be tuned.
# FedLi asks whether the server can set its own step, as tuning-free step-size schemes do for SGD. Two answers:
# **FedLi-LS** lets the clients run SGD with a stochastic **Armijo line search** and claims that their
# descent carries over to the server objective (with a linear rate for strongly convex objectives); **FedLi-LU**
# lets the clients report their losses and computes the server's step by a **Deep-Frank-Wolfe** update. Its tables
# put FedLi-LU first on three of four tasks. The authors' code never ran the line search or the largest-step server
# rule; fedcore's FedLi is a reconstruction from the text (our copy lost most equations), checked against an
# independent implementation written from the paper, which agrees with it to about 1e-14 where both read the text
# the same way. **FedExP**, a baseline of the paper, sets its server step from the clients' updates.
#
# This notebook:
#
# 1. shows the framework (Algorithm 1) beside the fedcore code, and puts Lemma 3 and the linear rate to the test on
#    federated quadratics: where they hold, and where client drift breaks them;
# 2. builds an instance of Remark 2 (non-convex clients, each descending, the average ascending) with an explorer;
# 3. reruns Tables 1 and 2 on the task reachable at this scale (a Fashion-MNIST stand-in for FEMNIST) with all
#    seven methods over several seeds, the baselines tuned by a stated grid, FedLi-LS under three server rules, and
#    reads them beside the paper's whole tables;
# 4. looks at the server steps the two FedLi methods compute, and sweeps FedLi's own constants and the clients'
#    learning rate: is "hyper-parameter-free" borne out, and is FedLi-LU easy to tune on the paper's horizon?
# 5. measures what the line search costs, and the step sizes the clients settle on;
# 6. lets you move the baselines' learning rate and watch which methods move;
# 7. sets the paper's claims beside our measurements, with verdicts, and says what differs.
#
# **Parameters.** `SCALE` is `smoke` (CI, under a minute), `small` (what you see here: about 8 minutes on a 2-core
# CPU from an empty results store; the time printed at the end is this run's, which read finished runs back),
# `medium` (5 seeds, 100 rounds: about an hour; once run, its tables are recorded under `results/medium/` and
# shown beside small's) or `paper` (500 rounds, every task; for a GPU). Rerun with, e.g., `papermill 03_fedli.ipynb out.ipynb -p SCALE small -y "SEEDS: [3, 4, 5]"`. Finished
# runs are kept in the results store (`fedcore.store`), so a rerun recomputes only what changed; `-p STORE off`
# recomputes everything.

# %% tags=["parameters"]
import os

SCALE = os.environ.get("FEDCORE_SCALE", "small")  # smoke | small | medium | paper
DEVICE = "cpu"  # "cuda" on a GPU
PARTITION_SEED = 0  # the data partition and the kept test samples: the same for every run
SEEDS = None  # None: the scale's judging seeds (0-4 at small); each draws a run's initial model, client sampling, minibatches
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
import time

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

import fedcore
from fedcore import algorithms, explore, objectives, plots
from fedcore.algorithms.fedli import FedLiLS, deep_frank_wolfe
from fedcore.experiments import claims, common, records
from fedcore.experiments.fedli import experiment, figures, paper, theory
from fedcore.experiments.figures import CurvesDisplay, identical_groups
from fedcore.store import default_store

store = default_store(STORE)
started = time.perf_counter()
plt.rcParams["figure.dpi"] = 80  # keeps the committed notebook small
scale = common.scale_at(experiment.SCALES, SCALE)
seeds = scale.seeds_or(SEEDS)  # every training run below is repeated over these seeds
sweep_seeds = scale.sweep_seeds_or(SEEDS)  # ... but section 4's sweeps: over these (fewer at small: the budget)
print(f"SCALE={SCALE}: {scale}\nseeds {seeds}; sweeps on {sweep_seeds}; tuning seeds {list(scale.tuning_seeds)}")

# %% [markdown]
# ## 1. The framework, and when local descent is global descent
#
# **Algorithm 1** (FedLi). In round $t$ the server sends $x_t$ to the sampled clients $\mathcal S_t$, with
# aggregation weights $w_i$ (in section 3's runs proportional to the clients' sample counts $n_i$, as in the
# authors' code; uniform in the small federations of sections 1 and 2). **ClientUpdate**: each client runs $K$ local
# steps from $x_t$ with its own step-size rule and returns its model $x_{i,K}$, its last step size $\eta_i$ and its
# loss $F_i$ (fedcore: the mean of its $K$ minibatch losses). **FunctionSync** averages the losses,
# $L_t = \sum_i w_i F_i$; **StepSizeSync** gathers the $\eta_i$; **ServerUpdate** takes one step on the
# pseudo-gradient $\Delta_t = \sum_i w_i (x_{i,K} - x_t)$ (the mean client move):
#
# - **FedLi-LS**: clients run SGD with the stochastic Armijo line search (Vaswani et al., 2019): start each step
#   from $\min(\eta_{\max}, \rho^{b/n_i} \eta_{\text{prev}})$ (SLS's "reset" growth: $\rho = 2$, $b/n_i$ one
#   minibatch's share of client $i$'s epoch; each round's first step starts from 1, and the cap is
#   $\eta_{\max} = 10$, so a client's step can grow above 1), shrink $\eta \leftarrow \beta_b \eta$
#   ($\beta_b = 0.9$) until $F_i(w - \eta g; \xi) \le F_i(w; \xi) - c\, \eta \|g\|^2$ ($c = 0.1$) on the same
#   minibatch (after 100 failed tries the client moves by SLS's fixed $10^{-6}$); the server takes
#   $x_{t+1} = x_t + \eta_g \Delta_t$ with $\eta_g = 1$ (convex) or $\eta_g = \max_i \eta_i$ (non-convex:
#   section 3 uses this rule, and compares it with $\eta_g = 1$ and with a cap of 1, under which it can only
#   shrink the update; the explorer of section 6 uses $\eta_g = 1$).
# - **FedLi-LU**: clients run SGD; the server's Deep-Frank-Wolfe step on $d = -\Delta_t$ with pseudo-objective
#   $L_t$ and weight decay $\lambda$: $\gamma_t = \mathrm{clip}_{[0,1]}\big((L_t - \eta \langle d, r\rangle) / (\eta
#   \|d\|^2 + \epsilon)\big)$, $r = \lambda x_t$, $x \leftarrow x_t - \eta (r + \gamma_t d)$, then momentum
#   $z \leftarrow \mu z - \eta \gamma_t (d + r)$, $x_{t+1} = x + \mu z$, with the authors' constants
#   $\eta = 0.01$, $\mu = 0.9$, $\lambda = 10^{-5}$, $\epsilon = 10^{-5}$.
#
# "Hyper-parameter-free" means the server's step: both still carry constants ($c$, $\beta_b$, $\rho$,
# $\eta_{\max}$; $\eta$, $\mu$, $\lambda$, $\epsilon$ and the clients' SGD rate), set once, not tuned per task.
#
# The fedcore code of FedLi-LS's round, its clients' part and its server's part (the line search is
# `fedcore.algorithms.client.armijo`):

# %%
print(inspect.getsource(FedLiLS.client_run))
print(inspect.getsource(FedLiLS.server_round))

# %% [markdown]
# **Lemma 3** (as we read it; its equations were lost in our copy of the text): for convex $f_i$, Armijo descent on
# every client gives descent of $f = \sum_i w_i f_i$, and for strongly convex $f$ a linear rate. The argument:
# by convexity $f(\bar x) \le \sum_i w_i f(x_{i,K})$, and each client's steps lower its own $f_i$. But
# $f(x_{i,K})$ is not $f_i(x_{i,K})$: when the clients' objectives differ, a client can lower its own objective
# while raising the federation's. Two tests on least squares, every client in every round, full-batch steps:
#
# - **where the argument is sound**: four clients holding the same rows (every $f_i = f$), $K = 5$,
#   every round's first step started at the cap $\eta_{\max} = 10$ (`theory.SHARED_LINE_SEARCH`), so the search
#   backtracks. Each accepted step has $\eta \ge \eta_{lo} = \min(\eta_{\max},
#   2\beta_b (1-c)/L)$, and by the Polyak-Łojasiewicz inequality a round multiplies the gap $f(x_t) - f^*$ by at
#   most $(1 - 2 c \mu \eta_{lo})^K$ ($\mu$, $L$: the extreme eigenvalues of $A^\top A / n$);
# - **where it breaks**: two convex clients, $f_1(x) = 0.01 (x - 10)^2$ and $f_2(x) = 1.1\, x^2$ from $x_0 = 0$
#   ($x^* = 10/111$), $K = 10$ Armijo steps each (every step from 1, $c = 0.1$, $\beta_b = 0.9$), server step 1.
#   With $f_2 = x^2$ client 2's condition $\eta \le (1-c)/a$ would be exactly the first backtrack, 0.9: a tie that
#   floating-point rounding decides, so two correct implementations print different digits; $a = 1.1$ is off it.
#
# The step of the proof (Appendix B, Lemma 3 restated as Lemma 7) that carries the clients' descent to the global
# objective reads, in our copy of the text (its equations lost): *"Armijo line search is given as: [...] Summation
# over [...] and [...] and dividing by [...] Using [...] and taking expectations keeping [...] fixed"*. Summing
# client $i$'s condition $f_i(x_{i,k+1}) \le f_i(x_{i,k}) - c\,\eta\,\|g\|^2$ over the clients bounds
# $\sum_i w_i f_i$ at the clients' **own** points $x_{i,k}$; that is the global objective $f$ at one point only when
# those points coincide. The middle and right panels below are where they do not.

# %%
shared = objectives.shared_clients()
bound = theory.linear_rate_bound(shared, local_steps=5, eta_max=10.0)
gaps = theory.suboptimality(shared, algorithms.fedli_ls(**theory.SHARED_LINE_SEARCH), local_steps=5, rounds=12)
convex = theory.two_client_run(local_steps=10, rounds=10 if SCALE != "smoke" else 4)
x_star = theory.convex_optimum()
plots.savefig(figures.DescentDisplay.from_runs(gaps, bound, convex, x_star).plot().figure_, "03_lemma3.png", FIGURES)
worst = max(b / a for a, b in zip(gaps, gaps[1:]) if a > 1e-12)
factor, limit = theory.linear_fit(convex.x)  # x_{t+1} - x_inf = factor (x_t - x_inf)
print(f"shared data: worst per-round factor {worst:.4f}, bound {bound:.4f}; two convex clients: global objective "
      f"{' -> '.join(f'{v:.3f}' for v in convex.global_objective[:5])} ...; x ends at {convex.x[-1]:.3f}, "
      f"x* = {x_star:.3f}; x converges linearly, factor {factor:.3f} per round, to {limit:.3f}")

# %% [markdown]
# Left, the lemma holds and the rate is linear, well within the bound: the bound assumes the smallest step the
# search can accept on every step, and the measured factor is far smaller (printed above); by round 12 the gap
# reaches float64's floor. Middle, every client lowers its own objective in every round after the first (each
# hollow triangle below its square, in the client's colour; client 2 starts at its own optimum, $x_0 = 0$, and
# returns close to it every round), and yet the global objective climbs, and then settles (it rises in every
# round the claims table counts). Right, the server's $x_t$ settles far from $x^*$: client
# 1's ten steps towards its own optimum at 10 overshoot what the federation wants. The iterates converge
# **linearly** (the factor fitted by `theory.linear_fit` is printed above: each round removes the same share of
# the distance to the limit), but to their own fixed point, not to $x^*$: a linear rate holds, the optimum is
# missed. With a constant server step, $x_t$ stops where the clients' mean move $\Delta(x)$ is zero, and that
# point is not $x^*$; a smaller server step reaches the same point, only more slowly.
#
# What separates the two cases is not convexity but agreement: the clients' objectives must be alike (or $K$
# small and the clients' steps equal). This is the known bias of local methods with constant steps: their fixed
# point is not the optimum (Pathak & Wainwright, NeurIPS 2020; Charles & Konečný, AISTATS 2021). Do the two
# clients meet the lemma's assumptions? They are smooth and convex (Assumptions 1-2), and Assumption 4 (eq. 7)
# bounds the variance of a client's stochastic gradient about its own gradient: full-batch steps have $\sigma = 0$.
# No assumption that survives in our copy bounds how far the clients' objectives differ. Even $K = 1$ is not
# enough when the Armijo steps differ, $f_1 = 10x^2$, $f_2 = 0.8(x+10)^2$ from $x_0 = -1$:

# %%
one_step = theory.two_client_run(**theory.ONE_STEP_CLIENTS, local_steps=1, rounds=1)
print(f"K = 1: client steps {one_step.history.final('client_step_min'):.4f} and "
      f"{one_step.history.final('client_step_max'):g}; own objectives {one_step.own_before[0][0]:.1f} -> "
      f"{one_step.own_after[0][0]:.3f} and {one_step.own_before[0][1]:.1f} -> {one_step.own_after[0][1]:.1f}; "
      f"global {one_step.global_objective[0]:.1f} -> {one_step.global_objective[1]:.1f}, "
      f"{one_step.global_objective[1] / one_step.global_objective[0]:.1f} times (x {one_step.x[0]:g} -> {one_step.x[1]:.2f})")

# %% [markdown]
# Both clients descend and the global objective grows about sevenfold. The claims table records the middle and right
# panels.
#
# ## 2. Remark 2: non-convex clients
#
# For non-convex $f_i$ even the convexity step fails: the average of two points, each lower on its own curve, can
# lie higher on the global one. Our copy of the paper lost Remark 2's numbers, so the instance below is **ours**:
# two tilted quartics $f_{1,2}(x) = (x^2 - 1)^2 \pm a x$ (both non-convex; with $a = 3$ each has a single well)
# whose mean is the double well $f(x) = (x^2-1)^2$, with its barrier at $x = 0$. One gradient step on each client from $x_0$, each with its own step size (both steps satisfy
# the Armijo condition with $c = 0.1$ at the defaults), and the average $\bar x$:

# %%
explore.explore_remark2(eta1=0.5, eta2=0.05, x0=0.5, tilt=3.0)
plots.savefig(plt.gcf(), "03_remark2.png", FIGURES)

# %% [markdown]
# Each arrow is one move on its own curve: client 1's large step carries it far down $f_1$, past $f$'s barrier at 0;
# client 2's small step slides down $f_2$; the server's move to their average $\bar x$ (green, on the global $f$)
# ends higher on $f$ than $x_0$. The step sizes above are set by hand. With the steps the line search itself returns
# (each client's Armijo search on its own $f_i$, from SLS's start 1 and from its cap 10):

# %%
for start in (1.0, 10.0):
    searched = theory.remark2_line_search(start=start)
    print(f"from {start:g}: steps {searched['eta1']:.3g} and {searched['eta2']:.3g}; f_1 {searched['f1(x0)']:.3f} -> "
          f"{searched['f1(x1)']:.3f}, f_2 {searched['f2(x0)']:.3f} -> {searched['f2(x2)']:.3f}; global f "
          f"{searched['f(x0)']:.3f} -> {searched['f(x_bar)']:.3f} ({'descends' if searched['global descends'] else 'ASCENDS'})")

# %% [markdown]
# Both clients descend their own objectives and the average ascends, whichever start the search takes. Move the
# step sizes and the start (the widgets need a running kernel):

# %%
remark2_explorer = widgets.interactive(
    explore.explore_remark2,
    eta1=widgets.FloatSlider(value=0.5, min=0.05, max=1.0, step=0.05, description="η₁"),
    eta2=widgets.FloatSlider(value=0.05, min=0.05, max=1.0, step=0.05, description="η₂"),
    x0=widgets.FloatSlider(value=0.5, min=-1.5, max=1.5, step=0.1, description="x₀"),
    tilt=widgets.fixed(3.0),
)
display(remark2_explorer)

# %% [markdown]
# ## 3. Tables 1 and 2 on the tasks reachable here
#
# The paper: 100 clients, 10 per round, batch 32, one local epoch, 500 rounds, mean of 5 seeds; CIFAR-10/100 with
# ResNet-18, FEMNIST with a CNN, Shakespeare with an RNN. Here (`fedcore.experiments.fedli`):
#
# - **FEMNIST → Fashion-MNIST** (EMNIST cannot be fetched): 100 clients by Dirichlet(0.5) (FEMNIST's own split is
#   by writer), 10 per round, batch 32, one local epoch capped at the scale's $K$ (at `small` 5 steps, about a
#   quarter of an epoch: printed below); below `paper` a one-hidden-layer MLP (64 units) instead of a CNN;
# - **Shakespeare** (its own texts, one client per play and role, the char-LSTM) and **CIFAR-10/100** (ResNet-18 with
#   GroupNorm, Dirichlet(0.5)) run at `SCALE=paper` only: a GPU job (an earlier run of the LSTM at `small`, 20 rounds,
#   left six of the seven methods at the trivial baseline). The CIFAR code path is tested on generated tensors of CIFAR's shape.
#
# Each task is a `fedcore.experiments.common.Task` (`experiment.tasks`): the data, its partition drawn once from
# `PARTITION_SEED` (the same for tuning and judging), the model drawn from a seed, the round settings and the metric
# with its trivial baseline. Each seed draws the initial model, the client sampling and the minibatches of a run;
# every number below is over the judging `seeds`. A run's score is its test accuracy on the whole test set, averaged
# over its last four evaluations (Table 2: the clients' training loss over the same rounds).
#
# The baselines are tuned by a grid search (ours: the paper's grid values were lost; `experiment.tune`), each point
# run from the scale's **tuning seeds** (100, 101 at `small`, apart from the judging seeds) for its tuning rounds
# (the paper: 100) and kept by the lowest mean final training loss (the paper: the highest training accuracy, which
# fedcore's runs do not record). The grids differ in size (below): 5 client rates for FedAvg and SCAFFOLD, times 3
# values of a second constant for FedProx, FedAdam and FedExP. FedLi has none: FedLi-LS no learning rate, and
# FedLi-LU's clients run SGD at FedAvg's tuned rate (the paper does not say which).

# %%
with pd.option_context("display.max_colwidth", None):
    display(pd.DataFrame({m: {"grid": ", ".join(f"{k} in {[round(v, 4) for v in vs]}" for k, vs in grid.items()),
                              "points": len(pd.MultiIndex.from_product(list(grid.values())))}
                          for m, grid in common.grids_at(SCALE, experiment.GRIDS).items()}).T)

# %%
tasks = experiment.tasks(scale, partition_seed=PARTITION_SEED, device=DEVICE)
results, chosen = None, {}
for name, task in tasks.items():
    fedcore.warm_up(task.problem(seeds[0]))
    builders = experiment.make_builders(task, scale)
    tuning = experiment.tune(task, builders, common.grids_at(SCALE, experiment.GRIDS), scale.tuning_seeds, store=store)
    chosen[name] = {**tuning.chosen, "FedLi-LU": {"client_lr": tuning.chosen["FedAvg"]["client_lr"]}}  # FedAvg's rate
    points = dataclasses.replace(tuning, chosen=chosen[name])  # bind refuses to judge on the tuning seeds
    ran = experiment.run(task, common.bind(builders, points, seeds), seeds, store=store, progress=PROGRESS, alone=True)
    results = ran if results is None else results | ran
    print(f"{name}: K = {task.settings['local_steps']} (one local epoch: {experiment.epoch_steps(task.data)}), "
          f"{task.settings['rounds']} rounds, {len(task.data.test_targets)} test samples; tuning runs of "
          f"{scale.tune_rounds} rounds chose: {tuning.chosen}\n   on an edge of its grid: "
          + (", ".join(f"{m} {k} = {chosen[name][m][k]:g}" for m, keys in tuning.on_edge().items() for k in keys)
             or "none"))
table1 = results.methods(*paper.METHODS)  # Tables 1 and 2's runs: the seven methods
accuracy, loss = table1.scores(), table1.scores("train_loss")  # (task, method) by seed

# %% [markdown]
# A tuned value on an edge of its grid (printed above) may have a better value beyond it; since the search picks by
# training loss, a value beyond the edge could move the tables either way.
#
# The paper's Tables 1 and 2 in full, its numbers (the mean of 5 seeds after 500 rounds) beside ours (mean ± standard
# deviation over `seeds`, at this scale's rounds), in the paper's order of methods; "—": the task runs at `SCALE=paper` only.

# %%
label = {"femnist": "FEMNIST (ours: Fashion-MNIST stand-in)", "shakespeare": "Shakespeare", "cifar10": "CIFAR-10",
         "cifar100": "CIFAR-100"}.get
missing = "—"  # runs at paper scale only
cells1, cells2 = (table1.mean_sd(metric, digits=digits).loc[list(paper.METHODS)]  # methods by tasks, "mean ± sd"
                  for metric, digits in ((None, 2), ("train_loss", 3)))
shown1 = paper.beside(cells1, paper.TABLE1, label, missing).rename_axis("Table 1: test accuracy (%)")
print(records.status("03_fedli", "table1"))
display(records.beside(shown1, "03_fedli", "table1", label=f"ours, {SCALE}"))
paper.beside(cells2, paper.TABLE2, label, missing).rename_axis("Table 2: training loss")

# %%
for name, task in tasks.items():
    means = table1.means().loc[name]
    learned = [m for m in means.index if means[m] > task.baseline + paper.LEARNED_MARGIN]
    print(f"{label(name)}: trivial baseline {task.baseline:.2f}%; more than {paper.LEARNED_MARGIN:g} points above it: "
          f"{len(learned)} of {len(means)} methods ({', '.join(learned) or 'none'})")

# %% [markdown]
# Below, the curves (mean ± sd over the seeds), in % as in the tables, with a tick at every evaluation; curves that
# coincide on every seed are drawn once and named together in the legend.

# %%
curves = CurvesDisplay.from_results({label(name): table1[name] for name in table1}, "test_accuracy",
                                    scale=100).plot(label="test accuracy (%)", order=paper.METHODS,
                                                    evaluation_ticks=True, mark_identical=True,
                                                    ylabel="test accuracy (%)")
plots.savefig(curves.figure_, "03_tables_curves.png", FIGURES)
for panel, by_method in curves.curves.items():
    same = [" = ".join(group) for group in identical_groups(by_method) if len(group) > 1]
    print(f"{panel}: identical curves: {'; '.join(same) or 'none'}")

# %% [markdown]
# ### Reading Tables 1 and 2 beside the paper's
#
# For each task, the paper's column and ours: the best method, where the two FedLi methods rank among the seven
# (ours on the means; ties said), their margin over FedAvg (ours paired over seeds: the mean difference, its 95%
# interval and p), FedLi-LU's rank by training loss, and how far our order of the seven
# methods agrees with the paper's (Spearman's rank correlation: +1 the same order, 0 unrelated, -1 reversed; on the
# means, and its range over the seeds, one seed's order at a time; the means' order need not be any one seed's, so
# the first number can lie outside the range). In every table below, a score is "mean ± sd" over the seeds and a
# difference the mean paired difference with its 95% paired t interval and p (each alone; a claim's are
# Holm-corrected together in section 7).

# %%
with pd.option_context("display.max_colwidth", None):
    display(paper.reading(accuracy, loss, label))

# %% [markdown]
# What the committed run (`SCALE=small`) shows, read from the tables above:
#
# - **Ours, on the FEMNIST stand-in.** Every method learned (all seven more than 5 points above the trivial
#   baseline). The two FedLi methods are the last two, both below FedAvg with intervals that exclude 0, while
#   FedExP and FedAdam lead. FedLi-LS's margin over FedAvg is close to the paper's own on FEMNIST (-4.01); FedLi-LU's
#   is not (the paper: +0.12).
# - **Training loss.** FedLi-LU has the highest training loss of the seven (the paper: sixth of seven on FEMNIST).
# - **The paper's own columns.** On FEMNIST FedLi-LU is first by 0.12 points over FedAvg with the sixth-best training
#   loss; on Shakespeare FedAdam is first and both FedLi methods are below FedAvg. The paper itself calls FedLi-LS
#   "comparable" to the baselines.
#
# The table above is what the claims of section 7 read. Three cautions in reading it. Methods within a point of
# each other on the means are within what another seed moves (the intervals say which differences count). A rank
# correlation over seven methods, several of them tied within the noise, says little about the
# order of those methods; its range over the seeds shows how much of it survives the seed. And our numbers are
# 40 rounds of a quarter epoch on a stand-in (at `small`), against 500 rounds of a full epoch: early training.
#
# ### FedLi-LS under three server rules
#
# Table 1's FedLi-LS takes the non-convex rule, $\eta_g = \max_i \eta_i$, under SLS's cap of 10. With a cap of 1
# the largest client step is at most 1, so the rule can only shrink the clients' mean move; the convex rule
# $\eta_g = 1$ takes the mean move as it is. The same seeds for each (so the differences are paired):

# %%
rules = results.methods(*experiment.SERVER_RULES)
with pd.option_context("display.max_colwidth", None):
    display(pd.concat({"accuracy (%, mean ± sd)": rules.mean_sd(),
                       "mean server step eta_g": experiment.server_steps(rules)["mean"].unstack("task").round(3),
                       "minus Table 1's FedLi-LS (points, mean [95% interval], p)": rules.paired("FedLi-LS").T},
                      axis=1).rename(columns=label, level=1).reindex(list(experiment.SERVER_RULES)).fillna("-"))

# %% [markdown]
# The clients' last accepted steps stay below 1 in every round ($\eta_g$, their largest, in section 4; earlier steps
# are not recorded), so a cap of 1 changes little. The largest-client-step rule takes a fraction of the clients' mean
# move (its mean $\eta_g$ above), and the convex rule $\eta_g = 1$ is better: the rule the paper motivates as "a
# larger server-side step-size offsets the small client-side step-size" gives a smaller step here (a claims row).

# %% [markdown]
# ## 4. The server steps FedLi computes, and the constants it still has
#
# "Hyper-parameter-free" is about the server's step. Which steps did the two methods take in Table 1's runs (every
# round of every seed)? FedLi-LS's server step $\eta_g$ is the largest client step of the round; FedLi-LU's
# Deep-Frank-Wolfe $\gamma_t$ is clipped to $[0, 1]$.
#
# **FedLi-LU's step is a Polyak step.** Without weight decay and $\epsilon$, $\eta\gamma_t = \min(\eta, L_t / \|\Delta_t\|^2)$, so
# the step $\eta \gamma_t \Delta_t$ is Polyak's $(f(x) - f^*) / \|g\|^2$ with $f^* = 0$, the clients' loss average
# $L_t$ for $f(x_t)$ and the pseudo-gradient for $g$, capped at $\eta$. But $\Delta_t$ is a move, about the client
# rate times $K$ times a gradient: $\|\Delta_t\|^2$ is small, the cap binds, $\gamma_t = 1$, and the server's update
# is $\eta = 0.01$ times the pseudo-gradient plus momentum $\mu = 0.9$: a fixed server rate, about a tenth of
# FedAvg's move once the momentum has built up. Where the cap binds, $L_t$ never enters the step. The code:

# %%
print(inspect.getsource(deep_frank_wolfe))
experiment.server_steps(table1.methods(*paper.FEDLI)).rename(index=label, level="task").round(3)

# %% [markdown]
# An ablation (ours, not the paper's) divides the pseudo-gradient by the client rate times $K$, putting it on the
# gradient's scale, where a Polyak step can fall below the cap: its $\gamma_t$ and accuracy beside FedLi-LU's on
# Table 1's runs, paired by seed:

# %%
sweep_task = "femnist"  # section 4's task
lu_rate, lu_steps = chosen[sweep_task]["FedLi-LU"]["client_lr"], tasks[sweep_task].settings["local_steps"]
ablated = experiment.run(tasks[sweep_task], {experiment.ABLATION: functools.partial(
    algorithms.fedli_lu, lu_rate, pseudo_gradient_scale=lu_rate * lu_steps)}, seeds, store=store, progress=PROGRESS)
display(experiment.gamma_table({"FedLi-LU": (table1[sweep_task]["FedLi-LU"], accuracy.loc[(sweep_task, "FedLi-LU")]),
                                 experiment.ABLATION: (ablated[sweep_task][experiment.ABLATION],
                                                       ablated.scores().loc[(sweep_task, experiment.ABLATION)])},
                                "FedLi-LU"))
print(f"the ablation's pseudo-gradient: the clients' move times 1 / (client rate K) = {1 / (lu_rate * lu_steps):.3g}")

# %% [markdown]
# In the committed run the cap binds in every round on the gradient's scale too: the ablation only multiplies the
# server's step by the factor printed, and its accuracy gain is that larger step. Section 4's sweep of $\eta$ finds
# $\gamma_t = 1$ in every round at every $\eta$ from $10^{-4}$ to 1 on 500 rounds: in our runs $L_t$ never enters
# FedLi-LU's step.

# %% [markdown]
# Both methods still carry constants: FedLi-LS the line search's cap $\eta_{\max}$ and Armijo constant $c$ (and
# $\beta_b$, $\rho$), FedLi-LU the DFW step $\eta$ (with $\gamma_t$ at 1, its server rate) and its clients' SGD rate.
# "Free" should mean that their defaults work without tuning. We sweep each constant around its default, the others
# at theirs, and judge it by the rule every method is judged by (`fedcore.experiments.common.span_width`): the
# width, in decades, of the contiguous values around the one a user runs with (FedLi: the default; a baseline: its
# tuned value) whose mean accuracy lies within 3 points of the best. A default outside that range has width 0: the
# constant must be tuned. Beside them, the clients' SGD rate of FedLi-LU, FedAvg and FedExP (at its tuned
# $\epsilon$) over half-decades. FedLi-LS's constants run on Table 1's horizon. FedLi-LU's fixed small server step
# makes it slow on 40 rounds, so its constants (its clients at FedAvg's tuned rate, as in Table 1), and the client
# rates of the three SGD methods (0.01 to 1, the tuning grid's), also run on the paper's own 500 rounds
# (`experiment.long_task`): the paper's tuning remark (Appendix C) is judged there. These sweeps are the evidence and
# choose nothing, so they run on judging seeds: `sweep_seeds`, at `small` one fewer than Table 1's (the budget).

# %%
long = {name: experiment.long_task(task, SCALE) for name, task in tasks.items()}
rates = {horizon: experiment.client_rate_sweep(named[sweep_task], chosen[sweep_task], sweep_seeds, store=store,
                                               progress=PROGRESS) for horizon, named in (("tables", tasks), ("long", long))}
tuned_avg = chosen[sweep_task]["FedAvg"]["client_lr"]  # FedLi-LU's clients' rate, chosen on the tuning seeds
constants = {setting: experiment.constant_sweep(tasks[sweep_task] if entry["horizon"] == "tables" else long[sweep_task],
                                                setting, sweep_seeds, client_lr=tuned_avg, store=store,
                                                progress=PROGRESS)
             for setting, entry in experiment.CONSTANTS.items()}
rounds_of = {"tables": tasks[sweep_task].settings["rounds"], "long": long[sweep_task].settings["rounds"]}
panels = {f"client SGD rate, {rounds_of[h]} rounds": rates[h] for h in ("tables", "long")}
panels |= {f"{setting}, {rounds_of[entry['horizon']]} rounds": pd.concat({entry["method"]: constants[setting]}, axis=1)
           for setting, entry in experiment.CONSTANTS.items()}
marks = {f"client SGD rate, {rounds_of[h]} rounds": {"FedAvg's tuned rate (Table 1)": tuned_avg} for h in rates}
marks |= {f"{s}, {rounds_of[e['horizon']]} rounds": {"default": e["default"]} for s, e in experiment.CONSTANTS.items()}
xlabels = {panel: panel.split(",")[0].replace("FedLi-LS ", "").replace("FedLi-LU ", "") for panel in panels}
sweeps = figures.SweepsDisplay.from_tables(panels, marks, xlabels).plot(order=paper.METHODS, ylim=(0, 100))
plots.savefig(sweeps.figure_, "03_constants.png", FIGURES)
dfw = experiment.CONSTANTS["FedLi-LU eta (DFW)"]
lu_long = experiment.run(long[sweep_task], {"FedLi-LU": functools.partial(algorithms.fedli_lu, tuned_avg)}, sweep_seeds,
                         store=store)[long[sweep_task].name]["FedLi-LU"]  # the sweep's default, read back
experiment.gamma_sweep(long[sweep_task], tuned_avg, dfw["values"], sweep_seeds, store=store).round(3)

# %% [markdown]
# Filled markers: within 3 points of the method's best (means over the seeds). The spans, each around the value a
# user runs with (`around`: FedLi's default; a baseline's rate tuned for Table 1; on the long horizon, each method's
# best rate, since none was tuned there), per seed, their mean (what section 7 compares, paired over seeds) and on the
# mean scores. A span cannot reach past the grid: FedLi-LS's $\eta_{\max}$ is good up to the grid's last value.

# %%
tuned = {m: chosen[sweep_task][m]["client_lr"] for m in ("FedAvg", "FedExP")}
spans = {f"{setting} ({entry['horizon']})": constants[setting] for setting, entry in experiment.CONSTANTS.items()}
spans |= {f"{m}'s client rate (tables)": rates["tables"][m] for m in paper.RATE_METHODS}
spans |= {f"{m}'s client rate (long)": rates["long"][m] for m in paper.RATE_METHODS}
around = {f"{setting} ({entry['horizon']})": entry["default"] for setting, entry in experiment.CONSTANTS.items()}
around |= {f"{m}'s client rate (tables)": tuned.get(m, tuned_avg) for m in paper.RATE_METHODS}  # FedLi-LU: FedAvg's
around |= {f"{m}'s client rate (long)": common.best_value(rates["long"], m) for m in paper.RATE_METHODS}
span_widths = experiment.span_table(spans, around)
span_widths

# %% [markdown]
# And on the paper's 500 rounds, each SGD method at its best client rate, FedLi-LU once with its default DFW step and
# once with its best DFW step (at FedAvg's tuned rate), paired against FedAvg. Every "best" here is picked on the test
# accuracy it is then scored by, so each number is optimistic for its method; FedAdam, FedProx and SCAFFOLD were not
# run on this horizon.

# %%
experiment.at_best({"FedAvg": rates["long"]["FedAvg"], "FedExP": rates["long"]["FedExP"],
                    "FedLi-LU, default DFW eta": rates["long"]["FedLi-LU"],
                    "FedLi-LU, best DFW eta": constants["FedLi-LU eta (DFW)"]}, "FedAvg")

# %% [markdown]
# What the sweeps show in the committed run (the numbers are in the tables above):
#
# - **FedLi-LS's cap $\eta_{\max}$** is free: every cap from 1 to 1000 gives the same accuracy within 0.1 point (the clients' last
#   accepted steps never reach 1, so only a cap of 0.1 limits them): a span to the grid's end, wider than the baselines' tuned rate.
# - **Its Armijo constant $c$**: the default 0.1 is the best value; 0.9 collapses. About as forgiving as the
#   baselines' rate.
# - **FedLi-LU's DFW step $\eta$** is not free: on 500 rounds the default 0.01 lies several points below
#   $\eta = 0.1$ and 1 (alike), outside its good range. $\gamma_t$ is clipped at 1 in every round at every $\eta$
#   (the table under the figure), so this constant is FedLi-LU's server rate (with momentum 0.9), and it must be
#   tuned: 0 decades around its default against FedAvg's rate's 1.
# - **The clients' SGD rate on 500 rounds** is about as forgiving for FedLi-LU as for FedAvg and FedExP. On 40 rounds
#   FedLi-LU lies far below FedAvg at every rate, and only its best rate is within 3 points of its best (width 0,
#   as FedExP's; FedAvg's 0.5). The remark is judged on the paper's 500 rounds. (On a half-decade grid, widths that differ by less than
#   half a decade cannot be told apart.)
# - **At their best**, on 500 rounds, FedLi-LU with its default DFW step stays below FedAvg; with its best DFW step (a
#   tuned constant, picked on the test set) it ends slightly above FedAvg, as FedExP does.
#
# ## 5. What the line search costs
#
# Each backtracking step evaluates the loss once more on the same minibatch (all sampled clients at once: the count
# is the most any client needed). Seconds per round against FedAvg (each run alone, after `fedcore.warm_up`; the
# ratio is the median over the seeds of each seed's ratio, so a slow moment of the machine counts once), the mean
# number of loss evaluations per local step, and the step sizes FedLi-LS's clients settle on (the figure: the first
# seed's run):

# %%
costs = {label(task): experiment.line_search_cost(table1[task]) for task in table1}
display(pd.concat(costs).style.format(precision=3, na_rep="-"))
steps = figures.StepSizesDisplay.from_histories({task: {m: runs[0] for m, runs in table1[task].items()} for task in table1})
steps = steps.plot(label=lambda task: f"{label(task)}, seed {seeds[0]}")
plots.savefig(steps.figure_, "03_step_sizes.png", FIGURES)

# %% [markdown]
# The columns: seconds per round and the ratio to FedAvg's (medians over the seeds; wall-clock, so they move with the
# machine's load); for FedLi-LS, loss evaluations per local step (the most any client of the round needed) and the
# clients' last step sizes (each round's mean, minimum and maximum, averaged over rounds and seeds). Every round
# starts each client's search from SLS's first step of 1 (clients keep no step between rounds), far above the 0.06 to
# 0.24 the MLP accepts: a round's first step backtracks about 14 to 27 times ($0.9^{14} \approx 0.23$, $0.9^{27}
# \approx 0.06$). Later steps start from the last accepted step times $2^{b/n_i}$, but the accepted step varies from
# batch to batch and the count is the worst of ten clients: about 11 evaluations per step, and several times FedAvg's
# time per round. The top of each band in the figure is the server's step $\eta_g$ under section 3's rule.
#
# ## 6. Explorer: move the baselines' learning rate
#
# `fedcore.explore.explore_fedli` runs FedAvg and FedExP at the slider's client rate beside FedLi-LS (no rate to
# set; here with SLS's constants and server step $\eta_g = 1$, the convex rule, not section 3's largest-client-step
# rule, and on another task, so its numbers are not Table 1's) and FedLi-LU (its clients at a fixed 0.1), on the
# small task of the other notebooks (Fashion-MNIST on 20 clients, a logistic regression). Only FedAvg and FedExP
# depend on the slider: the test `tests/test_fedli_theory.py::test_fedli_explorer_moves_only_the_baselines` checks
# that FedLi-LS's and FedLi-LU's curves stay put whatever you choose. The legend gives each run's final test
# accuracy. Once headless, then live:

# %%
explore.explore_fedli(client_lr=0.1, rounds=20, store=store)
plots.savefig(plt.gcf(), "03_explorer.png", FIGURES)

# %%
fedli_explorer = widgets.interactive(
    explore.explore_fedli,
    client_lr=widgets.FloatLogSlider(value=0.1, base=10, min=-3, max=0.5, step=0.5, description="baselines' lr"),
    rounds=widgets.fixed(20), problem=widgets.fixed(None), store=widgets.fixed(store),
)
display(fedli_explorer)

# %% [markdown]
# ## 7. The paper's claims beside ours
#
# Each verdict is computed (`paper.CLAIMS`, `paper.SUMMARY_CLAIMS`) by the shared rules
# (`fedcore.experiments.claims`):
#
# - a difference counts when its 95% paired t interval over the seeds clears the margin; one verdict's comparisons
#   are Holm-corrected together (p_Holm);
# - **holds**: every check confirmed; **partly**: some, the rest undecided; **does not hold**: one contradicted
#   (saying where it held); else **inconclusive** or **not decidable at n seeds**; **not testable here**: nothing
#   we ran can test it;
# - a claim for every convex federation (rows 0-1) fails on one federation that meets its hypotheses, as we read
#   them (the lemma's own equation (9) is lost); row 1 reads "linear convergence" as reaching the optimum;
# - the tuning rows (6-7) pair each seed's span widths; "at least as forgiving": the interval above -0.5 decade;
# - the summary sentences (8-10) are judged on our tables where most methods learned, beside the paper's own tables;
#   row 10 is our check against FedAvg alone;
# - `scope`: what a verdict rests on (tasks, scale, rounds, judging and tuning seeds); the theory rows are exact
#   computations ("deterministic"). Every comparison in full is below the rows.

# %%
stand_in = {"femnist": "Fashion-MNIST for FEMNIST", "femnist (long)": "Fashion-MNIST for FEMNIST, long"}
scopes = {key: dataclasses.replace(common.scope({task.name: task}, SCALE, on, task.model_label),
                                   tasks=(stand_in.get(task.name, task.name),), tuning_seeds=scale.tuning_seeds)
          for key, (task, on) in {**{name: (task, seeds) for name, task in tasks.items()},
                                  paper.SWEEPS: (tasks[sweep_task], sweep_seeds),
                                  paper.LONG: (long[sweep_task], sweep_seeds)}.items()}
evidence = paper.Evidence(gaps, bound, convex, theory.remark2_line_search(), accuracy, loss,
                          baselines={name: task.baseline for name, task in tasks.items()},
                          rates={"tables": rates["tables"], paper.LONG: rates["long"]}, tuned_rates=tuned,
                          constants=constants, constant_settings=experiment.CONSTANTS, scale=SCALE, scopes=scopes,
                          server_rules=rules.scores(), server_step_means=experiment.step_means(rules),
                          gamma_rounds={f"{name}, Table 1": experiment.capped_rounds(table1[name]["FedLi-LU"])
                                        for name in tasks}
                          | {f"{rounds_of['long']} rounds, seeds {sweep_seeds}": experiment.capped_rounds(lu_long)})
claims_table = paper.claims_table(evidence)
records.record({**claims.as_tables(claims_table), "table1": shown1, "table2": cells2, "spans": span_widths},
               "03_fedli", SCALE)
claims.show(claims_table)
print(f"notebook ran in {(time.perf_counter() - started) / 60:.1f} min at SCALE={SCALE}")

# %% [markdown]
# In the committed run: the theory rows as in sections 1 and 2; Theorems 1 and 3 cannot be tested. FedLi-LS's
# **largest-client-step rule** does not hold: $\eta_g$ lies below 1 and the convex rule's accuracy above. The **loss
# average as a substitute** is not testable: FedLi-LU's step is capped in every round, so the loss never enters it.
# **Hyper-parameter-free** does not hold: FedLi-LS's cap is more forgiving than the baselines' tuned client rate,
# its Armijo constant at least as forgiving as FedExP's (against FedAvg's the seeds cannot decide), and FedLi-LU's
# DFW step must be tuned (its default lies several
# points below its best on 500 rounds). FedLi-LU's **tuning remark** holds on 500 rounds (on 40, widths 0,
# 0 and 0.5: section 4). The three **summary sentences** do not hold on the stand-in: both FedLi methods end below FedAvg and
# the best baseline, their intervals far from 0; a FedLi method above the best baseline, FedLi-LU best, both above FedAvg would have turned them.
# They rest on one stand-in task at 40 rounds; Shakespeare and CIFAR need `SCALE=paper`.
#
# **What differs from the paper, and why it matters.**
#
# - **Data and models.** Fashion-MNIST with an MLP stands in for FEMNIST with a CNN (below `paper`); Shakespeare and
#   CIFAR run only at `SCALE=paper`, so at `small` every trained verdict rests on the one stand-in task.
# - **Scale.** At `small`, Tables 1 and 2 are 40 rounds of at most 5 local steps over 5 seeds (the sweeps: 4),
#   against 500 rounds of a full local epoch: early-training numbers. FedLi-LU's tuning claims run on 500
#   rounds of the same local steps.
# - **Tuning.** Our grids, searched on the mean final training loss of short runs over the tuning seeds (the paper:
#   training accuracy after 100 rounds); FedLi-LU's client rate in Table 1 is FedAvg's tuned one.
# - **Regularization.** The paper uses weight decay and gradient clipping for every method; fedcore uses neither
#   (FedLi-LU's server step keeps its own $\lambda = 10^{-5}$).
# - **Reconstruction.** FedLi-LS's max-step server rule, the line search's constants (SLS's: start 1, cap 10, growth
#   over each client's epoch, $10^{-6}$ after 100 failed tries) and FedLi-LU's DFW constants follow our reading of the
#   text, SLS and the authors' DFW code (`fedcore.algorithms.fedli` lists every choice); the authors' own code never
#   ran the line search.
# - **Lemma 3.** Our reading of a lemma whose equations were lost; the counterexample and Remark 2's instance are
#   ours.
