"""Layer 2, model: what a mechanism is, and the law of its release.

* :mod:`~dpaudit.model.spaces`, :mod:`~dpaudit.model.noise` — function spaces and noises;
* :mod:`~dpaudit.model.adjacency` — neighbouring datasets;
* :mod:`~dpaudit.model.claims` — every claim: ``(epsilon, delta)`` and the other notions;
* :mod:`~dpaudit.model.mechanism` — :class:`~dpaudit.model.mechanism.Mechanism`;
* :mod:`~dpaudit.model.sites`, :mod:`~dpaudit.model.densities` — release sites, joint
  releases and their log densities;
* :mod:`~dpaudit.model.shift`, :mod:`~dpaudit.model.loss` — the noise-shift structure of
  two laws and the privacy loss;
* :mod:`~dpaudit.model.compatibility` — whether a shift is compatible with its noise;
* :mod:`~dpaudit.model.registry` — the catalogue, loaded through entry points;
* :mod:`~dpaudit.model.audit_record` — the fields every audit record shares.

It imports :mod:`dpaudit.core` and :mod:`dpaudit.accounting`.
"""
