"""English word stems, so that a query word matches the other forms of the same word.

A query asks "What do teachers earn?" and a passage says "A teacher earns 40,000": the words
differ, the meaning does not. Two words are one word here when they have the same stem: the
Snowball English stemmer's (PyStemmer, the C library), after an irregular form is read as its
base ("taught" as "teach", "children" as "child", "mice" as "mouse").

The irregular forms are English grammar, not any dataset's vocabulary: the common irregular
verbs and plurals. A form that is also another common word is left out, since reading it as the
verb would join unrelated words: "rose" (a flower, or the past of "rise"), "saw", "left",
"found", "felt", "ground", "wound", "spoke", "bit", "lives", "leaves", "analyses", "met" (the
Met), "won" (a currency), "lit", "sat", "lent", "led"; and "people", whose base "person" would
start "personal".

To count a word's forms in a text without stemming every word of the text, each term is looked
for by its :func:`search_keys`: prefixes that every form of the word starts with (its stem, less
a last "e", "i" or "y": "hop" finds "hope" and "hoping"), and each irregular form whole. Only the
words that start with a key are stemmed.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import Stemmer

__all__ = ["search_keys", "stem"]

# No cache of its own (its default keeps 10,000 words, however long): stem() caches short ones.
_STEMMER = Stemmer.Stemmer("english", 0)
_STEMMER_LOCK = threading.Lock()  # a stemmer keeps state between calls: one thread at a time

# Each line: a base form, then its irregular forms.
_IRREGULAR_FORMS = """
arise arose arisen
awake awoke awoken
beat beaten
become became
begin began begun
bite bitten
bleed bled
blow blew blown
break broke broken
breed bred
bring brought
build built
burn burnt
buy bought
catch caught
choose chose chosen
cling clung
come came
creep crept
deal dealt
die dying
dig dug
draw drew drawn
dream dreamt
drink drank drunk
drive drove driven
eat ate eaten
fall fell fallen
fight fought
flee fled
fling flung
fly flew flown
forbid forbade forbidden
foresee foresaw foreseen
forget forgot forgotten
forgive forgave forgiven
freeze froze frozen
get got gotten
give gave given
grow grew grown
hang hung
hear heard
hide hid hidden
hold held
keep kept
kneel knelt
know knew known
lay laid
lean leant
leap leapt
learn learnt
lose lost
make made
mean meant
mislead misled
overcome overcame
overthrow overthrew overthrown
pay paid
prove proven
rebuild rebuilt
ride rode ridden
ring rang rung
rewrite rewrote rewritten
run ran
say said
seek sought
sell sold
send sent
sew sewn
shake shook shaken
shine shone
shoot shot
show shown
shrink shrank shrunk
sing sang sung
sink sank sunk
sleep slept
slide slid
speed sped
spend spent
spin spun
spring sprang sprung
stand stood
steal stole stolen
stick stuck
sting stung
strike struck stricken
strive strove striven
swear swore sworn
sweep swept
swim swam swum
swing swung
take took taken
teach taught
tear tore torn
tell told
think thought
throw threw thrown
understand understood
undergo underwent undergone
undertake undertook undertaken
uphold upheld
wake woke woken
wear wore worn
weave wove woven
weep wept
withdraw withdrew withdrawn
withhold withheld
write wrote written
child children
man men
woman women
mouse mice
goose geese
tooth teeth
foot feet
ox oxen
louse lice
criterion criteria
phenomenon phenomena
thesis theses
crisis crises
hypothesis hypotheses
index indices
matrix matrices
vertex vertices
appendix appendices
cactus cacti
fungus fungi
nucleus nuclei
radius radii
stimulus stimuli
alumnus alumni
curriculum curricula
bacterium bacteria
millennium millennia
knife knives
wife wives
wolf wolves
half halves
shelf shelves
calf calves
loaf loaves
thief thieves
elf elves
"""


def _irregular() -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """Each irregular form -> its base, and the stem of each base -> its irregular forms."""
    bases: dict[str, str] = {}
    families: dict[str, tuple[str, ...]] = {}
    for line in filter(None, _IRREGULAR_FORMS.split("\n")):
        base, *forms = line.split()
        bases.update(dict.fromkeys(forms, base))
        stemmed = _STEMMER.stemWord(base)
        families[stemmed] = (*families.get(stemmed, ()), *forms)
    return bases, families


_BASE, _FAMILY = _irregular()


# British spellings written the American way before stemming: "optimise" as "optimize",
# "analyse" as "analyze", "colour" as "color" (after at least two or three letters, so "rise",
# "wise" and "hour" stay as they are). Where the two spellings differ, a search key stops.
_ISE = re.compile(r"(?<=\w\w[iy])[sz](?=(?:e|ed|es|er|ers|ing|ation|ations|ational)$)")
_OUR = re.compile(r"(?<=\w\w\wo)u?(?=r(?:s|ed|ing|ite|ites|able|ful|less)?$)")


def _american(word: str) -> tuple[str, int]:
    """``word`` spelled the American way, and where the spellings may first differ (its length
    where they cannot)."""
    found = _ISE.search(word)
    if found is not None:
        return f"{word[: found.start()]}z{word[found.end() :]}", found.start()
    found = _OUR.search(word)
    if found is not None:
        return f"{word[: found.start()]}{word[found.end() :]}", found.start()
    return word, len(word)


def stem(word: str) -> str:
    """The stem of a lower-case ``word``: Snowball English's, of the base of an irregular form,
    spelled the American way. Cached for words of up to ``_MOST_CACHED`` characters: the words
    a search finds repeat, and a cache of long words would hold what requests sent."""
    return _cached_stem(word) if len(word) <= _MOST_CACHED else _stem(word)


_MOST_CACHED = 64  # no English word is longer


@lru_cache(maxsize=65536)
def _cached_stem(word: str) -> str:
    return _stem(word)


def _stem(word: str) -> str:
    american = _american(_BASE.get(word, word))[0]
    with _STEMMER_LOCK:
        stemmed: str = _STEMMER.stemWord(american)
    return stemmed


def search_keys(word: str) -> tuple[str, ...]:
    """Prefixes that every form of a lower-case ``word`` starts with, none a prefix of another:
    where to look for its forms in a text (a word found there counts when its :func:`stem` is
    ``stem(word)``). The stem less a last "e", "i" or "y" (the stemmer writes "hope" for
    "hoping" and "studi" for "study") and up to where British and American spellings may
    differ ("optimi" for "optimize": "optimise" too), the word itself where the stem is no
    prefix of it, and the irregular forms of the word ("taught" for "teach" and "teaches").
    Cached for words of up to ``_MOST_CACHED`` characters, like :func:`stem`."""
    return _cached_keys(word) if len(word) <= _MOST_CACHED else _keys(word)


@lru_cache(maxsize=4096)
def _cached_keys(word: str) -> tuple[str, ...]:
    return _keys(word)


def _keys(word: str) -> tuple[str, ...]:
    stemmed = stem(word)
    key = stemmed[:-1] if len(stemmed) > 2 and stemmed[-1] in "eiy" else stemmed
    key = key[: _american(word)[1]]
    keys = sorted({key, word, _BASE.get(word, word), *_FAMILY.get(stemmed, ())}, key=len)
    kept: list[str] = []
    for candidate in keys:
        if candidate and not any(candidate.startswith(k) for k in kept):
            kept.append(candidate)
    return tuple(kept)
