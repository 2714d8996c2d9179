from peakgate.glossary import Shielded
from peakgate.quality.attribution import models_serving
from peakgate.reuse import Served


def test_engine_segments_name_their_model_and_hits_the_routes() -> None:
    served = [Served("a", "engine"), Served("b", "cache"), Served("c", "engine"), Served("d", "engine")]
    shields = [Shielded("one"), Shielded("two"), Shielded("three!"), Shielded("four")]
    models, chars = models_serving(served, shields, {"one": "student", "three!": "apertium"}, "student")
    assert models == ["student", "student", "apertium", "student"]  # "four": not reviewed, the route's model
    assert chars == {"student": len("one") + len("four"), "apertium": len("three!")}
