"""What a tokenizer does with one fixed corpus, written down so that another release can compare.

`made_tokenizer` gives a tokenizer class its tiny vocabulary (auditor.models.vocabularies), the
added tokens (one special, one plain) and a chat template; `observe` runs the corpus through a
tokenizer and records what a user's code reads back: ids, tokens, offsets (fast tokenizers),
decode with and without special tokens, the special tokens' ids, the padding side, and the chat
rendered by the template with its ids. `differences` compares two such records field by field, in
the order a user meets them: ids first, then decode, then the template.
"""

from __future__ import annotations

from dataclasses import dataclass

SPECIAL_ADDED = "<|sep|>"
PLAIN_ADDED = "<|plain|>"
# A template of the ChatML shape every chat model's resembles: roles, a system turn, and the
# generation prompt; rendered with the tokenizer's own `apply_chat_template`.
CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
                 " + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
                 "{% endif %}")
CHAT = ({"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hello  world\nWhat is 12+30?"},
        {"role": "assistant", "content": " 42 🤗"})
# What breaks between releases: spaces (leading, double, trailing), newlines and tabs, digits,
# non-Latin scripts, emoji and byte fallback, special tokens written in the text, a literal "<s>",
# a sentencepiece user-defined symbol (auditor.models.vocabularies.USER_SYMBOLS), and the added tokens.
CORPUS = (
    "Hello world",
    " Hello  world ",
    "Hello  world\n\nbye\tnow\n",
    "12345 3.14 2026-12-07",
    "Привет мир こんにちは 你好",
    "emoji 🤗🚀 café",
    f"Hello {SPECIAL_ADDED} world",
    "a literal <s> and </s> here",
    "see <url> and <url>here",
    f"plain{PLAIN_ADDED}token {PLAIN_ADDED} end",
)
SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


class NotATokenizer(Exception):
    """A class's from_pretrained returned something that is no tokenizer (its bug, not ours)."""


def made_tokenizer(cls, folder):
    """An instance of tokenizer class `cls` on a tiny vocabulary written into `folder` (its
    files, then `from_pretrained` on that folder: the class's own defaults), with the added
    tokens and the chat template."""
    from auditor.models.vocabularies import make_files

    files = make_files(cls, folder)
    _refuse_required(cls, set(files))
    tokenizer = cls.from_pretrained(str(folder)) if files else cls()
    if not hasattr(tokenizer, "add_special_tokens"):  # 4.57.6's XLMProphetNetTokenizer returns a bool
        raise NotATokenizer(f"{cls.__name__}.from_pretrained returned a {type(tokenizer).__name__}, not a tokenizer")
    tokenizer.add_special_tokens({"additional_special_tokens": [SPECIAL_ADDED]})
    tokenizer.add_tokens([PLAIN_ADDED])
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _refuse_required(cls, given: set[str]) -> None:
    """VocabularyError for a class that needs an argument besides the files made for it
    (MistralCommonBackend's `tokenizer_path`, a tekken.json; MarkupLM's `tags_dict`)."""
    import inspect

    from auditor.models.vocabularies import VocabularyError

    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return
    required = [p.name for p in parameters if p.default is inspect.Parameter.empty and p.name not in given
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if required:
        raise VocabularyError(f"{cls.__name__} needs {', '.join(required)} to be made, a file no tiny vocabulary "
                              "is made in")


def observe(tokenizer) -> dict:
    """The record of `tokenizer` on the corpus (JSON-ready); the chat rendered with the
    tokenizer's own template (a user's checkpoint's real one; CHAT_TEMPLATE on a made one)."""
    fast = bool(getattr(tokenizer, "is_fast", False))
    texts = []
    for text in CORPUS:
        entry = {"text": text}
        try:
            encoded = tokenizer(text, add_special_tokens=True, return_offsets_mapping=fast)
            ids = list(encoded["input_ids"])
            entry["ids"] = ids
            entry["tokens"] = [str(t) for t in tokenizer.convert_ids_to_tokens(ids)]
            if fast:
                entry["offsets"] = [list(pair) for pair in encoded["offset_mapping"]]
            entry["decode"] = tokenizer.decode(ids, skip_special_tokens=False)
            entry["decode_skip"] = tokenizer.decode(ids, skip_special_tokens=True)
        except Exception as exc:  # a text it cannot encode is what this release does with it
            entry["error"] = f"{type(exc).__name__}: {exc}"[:300]
        texts.append(entry)
    specials = {}
    for name in SPECIAL_NAMES:
        token = getattr(tokenizer, name, None)
        if token is not None:
            specials[name] = [str(token), _id(tokenizer, str(token))]
    specials["added"] = [[token, _id(tokenizer, token)] for token in (SPECIAL_ADDED, PLAIN_ADDED)]
    return {"class": type(tokenizer).__name__, "fast": fast, "texts": texts, "specials": specials,
            "padding_side": getattr(tokenizer, "padding_side", None), "template": _template(tokenizer)}


def _id(tokenizer, token: str):
    try:
        return tokenizer.convert_tokens_to_ids(token)
    except Exception:
        return None


def _template(tokenizer) -> dict:
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        return {"absent": True}
    try:
        rendered = tokenizer.apply_chat_template(list(CHAT), tokenize=False, add_generation_prompt=True)
        ids = tokenizer(rendered, add_special_tokens=False)["input_ids"]
        return {"rendered": rendered, "ids": list(ids)}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


@dataclass(frozen=True)
class TokenizerChange:
    """The first way two records differ, as a row shows it."""

    kind: str  # "ids", "decode" or "template"
    field: str  # what differs: "ids", "tokens", "offsets", "decode", "special-token ids", ...
    text: str  # the corpus text (or what else) it shows on
    before: str
    after: str
    count: int  # how many corpus texts differ in `field`'s kind

    def describe(self) -> str:
        if self.kind == "ids" and self.field in ("special-token ids", "padding side"):
            return f"{self.field} differ ({self.text}): {self.before} -> {self.after}"
        where = f"{self.count} of {len(CORPUS)} texts" if self.kind != "template" else "the chat"
        return f"{self.field} differ on {where}, e.g. {visible(self.text)}: {self.before} -> {self.after}"


def differences(before: dict, after: dict) -> list[TokenizerChange]:
    """Every kind in which `after` differs from `before` (ids, decode, template), each with its
    first example; empty when they agree."""
    found = []
    pairs = list(zip(before["texts"], after["texts"], strict=False))
    ids = [(b, a) for b, a in pairs if _encoded(b, a) != _encoded(a, b)]
    if ids:
        b, a = ids[0]
        field = ("error" if "error" in b or "error" in a else "ids" if b.get("ids") != a.get("ids")
                 else "tokens" if b.get("tokens") != a.get("tokens") else "offsets")
        found.append(TokenizerChange("ids", field, b["text"], _show(b, field), _show(a, field), len(ids)))
    elif before["specials"] != after["specials"]:
        name = next(k for k in sorted(set(before["specials"]) | set(after["specials"]))
                    if before["specials"].get(k) != after["specials"].get(k))
        found.append(TokenizerChange("ids", "special-token ids", name, str(before["specials"].get(name)),
                                str(after["specials"].get(name)), 1))
    elif before.get("padding_side") != after.get("padding_side"):
        found.append(TokenizerChange("ids", "padding side", "padding", str(before.get("padding_side")),
                                str(after.get("padding_side")), 1))
    decodes = [(b, a) for b, a in pairs if _decoded(b) != _decoded(a)]
    if decodes:
        b, a = decodes[0]
        field = "decode" if b.get("decode") != a.get("decode") else "decode (skip special tokens)"
        key = "decode" if field == "decode" else "decode_skip"
        found.append(TokenizerChange("decode", field, b["text"], visible(b.get(key)), visible(a.get(key)),
                                     len(decodes)))
    if _rendered(before["template"]) != _rendered(after["template"]):
        b, a = before["template"], after["template"]
        field = "rendered chat" if b.get("rendered") != a.get("rendered") else "chat ids"
        key = "rendered" if field == "rendered chat" else "ids"
        found.append(TokenizerChange("template", field, "the chat template",
                                repr(b.get(key, b.get("error", "absent"))), repr(a.get(key, a.get("error", "absent"))),
                                1))
    return found


def visible(text) -> str:
    """`text` quoted, its newlines and tabs escaped and each space shown as "␣": a double space
    collapses in every Markdown and HTML report, and is often the very difference."""
    return repr(text).replace(" ", "␣") if isinstance(text, str) else repr(text)


def _encoded(entry: dict, other: dict):
    """What is compared of an encoding: offsets only where both sides have them (fast tokenizers);
    of a text neither can encode, the exception's type (its words change between releases)."""
    offsets = entry.get("offsets") if "offsets" in other else None
    return entry.get("error", "").split(":")[0], entry.get("ids"), entry.get("tokens"), offsets


def _rendered(template: dict) -> dict:
    """A template's record as compared: of a chat it cannot render, the exception's type."""
    if "error" in template:
        return {"error": template["error"].split(":")[0]}
    return template


def _decoded(entry: dict):
    return entry.get("decode"), entry.get("decode_skip")


def _show(entry: dict, field: str) -> str:
    if field == "error":
        return entry.get("error", "encoded")
    if field == "ids":  # tokens read better than ids; the ids follow
        return f"{' '.join(entry.get('tokens', []))} {entry.get('ids')}"
    return str(entry.get(field))


def verdict(before: dict, after: dict, what: str, extras: dict):
    """The tokenizer check's outcome of `after` against `before`: same, or the first kind that
    differs (ids, decode, template) with its example, the others named."""
    from auditor.core.status import Status

    kinds = {"ids": Status.DIFFERENT_IDS, "decode": Status.DIFFERENT_DECODE, "template": Status.DIFFERENT_TEMPLATE}
    found = differences(before, after)
    if not found:
        return Status.SAME, f"{what}: the same ids, decode and chat template", dict(extras)
    first = found[0]
    extras = {**extras, "differs": [d.kind for d in found], "field": first.field, "text": first.text,
              "before": first.before, "after": first.after, "texts_differing": first.count}
    also = "".join(f"; {d.field} differ too" for d in found[1:])
    return kinds[first.kind], f"{what}: {first.describe()}{also}", extras
