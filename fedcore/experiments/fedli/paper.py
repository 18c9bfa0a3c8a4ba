"""What *Towards Hyper-parameter-free Federated Learning* (FedLi, arXiv 2408.17145) reports, as data, and its summary
sentences judged against its own tables (notebook ``03_fedli``).

Setup (Section 6 and Appendix C): 100 clients, 10 sampled per round uniformly without replacement, batch 32, one
local epoch, 500 rounds, the mean of 5 seeds; CIFAR-10 and CIFAR-100 with ResNet-18 (GroupNorm) on a Dirichlet
label split, FEMNIST with a CNN, Shakespeare with an RNN.  Baselines tuned by a grid search of 100 rounds on
training accuracy (the grid values were lost in our copy of the text); weight decay and gradient clipping used.

The summary says FedLi-LU and FedLi-LS "significantly outperform FedAvg and other baseline approaches across the
board" and that FedLi-LU "worked the best" in most cases.  The tables themselves put FedAdam first on Shakespeare,
ahead of both FedLi methods, and FedLi-LU's FEMNIST training loss second highest of seven:
:data:`SUMMARY_CLAIMS` checks each sentence against the tables.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from fedcore.experiments.claims import Claim, verdict
from fedcore.experiments.claims import claims_table as shared_claims_table

METHODS = ("FedLi-LU", "FedLi-LS", "FedAdam", "FedAvg", "FedProx", "SCAFFOLD", "FedExP")
FEDLI = ("FedLi-LU", "FedLi-LS")
TASKS = ("cifar10", "cifar100", "femnist", "shakespeare")
SETUP = {"clients": 100, "clients_per_round": 10, "batch_size": 32, "local_epochs": 1, "rounds": 500, "seeds": 5,
         "tuning_rounds": 100}
"""The paper's setup (Section 6, Appendix C)."""

TABLE1 = pd.DataFrame(
    [[86.02, 75.50, 81.42, 78.47, 82.15, 71.11, 84.28],
     [51.97, 50.72, 45.10, 46.93, 29.72, 35.57, 50.03],
     [84.79, 80.66, 80.35, 84.67, 80.24, 75.05, 82.51],
     [38.93, 39.71, 48.37, 40.10, 45.06, 34.86, 41.22]],
    index=list(TASKS), columns=list(METHODS))
"""Table 1: top-1 test accuracy (%) after 500 rounds (CIFAR with ResNet-18, FEMNIST with a CNN, Shakespeare with an
RNN)."""
TABLE2 = pd.DataFrame(
    [[0.1053, 0.6103, 0.60832, 0.9425, 0.6252, 0.2914, 0.6147],
     [0.6312, 0.6582, 1.9463, 2.5270, 2.2937, 1.0642, 0.6203],
     [0.8649, 0.6095, 0.7092, 0.8168, 0.7193, 1.1449, 0.1995],
     [3.0860, 2.2590, 1.7736, 2.5127, 1.9048, 2.3290, 2.0226]],
    index=list(TASKS), columns=list(METHODS))
"""Table 2: training loss after 500 rounds."""


def ranks(table: pd.DataFrame, lower_is_better: bool = False) -> pd.DataFrame:
    """Each method's rank per task (1 = best; ties share the better rank)."""
    return table.rank(axis=1, ascending=lower_is_better, method="min").astype(int)


def rank_text(row: pd.Series, method: str, lower_is_better: bool = False) -> str:
    """``method``'s rank in ``row`` as text, ties said: ``"2 of 7 (tied with 5)"``."""
    rank = int(row.rank(ascending=lower_is_better, method="min")[method])
    tied = int((row == row[method]).sum()) - 1
    return f"{rank} of {len(row)}" + (f" (tied with {tied})" if tied else "")


Tables = tuple[pd.DataFrame, pd.DataFrame]
"""``(accuracy, training loss)``: tasks by methods, as :data:`TABLE1` and :data:`TABLE2`."""


def _fedli_first(tables: Tables) -> tuple[str, str]:
    accuracy = ranks(tables[0])
    firsts = {task: accuracy.loc[task].idxmin() for task in accuracy.index}
    hits = sum(firsts[task] in FEDLI for task in firsts)
    return "best accuracy: " + ", ".join(f"{task} {method}" for task, method in firsts.items()), \
        verdict(hits, len(firsts))


def _lu_best_mostly(tables: Tables) -> tuple[str, str]:
    accuracy, loss = tables
    parts = [f"{task}: accuracy rank {rank_text(accuracy.loc[task], 'FedLi-LU')}, loss rank "
             f"{rank_text(loss.loc[task], 'FedLi-LU', lower_is_better=True)}" for task in accuracy.index]
    hits = int((ranks(accuracy)["FedLi-LU"] == 1).sum())
    return "FedLi-LU " + "; ".join(parts), verdict(hits, len(accuracy), most=True)


def _beat_fedavg(tables: Tables) -> tuple[str, str]:
    accuracy = tables[0]
    checks = {(task, method): bool(accuracy.loc[task, method] > accuracy.loc[task, "FedAvg"])
              for task in accuracy.index for method in FEDLI}
    misses = [f"{method} on {task}" + (" (tied)" if accuracy.loc[task, method] == accuracy.loc[task, "FedAvg"] else "")
              for (task, method), ok in checks.items() if not ok]
    return f"{sum(checks.values())} of {len(checks)} (task, FedLi method) pairs above FedAvg" + \
        (f"; not {', '.join(misses)}" if misses else ""), verdict(sum(checks.values()), len(checks))


SUMMARY_CLAIMS: tuple[Claim, ...] = (
    Claim("FedLi-LU and FedLi-LS 'outperform FedAvg and other baseline approaches across the board' "
          "(a FedLi method has the best accuracy on every task)", _fedli_first),
    Claim("'In most of the cases, FedLi-LU worked the best' (best accuracy on most tasks)", _lu_best_mostly),
    Claim("Our check of 'outperform FedAvg', read against FedAvg alone: both FedLi methods above FedAvg on every "
          "task (Table 1)", _beat_fedavg),
)
"""The paper's summary sentences, each judged against its own Tables 1 and 2 (:func:`summary_against_tables`)."""


def summary_against_tables(tables: Tables = (TABLE1, TABLE2),
                           claims: tuple[Claim, ...] = SUMMARY_CLAIMS) -> pd.DataFrame:
    """One row per summary sentence: what ``tables`` (the paper's, or ours in the same layout) show and the verdict."""
    return shared_claims_table(tables, claims)


def beside(ours: pd.DataFrame, paper: pd.DataFrame = TABLE1, label: Callable[[str], str] = str) -> pd.DataFrame:
    """The paper's numbers and ours side by side: one row per method in the paper's order, columns ``(task label,
    "paper" | "fedcore")`` for the tasks in ``ours``."""
    shared = [task for task in ours.index if task in paper.index]
    methods = [method for method in METHODS if method in ours.columns]
    return pd.concat({(label(task), source): table.loc[task, methods]
                      for task in shared for source, table in (("paper", paper), ("fedcore", ours))}, axis=1)


def _spearman(a: pd.Series, b: pd.Series) -> float:
    """Spearman's rank correlation (ties get their mean rank): 1 the same order, -1 the reverse."""
    return float(a.rank().corr(b.rank()))


def reading(accuracy: pd.DataFrame, loss: pd.DataFrame, label: Callable[[str], str] = str) -> pd.DataFrame:
    """Tables 1 and 2 read side by side: per task and source (columns: ``(task, "paper" | "fedcore")``), the best
    method by accuracy, FedLi-LU's and FedLi-LS's accuracy rank among the seven (ties share the better rank), their
    margin over FedAvg in points, FedLi-LU's training-loss rank, and, under fedcore, how far our order of the seven
    methods agrees with the paper's (Spearman's rank correlation: 1 the same order, 0 none, -1 the reverse).  Tasks
    are named by ``label``."""
    columns = {}
    for task in [task for task in accuracy.index if task in TABLE1.index]:
        for source, acc, los in (("paper", TABLE1, TABLE2), ("fedcore", accuracy, loss)):
            row, losses = acc.loc[task, list(METHODS)], los.loc[task, list(METHODS)]
            columns[(label(task), source)] = {
                "best accuracy": f"{row.idxmax()} ({row.max():.2f})",
                "FedLi-LU accuracy rank": rank_text(row, "FedLi-LU"),
                "FedLi-LS accuracy rank": rank_text(row, "FedLi-LS"),
                "FedLi-LU - FedAvg (points)": f"{row['FedLi-LU'] - row['FedAvg']:+.2f}",
                "FedLi-LS - FedAvg (points)": f"{row['FedLi-LS'] - row['FedAvg']:+.2f}",
                "FedLi-LU training-loss rank": rank_text(losses, "FedLi-LU", lower_is_better=True),
                "order agrees with the paper's (Spearman)":
                    f"{_spearman(TABLE1.loc[task], row):+.2f}" if source == "fedcore" else "",
            }
    return pd.DataFrame(columns)
