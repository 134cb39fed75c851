"""The catalogue registry reads the installed entry points once per process."""

from dpaudit.model import registry


def test_the_catalogue_entry_points_are_read_once(monkeypatch):
    """``dpaudit validate audits/`` looked a name up ~190 times; each read of the installed
    packages' entry points cost ~5 ms (counts here, not seconds)."""
    reads = []
    real = registry.entry_points

    def counting(**kwargs):
        reads.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(registry, "entry_points", counting)
    monkeypatch.setattr(registry, "_LOADED", set())
    names = registry.catalogue()
    for name in names[:20]:
        assert registry.entry(name).name == name
    assert reads == [{"group": registry.CATALOGUE_GROUP}]
    assert ("mechanisms", "mechanisms") in registry._LOADED


def test_a_catalogue_that_fails_to_load_is_tried_again(monkeypatch):
    class Failing:
        name, value = "broken", "broken"

        def load(self):
            raise ImportError("broken catalogue")

    monkeypatch.setattr(registry, "entry_points", lambda **kwargs: [Failing()])
    monkeypatch.setattr(registry, "_LOADED", set())
    for _ in range(2):  # nothing is marked loaded after a failure: the second read fails too
        try:
            registry.catalogue()
        except ImportError as err:
            assert "broken" in str(err)
        else:
            raise AssertionError("a failing catalogue was not reported")
