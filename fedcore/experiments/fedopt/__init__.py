"""FedOpt: Reddi et al., *Adaptive Federated Optimization*, ICLR 2021 (notebook ``01_fedopt``).

- :mod:`~fedcore.experiments.fedopt.experiment`: the reachable tasks and their stand-ins as
  :class:`~fedcore.experiments.common.Task` (``tasks``), the five methods' builders and their runs, the readings
  of "FedAdam", centralized training, Table 1's metric in its units, the scope of our runs;
- :mod:`~fedcore.experiments.fedopt.paper`: the paper's tables, settings and best hyperparameters, transcribed,
  and its main-text claims with our verdicts (the shared rules of :mod:`fedcore.experiments.claims`);
- :mod:`~fedcore.experiments.fedopt.theory`: its corollaries put to the test on a federated quadratic;
- :mod:`~fedcore.experiments.fedopt.tuning`: the learning-rate grids of its Figures 2 and 6, through the shared
  :func:`fedcore.experiments.common.tune`;
- :mod:`~fedcore.experiments.fedopt.figures`: the notebook's figures (computed, then drawn).
"""

from fedcore.experiments.fedopt import experiment, figures, paper, theory, tuning

__all__ = ["experiment", "figures", "paper", "theory", "tuning"]
