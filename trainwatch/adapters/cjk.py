"""Chinese metric names in English words: `训练损失: 32.13` is `train loss: 32.13` to every reader.

Home-made loops written in Chinese print their metrics under Chinese names, often with full-width
punctuation (a full-width colon or comma between the pairs). The readers and the name tables know English
words, so a line is given to them translated: full-width punctuation becomes ASCII, and each run of Chinese
characters that the word table (data/cjk_words.yaml) covers whole becomes its English words. A run it does
not cover stays as it is, so an unknown name keeps its own spelling and is never half translated.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from trainwatch import yamltext

HAN = re.compile(r"[\u4e00-\u9fff]+")
# full-width colon, comma, semicolon, parentheses, bar and equals sign, as ASCII
FULL_WIDTH = str.maketrans({"\uff1a": ":", "\uff0c": ", ", "\uff1b": "; ", "\uff08": "(", "\uff09": ")", "\uff5c": "|",
                            "\uff1d": "="})
HAN_CHARS = "\u4e00-\u9fff"  # the key characters a pair's name may start with (keyvalue.PAIR)


@lru_cache(maxsize=1)
def _words() -> tuple[dict[str, str], int]:
    text = resources.files("trainwatch").joinpath("data/cjk_words.yaml").read_text(encoding="utf-8")
    table = {str(k): str(v or "") for k, v in yamltext.load(text).items()}
    return table, max(map(len, table))


def _run(chars: str) -> str | None:
    """The English words of a run of Chinese characters, longest table word first; None when a part is unknown."""
    table, longest = _words()
    out: list[str] = []
    i = 0
    while i < len(chars):
        for n in range(min(longest, len(chars) - i), 0, -1):
            word = table.get(chars[i:i + n])
            if word is not None:
                if word:
                    out.append(word)
                i += n
                break
        else:
            return None
    return " ".join(out)


def _replace(m: re.Match[str]) -> str:
    words = _run(m.group())
    if words is None:
        return m.group()
    text, start, end = m.string, m.start(), m.end()
    before = " " if start > 0 and text[start - 1].isalnum() else ""
    after = " " if end < len(text) and text[end].isalnum() else ""
    return before + words + after


def translate(text: str) -> str:
    """`Epoch 1 | 训练损失: 32.13` as `Epoch 1 | train loss: 32.13`; ASCII text is returned as it is."""
    if text.isascii():
        return text
    text = text.translate(FULL_WIDTH)
    return HAN.sub(_replace, text) if HAN.search(text) else text
