"""Greek names in Latin letters, as ELOT 743 writes them (docs/decisions.md, "Greek names written in Greek letters"). Pure."""

# ruff: noqa: RUF001, RUF002, RUF003 (Greek letters are this module's subject, not look-alikes)

from __future__ import annotations

import re

# ELOT 743 is the transliteration of Greek passports and licences, so it is how a
# Greek-born rider's name reaches a booking form in Latin letters: Παπαδόπουλος ->
# papadopoulos, Ευαγγελία -> evangelia, Μπούρας -> bouras. The letter-by-letter tables of
# anyascii and transliterate write ου as "oy" and Ευ as "eu", which no one spells.
# One departure: ντ and γκ at a word's start are written d and g, as Greek-Australians
# spell their names (Dinos, Gikas), where a passport writes NT and GK; μπ is b there in
# both. Applied to an accent-free, case-folded name (ς folds to σ).
_GREEK = re.compile("[\u0370-\u03ff]")
_GREEK_START = re.compile(r"\b(μπ|ντ|γκ)")  # word-initial: b, d, g (see above)
# αυ, ευ, ηυ before a voiceless consonant or at a word's end: af, ef, if (else av, ev, iv)
_GREEK_VOWEL_U = re.compile("([αεη])υ(?=[θκξπστφχψ]|\\b)")
_GREEK_PAIRS = re.compile("ου|αι|ει|οι|υι|γγ|γξ|γχ|μπ|ντ|γκ|αυ|ευ|ηυ|.")
_GREEK_SPELLING = {
    "μπ": "b", "ντ": "d", "γκ": "g",  # at a word's start (_GREEK_START)
    "ου": "ou", "αι": "ai", "ει": "ei", "οι": "oi", "υι": "yi", "γγ": "ng", "γξ": "nx",
    "γχ": "nch", "αυ": "av", "ευ": "ev", "ηυ": "iv",
    "α": "a", "β": "v", "γ": "g", "δ": "d", "ε": "e", "ζ": "z", "η": "i", "θ": "th",
    "ι": "i", "κ": "k", "λ": "l", "μ": "m", "ν": "n", "ξ": "x", "ο": "o", "π": "p",
    "ρ": "r", "σ": "s", "τ": "t", "υ": "y", "φ": "f", "χ": "ch", "ψ": "ps", "ω": "o",
}  # fmt: skip
_GREEK_MIDDLE = {"μπ": "mp", "ντ": "nt", "γκ": "gk"}
_GREEK_VOICELESS_U = {"α": "af", "ε": "ef", "η": "if"}


def has_greek(text: str) -> bool:
    """Whether an accent-free text has a Greek letter."""
    return _GREEK.search(text) is not None


def greek_to_latin(text: str) -> str:
    """Greek letters of a case-folded, accent-free text in ELOT 743's Latin spelling;
    anything else as it was."""
    if not has_greek(text):
        return text
    text = _GREEK_START.sub(lambda m: _GREEK_SPELLING[m[1]], text)
    text = _GREEK_VOWEL_U.sub(lambda m: _GREEK_VOICELESS_U[m[1]], text)
    return _GREEK_PAIRS.sub(
        lambda m: _GREEK_MIDDLE.get(m[0]) or _GREEK_SPELLING.get(m[0], m[0]), text
    )


# Letters whose Latin spelling the next letter decides: υ after α, ε, η (av, or af before
# a voiceless letter or at the end), γ (g, or n before γ, ξ, χ), μ and ν (b and d at a
# word's start before π and τ). Never a word's first letter: a prefix keeps one.
_OPEN_END = re.compile("(?<=.)(?:(?<=[αεη])υ|[γμν])+$")


def settled_prefix(word: str) -> str:
    """A case-folded, accent-free word typed as a prefix, without the last letters whose
    Latin spelling depends on what follows: "σταυ" is "στα" (Σταύρος is stavros, so the
    prefix "staf" would miss it), "αγ" is "α" (Αγγελική is angeliki)."""
    return _OPEN_END.sub("", word) if has_greek(word) else word
