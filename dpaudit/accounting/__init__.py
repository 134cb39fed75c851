"""Layer 1, accounting: privacy profiles as numbers, with no mechanism in sight.

Every module here computes ``delta(epsilon)`` / ``epsilon(delta)`` bounds (upper and
lower) of a privacy-loss distribution given by parameters, composes and subsamples
them, and converts between notions:

* :mod:`~dpaudit.accounting.protocol` — :class:`~dpaudit.accounting.protocol.PrivacyProfile`,
  the one interface every accounting below implements;
* :mod:`~dpaudit.accounting.profiles` — exact Gaussian and numerical Laplace accounting
  (:class:`~dpaudit.accounting.profiles.ExactAccounting`);
* :mod:`~dpaudit.accounting.composition` — composed releases, and the accounting of a
  noise shift (:func:`~dpaudit.accounting.composition.exact_accounting`);
* :mod:`~dpaudit.accounting.subsampling` — Poisson-subsampled Gaussian steps;
* :mod:`~dpaudit.accounting.suprema` — certified suprema of the loss and the pure-DP
  profile they imply;
* :mod:`~dpaudit.accounting.calibration` — Gaussian noise calibration;
* :mod:`~dpaudit.accounting.conversions`, :mod:`~dpaudit.accounting.renyi`,
  :mod:`~dpaudit.accounting.tradeoff` — the notions' profiles (zCDP, RDP, GDP, f-DP).

It imports only :mod:`dpaudit.core`. ``docs/design.md`` says where a new family goes.
"""
