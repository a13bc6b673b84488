"""Characters that imitate a source label such as ``[Source 2]``: look-alikes of the letters of
"source" from other scripts (Cyrillic ``ѕ о с е``, Greek ``ο``, small capitals) and brackets
and dashes from other blocks, each with the ASCII character it imitates.

One table, so the guard flags, rendering neutralises and citation checks read the same
characters as a label (NFKC, applied before it, handles full-width and mathematical forms).
"""

from __future__ import annotations

__all__ = ["BLANK_LETTERS", "LABEL_LOOKALIKES"]

LABEL_LOOKALIKES: dict[str, str] = {
    **dict.fromkeys("ѕꜱʂ", "s"),
    **dict.fromkeys("ЅꓢᏚՏ", "S"),  # Cyrillic, Lisu, Cherokee, Armenian
    **dict.fromkeys("оοᴏօ๐", "o"),
    **dict.fromkeys("ОΟꓳ", "O"),
    **dict.fromkeys("υᴜսцμ", "u"),
    **dict.fromkeys("Սꓴ", "U"),
    **dict.fromkeys("гʀᴦ", "r"),
    **dict.fromkeys("ꓣᎡ", "R"),
    **dict.fromkeys("сϲᴄ", "c"),
    **dict.fromkeys("СϹꓚᏟ", "C"),
    **dict.fromkeys("еᴇҽ", "e"),
    **dict.fromkeys("ЕΕꓰᎬ", "E"),
    **dict.fromkeys("【〔〖〘〚⟦⟨〈《「『⁅❲⟮⦋⦗⸢❨❪❬❮❰⸨﴾⦅⟬⌈⧼⦑", "["),
    **dict.fromkeys("】〕〗〙〛⟧⟩〉》」』⁆❳⟯⦌⦘⸣❩❫❭❯❱⸩﴿⦆⟭⌉⧽⦒", "]"),
    **dict.fromkeys("‐‑‒–—―−﹘", "-"),
    **dict.fromkeys("‹«", "<"),
    **dict.fromkeys("›»", ">"),
}
"""Each look-alike and the ASCII character it is read as."""

BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Characters that show as blank space but are letters or symbols to Unicode (the Hangul
fillers, the blank Braille pattern), so no rule about format characters or white space drops
them: read as nothing where a label is looked for."""
