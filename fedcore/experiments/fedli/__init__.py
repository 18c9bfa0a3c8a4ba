"""FedLi: *Towards Hyper-parameter-free Federated Learning*, arXiv 2408.17145 (notebook ``03_fedli``).

- :mod:`~fedcore.experiments.fedli.experiment`: the tasks and their stand-ins (each a ``common.Task``), the seven
  methods' builders, the tuning (:func:`fedcore.experiments.common.tune`), Tables 1 and 2's runs and the
  client-rate sweep;
- :mod:`~fedcore.experiments.fedli.paper`: the paper's tables, transcribed, its summary read on them, and its claims
  judged on our evidence (each a ``claims.Judgement`` with its scope);
- :mod:`~fedcore.experiments.fedli.theory`: Lemma 3, Remark 2 and the linear rate on small convex clients;
- :mod:`~fedcore.experiments.fedli.figures`: the notebook's figures (computed, then drawn).
"""

from fedcore.experiments.fedli import experiment, figures, paper, theory

__all__ = ["experiment", "figures", "paper", "theory"]
