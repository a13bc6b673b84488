"""The guard's structural signals: role lines, chat-template tokens, tags, tool and role JSON,
source-label look-alikes, links that carry data, invisible text and long encoded runs.

Each signal is a ``Hit`` (see ``stages.guard_phrases``) with a weight. Patterns that belong at
the start of a line are checked line by line; every other pattern has a literal start and only
bounded repetition, so a match attempt reads a bounded span and a scan is linear.
"""

from __future__ import annotations

import html
import re
import unicodedata

from ctxasm.lookalikes import LABEL_LOOKALIKES
from ctxasm.stages.guard_phrases import Hit, concept_events
from ctxasm.stages.guard_text import outside_ascii

__all__ = ["blob_hits", "hidden_hits", "line_hits", "link_hits", "token_hits"]

_TEMPLATE_TOKENS = (
    "<|im_start|>", "<|im_end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|endoftext|>",
    "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|begin_of_text|>",
    "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "<start_of_turn>", "<end_of_turn>",
)  # fmt: skip
_ANY_TEMPLATE_TOKEN = re.compile(r"<\|[a-z_]{2,32}\|>")
_TAG = re.compile(
    r"</?(?:documents?|document_content|system|instructions?|tool_call|tool_result"
    r"|function_calls?|im_start|assistant|user_query|thinking|invoke"
    # not a header C includes ("<sys/socket.h>")
    r"|sys(?!/[\w./+-]{0,200}\.h(?:pp)?>)"
    # not HTML's <source src=...> of a video or a picture
    r"|source(?![^<>\n]{0,200}?\bsrc(?:set)?\s{0,3}=))"
    r"(?:[\s/][^<>\n]{0,200})?>"
)
# A chat role written as a Markdown link to an anchor ("[system](#context)"), as some chat
# front ends serialise their turns.
_ROLE_LINK = re.compile(r"\[(?:system|assistant|developer|user)\]\(#")
# An agent's step in the ReAct format: the tool's input, and what the tool "returned".
_REACT_INPUT = re.compile(r"[\s>*\-]{0,8}action\s{0,2}input\s{0,3}:")
_REACT_OBSERVATION = re.compile(r"[\s>*\-]{0,8}observation\s{0,3}:")
_TOOL_JSON = re.compile(
    r"[\"'](?:tool_calls|function_call|tool_call|tool_use)[\"']\s{0,8}:|<function="
    r"|[\"']name[\"']\s{0,8}:\s{0,8}[\"'][\w.-]{1,64}[\"']\s{0,8},\s{0,8}"
    r"[\"'](?:arguments|parameters|input)[\"']\s{0,8}:"
)
_ROLE_JSON = re.compile(
    r"[\"']role[\"']\s{0,8}:\s{0,8}[\"'](system|developer|assistant|tool|function|user)[\"']"
)
# "[Source 2]" and its variants as a model would read them: plurals, lists and ranges of
# numbers ("[Sources 2, 3-4]", "[Source 1, and source: 2]", as long as the list is), other
# brackets, and (with _LABEL_FOLD) the look-alike letters and brackets of ctxasm.lookalikes,
# which citation checks read as a label too. Repetitions are possessive: linear.
_LABEL_WORD = r"(?:s[o0]urces?|src|quelle|fuente|источник)"
# A label's number: digits, or a Roman numeral ("[Source II]") after the word
_LABEL = re.compile(
    rf"[\[(<{{]\s*+{_LABEL_WORD}[\s_]*+[:#.\-_]?[\s_]*+(?:\d{{1,9}}|[ivxlc]{{1,8}}(?=\s*+[\])>}}]))"
    rf"(?:\s*+(?:[,;&\-]\s*+(?:and\s++)?|and\s++)(?:{_LABEL_WORD}\s*+[:#]?\s*+)?\d{{1,9}})*+"
    r"\s*+[.,;:]?\s*+[\])>}]"
)
# Matched on folded text: each look-alike as folding leaves it, too ("ϲ", the Greek lunate
# sigma, folds to "σ"; "Ε" to "ε"). NFKC and case folding are all of folding that changes these
# characters (the guard's fold would build its table at import).
_LABEL_LOOKALIKES_FOLDED = {
    **{
        folded: latin.lower()
        for c, latin in LABEL_LOOKALIKES.items()
        if len(folded := unicodedata.normalize("NFKC", c).casefold()) == 1
    },
    **{c: latin.lower() for c, latin in LABEL_LOOKALIKES.items()},
}
_LABEL_FOLD = str.maketrans(_LABEL_LOOKALIKES_FOLDED)
_LABEL_CHARS = frozenset(_LABEL_LOOKALIKES_FOLDED)
_LABEL_LETTERS = frozenset(c for c, latin in _LABEL_LOOKALIKES_FOLDED.items() if latin.isalpha())
_LABEL_WORDS = ("source", "s0urce", "src", "quelle", "fuente", "источник")
# A role name opening a line, as it is written or as Markdown shows it: in emphasis or code
# ("**System**:", "> `system`:"), or quoted ('"System":'), with the colon after the markup.
# The name may be labelled as a message, prompt or notice the way each language writes it:
# joined ("系统消息", "システムメッセージ", "Systemmeldung"), after it ("системное сообщение",
# "시스템 메시지") or before it ("mensagem do sistema"). Other labels ("系统要求", "Системные
# требования", "System requirements") are no role.
_ROLE_LINE = re.compile(
    r"[#>*_\s\-]{0,8}([`\"'“‘«]{0,3})\[?"
    r"(?:(?:mensagem|mensaje|message|nachricht|messaggio)\s{1,3}d(?:o|u|e|el|es|i|al)\s{1,3})?"
    r"(system|assistant|developer|human|user|ai|bot|model|sistema|systeme|система|системн[а-я]{2}"
    r"|系统|系統|システム|시스템)"
    r"(?:消息|提示|通知|訊息|讯息|提示词|メッセージ|プロンプト|메시지|프롬프트|meldung|nachricht"
    r"|hinweis|prompt)?\]?[*_`\"'”’»]{0,3}(?![^\W_])\s{0,3}"
    r"(?:note|message|prompt|update|сообщение|уведомление|промпт|подсказка|메시지|프롬프트|알림)?"
    r"\s{0,3}[:：]"
)
_HEADING = re.compile(r"\s{0,8}#{2,4}\s{0,4}(?:instruction|response|system)s?\s{0,4}:?\s{0,8}$")
_SENTENCE_ROLE = re.compile(r"[.!?]\s{1,4}(?:system|assistant|developer|human)\s{0,2}:(?!//)")
_MIDLINE_ROLE = re.compile(r"\b(?:system|assistant|developer)\s{0,2}:(?!//)")
_ROLE_LABEL = re.compile(r"\((?:system|assistant|developer|admin)\)\s{0,2}:")
_SHOUTED_ROLE = re.compile(r"\[(?:SYSTEM|ADMIN|DEVELOPER|ASSISTANT)\]|\bSYSTEM\s{0,2}:")
# Where a url that reaches another host starts: a scheme in any case, or none ("//host"); with
# slashes either way, as browsers read "\\" as "/" in http urls.
_URL_START = r"(?:https?:[/\\]{0,2}|[/\\]{2})"
# A markdown link or image destination, plain or in angle brackets (which may hold spaces).
_LINK_TARGET = re.compile(
    rf"\]\(\s{{0,8}}(?:<({_URL_START}[^>\n]{{0,2048}})|({_URL_START}[^)\s]{{0,2048}}))",
    re.IGNORECASE,
)
# A link reference definition, "[label]: url" at the start of a line: "![alt][label]",
# "![label][]" and "![label]" show its url as an image, anywhere in the text.
_REFERENCE = re.compile(
    r"^[ \t]{0,3}\[[^\]\n]{1,999}\]:[ \t]{0,8}\n?[ \t]{0,8}<?"
    rf"({_URL_START}[^\s>]{{0,2048}})",
    re.IGNORECASE | re.MULTILINE,
)
_SCHEME = re.compile(r"^(?:https?:)?[/\\]*", re.IGNORECASE)
# Tags a renderer fetches a url for by itself (a link, "<a href>", waits for a click), and the
# attributes that hold it.
_FETCHING_TAG = re.compile(
    r"<(?:img|image|iframe|frame|video|audio|source|track|embed|object|input)(?![a-z0-9-])"
)
_IMG_SRC = re.compile(
    r"\b(?:src|srcset|href|poster|data)\s{0,3}=\s{0,3}[\"']?"
    rf"({_URL_START}[^\"'\s>]{{0,2048}})"
)
_MAX_TAG = 4096  # characters of an <img> tag read for its src


def _attribute(*names: str) -> re.Pattern[str]:
    """An attribute among ``names`` whose value is an url to another host (its group 1)."""
    return re.compile(
        rf"\b(?:{'|'.join(names)})\s{{0,3}}=\s{{0,3}}[\"']?({_URL_START}[^\"'\s>]{{0,2048}})"
    )


# Other tags that make a renderer fetch an url by itself, and the attribute that holds it (only
# that one: "<a href>" waits for a click, its "ping" does not): a script, an SVG <use>, the
# "ping" of a link, the "background" of a page or a table, a meta refresh ("0;url=..."), a
# stylesheet or icon's "<link href>".
_BACKGROUND = _attribute("background")
_FETCHING_ATTRIBUTE = {
    "script": _attribute("src"),
    "link": _attribute("href"),
    "use": _attribute("href", "xlink:href"),
    "a": _attribute("ping"),
    "area": _attribute("ping"),
    "body": _BACKGROUND,
    "table": _BACKGROUND,
    "td": _BACKGROUND,
    "th": _BACKGROUND,
    "meta": re.compile(
        r"\bcontent\s{0,3}=\s{0,3}[\"']?\d{1,6}\s{0,3}[;,]\s{0,3}url\s{0,3}=\s{0,3}[\"']?"
        rf"({_URL_START}[^\"'\s>]{{0,2048}})"
    ),
}
_OTHER_FETCHING_TAG = re.compile(rf"<({'|'.join(_FETCHING_ATTRIBUTE)})(?![a-z0-9-])")
# CSS fetches what url() and @import name, in a style attribute or a <style> element: url()
# in a property's value (after its colon: "background: #fff url(...)"; code such as
# "x: URL = URL('http://...')" has an "=" between; a gradient before it may hold parentheses:
# "background: linear-gradient(#000, rgba(0,0,0,.5)), url(...)"), @import with or without
# url(). The url holds no parenthesis, and the value before it is read up to the next colon,
# for 128 characters at most: linear.
_CSS_URL = re.compile(
    r"(?::[^:;{}<>\"'=\n]{0,128}?(?<![\w.-])url\(\s{0,3}[\"']?|@import\s{1,3}(?:url\()?[\"']?)"
    rf"({_URL_START}[^\"'\s()<>]{{0,2048}})"
)
_DATA_SEGMENT = re.compile(r"[A-Za-z0-9+/=_%-]{32,}")
_HIDDEN = re.compile("[\u200b\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")
_HIDDEN_NOT_ZWSP = re.compile(
    "[\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]"
)
_SPACELESS = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9+/]+")

_WEAK_ROLES = frozenset(("user", "ai", "bot", "model"))  # common in transcripts
_QUOTES = frozenset("`\"'“‘«”’»")
# What makes the words after a role name a turn of a conversation rather than the value of a
# "key: value" line ("System: Ubuntu 22.04", "Developer: Acme Games", "Human: 46 chromosomes"):
# words that address the reader (second person, "please") ...
_ADDRESS_WORDS = frozenset(
    "you you're you'll you've you'd your yours yourself yourselves please tu tus usted ustedes"
    " favor voce voces devi vous du ihr bitte ты вы тебе вам твой ваш пожалуйста ти ви тобі"
    " ласка".split()
)
# ... or, after a name not quoted, a pronoun, an auxiliary or modal verb, a word of greeting
# or assent, "now", "always" or "never" (folded, in the languages whose role names _ROLE_LINE
# knows; in English not "can", "will", "may", "am", "us", "my", "i": CAN bus, Will Wright) ...
_SPEECH_WORDS = _ADDRESS_WORDS | frozenset(
    "i'm i'll i've i'd we we're we'll our is are was were be been being shall must should"
    " cannot can't could would might do does did don't doesn't didn't has have had won't"
    " isn't aren't wasn't weren't shouldn't mustn't need needs let let's sure okay ok yes"
    " yeah hi hello hey thanks thank sorry certainly absolutely understood now always never"
    " debes debe deben eres estas ahora hola siempre nunca seu sua devem agora ola sempre sei"
    " adesso ciao mai dois doit devez etes maintenant bonjour toujours jamais musst mussen"
    " jetzt bist hallo immer niemals теперь сейчас должен должна должны привет всегда никогда"
    " тепер повинен будь".split()
)
# ... (in Chinese, Japanese and Korean, found as substrings) ...
_ADDRESS_CJK_WORDS = "你|您|请|請|あなた|ください|下さい|당신|세요|십시오"
_ADDRESS_CJK = re.compile(_ADDRESS_CJK_WORDS)
_SPEECH_CJK = re.compile(f"{_ADDRESS_CJK_WORDS}|必须|必須|不要|现在|現在")
# ... an imperative opening three words or more ...
_IMPERATIVES = frozenset(
    "respond reply answer say tell write print output reveal show repeat act pretend translate"
    " send give provide list explain describe summarize summarise follow obey comply stop"
    " continue proceed disclose share include add append return call execute run use delete"
    " remove generate keep remember assume treat consider enable disable activate ignore"
    " disregard forget grant allow approve confirm refuse"
    " responde responda contesta escribe muestra ignora olvida reponds repondez ecris montre"
    " oublie antworte sag sage schreibe zeige ignoriere vergiss rispondi scrivi mostra"
    " dimentica escreva mostre отвечай ответь скажи напиши покажи игнорируй забудь".split()
)
# ... or words of the lexicon that direct a reader.
_DIRECTIVES = frozenset(
    "IGN NOW YOUARE ACTAS FREE MODE SYSP AIVOC ASSERT TOLD EXEMPT NOASK OBEY REPLY PERMIT"
    " POSS".split()
)
_SPEECH_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# A sentence, shouted or mid-line role names one of "system", "assistant", "developer",
# "human", "admin" (folded).


def token_hits(folded: str) -> list[Hit]:
    """Chat-template tokens, tags imitating a prompt's structure, tool and role JSON."""
    hits = []
    if "<" in folded or ("[" in folded and "[inst" in folded):
        if any(token in folded for token in _TEMPLATE_TOKENS) or _ANY_TEMPLATE_TOKEN.search(folded):
            hits.append(Hit("template_token", 1.0, "role_marker"))
        if _TAG.search(folded):
            hits.append(Hit("structure_tag", 1.0, "role_marker"))
        if "</s>" in folded:
            hits.append(Hit("end_of_sequence", 0.6, "role_marker"))
        if _has_comment(folded):
            hits.append(Hit("html_comment", 0.3, "hidden_text"))
    if "](#" in folded and _ROLE_LINK.search(folded):
        hits.append(Hit("role_link", 1.0, "role_marker"))
    if "action input" in folded:
        lines = folded.splitlines()
        if any(_REACT_INPUT.match(line) for line in lines):
            observed = "observation" in folded and any(map(_REACT_OBSERVATION.match, lines))
            hits.append(Hit("react_step", 1.0 if observed else 0.6, "tool_call"))
    # Each alternative of _TOOL_JSON contains one of these strings (cheaper to look for; a
    # character first, found at C speed, where the string needs it).
    quoted = '"' in folded or "'" in folded
    hinted = (
        ("_" in folded and ("tool_" in folded or "function_call" in folded))
        or ("<" in folded and "<function=" in folded)
        or (quoted and ('name"' in folded or "name'" in folded))
    )
    if hinted and _TOOL_JSON.search(folded):
        hits.append(Hit("tool_json", 1.0, "tool_call"))
    if quoted and ('role"' in folded or "role'" in folded):
        roles = {match.group(1) for match in _ROLE_JSON.finditer(folded)}
        if roles - {"user"}:
            hits.append(Hit("role_json", 1.0, "tool_call"))
        elif roles:
            hits.append(Hit("user_role_json", 0.6, "tool_call"))
    return hits


def _has_comment(folded: str) -> bool:
    """An HTML comment with words in it: hidden when the page is rendered, read by a model."""
    start = folded.find("<!--")
    while start != -1:
        end = folded.find("-->", start + 4)
        body = folded[start + 4 : end if end != -1 else len(folded)]
        if len(body.split()) >= 3:
            return True
        if end == -1:
            return False
        start = folded.find("<!--", end + 3)
    return False


def line_hits(text: str, folded: str) -> list[Hit]:
    """Role lines ("system:", "User:"), instruction headings and source-label look-alikes;
    ``text`` is the original (for shouted markers), ``folded`` as matched."""
    hits = []
    # The look-alikes are read (a slow translation) only where a label's word may be spelled
    # with them, or is there as it is.
    outside = frozenset() if folded.isascii() else outside_ascii(folded)
    worded = not _LABEL_LETTERS.isdisjoint(outside) or any(w in folded for w in _LABEL_WORDS)
    if worded and not _LABEL_CHARS.isdisjoint(outside):
        folded_label = folded.translate(_LABEL_FOLD)
    else:
        folded_label = folded
    if worded and _LABEL.search(folded_label):
        hits.append(Hit("source_label", 1.0, "role_marker"))
    if ":" in folded or "：" in folded:
        strongest = 0.0
        lines = folded.splitlines()
        for number, line in enumerate(lines):
            match = _ROLE_LINE.match(line)
            if match is not None:
                strongest = max(strongest, _role_weight(match, lines, number))
        if strongest:
            hits.append(Hit("role_line", strongest, "role_marker"))
            # the patterns below read what follows a role line's name, not the name again
            # ("System: Ubuntu 22.04" is one "key: value" line, no mid-line "system:" too)
            rest, rest_text = _after_role_names(folded), _after_role_names(text)
        else:
            rest, rest_text = folded, text
        if "):" in folded and _ROLE_LABEL.search(folded):
            hits.append(Hit("role_label", 0.5, "role_marker"))
        # A colon not opening "//", where the sentence and mid-line roles end (the colon of a
        # link's "://" is none), and a shouted role's name: each found at C speed, before the
        # pattern that needs it reads the text
        colon = rest.count(":") > rest.count("://")
        if not (
            "system" in rest
            or "assistant" in rest
            or "developer" in rest
            or "human" in rest
            or "admin" in rest
        ):
            pass  # none of the three patterns below can match
        elif colon and _SENTENCE_ROLE.search(rest):
            hits.append(Hit("sentence_role", 1.0, "role_marker"))
        elif _shouted(rest_text) and _SHOUTED_ROLE.search(rest_text):
            hits.append(Hit("shouted_role", 0.7, "role_marker"))
        elif colon and _MIDLINE_ROLE.search(rest):
            hits.append(Hit("midline_role", 0.4, "role_marker"))
    if "#" in folded and any(_HEADING.match(line) for line in folded.splitlines()):
        hits.append(Hit("instruction_heading", 1.0, "role_marker"))
    return hits


def _after_role_names(text: str) -> str:
    """``text`` with the role name that opens each of its role lines (up to the colon) left
    out."""
    lines = text.splitlines()
    for number, line in enumerate(lines):
        match = _ROLE_LINE.match(line.casefold())
        if match is not None:
            lines[number] = line[match.end() :]
    return "\n".join(lines)


def _role_weight(match: re.Match[str], lines: list[str], number: int) -> float:
    """The weight of the role line ``match`` (``lines[number]`` of folded text): 1.0 where what
    follows the role name (on its line, or on the next where its line ends with the colon)
    speaks as a turn of a conversation would, 0.3 where it reads as the value of a "key:
    value" line ("System: Ubuntu 22.04", "Developer: Acme Games"); 0.5 for the roles of
    transcripts ("User:"). A quoted or coded key ('"user":', "`system`:") whose value is
    quoted, bracketed or a number is data (JSON, an API's fields), no role line."""
    weak = match.group(2) in _WEAK_ROLES
    content = lines[number][match.end() :].strip()
    quoted = not _QUOTES.isdisjoint(match.group())
    if quoted and (weak or content[:1] in ('"', "'", "{", "[") or content[:1].isdigit()):
        return 0.0
    if weak:
        return 0.5
    if not content and number + 1 < len(lines):
        content = lines[number + 1].strip()
    # A quoted or coded name is also how documentation lists roles ("- `system`: Sets the
    # context ..."): there only words addressed to the reader make a turn.
    return 1.0 if _speaks(content, quoted) else 0.3


def _speaks(content: str, addressed: bool) -> bool:
    """Whether folded ``content`` (what a role name introduces) reads as something said to the
    reader rather than a value: see ``_SPEECH_WORDS`` (``_ADDRESS_WORDS`` where ``addressed``
    is asked for)."""
    if not content:
        return False
    words = _SPEECH_TOKEN.findall(content.replace("’", "'"))
    known, cjk = (_ADDRESS_WORDS, _ADDRESS_CJK) if addressed else (_SPEECH_WORDS, _SPEECH_CJK)
    if not known.isdisjoint(words) or cjk.search(content):
        return True
    if len(words) >= 3 and words[0] in _IMPERATIVES:
        return True
    return any(concept in _DIRECTIVES for _, concept in concept_events(content))


def _shouted(text: str) -> bool:
    """Whether ``text`` holds a name ``_SHOUTED_ROLE`` looks for."""
    return "SYSTEM" in text or "ADMIN" in text or "DEVELOPER" in text or "ASSISTANT" in text


def link_hits(text: str, folded: str) -> list[Hit]:
    """Markdown images and links (inline or by reference) and ``<img src>``, whose url carries
    data; ``text`` is the original (urls keep their case), ``folded`` as matched. Urls are read
    as a renderer shows them: character references decoded, backslash escapes dropped."""
    hits = []
    shown = _rendered(text) if "](" in text or "]:" in text or "<" in text else text
    if "](" in shown:
        previous = 0  # where the last link ended: an image's "![" since then is its own
        for match in _LINK_TARGET.finditer(shown):
            url = match.group(1) or match.group(2)
            # however long its alt text, which cannot cross a paragraph: linear, as each
            # stretch between two links is searched once
            since = max(previous, shown.rfind("\n\n", previous, match.start()))
            image = shown.rfind("![", since, match.start()) != -1
            previous = match.end()
            weight = _url_weight(url, image)
            if weight:
                hits.append(Hit("image_url" if image else "link_url", weight, "exfiltration_link"))
    if "]:" in shown:
        image = "![" in shown  # which definition an image names is not worked out
        for match in _REFERENCE.finditer(shown):
            weight = _url_weight(match.group(1), image)
            if weight:
                hits.append(Hit("image_url" if image else "link_url", weight, "exfiltration_link"))
    hits.extend(_img_hits(folded))
    hits.extend(_fetch_hits(folded))
    if shown is not text and "<" in shown:  # a src written with character references
        hits.extend(_img_hits(shown.lower()))
        hits.extend(_fetch_hits(shown.lower()))
    if "=" in text and "://" in text and _open_slot(text):
        hits.append(Hit("url_slot", _SLOT_WEIGHT, "exfiltration_link"))
    return hits


# An url in prose that ends in a parameter without its value ("https://x.example/c?d=") is a
# slot for something to be written after it: with words that say what (the user's data), it
# is the shape of a request to send that data away. Alone it is not enough to flag a text.
_SLOT_WEIGHT = 0.4
_SLOT_TRAILER = "\"'`)]>.,;:!"


def _open_slot(text: str) -> bool:
    """Whether a word of ``text`` is an url whose last parameter has no value (split at C
    speed; no pattern to backtrack)."""
    for word in text.split():
        if "://" in word and "?" in word:
            url = word.rstrip(_SLOT_TRAILER)
            if url.endswith("=") and not url.endswith("=="):  # not base64 padding
                return True
    return False


def _rendered(text: str) -> str:
    """``text`` with character references decoded and backslashes dropped, so a url reads as
    markdown and HTML show it (``https\\:\\/\\/``: escapes; ``https:\\\\``: a browser reads
    ``\\`` as ``/``). A bracket written as a reference or escaped then reads as a bracket
    too: this finds a few links a renderer would not show, never fewer. ``text`` itself where
    it has neither."""
    shown = text
    if "&" in shown:
        shown = html.unescape(shown)
    if "\\" in shown:  # every backslash, escape or not: "https\\:\\/\\/" and "https:\\\\" alike
        shown = shown.replace("\\", "")
    return text if shown == text else shown


def _img_hits(lowered: str) -> list[Hit]:
    """Tags in lower-cased text that fetch an url to another host by themselves (``<img src>``,
    ``<iframe src>``, ``<video poster>``...)."""
    hits: list[Hit] = []
    if "<" not in lowered:
        return hits
    for tag in _FETCHING_TAG.finditer(lowered):  # each read up to the next "<": linear in all
        start = tag.start()
        following = lowered.find("<", start + 1)
        end = following if following != -1 else len(lowered)
        src = _IMG_SRC.search(lowered, start, min(end, start + _MAX_TAG))
        if src is not None:
            weight = max(0.5, _url_weight(src.group(1), True))
            hits.append(Hit("img_src", weight, "exfiltration_link"))
    return hits


def _fetch_hits(lowered: str) -> list[Hit]:
    """Other HTML and CSS that fetches an url by itself (``_OTHER_FETCHING_TAG``,
    ``_CSS_URL``), in lower-cased text, where its url has a slot for data or its query names
    the data of a conversation. Unlike an image's url, a query alone does not count: scripts,
    stylesheets, fonts and backgrounds carry cache-busters and ids ("?ver=3.7.1",
    "?family=Roboto", "?id=G-4K2M7P") on nearly every page."""
    hits: list[Hit] = []
    urls: list[str] = []
    if "url(" in lowered or "@import" in lowered:
        urls.extend(_CSS_URL.findall(lowered))
    if "<" in lowered:
        for tag in _OTHER_FETCHING_TAG.finditer(lowered):  # each read up to the next "<"
            start = tag.start()
            following = lowered.find("<", start + 1)
            end = min(following if following != -1 else len(lowered), start + _MAX_TAG)
            found = _FETCHING_ATTRIBUTE[tag.group(1)].search(lowered, start, end)
            if found is not None:
                urls.append(found.group(1))
    for url in urls:
        if _placeholder(url) or _names_data(url):
            hits.append(Hit("fetched_url", 1.0, "exfiltration_link"))
    return hits


# What a query names when it is to carry a conversation away: its values ("?d=SECRET",
# "?q=chat") and its parameters' names ("?history=", "?user_message="), as whole words. Not
# "email" as a value ("utm_medium=email" is on every newsletter link) nor "key" or "token" as
# a name (the site's own public key: "maps/api/js?key=AIza...").
_DATA_VALUES = frozenset(
    "data secret secrets history prompt prompts conversation conversations chat chats"
    " password passwords passwd pwd key keys token tokens credentials creds session sessions"
    " cookie cookies memory memories context transcript transcripts message messages msg notes"
    " summary".split()
)
_DATA_NAMES = (_DATA_VALUES - {"key", "keys", "token", "tokens"}) | {"email", "user", "userdata"}
_QUERY_WORD = re.compile(r"[a-z0-9]+")


def _placeholder(url: str) -> bool:
    """Whether ``url`` holds a slot for the model to fill in: ``{data}``, ``[[data]]``,
    ``<data>``, ``$VAR``, ``%s`` (as written or percent-escaped)."""
    lowered = url.lower()
    return (
        "{" in url
        or "$" in url
        or "[" in url
        or "<" in url
        or "%s" in url
        or "%7b" in lowered
        or "%3c" in lowered
    )


def _names_data(url: str) -> bool:
    """Whether the query of ``url`` names the data of a conversation (``_DATA_VALUES``,
    ``_DATA_NAMES``): a word of a value ("?d=SECRET", "?c=user_message") or of a parameter's
    name ("?history=1"), split at every character other than a letter or digit (so a random
    id or key is one word, never "data")."""
    query = url.partition("?")[2].partition("#")[0].lower()
    for pair in re.split(r"[&;]", query) if query else ():
        name, _, value = pair.partition("=")
        if not _DATA_NAMES.isdisjoint(_QUERY_WORD.findall(name)):
            return True
        if not _DATA_VALUES.isdisjoint(_QUERY_WORD.findall(value)):
            return True
    return False


def _url_weight(url: str, image: bool) -> float:
    if _placeholder(url):
        return 1.0  # a placeholder for the model to fill in
    if not image:
        return 0.0
    path, _, query = url.partition("?")
    if (query and "=" in query) or (";" in path and "=" in path.partition(";")[2]):
        return 1.0  # a query, or matrix parameters ("/p.png;d=..."), sent as they are
    for segment in _DATA_SEGMENT.findall(_SCHEME.sub("", path, count=1).partition("/")[2]):
        mixed = segment.lower() != segment and segment.upper() != segment
        return 1.0 if mixed and any(c.isdigit() for c in segment) else 0.6  # data in the path
    return 0.0


def hidden_hits(text: str) -> list[Hit]:
    """Invisible characters that hide text from a reader but not from a model; the zero-width
    space is exempt in text written in a script that separates words with it (Thai, Lao,
    Khmer, Myanmar)."""
    if text.isascii() or not any(map(_HIDDEN.match, outside_ascii(text))):
        return []
    if _HIDDEN_NOT_ZWSP.search(text) or ("\u200b" in text and not _SPACELESS.search(text)):
        return [Hit("hidden_characters", 1.0, "hidden_text")]
    return []


def blob_hits(text: str, min_blob_chars: int, runs: list[str] | None = None) -> list[Hit]:
    """A base64 or hex run of ``min_blob_chars`` or more (hex is a subset of base64);
    ``runs`` is ``guard_text.encoded_runs(text)`` when known (a run has no spaces, so it lies
    in one of them)."""
    if len(text) < min_blob_chars or runs == []:
        return []
    if runs is not None:
        text = " ".join(run for run in runs if len(run) >= min_blob_chars)
    # Runs are found whole (no bounded repeat that would rescan), then measured.
    if max(map(len, _ALNUM_RUN.findall(text)), default=0) >= min_blob_chars:
        return [Hit("long_encoded_run", 1.0, "encoded_blob")]
    return []
