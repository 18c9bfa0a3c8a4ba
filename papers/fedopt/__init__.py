"""FedOpt: Reddi et al., *Adaptive Federated Optimization*, ICLR 2021 (notebook ``01_fedopt``)."""

from papers.fedopt import experiment, figures, paper, theory, tuning

__all__ = ["experiment", "figures", "paper", "theory", "tuning"]
