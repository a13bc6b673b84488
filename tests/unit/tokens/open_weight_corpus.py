"""A generated corpus of hard texts, and reference tokenizers built independently of ctxasm.

``corpus()`` returns the same 10,000+ texts on every run (a seeded generator): prose from word
lists in several scripts, CJK, emoji sequences, code, runs of white space, digits, combining
marks that NFC composes, and strings that look like control tokens (which a passage must
count as plain text). Only characters assigned in Unicode 12 or earlier are used, so every
engine's Unicode tables agree on them.

``hf_reference`` builds a Hugging Face ``tokenizers`` BPE from a rank table the way Hugging Face
converts tiktoken files (merges ordered by the rank of the merged token): a different BPE
engine and a different regex engine from tiktoken, which ctxasm counts with.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

WORDS = (
    "the river of time flows quietly past ancient stone bridges while merchants argue about "
    "prices and children chase pigeons across the square nobody remembers why the bell tower "
    "leans"
).split()
FOREIGN = (
    "Straße Füße naïve café résumé déjà-vu Ærøskøbing Łódź Ångström Ελλάδα Москва Київ "
    "Türkçe İstanbul ğüşöç Việt Nam Tiếng Việt Español niño mañana Português ação coração "
    "Čeština příliš žluťoučký Română Ștefan ﬁnance ﬂour"
).split()
SCRIPTS = (
    "مرحبا بالعالم العربي",
    "שלום עולם",
    "नमस्ते दुनिया हिन्दी",
    "สวัสดีชาวโลก",
    "ሰላም ልዑል",
    "Բարեւ աշխարհ",
    "გამარჯობა მსოფლიო",
    "ಕನ್ನಡ ತಮಿಳು தமிழ் తెలుగు",
    "কাজ করছে বাংলা",
    "ကမ္ဘာ မြန်မာ",
    "ភាសាខ្មែរ",
)
CJK = (
    "東京都の天気は晴れです。今日は良い日ですね！",
    "我想在apple工作1314151天～",
    "北京欢迎你，上海是一个国际化大都市。",
    "한국어 텍스트입니다. 서울특별시",
    "カタカナとひらがなとＡＢＣ全角",
    "漢字仮名交じり文を書きます",
    "中华人民共和国成立于一九四九年",
)
EMOJI = (
    "😀",
    "🦙",
    "🚀",
    "👩‍💻",
    "👨‍👩‍👧‍👦",
    "🏳️‍🌈",
    "👍🏽",
    "🇫🇷",
    "🇯🇵",
    "✅",
    "❤️",
    "😶‍🌫️",
    "🧑🏿‍🚀",
)
CODE = (
    "def f(x):\n    return x ** 2\n",
    "for (let i = 0; i < n; i++) {\n\tconsole.log(i);\n}\n",
    '{"key": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "```python\nimport os\nprint(os.getcwd())\n```",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%ann%';",
    "#include <stdio.h>\nint main(void) { return 0; }",
    "x = [i for i in range(10) if i % 2 == 0]  # comment",
    '<div class="a"><span>hi</span></div>',
    "$ git commit -m 'fix: off-by-one' && make test",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
)
SPECIAL_LOOKING = (
    "<|eot_id|>",
    "<|begin_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<|reserved_special_token_5|>",
    "<s>",
    "</s>",
    "<unk>",
    "[INST]",
    "[/INST]",
    "[SYSTEM_PROMPT]",
    "[TOOL_CALLS]",
    "[REF]",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "<|fim_prefix|>",
    "<|file_sep|>",
    "<|vision_pad|>",
    "<pad>",
    "<SPECIAL_12>",
)
WHITESPACE = (
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    " \n ",
    "\u00a0",
    "\u3000",
    "\u2009",
    "\t\t",
)
# NFC composes these (or must not, across a token boundary): e + acute, A + ring, decomposed
# Hangul, > and < with a long solidus overlay, Devanagari nukta.
COMBINING = (
    "e\u0301",
    "A\u030a",
    "\u1100\u1161\u11a8",
    ">\u0338",
    "<\u0338",
    "\u0915\u093c",
    "o\u0308\u0304",
    "\u0041\u0323\u0302",
)
DIGITS = ("3", "33", "333", "3333", "1234567", "3.14159", "2024-11-22", "1,000,000", "0x1F", "٣٤٥")


def _piece(rng: random.Random) -> str:
    kind = rng.randrange(11)
    if kind == 0:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
    if kind == 1:
        return " ".join(rng.choice(FOREIGN) for _ in range(rng.randint(1, 6)))
    if kind == 2:
        return rng.choice(SCRIPTS)
    if kind == 3:
        text = rng.choice(CJK)
        start = rng.randrange(len(text))
        return text[start : start + rng.randint(1, 20)]
    if kind == 4:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 4)))
    if kind == 5:
        return rng.choice(CODE)
    if kind == 6:
        return rng.choice(SPECIAL_LOOKING)
    if kind == 7:
        return rng.choice(WHITESPACE)
    if kind == 8:
        return rng.choice(COMBINING)
    if kind == 9:
        return rng.choice(DIGITS)
    return "".join(chr(rng.choice(_SOUP)) for _ in range(rng.randint(1, 8)))


# Single characters from old, stable blocks: Latin-1, Latin Extended, Greek, Cyrillic, general
# punctuation, arrows, box drawing, CJK punctuation, a few symbols.
_SOUP = [
    *range(0x21, 0x7F),
    *range(0xA1, 0x180),
    *range(0x391, 0x3CA),
    *range(0x410, 0x450),
    *range(0x2010, 0x2028),
    *range(0x2190, 0x21A0),
    *range(0x2500, 0x2520),
    *range(0x3001, 0x3010),
    0x2603,
    0x263A,
    0x20AC,
]


def corpus(count: int = 10_000, seed: int = 20261122) -> list[str]:
    """``count`` texts of 1 to 12 pieces each, joined directly or by white space."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        pieces = [_piece(rng) for _ in range(rng.randint(1, 12))]
        glue = rng.choice(("", " ", "\n", rng.choice(WHITESPACE)))
        text = glue.join(pieces)
        if rng.random() < 0.1:
            text = rng.choice(WHITESPACE) + text
        if rng.random() < 0.1:
            text += rng.choice(WHITESPACE)
        texts.append(text)
    # Every hand-picked string alone, and each control-looking string glued to its neighbours.
    texts += [*WORDS, *FOREIGN, *SCRIPTS, *CJK, *EMOJI, *CODE, *SPECIAL_LOOKING, *WHITESPACE]
    texts += [*COMBINING, *DIGITS]
    texts += [f"a{token}b" for token in SPECIAL_LOOKING]
    texts += [f"{token}\u0338 {token}\u0301" for token in SPECIAL_LOOKING]
    return texts


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-to-character table, which byte-level tokenizer.json files use."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def hf_reference(
    ranks: dict[bytes, int],
    pattern: str,
    *,
    nfc: bool = False,
    text_tokens: Sequence[str] = (),
    control_tokens: Iterable[str] = (),
    ignore_merges: bool = False,
) -> Any:
    """A ``tokenizers.Tokenizer`` equivalent to the rank table, built as Hugging Face converts
    tiktoken files; ``text_tokens`` are added tokens matched in any text, ``control_tokens``
    special ones (which encode as plain text here, ``encode_special_tokens``)."""
    from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers

    table = _bytes_to_unicode()

    def spell(token: bytes) -> str:
        return "".join(table[b] for b in token)

    vocab = {spell(token): rank for token, rank in ranks.items()}
    merges: list[tuple[int, int, int, str, str]] = []
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = ranks.get(token[:cut]), ranks.get(token[cut:])
            if left is not None and right is not None:
                merges.append((rank, left, right, spell(token[:cut]), spell(token[cut:])))
    merges.sort()
    bpe = models.BPE(
        vocab=vocab, merges=[(m[3], m[4]) for m in merges], ignore_merges=ignore_merges
    )
    tokenizer = Tokenizer(bpe)
    if nfc:
        tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in text_tokens])
    control = [t for t in control_tokens if t not in text_tokens]
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
    tokenizer.encode_special_tokens = True
    return tokenizer


def hf_counts(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    return [len(e.ids) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]


class SentencePieceBpe:
    """SentencePiece's BPE encoding written out from its algorithm (``bpe_model.cc``): the
    text with a dummy-prefix space, spaces as U+2581, user-defined symbols matched first, then
    the adjacent pair whose merged piece scores highest merged first (the leftmost on a tie),
    and bytes for what no piece covers. For BPE models with the identity normalizer, as
    Mistral's are; it refuses any other model."""

    def __init__(self, data: bytes) -> None:
        from sentencepiece import sentencepiece_model_pb2

        model = sentencepiece_model_pb2.ModelProto()
        model.ParseFromString(data)
        spec = model.normalizer_spec
        if model.trainer_spec.model_type != 2 or spec.name != "identity":
            raise ValueError("only identity-normalized BPE models are supported")
        if spec.remove_extra_whitespaces or not spec.escape_whitespaces:
            raise ValueError("only models that keep and escape white space are supported")
        self.dummy_prefix = spec.add_dummy_prefix
        self.byte_fallback = model.trainer_spec.byte_fallback
        normal, user_defined, unused = 1, 4, 5
        self.scores: dict[str, float] = {}
        self.unused: set[str] = set()
        self.user: dict[str, list[str]] = {}
        for piece in model.pieces:
            if piece.type in (normal, user_defined, unused):
                self.scores[piece.piece] = piece.score
            if piece.type == unused:
                self.unused.add(piece.piece)
            if piece.type == user_defined:
                self.user.setdefault(piece.piece[0], []).append(piece.piece)
        for symbols in self.user.values():
            symbols.sort(key=len, reverse=True)

    def count(self, text: str) -> int:
        import heapq

        if not text:
            return 0
        escaped = ("\u2581" if self.dummy_prefix else "") + text.replace(" ", "\u2581")
        symbols: list[str] = []
        at = 0
        while at < len(escaped):
            match = next(
                (s for s in self.user.get(escaped[at], ()) if escaped.startswith(s, at)),
                escaped[at],
            )
            symbols.append(match)
            at += len(match)
        after = [*range(1, len(symbols)), -1]
        before = list(range(-1, len(symbols) - 1))
        agenda: list[tuple[float, int, int, str]] = []

        def consider(left: int, right: int) -> None:
            if left >= 0 and right >= 0:
                merged = symbols[left] + symbols[right]
                score = self.scores.get(merged)
                if score is not None:
                    heapq.heappush(agenda, (-score, left, right, merged))

        for left in range(len(symbols) - 1):
            consider(left, left + 1)
        while agenda:
            _, left, right, merged = heapq.heappop(agenda)
            if after[left] != right or symbols[left] + symbols[right] != merged:
                continue  # stale: one side was merged since
            symbols[left], symbols[right] = merged, ""
            after[left] = after[right]
            if after[right] >= 0:
                before[after[right]] = left
            consider(before[left], left)
            consider(left, after[left])
        total = 0
        for symbol in symbols:
            if not symbol:
                continue
            if symbol in self.scores and symbol not in self.unused:
                total += 1
            else:  # one token a UTF-8 byte, or one unknown token
                total += len(symbol.encode("utf-8")) if self.byte_fallback else 1
        return total
