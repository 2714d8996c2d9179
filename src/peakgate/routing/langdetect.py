"""Small, dependency-free language detection for the languages peakgate serves.

Evidence comes from three kinds of cue, each a constant table below:
- function words ("the", "de", "und"): the strongest signal even in three-word UI strings;
- spelling inside a word (ñ, ç, ã, "th", "-ción", word-final consonants), for words that are not
  function words -- short UI strings often have none ("Bad font file format");
- punctuation and elision in the raw text (¿ ¡, l'..., ...n't).
A cue shared by several languages splits its weight among them, so shared words ("de", "la") count
as weak evidence for each. Confidence = score / (total score + a prior), so a little evidence gives
a low confidence and the confidences sum to less than 1.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from types import MappingProxyType

LANGUAGES: tuple[str, ...] = ("en", "es", "fr", "de", "pt", "it", "ca")

# Space-separated function words per language.
_STOP_WORDS: Mapping[str, str] = MappingProxyType({
    "en": "the of and to in is are was were be been being has have had not no for on with by at from this that "
          "these those it its an a or as can cannot could will would should do does did you your we our they "
          "their there here which what when where who how all any some too many more most such than then into "
          "out up down only also so if but about please must may one other while after before over under "
          "again same each both between without through",
    "es": "a el la los las de del un una unos unas y o en es no que por para con se al lo su sus ha han hay está "
          "están son ser puede pueden este esta estos estas esto ese esa como más pero sin sobre ya muy también "
          "ni le les nos usted si sí fue era entre desde hasta cuando donde otro otra todos todas ningún ninguna "
          "hacia según tiene tienen",
    "fr": "le la les de des du un une et est sont pas ne il elle je vous nous sur pour avec dans ce cette ces "
          "qui que au aux ou où se son sa ses été être avoir peut plus aucun aucune leur par en",
    "de": "der die das den dem des und ist sind nicht kein keine ein eine einen einem einer mit von zu zum zur "
          "im auf für sie wird werden kann können es sich bei oder als auch nach wie ich wir ihr aus wurde "
          "wurden noch nur über unter diese dieser dieses ob konnte",
    "pt": "a de o os as um uma do da dos das no na nos nas em não é e ao à com por para pelo pela se que foi são "
          "está estão você mais ou isso este esta esse essa seu sua nenhum nenhuma pode ser",
    "it": "il lo la gli le di del della dei delle da in un una uno è e non che per con su sono questo questa "
          "nel nella al alla ha ho si come anche più ma o impossibile nessun nessuna può essere",
    "ca": "el la els les de del dels i a en un una és no que per amb es ha hi al als aquest aquesta això pel "
          "seu seva ser pot més també però o cap han",
})

# (substring of " word ", total weight, languages): the spaces mark word edges.
_WORD_CUES: tuple[tuple[str, float, tuple[str, ...]], ...] = (
    ("ñ", 4.0, ("es",)), ("ç", 3.0, ("fr", "pt", "ca")), ("ã", 4.0, ("pt",)), ("õ", 4.0, ("pt",)),
    ("ß", 4.0, ("de",)), ("ä", 3.0, ("de",)), ("ö", 3.0, ("de",)), ("ü", 3.0, ("de",)),
    ("á", 2.0, ("es", "pt")), ("í", 2.0, ("es", "pt", "ca")), ("ó", 2.0, ("es", "pt", "ca")),
    ("ú", 2.0, ("es", "pt", "ca")), ("é", 2.0, ("es", "fr", "pt", "ca")), ("è", 2.0, ("fr", "it", "ca")),
    ("à", 2.0, ("fr", "it", "pt", "ca")), ("ò", 2.0, ("it", "ca")), ("ì", 2.0, ("it",)), ("ù", 2.0, ("fr", "it")),
    ("ê", 2.0, ("fr", "pt")), ("ô", 2.0, ("fr", "pt")), ("â", 2.0, ("fr", "pt")), ("î", 3.0, ("fr",)),
    ("û", 3.0, ("fr",)), ("ë", 3.0, ("fr",)), ("œ", 3.0, ("fr",)), ("ï", 2.0, ("fr", "ca")), ("l·l", 4.0, ("ca",)),
    ("ción ", 3.0, ("es",)), ("ciones ", 3.0, ("es",)), ("sión ", 2.0, ("es",)), ("dad ", 2.0, ("es",)),
    ("ção ", 4.0, ("pt",)), ("ções ", 4.0, ("pt",)), ("zione ", 4.0, ("it",)), ("zioni ", 4.0, ("it",)),
    ("ció ", 1.0, ("ca",)), ("tion ", 2.0, ("en", "fr")), ("tions ", 2.0, ("en", "fr")),
    ("ing ", 2.0, ("en",)), ("ings ", 2.0, ("en",)), ("ed ", 1.5, ("en",)), ("ly ", 1.5, ("en",)),
    ("ness ", 2.0, ("en",)), ("th", 1.5, ("en",)), ("sh", 1.0, ("en",)), (" wh", 2.0, ("en",)),
    ("w", 1.0, ("en", "de")), ("k", 1.0, ("en", "de")), ("y ", 1.0, ("en",)), ("ck", 1.0, ("en", "de")),
    ("ee", 1.0, ("en",)), ("oo", 1.0, ("en",)), ("ou", 0.5, ("en", "fr")),
    ("mente ", 2.0, ("es", "it", "pt")), ("ment ", 1.0, ("en", "fr")), ("eux ", 3.0, ("fr",)),
    ("eau", 2.0, ("fr",)), ("aux ", 2.0, ("fr",)), ("oi", 1.0, ("fr",)), ("eur ", 2.0, ("fr",)),
    ("sch", 2.0, ("de",)), ("cht", 2.0, ("de",)), ("ung ", 3.0, ("de",)), ("tz", 1.5, ("de",)),
    ("ei", 1.0, ("de",)), ("gli", 2.0, ("it",)), ("zz", 2.0, ("it",)), ("cch", 2.0, ("it",)),
    ("ny", 1.0, ("ca",)), ("qu", 0.5, ("es", "fr", "it", "pt", "ca")),
    ("ll", 0.5, ("es", "ca")), ("rr", 0.5, ("es", "pt", "ca")),
    # Word endings: Spanish and Italian words end in vowels, English and German ones often do not.
    ("a ", 0.6, ("es", "it", "pt", "ca")), ("o ", 0.6, ("es", "it", "pt")), ("i ", 0.6, ("it",)),
    ("os ", 0.6, ("es", "pt")), ("as ", 0.6, ("es", "pt")), ("es ", 0.4, ("es", "fr", "ca")),
    ("t ", 0.8, ("en", "de", "fr")), ("p ", 0.8, ("en",)), ("g ", 0.8, ("en", "de")), ("h ", 0.8, ("en", "de")),
    ("f ", 0.8, ("en", "de")), ("b ", 0.8, ("en",)), ("m ", 0.6, ("en", "de")), ("x ", 0.6, ("en", "fr")),
)

# Cues in the raw text (punctuation, elision), with a regex each.
_TEXT_CUES: tuple[tuple[re.Pattern[str], float, tuple[str, ...]], ...] = (
    (re.compile(r"[¿¡]"), 4.0, ("es",)),
    (re.compile(r"\b(?:[ldjnmsc]|qu)['’]\w", re.IGNORECASE), 2.0, ("fr", "it", "ca")),
    (re.compile(r"\w(?:n't|'s|'re|'ll|'ve|'m)\b", re.IGNORECASE), 2.0, ("en",)),
)

_WORD = re.compile(r"[^\W\d_]+(?:·[^\W\d_]+)*")
_PRIOR = 2.0  # evidence mass that keeps confidence low when cues are few
_MAX_CHARS = 4_000  # the start of a document is enough; detection stays cheap on big ones
def _stop_shares() -> Mapping[str, Mapping[str, float]]:
    """word -> {language: share}: a function word of n languages gives each 2/n."""
    table: dict[str, dict[str, float]] = {}
    for lang in LANGUAGES:
        for word in _STOP_WORDS[lang].split():
            table.setdefault(word, {})[lang] = 0.0
    for shares in table.values():
        for lang in shares:
            shares[lang] = 2.0 / len(shares)
    return MappingProxyType({word: MappingProxyType(shares) for word, shares in table.items()})


_STOP_SHARE = _stop_shares()  # a constant table, derived once from _STOP_WORDS


def _add(scores: dict[str, float], weight: float, langs: tuple[str, ...]) -> None:
    for lang in langs:
        scores[lang] += weight / len(langs)


def _score_word(scores: dict[str, float], word: str) -> None:
    shares = _STOP_SHARE.get(word)
    if shares is not None:  # a function word: its own evidence, spelling cues would double-count
        for lang, share in shares.items():
            scores[lang] += share
        return
    if len(word) < 2:
        return
    padded = f" {word} "
    for cue, weight, langs in _WORD_CUES:
        if cue in padded:
            _add(scores, weight, langs)


def _scores(text: str) -> dict[str, float]:
    text = text[:_MAX_CHARS]
    scores = dict.fromkeys(LANGUAGES, 0.0)
    for pattern, weight, langs in _TEXT_CUES:
        _add(scores, weight * len(pattern.findall(text)), langs)
    for word in _WORD.findall(text):
        if len(word) > 1 and word.isupper():  # acronyms (RPC, PIN) belong to no language
            continue
        _score_word(scores, word.lower())
    return scores


def _base(code: str) -> str:
    return code.lower().replace("_", "-").split("-", 1)[0]


def detect(text: str, candidates: Collection[str] | None = None) -> list[tuple[str, float]]:
    """Languages with confidence in [0, 1] (summing to < 1), best first.

    `candidates` narrows the answer (codes compared by base language, so "en-US" means "en"); codes
    this detector does not know are left out. Text without any cue yields an empty list: unknown.
    """
    allowed = set(LANGUAGES) if candidates is None else {_base(c) for c in candidates}
    scores = {lang: s for lang, s in _scores(text).items() if lang in allowed and s > 0}
    total = sum(scores.values()) + _PRIOR
    ranked = sorted(scores.items(), key=lambda item: (-item[1], LANGUAGES.index(item[0])))
    return [(lang, score / total) for lang, score in ranked]
