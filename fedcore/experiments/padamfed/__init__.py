"""PAdaMFed: Yan, Zhang, Wang & Cao, *Problem-Parameter-Free Federated Learning*, ICLR 2025 (notebook ``02_padamfed``).

- :mod:`~fedcore.experiments.padamfed.experiment`: the experiment's settings, tasks (the Fashion-MNIST stand-in,
  CIFAR-10 at ``paper``), builders, the theorems' step sizes, tuning, runs and robustness to the learning rate, on
  :mod:`fedcore.experiments.common`;
- :mod:`~fedcore.experiments.padamfed.paper`: what the slides report (the step-size comparison, the two figures)
  and the claims with our verdicts (the shared rules of :mod:`fedcore.experiments.claims`);
- :mod:`~fedcore.experiments.padamfed.theory`: scale-freeness and smoothness on a federated quadratic whose
  constants are scaled at will;
- :mod:`~fedcore.experiments.padamfed.figures`: the scaled quadratics' and the robustness figures (computed, then
  drawn).
"""

from fedcore.experiments.padamfed import experiment, figures, paper, theory

__all__ = ["experiment", "figures", "paper", "theory"]
