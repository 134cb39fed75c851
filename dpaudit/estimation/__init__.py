"""Layer 3, estimation: turning draws into certified numbers.

* :mod:`~dpaudit.estimation.pld` — the hockey-stick streams: ``delta(epsilon)`` estimated
  from privacy losses, chunk by chunk, with confidence bounds (the white-box engine);
* :mod:`~dpaudit.estimation.renyi` — certified Monte Carlo lower bounds on Rényi divergences;
* :mod:`~dpaudit.estimation.bounds` — confidence bounds on event probabilities and the
  certified ``epsilon`` / ``delta`` they imply;
* :mod:`~dpaudit.estimation.sequential` — sequential looks at a growing sample.

Both engines use it; it imports only the layers below (core, accounting, model).
"""
