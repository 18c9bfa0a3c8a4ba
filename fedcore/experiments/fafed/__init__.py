"""FAFED: Wu, Huang, Hu & Huang, *Faster Adaptive Federated Learning*, AAAI 2023 (notebook ``04_fafed``).

- :mod:`~fedcore.experiments.fafed.experiment`: the Fashion-MNIST experiment's settings, grids, builders, tasks,
  runs over seeds and tuning, on :mod:`fedcore.experiments.common`;
- :mod:`~fedcore.experiments.fafed.paper`: what the paper claims and prints, and our verdicts (the shared rules
  of :mod:`fedcore.experiments.claims`);
- :mod:`~fedcore.experiments.fafed.theory`: the counterexample's law, the map's grid, Theorem 2's step, the
  choices the paper leaves open;
- :mod:`~fedcore.experiments.fafed.figures`: the experiment's figures over seeds (computed, then drawn).
"""

from fedcore.experiments.fafed import experiment, figures, paper, theory

__all__ = ["experiment", "figures", "paper", "theory"]
