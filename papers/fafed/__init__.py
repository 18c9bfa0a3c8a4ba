"""FAFED: Wu, Huang, Hu & Huang, *Faster Adaptive Federated Learning*, AAAI 2023 (notebook ``04_fafed``)."""

from papers.fafed import experiment, figures, paper, theory

__all__ = ["experiment", "figures", "paper", "theory"]
