"""One module per paper: its settings, grids, baseline builders, tuning, and the paper's claims as data.

The notebooks import these and stay thin; the tests check them.

- :mod:`fedcore.experiments.fafed`: Wu et al., *Faster Adaptive Federated Learning*, AAAI 2023
  (notebook ``04_fafed``).
"""
