"""fedcore's algorithms on Flower's engine (``pip install fedcore[flower]``, Flower's Message API, ``flwr`` pinned).

One fedcore algorithm runs as a Flower app from the same rules :func:`fedcore.simulate` calls, with no copy of
the algorithm: an algorithm's round is its clients' part and its server's part
(:func:`fedcore.algorithms.contract.federated_round`); the clients' part (``client_run``, and ``client_prologue`` where
the algorithm has a first exchange) is a node's train handler on its one client (:func:`client_app`), the server's
part (``server_round``, ``server_prologue``) is the strategy's aggregation (:class:`FedcoreStrategy`, a
:class:`flwr.serverapp.strategy.Strategy`).  What a client keeps between rounds (SCAFFOLD's and PAdaMFed's ``c_i``,
FAFED's last iterate, the local-adaptive ``v_i``) lives in its node's ``Context.state``; what it uploads beyond its
model travels as its uploads (control-variate changes, FedLi-LS's step sizes, FAFED's momenta).  The strategy draws each
round's clients and their minibatch rows from the run's seed with the engine's own random streams
(:class:`fedcore.engine.streams.Streams`), so a run on Flower equals ``simulate`` with the same seed, for every
algorithm of ``ALGORITHMS``.

An algorithm that defines only ``round``, or a configuration whose server writes the clients' state (PAdaMFed's
``initialization="first_round"``), is refused by name (:func:`check_distributable`).
"""

from fedcore.flower.app import FedcoreStrategy, LocalGrid, check_distributable, client_app, run_local

__all__ = ["FedcoreStrategy", "LocalGrid", "check_distributable", "client_app", "run_local"]
