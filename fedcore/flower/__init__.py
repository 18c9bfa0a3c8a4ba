"""fedcore's algorithms on Flower's engine (``pip install fedcore[flower]``, Flower's Message API, ``flwr`` pinned).

One fedcore algorithm runs as a Flower app from the same rules :func:`fedcore.simulate` calls, with no copy of
the algorithm: the algorithm's ``client_run(state, batch, oracle)`` is the node's train handler on its one client
(:func:`client_app`), its ``server_round(state, run, batch)`` is the strategy's aggregation
(:class:`FedcoreStrategy`, a :class:`flwr.serverapp.strategy.Strategy`).  The strategy draws each round's clients and
their minibatch rows with fedcore's own sampler (:func:`fedcore.run.sample_round`, from the run's seed), so a run on
Flower equals ``simulate`` with the same seed.

Carried so far: the algorithms whose round is local steps on the server's model then a server rule on the clients'
models (:data:`CARRIED`: FedAvg, FedAvgM, FedAdagrad, FedAdam, FedYogi, FedAMS, FedProx, FedExP, FedLi-LU); the
others (per-client state such as SCAFFOLD's ``c_i``, FedLi-LS's step sizes) are refused by name
(:func:`check_carried`).
"""

from fedcore.flower.app import CARRIED, FedcoreStrategy, LocalGrid, check_carried, client_app, run_local

__all__ = ["CARRIED", "FedcoreStrategy", "LocalGrid", "check_carried", "client_app", "run_local"]
