"""PAdaMFed: Yan, Zhang, Wang & Cao, *Problem-Parameter-Free Federated Learning*, ICLR 2025 (notebook
``02_padamfed``): its experiments on the common layer, the slides' claims, the quadratics' tests and figures."""

from papers.padamfed import experiment, figures, paper, theory

__all__ = ["experiment", "figures", "paper", "theory"]
