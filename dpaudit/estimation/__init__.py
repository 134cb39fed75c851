"""Layer 3, estimation: turning draws into certified numbers.

* :mod:`~dpaudit.estimation.bounds` — confidence bounds on probabilities and the
  certified ``epsilon`` / ``delta`` they imply;
* :mod:`~dpaudit.estimation.sequential` — sequential looks at a growing sample.

It imports only the layers below (core, accounting, model).
"""
