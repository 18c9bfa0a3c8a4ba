"""One module per paper: its settings, grids, baseline builders, tuning, and the paper's claims as data.

The notebooks import these and stay thin; the tests check them.

- :mod:`fedcore.experiments.fedopt`: Reddi et al., *Adaptive Federated Optimization*, ICLR 2021 (notebook
  ``01_fedopt``), with the paper's numbers (``fedopt_paper``), its corollaries put to the test
  (``fedopt_theory``) and the learning-rate grids of its Figures 2 and 6 (``fedopt_tuning``).
- :mod:`fedcore.experiments.fafed`: Wu et al., *Faster Adaptive Federated Learning*, AAAI 2023
  (notebook ``04_fafed``), with its counterexample and theory (``fafed_theory``).
- :mod:`fedcore.experiments.claims`: a paper's claims as data, each with a verdict computed from the results.
"""
