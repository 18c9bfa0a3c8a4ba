"""One module per paper: its settings, grids, baseline builders, tuning, and the paper's claims as data.

The notebooks import these and stay thin; the tests check them.

- :mod:`fedcore.experiments.fedopt`: Reddi et al., *Adaptive Federated Optimization*, ICLR 2021 (notebook
  ``01_fedopt``), with the paper's numbers (``fedopt_paper``), its corollaries put to the test
  (``fedopt_theory``) and the learning-rate grids of its Figures 2 and 6 (``fedopt_tuning``).
- :mod:`fedcore.experiments.fafed` (a package: ``experiment``, ``paper``, ``theory``, ``figures``): Wu et al.,
  *Faster Adaptive Federated Learning*, AAAI 2023 (notebook ``04_fafed``), on the common layer below.
- :mod:`fedcore.experiments.common`: the layer every paper's experiment is to share (a ``Task``, runs over
  seeds, the score, tuning over seeds, "within a tolerance of the best", "range of good values").
- :mod:`fedcore.experiments.claims`: a paper's claims as data, each judged by shared rules that know the noise
  over seeds (paired differences, ``scipy.stats``).
"""
