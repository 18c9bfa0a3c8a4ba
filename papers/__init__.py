"""One package per paper on one common layer; the notebooks import these and stay thin, the tests check them.

- :mod:`~papers.fedopt` (notebook ``01_fedopt``), :mod:`~papers.padamfed` (``02``),
  :mod:`~papers.fedli` (``03``), :mod:`~papers.fafed` (``04``): each paper's experiment
  (the contract of :mod:`~papers.common`), its paper's numbers and claims, its theory and figures;
- :mod:`~papers.common`: the contract (``Scale``, ``Task``, ``run`` -> ``Results``, ``tune`` ->
  ``Tuning``); :mod:`~papers.claims`: verdicts over paired seeds; :mod:`~papers.records`:
  results recorded at larger scales; :mod:`~papers.figures`: the Displays every paper shares.
"""
