"""The request mix: kinds by weight, tenants and keys, unique texts, Zipf-repeated phrases."""

from __future__ import annotations

import json
import random
from collections import Counter
from email.parser import BytesParser
from urllib.parse import parse_qs

from peakgate.drills.arrivals import Arrival
from peakgate.drills.mix import Planned, Planner, Texts
from peakgate.drills.profile import Mix, SurgeProfile, Tenant

PROFILE = SurgeProfile(tenants=(Tenant(name="big", keys=("b1", "b2"), weight=3), Tenant(name="small", keys=("s1",))))


def _plans(n: int, profile: SurgeProfile = PROFILE, seed: int = 0) -> list[Planned]:
    planner = Planner(profile, seed)
    return [planner.plan(Arrival(i, i * 0.01, "hold")) for i in range(n)]


def test_kinds_tenants_and_classes_follow_the_weights() -> None:
    plans = _plans(4000)
    kinds = Counter(p.kind for p in plans)
    weights = dict(zip(("short", "long", "repeated", "document", "batch"), PROFILE.mix.weights(), strict=True))
    for kind, weight in weights.items():
        assert abs(kinds[kind] / 4000 - weight / sum(weights.values())) < 0.03, kind
    tenants = Counter(p.tenant for p in plans)
    assert abs(tenants["big"] / 4000 - 0.75) < 0.03
    assert {p.key for p in plans if p.tenant == "big"} == {"b1", "b2"}
    assert {(p.kind, p.klass) for p in plans} == {("short", "interactive"), ("long", "interactive"),
                                                   ("repeated", "interactive"), ("document", "document"),
                                                   ("batch", "batch")}


def test_requests_are_paths_with_their_dialects_auth() -> None:
    for plan in _plans(300):
        call, headers = plan.call, dict(plan.call.headers)
        assert call.path.startswith("/") and not call.path.startswith("//")
        if plan.kind == "batch":
            body = json.loads(call.body)
            assert call.path == "/v1/jobs" and headers["Authorization"] == f"Bearer {plan.key}"
            assert len(body["segments"]) == plan.segments and body["target"] == "es"
        elif plan.kind == "document":
            assert call.path == "/v2/document" and headers["Authorization"] == f"DeepL-Auth-Key {plan.key}"
            message = BytesParser().parsebytes(f"Content-Type: {headers['Content-Type']}\r\n\r\n".encode() + call.body)
            parts = {p.get_param("name", header="content-disposition"): p for p in message.get_payload()}
            assert parts["target_lang"].get_payload() == "ES"
            assert len(parts["file"].get_payload(decode=True).decode().splitlines()) == plan.segments
        else:
            form = parse_qs(call.body.decode())
            assert call.path == "/v2/translate" and form["target_lang"] == ["ES"] and len(form["text"]) == 1


def test_one_off_texts_never_repeat() -> None:
    texts = [p.call.body for p in _plans(2000) if p.kind in ("short", "long")]
    assert len(set(texts)) == len(texts)


def test_repeated_phrases_follow_zipf() -> None:
    texts = Texts(random.Random(5), pool_size=400, zipf_exponent=1.1)
    draws = Counter(texts.phrase() for _ in range(20000))
    harmonic = sum(1 / k**1.1 for k in range(1, 401))
    top, second = texts.pool[0], texts.pool[1]
    assert abs(draws[top] / 20000 - 1 / harmonic) < 0.02
    assert draws[top] > 1.8 * draws[second]  # 2**1.1 ≈ 2.14 in expectation
    assert len(draws) > 200 and len(set(texts.pool)) == 400


def test_same_seed_same_requests() -> None:
    assert _plans(200, seed=9) == _plans(200, seed=9)
    assert _plans(200, seed=9) != _plans(200, seed=10)


def test_a_zero_weight_kind_is_never_sent() -> None:
    profile = PROFILE.model_copy(update={"mix": Mix(document=0, batch=0)})
    assert {p.kind for p in _plans(500, profile)} == {"short", "long", "repeated"}
