"""One package per paper on one common layer; the notebooks import these and stay thin, the tests check them.

- :mod:`~fedcore.experiments.fedopt` (notebook ``01_fedopt``), :mod:`~fedcore.experiments.padamfed` (``02``),
  :mod:`~fedcore.experiments.fedli` (``03``), :mod:`~fedcore.experiments.fafed` (``04``): each paper's experiment
  (the contract of :mod:`~fedcore.experiments.common`), its paper's numbers and claims, its theory and figures;
- :mod:`~fedcore.experiments.common`: the contract (``Scale``, ``Task``, ``run`` -> ``Results``, ``tune`` ->
  ``Tuning``); :mod:`~fedcore.experiments.claims`: verdicts over paired seeds; :mod:`~fedcore.experiments.records`:
  results recorded at larger scales; :mod:`~fedcore.experiments.figures`: the Displays every paper shares.
"""
