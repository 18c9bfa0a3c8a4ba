"""PAdaMFed: Yan, Zhang, Wang & Cao, *Problem-Parameter-Free Federated Learning*, ICLR 2025 (notebook ``02_padamfed``).

- :mod:`~fedcore.experiments.padamfed.experiment`: the experiment's settings, builders, runs, robustness to the
  learning rate, and the claims with our verdicts;
- :mod:`~fedcore.experiments.padamfed.theory`: the slides' table of step sizes, scale-freeness and smoothness on
  a federated quadratic.
"""

from fedcore.experiments.padamfed import experiment, theory

__all__ = ["experiment", "theory"]
