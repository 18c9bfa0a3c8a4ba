"""FedOpt: Reddi et al., *Adaptive Federated Optimization*, ICLR 2021 (notebook ``01_fedopt``).

- :mod:`~fedcore.experiments.fedopt.experiment`: the reachable tasks and their stand-ins, the five methods'
  builders, the readings of "FedAdam", centralized training, our results and verdicts;
- :mod:`~fedcore.experiments.fedopt.paper`: the paper's tables, settings and best hyperparameters, transcribed;
- :mod:`~fedcore.experiments.fedopt.theory`: its corollaries put to the test on a federated quadratic;
- :mod:`~fedcore.experiments.fedopt.tuning`: the learning-rate grids of its Figures 2 and 6;
- :mod:`~fedcore.experiments.fedopt.figures`: the notebook's figures (computed, then drawn).
"""

from fedcore.experiments.fedopt import experiment, figures, paper, theory, tuning

__all__ = ["experiment", "figures", "paper", "theory", "tuning"]
