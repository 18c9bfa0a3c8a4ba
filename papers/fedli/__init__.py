"""FedLi, *Towards Hyper-parameter-free Federated Learning* (arXiv 2408.17145; notebook ``03_fedli``): its tasks and
methods (``experiment``), tables and claims (``paper``), exact descent computations (``theory``) and figures."""

from papers.fedli import experiment, figures, paper, theory

__all__ = ["experiment", "figures", "paper", "theory"]
