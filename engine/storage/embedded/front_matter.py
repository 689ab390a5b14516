"""A fact file's YAML front matter, written without PyYAML's representer where that is safe.

PyYAML's representer is pure Python and cost an import about 90 microseconds a fact, the
largest part of writing 100k files. The front matter is a small tree of mappings, lists,
strings, numbers, booleans and nulls, so `emit` writes it directly in the block layout
yaml.dump uses: a string that reads back as itself unquoted stays plain, any other is
double-quoted with JSON's escapes (a subset of YAML's). Whatever it is not sure of (a float
YAML would read otherwise, a list of mappings, a character YAML's reader refuses or a line
break it would fold) makes `emit` return None, and the caller uses yaml.dump. Either way
the text reads back to the same values (tests/engine/test_front_matter.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

_STR = "tag:yaml.org,2002:str"
_RESOLVER: Any = Resolver()  # yaml ships no types for it
# Characters that may stand unquoted: no indicator, comment, quote or flow character.
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .,/@+=()-]*[A-Za-z0-9_.)/]|[A-Za-z0-9_]")
# What YAML's reader refuses, and the line breaks a quoted scalar would fold to a space.
_UNSAFE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\x85\u2028\u2029]"
)
_SIMPLE_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+")
# Lowercase hex with a letter in it (content hashes), and the engine's times.
_HEX_WORD = re.compile(r"[0-9a-f]*[a-f][0-9a-f]*")
_ISO_MILLIS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
# Strings already written, and how: most of a fact's front matter (the keys, the curation
# defaults, a bulk write's caller, session and scopes) is the same from one fact to the next.
# Bounded, so that a long-running process does not keep every text it ever wrote.
_WRITTEN: dict[str, str] = {}
_WRITTEN_LIMIT = 4096


class NotSimple(Exception):
    """The tree holds something `emit` leaves to yaml.dump."""


def emit(front: dict[str, Any]) -> str | None:
    """The block-style YAML of `front` (yaml.dump's layout), or None to use yaml.dump."""
    lines: list[str] = []
    try:
        _mapping(front, "", lines)
    except NotSimple:
        return None
    return "\n".join(lines) + "\n"


def _mapping(value: dict[str, Any], indent: str, lines: list[str]) -> None:
    # A fact's front matter is ~30 scalars, most of them strings written before: those take
    # one lookup here, without _scalar's checks (a third of the time to write 100k files).
    written = _WRITTEN
    for key, item in value.items():
        name = written.get(key) if type(key) is str else None
        if name is None:
            if not isinstance(key, str):
                raise NotSimple
            name = scalar(key)
        if type(item) is str:
            lines.append(f"{indent}{name}: {written.get(item) or scalar(item)}")
        elif isinstance(item, dict) and item:
            lines.append(f"{indent}{name}:")
            _mapping(item, indent + "  ", lines)
        elif isinstance(item, list) and item:
            lines.append(f"{indent}{name}:")
            for element in item:
                if isinstance(element, dict | list):
                    raise NotSimple
                lines.append(f"{indent}- {scalar(element)}")
        else:
            lines.append(f"{indent}{name}: {scalar(item)}")


def block_list(name: str, items: list[Any], indent: str) -> str:
    """`name: items` as emit writes it inside a mapping at `indent`, lines ended."""
    if not items:
        return f"{indent}{name}: []\n"
    if any(isinstance(item, dict | list) for item in items):
        raise NotSimple
    return f"{indent}{name}:\n" + "".join(f"{indent}- {scalar(item)}\n" for item in items)


def scalar(value: Any) -> str:
    """One scalar as emit writes it; NotSimple where it leaves the value to yaml.dump."""
    if type(value) is str:
        written = _WRITTEN.get(value)
        if written is None:
            written = _string(value)
            if len(_WRITTEN) < _WRITTEN_LIMIT:
                _WRITTEN[value] = written
        return written
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, dict | list):
        if value:
            raise NotSimple
        return "{}" if isinstance(value, dict) else "[]"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if not _SIMPLE_FLOAT.fullmatch(text):
            raise NotSimple  # 1e+20, inf, nan: YAML 1.1 reads those differently
        return text
    if not isinstance(value, str):
        raise NotSimple
    return _string(value)


def _string(value: str) -> str:
    # The new strings of every fact, decided without the resolver (a third of their cost).
    if _HEX_WORD.fullmatch(value) and not value.startswith("0b"):
        return value  # a digest or id: YAML reads a number only from digits, 0b, 0x, or a dot
    if _ISO_MILLIS.fullmatch(value):
        return f'"{value}"'  # a time of the engine's: YAML would read a timestamp unquoted
    if _UNSAFE.search(value):
        raise NotSimple
    if _PLAIN.fullmatch(value) and _reads_as_string(value):
        return value
    return json.dumps(value, ensure_ascii=False)


def _reads_as_string(value: str) -> bool:
    """Unquoted, `value` would be read back as this string (not a bool, number, date...)."""
    return bool(_RESOLVER.resolve(ScalarNode, value, (True, False)) == _STR)
