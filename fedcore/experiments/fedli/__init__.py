"""FedLi: *Towards Hyper-parameter-free Federated Learning*, arXiv 2408.17145 (notebook ``03_fedli``).

- :mod:`~fedcore.experiments.fedli.experiment`: the tasks and their stand-ins, the seven methods' builders,
  runs, the client-rate sweep, and the claims with our verdicts;
- :mod:`~fedcore.experiments.fedli.paper`: the paper's tables, transcribed, and its summary judged against them;
- :mod:`~fedcore.experiments.fedli.theory`: Lemma 3, Remark 2 and the linear rate on small convex clients;
- :mod:`~fedcore.experiments.fedli.figures`: the notebook's figures (computed, then drawn).
"""

from fedcore.experiments.fedli import experiment, figures, paper, theory

__all__ = ["experiment", "figures", "paper", "theory"]
