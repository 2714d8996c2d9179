"""What each arrival sends: its kind, tenant and key, and the HTTP request, all drawn from a seed.

Texts are synthetic English sentences from small word lists (no held-out or customer data), numbered so the
one-off kinds (short, long, documents, batch) miss the cache as real new text would; the `repeated` kind
draws from a fixed pool of UI phrases by a Zipf law, as popular strings recur in real traffic.
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
from dataclasses import dataclass
from urllib.parse import urlencode

from peakgate.drills.arrivals import Arrival
from peakgate.drills.profile import KIND_CLASS, KINDS, Kind, SurgeProfile, Tenant
from peakgate.drills.wire import Call

_SUBJECTS = ("The user", "Your order", "The printer", "This account", "The new driver", "Our team", "The file",
             "The hotel", "Your flight", "The package", "The server", "My phone", "The invoice", "The gift card")
_VERBS = ("could not open", "has saved", "will update", "cannot find", "is checking", "has shipped", "will delete",
          "must confirm", "has received", "did not sync", "is printing", "will restore")
_OBJECTS = ("the settings", "the last backup", "your password", "the holiday offer", "the shopping cart",
            "the shared folder", "the delivery address", "the network connection", "the payment", "the booking",
            "the gift list", "the return label")
_TAILS = ("before midnight", "after the restart", "for the second time", "during the sale", "without a receipt",
          "on the main page", "in a few minutes", "for every guest", "this weekend", "as soon as possible")
_VERBS_UI = ("Save", "Open", "Delete", "Print", "Share", "Close", "Update", "Track", "Cancel", "Confirm")
_NOUNS_UI = ("file", "order", "settings", "account", "cart", "booking", "photo", "folder", "payment", "window",
             "gift card", "address", "invoice", "review", "message", "coupon", "receipt", "ticket", "list", "page")
_QUALIFIERS_UI = ("", " now", " again", " later")
_BOUNDARY = "peakgate-surge-7f3a9c"  # fixed (the texts never contain it), so a seed fixes every byte sent


@dataclass(frozen=True, slots=True)
class Planned:
    arrival: Arrival
    kind: Kind
    klass: str
    tenant: str
    key: str
    segments: int
    call: Call


class Texts:
    """Synthetic sentences, each one unique (a running number), and a Zipf-ranked phrase pool."""

    def __init__(self, rng: random.Random, pool_size: int, zipf_exponent: float) -> None:
        self._rng = rng
        self._serial = itertools.count(1)
        combos = [f"{v} {n}{q}" for v, n, q in itertools.product(_VERBS_UI, _NOUNS_UI, _QUALIFIERS_UI)]
        rng.shuffle(combos)
        # Beyond the distinct UI strings, the pool continues with numbered ones: its size is the profile's.
        self.pool = [combos[i] if i < len(combos) else f"{combos[i % len(combos)]} ({i // len(combos)})"
                     for i in range(pool_size)]
        weights = [1.0 / (rank ** zipf_exponent) for rank in range(1, pool_size + 1)]
        self._cumulative = list(itertools.accumulate(weights))

    def sentence(self) -> str:
        r = self._rng
        return (f"{r.choice(_SUBJECTS)} {r.choice(_VERBS)} {r.choice(_OBJECTS)} {r.choice(_TAILS)} "
                f"(ref {next(self._serial)}).")

    def sentences(self, low_high: tuple[int, int]) -> list[str]:
        return [self.sentence() for _ in range(self._rng.randint(*low_high))]

    def phrase(self) -> str:
        """Rank k is drawn with probability proportional to 1 / k**s."""
        x = self._rng.random() * self._cumulative[-1]
        return self.pool[min(bisect.bisect_right(self._cumulative, x), len(self.pool) - 1)]


class Planner:
    """Turns arrivals into requests; the same seed and profile give the same requests."""

    def __init__(self, profile: SurgeProfile, seed: int) -> None:
        self._profile = profile
        self._rng = random.Random(seed)
        self._texts = Texts(random.Random(seed + 1), profile.phrase_pool, profile.zipf_exponent)
        self._key_turns = {t.name: itertools.cycle(t.keys) for t in profile.tenants}
        self._weights = profile.mix.weights()

    def plan(self, arrival: Arrival) -> Planned:
        kind: Kind = self._rng.choices(KINDS, weights=self._weights)[0]
        tenant = self._tenant()
        key = next(self._key_turns[tenant.name])
        segments, call = self._call(kind, key)
        return Planned(arrival, kind, KIND_CLASS[kind], tenant.name, key, segments, call)

    def _tenant(self) -> Tenant:
        tenants = self._profile.tenants
        return self._rng.choices(tenants, weights=[t.weight for t in tenants])[0]

    def _call(self, kind: Kind, key: str) -> tuple[int, Call]:
        p, texts = self._profile, self._texts
        if kind == "document":
            lines = texts.sentences(p.sizes.document_lines)
            return len(lines), document_upload(lines, key, p.source_lang, p.target_lang)
        if kind == "batch":
            segments = texts.sentences(p.sizes.batch_segments)
            body = {"segments": segments, "source": p.source_lang.lower(), "target": p.target_lang.lower()}
            return len(segments), Call("POST", "/v1/jobs", (("Authorization", f"Bearer {key}"),
                                                            ("Content-Type", "application/json")),
                                       json.dumps(body).encode())
        if kind == "long":
            sentences = texts.sentences(p.sizes.long_sentences)
            return len(sentences), deepl_translate(" ".join(sentences), key, p.source_lang, p.target_lang)
        text = texts.phrase() if kind == "repeated" else texts.sentence()
        return 1, deepl_translate(text, key, p.source_lang, p.target_lang)


def deepl_translate(text: str, key: str, source: str, target: str) -> Call:
    form = urlencode({"text": text, "source_lang": source, "target_lang": target}).encode()
    return Call("POST", "/v2/translate", (("Authorization", f"DeepL-Auth-Key {key}"),
                                          ("Content-Type", "application/x-www-form-urlencoded")), form)


def document_upload(lines: list[str], key: str, source: str, target: str) -> Call:
    """A multipart/form-data upload of a .txt document, as the DeepL SDKs send it."""
    boundary = _BOUNDARY
    fields = [("source_lang", source), ("target_lang", target)]
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
             for name, value in fields]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="surge.txt"\r\n'
                 "Content-Type: text/plain\r\n\r\n".encode() + "\n".join(lines).encode() + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return Call("POST", "/v2/document", (("Authorization", f"DeepL-Auth-Key {key}"),
                                         ("Content-Type", f"multipart/form-data; boundary={boundary}")),
                b"".join(parts))
