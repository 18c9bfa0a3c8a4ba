"""One package per paper, on one common layer: its settings, tasks, builders, tuning, the paper's tables and
claims, its theory experiments and its figures.  The notebooks import these and stay thin; the tests check them.

- :mod:`fedcore.experiments.fedopt`: Reddi et al., *Adaptive Federated Optimization*, ICLR 2021 (notebook
  ``01_fedopt``);
- :mod:`fedcore.experiments.padamfed`: Yan et al., *Problem-Parameter-Free Federated Learning*, ICLR 2025
  (notebook ``02_padamfed``);
- :mod:`fedcore.experiments.fedli`: *Towards Hyper-parameter-free Federated Learning*, arXiv 2408.17145 (notebook
  ``03_fedli``);
- :mod:`fedcore.experiments.fafed`: Wu et al., *Faster Adaptive Federated Learning*, AAAI 2023 (notebook
  ``04_fafed``);
- :mod:`fedcore.experiments.common`: the layer every paper's experiment shares (a ``Task``, runs over seeds, the
  score, tuning over seeds, "within a tolerance of the best", "range of good values");
- :mod:`fedcore.experiments.claims`: a paper's claims as data, each judged by shared rules that know the noise
  over seeds (paired differences, ``scipy.stats``).

The toy objectives the theory sections use are in :mod:`fedcore.objectives`, the generic figures in
:mod:`fedcore.plots`.
"""
