"""Surface ("black-box") features: lengths, counts and source-target mismatches needing no resource.

These are the string-processing features of the WMT12 participants (literature.md §3.2):
length ratios (DFKI, UU, WLV), type/token ratio variants (UU, WLV), token-pattern counts and
their source-target mismatches (UU, WLV), bracket and end-of-sentence flags (LORIA),
capitalised non-initial words as a named-entity proxy (SJTU), copied (untranslated) words,
and Buck's (UEdin) binary indicators of quotes, hyphens, commas, numbers, upper-case words and
the genitive 's, which carried his gain.

Text: each side is NFC-normalised (so a decomposed accent stays inside its word) and tokenized
with ``qe.text.processing`` (Moses tokenizer, ``style`` setting, default ``moses``), always keeping case,
since several features read it. Token matching (numbers, copied words) is exact and
case-sensitive. Quotes, brackets and character counts are read from the raw (NFC) sentence, so
they do not depend on how the tokenizer splits them.

Definitions for empty sentences: a ratio is ``(a + 1) / (b + 1)``; a share, mean or maximum
over zero items is 0; no value is ever NaN or infinite.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from qe.features.base import FamilyExample, FeatureFamily, FeatureSpec, Pairs, choice, flag, language
from qe.features.registry import register_family
from qe.infra.errors import QEInputError
from qe.infra.memo import make_room
from qe.text.processing import STYLES, TextConfig, TextProcessor

# Characters of the raw sentence counted as brackets, and their pairs.
BRACKET_PAIRS = {")": "(", "]": "[", "}": "{"}
BRACKETS = "()[]{}"
# Quote marks: double quotes, guillemets, backtick and the opening single quote always; ' and ’
# only when not between two word characters (there they are apostrophes: don't, Anec's).
QUOTE_RE = re.compile(r"[\"“”„‟«»‹›`‘]|(?<!\w)['’]|['’](?!\w)")
# Tokens after which a capitalised word may start a (quoted or sub-) sentence.
SENTENCE_OPENERS = frozenset(
    {".", "!", "?", ":", "...", "…", "¿", "¡", '"', "“", "„", "«", "`", "``", "‘", "-", "–", "—"}
)
# Tokens skipped at the end before testing for sentence-final punctuation.
CLOSERS = frozenset({'"', "”", "»", "’", "'", "''", ")", "]", "}", "›"})
EOS_CHARS = ".!?…"
PUNCT_KINDS = {
    "comma": ",",
    "period": ".",
    "semicolon": ";",
    "colon": ":",
    "question": "?",
    "exclamation": "!",
}
GENITIVE_TOKENS = frozenset({"'s", "’s", "'S", "’S"})
_KIND_SET = frozenset(PUNCT_KINDS.values())
_BRACKET_RE = re.compile(r"[()\[\]{}]")
_HYPHEN_IN_WORD = re.compile(r"\w[-‐‑]\w")


def _spec(name: str, description: str) -> FeatureSpec:
    return FeatureSpec(name, description, None)


SPECS: list[FeatureSpec] = [
    # lengths
    _spec("src_tokens", "number of source tokens"),
    _spec("mt_tokens", "number of target tokens"),
    _spec("src_chars", "number of non-whitespace characters in the source sentence"),
    _spec("mt_chars", "number of non-whitespace characters in the target sentence"),
    _spec("token_ratio", "(target tokens + 1) / (source tokens + 1)"),
    _spec("char_ratio", "(target chars + 1) / (source chars + 1), non-whitespace characters"),
    _spec("token_absdiff", "|target tokens - source tokens|"),
    _spec("char_absdiff", "|target chars - source chars| (non-whitespace characters)"),
    _spec("src_mean_token_length", "mean characters per source token (0 if no token)"),
    _spec("mt_mean_token_length", "mean characters per target token (0 if no token)"),
    _spec("src_longest_token", "characters in the longest source token (0 if no token)"),
    _spec("mt_longest_token", "characters in the longest target token (0 if no token)"),
    # vocabulary
    _spec("src_ttr", "source lower-cased types / tokens (0 if no token)"),
    _spec("mt_ttr", "target lower-cased types / tokens (0 if no token)"),
    _spec("src_guiraud", "source types / sqrt(tokens) (Guiraud's root TTR; 0 if no token)"),
    _spec("mt_guiraud", "target types / sqrt(tokens) (Guiraud's root TTR; 0 if no token)"),
    _spec("src_herdan", "source log(types) / log(tokens) (Herdan; 1 for one token, 0 for none)"),
    _spec("mt_herdan", "target log(types) / log(tokens) (Herdan; 1 for one token, 0 for none)"),
    _spec("src_hapax_share", "source types occurring once / tokens (lower-cased; 0 if no token)"),
    _spec("mt_hapax_share", "target types occurring once / tokens (lower-cased; 0 if no token)"),
    _spec("src_alpha_share", "share of source tokens made only of letters (0 if no token)"),
    _spec("mt_alpha_share", "share of target tokens made only of letters (0 if no token)"),
    _spec("mt_alpha_blowup", "1 if the target has more than 3x as many all-letter tokens as the source"),
    # numbers
    _spec("src_numbers", "source tokens containing a digit"),
    _spec("mt_numbers", "target tokens containing a digit"),
    _spec("numbers_absdiff", "|target numbers - source numbers| (tokens containing a digit)"),
    _spec(
        "src_numbers_missing",
        "source number tokens without a verbatim target match (multiset difference: 3.5 != 3,5)",
    ),
    _spec(
        "src_numbers_missing_digits",
        "as src_numbers_missing on digit strings only (1,000 == 1.000; 16-year-old == 16)",
    ),
    # punctuation
    _spec("src_punct", "source tokens made only of Unicode punctuation (category P*)"),
    _spec("mt_punct", "target tokens made only of Unicode punctuation (category P*)"),
    _spec("punct_absdiff", "|target punctuation tokens - source punctuation tokens|"),
    *[
        _spec(f"{kind}_absdiff", f"|target - source| count of tokens equal to '{char}'")
        for kind, char in PUNCT_KINDS.items()
    ],
    _spec(
        "mt_ends_eos",
        "1 if the target's last token, skipping closing quotes/brackets, ends with . ! ? or …",
    ),
    _spec("eos_mismatch", "1 if exactly one of source and target ends with . ! ? or … (as mt_ends_eos)"),
    # case and named-entity-like tokens
    _spec("src_upper_initial", "source tokens starting with an upper-case letter"),
    _spec("mt_upper_initial", "target tokens starting with an upper-case letter"),
    _spec("src_allcaps", "source tokens with at least 2 letters, all upper-case (NATO, U.S.)"),
    _spec("mt_allcaps", "target tokens with at least 2 letters, all upper-case (NATO, U.S.)"),
    _spec(
        "src_ne_like",
        "source capitalised tokens, not the first word and not after . ! ? : ¿ ¡ an opening quote or dash",
    ),
    _spec(
        "mt_ne_like",
        "target capitalised tokens, not the first word and not after . ! ? : ¿ ¡ an opening quote or dash",
    ),
    _spec("ne_like_absdiff", "|target - source| named-entity-like tokens (as src_ne_like)"),
    # brackets and quotes
    _spec("src_brackets", "( ) [ ] { } characters in the source"),
    _spec("mt_brackets", "( ) [ ] { } characters in the target"),
    _spec("brackets_absdiff", "|target - source| bracket characters"),
    _spec("src_brackets_unbalanced", "1 if the source's ( ) [ ] { } do not nest properly"),
    _spec("mt_brackets_unbalanced", "1 if the target's ( ) [ ] { } do not nest properly"),
    _spec(
        "src_quotes",
        "quote marks in the source: \" “ ” „ ‟ « » ‹ › ` ‘ and ' ’ unless between word characters",
    ),
    _spec("mt_quotes", "quote marks in the target (as src_quotes)"),
    _spec("quotes_absdiff", "|target - source| quote marks"),
    _spec("src_quotes_unbalanced", "1 if the source has an odd number of quote marks"),
    _spec("mt_quotes_unbalanced", "1 if the target has an odd number of quote marks"),
    # untranslated (copied) words
    _spec(
        "mt_untranslated",
        "target all-letter tokens of 2+ chars also occurring verbatim among the source tokens "
        "(names and cognates such as 'no', 'hotel' included)",
    ),
    _spec(
        "mt_untranslated_share",
        "mt_untranslated / target all-letter tokens of 2+ chars (0 if none)",
    ),
    _spec(
        "mt_untranslated_lower",
        "as mt_untranslated, lower-case-initial tokens only (leaves out names)",
    ),
    _spec(
        "mt_untranslated_lower_share",
        "mt_untranslated_lower / target all-letter tokens of 2+ chars (0 if none)",
    ),
    # Buck's (UEdin) indicators and the counts behind them
    _spec("src_genitive", "source tokens 's / ’s (genitive, also it's-type contractions)"),
    _spec("mt_genitive", "target tokens 's / ’s (an English clitic left in the output)"),
    _spec("src_hyphenated", "source tokens with a hyphen between two word characters"),
    _spec("mt_hyphenated", "target tokens with a hyphen between two word characters"),
    _spec("src_has_quote", "1 if the source has a quote mark (as src_quotes)"),
    _spec("src_has_bracket", "1 if the source has a bracket character ( ) [ ] { }"),
    _spec("src_has_hyphen", "1 if the source has a hyphen or dash character - – —"),
    _spec("src_has_comma", "1 if the source has a comma"),
    _spec("src_has_number", "1 if a source token contains a digit"),
    _spec("src_has_allcaps", "1 if the source has an all-caps token (as src_allcaps)"),
    _spec("src_has_genitive", "1 if the source has a 's / ’s token"),
    _spec("src_has_ne_like", "1 if the source has a named-entity-like token (as src_ne_like)"),
]

SETTINGS = {
    "style": choice("moses", STYLES, "qe.text.processing tokenization style"),
    "src_lang": language("source language (unset: the bundle's, else en)"),
    "tgt_lang": language("target language (unset: the bundle's, else es)"),
    "normalize": flag(False, "run the Moses punctuation normalizer before tokenizing"),
}
_FALLBACK_LANG = {"src": "en", "tgt": "es"}


_TOKEN_INFO: dict[str, tuple] = {}
_TOKEN_INFO_LIMIT = 200_000


def _token_info(token: str) -> tuple:
    """:func:`_token_properties` of one token, computed once per distinct token (memoised up to
    ``_TOKEN_INFO_LIMIT`` tokens, or the process's cap: :func:`qe.infra.memo.make_room`)."""
    found = _TOKEN_INFO.get(token)
    if found is None:
        found = _token_properties(token)
        make_room(_TOKEN_INFO, _TOKEN_INFO_LIMIT)
        _TOKEN_INFO[token] = found
    return found


def _token_properties(token: str) -> tuple:
    """Properties of one token.

    Returns (length, lower-cased, is_alpha, has_digit, digits, is_punct, upper_initial, allcaps,
    hyphenated, has_letter, is_genitive); the flags are ints so that columns can be summed.
    """
    letters = [c for c in token if c.isalpha()]
    digits = "".join(c for c in token if c.isdigit())
    is_punct = bool(token) and all(unicodedata.category(c).startswith("P") for c in token)
    return (
        len(token),
        token.lower(),
        int(token.isalpha()),
        int(bool(digits)),
        digits,
        int(is_punct),
        int(bool(token) and token[0].isupper()),
        int(len(letters) >= 2 and all(c.isupper() for c in letters)),
        int(_HYPHEN_IN_WORD.search(token) is not None),
        int(bool(letters)),
        int(token in GENITIVE_TOKENS),
    )


def brackets_balanced(text: str) -> bool:
    """True if the ( ) [ ] { } of ``text`` nest properly (every closer matches the last opener)."""
    stack: list[str] = []
    for char in text:
        if char in "([{":
            stack.append(char)
        elif char in BRACKET_PAIRS and (not stack or stack.pop() != BRACKET_PAIRS[char]):
            return False
    return not stack


def count_quotes(text: str) -> int:
    """Quote marks in ``text`` (see ``QUOTE_RE``)."""
    return len(QUOTE_RE.findall(text))


def ends_with_eos(tokens: list[str]) -> bool:
    """True if the last token, skipping closing quotes and brackets, ends with . ! ? or …."""
    i = len(tokens) - 1
    while i >= 0 and tokens[i] in CLOSERS:
        i -= 1
    return i >= 0 and tokens[i][-1] in EOS_CHARS


def ne_like_count(tokens: list[str]) -> int:
    """Capitalised tokens that are not the sentence's first word and do not follow a sentence opener."""
    count = 0
    seen_word = False
    previous = ""
    for token in tokens:
        info = _token_info(token)
        if info[9]:  # has a letter
            if seen_word and info[6] and previous not in SENTENCE_OPENERS:
                count += 1
            seen_word = True
        previous = token
    return count


def _vocabulary(lowered: Sequence[str]) -> tuple[float, float, float, float]:
    """(TTR, Guiraud, Herdan, hapax share) of a lower-cased token list."""
    n = len(lowered)
    if n == 0:
        return 0.0, 0.0, 0.0, 0.0
    counts = Counter(lowered)
    types = len(counts)
    herdan = 1.0 if n == 1 else math.log(types) / math.log(n)
    hapax = sum(1 for c in counts.values() if c == 1)
    return types / n, types / math.sqrt(n), herdan, hapax / n


class _Side:
    """Everything computed from one sentence on its own (shared by the pairwise features)."""

    __slots__ = (
        "allcaps",
        "alpha",
        "brackets",
        "brackets_ok",
        "chars",
        "digit_numbers",
        "eos",
        "genitive",
        "hyphenated",
        "kinds",
        "longest",
        "mean_len",
        "n",
        "ne_like",
        "numbers",
        "punct",
        "quotes",
        "raw",
        "tokens",
        "upper",
        "vocab",
    )

    def __init__(self, raw: str, tokens: list[str]) -> None:
        self.raw = raw
        self.tokens = tokens
        self.n = n = len(tokens)
        self.chars = len("".join(raw.split()))
        bracket_chars = _BRACKET_RE.findall(raw)
        self.brackets = len(bracket_chars)
        self.brackets_ok = brackets_balanced("".join(bracket_chars)) if bracket_chars else True
        self.quotes = count_quotes(raw)
        if n == 0:
            self.mean_len = 0.0
            self.longest = 0
            self.vocab = (0.0, 0.0, 0.0, 0.0)
            self.alpha = self.punct = self.upper = self.allcaps = self.hyphenated = 0
            self.genitive = self.ne_like = 0
            self.numbers, self.digit_numbers = [], []
            self.kinds = Counter()
            self.eos = False
            return
        infos = [_token_info(t) for t in tokens]
        lengths, lowered, alpha, has_digit, digits, punct, upper, allcaps, hyph, _, genitive = zip(
            *infos, strict=True
        )
        self.mean_len = sum(lengths) / n
        self.longest = max(lengths)
        self.vocab = _vocabulary(lowered)
        self.alpha = sum(alpha)
        self.punct = sum(punct)
        self.upper = sum(upper)
        self.allcaps = sum(allcaps)
        self.hyphenated = sum(hyph)
        self.genitive = sum(genitive)
        if any(has_digit):
            self.numbers = [t for t, d in zip(tokens, has_digit, strict=True) if d]
            self.digit_numbers = [d for d in digits if d]
        else:
            self.numbers, self.digit_numbers = [], []
        self.kinds = Counter(t for t, p in zip(tokens, punct, strict=True) if p and t in _KIND_SET)
        self.ne_like = ne_like_count(tokens)
        self.eos = ends_with_eos(tokens)


def _missing(source: list[str], target: list[str]) -> int:
    """Size of the multiset difference source - target."""
    if not source:
        return 0
    return sum((Counter(source) - Counter(target)).values())


@register_family
class SurfaceFamily(FeatureFamily):
    """Length, count, mismatch and copy features computed from the two strings alone."""

    name = "surface"

    setting_specs = SETTINGS
    example = FamilyExample()

    def fresh_state(self) -> dict[str, Any]:
        """Tokenizers by side and settings (rebuilt in each worker)."""
        return {"_processors": {}}

    def specs(self) -> list[FeatureSpec]:
        """All surface features, in column order."""
        return list(SPECS)

    def text_config(self, side: str, resources: Any = None) -> TextConfig:
        """The tokenizer settings for ``side`` ("src" or "tgt"): always case-preserving."""
        lang = self.settings[f"{side}_lang"]
        if lang is None and resources is not None and hasattr(resources, "text_config"):
            lang = resources.text_config(side).lang
        return TextConfig(
            lang=lang or _FALLBACK_LANG[side],
            style=self.settings["style"],
            case="keep",
            normalize=bool(self.settings["normalize"]),
        )

    def _processor(self, side: str, resources: Any) -> TextProcessor:
        config = self.text_config(side, resources)
        key = (side, config)
        if key not in self._processors:
            self._processors[key] = TextProcessor(config)
        return self._processors[key]

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), len(SPECS))`` float array."""
        src = [_nfc(s, "source", batch, i) for i, s in enumerate(batch.src)]
        mt = [_nfc(s, "target", batch, i) for i, s in enumerate(batch.mt)]
        src_tok = self._processor("src", resources).tokenize_many(src)
        mt_tok = self._processor("tgt", resources).tokenize_many(mt)
        out = np.zeros((len(batch), len(SPECS)), dtype=np.float64)
        for i in range(len(batch)):
            out[i] = _pair_features(_Side(src[i], src_tok[i]), _Side(mt[i], mt_tok[i]))
        return out


def _nfc(sentence: Any, what: str, batch: Pairs, i: int) -> str:
    if not isinstance(sentence, str):
        raise QEInputError(
            f"surface: {what} sentence {batch.ids[i]!r} is not text ({type(sentence).__name__})"
        )
    return sentence if unicodedata.is_normalized("NFC", sentence) else unicodedata.normalize("NFC", sentence)


def _pair_features(s: _Side, t: _Side) -> list[float]:
    """The feature row of one pair, in ``SPECS`` order."""
    s_ttr, s_gui, s_her, s_hap = s.vocab
    t_ttr, t_gui, t_her, t_hap = t.vocab
    candidates = [tok for tok in t.tokens if len(tok) > 1 and _token_info(tok)[2]]
    src_types = set(s.tokens)
    copied = [tok for tok in candidates if tok in src_types]
    copied_lower = [tok for tok in copied if not tok[0].isupper()]
    n_cand = len(candidates)
    s_numbers = len(s.numbers)
    row = [
        s.n,
        t.n,
        s.chars,
        t.chars,
        (t.n + 1) / (s.n + 1),
        (t.chars + 1) / (s.chars + 1),
        abs(t.n - s.n),
        abs(t.chars - s.chars),
        s.mean_len,
        t.mean_len,
        s.longest,
        t.longest,
        s_ttr,
        t_ttr,
        s_gui,
        t_gui,
        s_her,
        t_her,
        s_hap,
        t_hap,
        s.alpha / s.n if s.n else 0.0,
        t.alpha / t.n if t.n else 0.0,
        float(t.alpha > 3 * s.alpha),
        s_numbers,
        len(t.numbers),
        abs(len(t.numbers) - s_numbers),
        _missing(s.numbers, t.numbers),
        _missing(s.digit_numbers, t.digit_numbers),
        s.punct,
        t.punct,
        abs(t.punct - s.punct),
        *[abs(t.kinds[c] - s.kinds[c]) for c in PUNCT_KINDS.values()],
        float(t.eos),
        float(t.eos != s.eos),
        s.upper,
        t.upper,
        s.allcaps,
        t.allcaps,
        s.ne_like,
        t.ne_like,
        abs(t.ne_like - s.ne_like),
        s.brackets,
        t.brackets,
        abs(t.brackets - s.brackets),
        float(not s.brackets_ok),
        float(not t.brackets_ok),
        s.quotes,
        t.quotes,
        abs(t.quotes - s.quotes),
        float(s.quotes % 2 == 1),
        float(t.quotes % 2 == 1),
        len(copied),
        len(copied) / n_cand if n_cand else 0.0,
        len(copied_lower),
        len(copied_lower) / n_cand if n_cand else 0.0,
        s.genitive,
        t.genitive,
        s.hyphenated,
        t.hyphenated,
        float(s.quotes > 0),
        float(s.brackets > 0),
        float(any(c in s.raw for c in "-–—")),
        float("," in s.raw),
        float(s_numbers > 0),
        float(s.allcaps > 0),
        float(s.genitive > 0),
        float(s.ne_like > 0),
    ]
    return row
