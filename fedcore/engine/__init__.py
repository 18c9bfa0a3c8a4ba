"""The engine: what turns an algorithm, a federated data set and options into histories.

- :mod:`~fedcore.engine.loop`: the round loop of a pass of R runs (read it first), and its parts;
- :mod:`~fedcore.engine.options`: :class:`RunOptions`, a run's options as one typed value;
- :mod:`~fedcore.engine.streams`: :class:`Streams`, a run's random streams (the engine's and Flower's);
- :mod:`~fedcore.engine.passes`: many runs of one family as one pass (stacked hyperparameters), and the plan of passes;
- :mod:`~fedcore.engine.checkpoints`: a run's checkpoint, and the check that a resumed file is the same run's.

The entry points users call are in :mod:`fedcore.run` (``simulate``, ``simulate_runs``, ``sweep``).
"""

from fedcore.engine.options import RunOptions
from fedcore.engine.streams import Streams, sample_round

__all__ = ["RunOptions", "Streams", "sample_round"]
