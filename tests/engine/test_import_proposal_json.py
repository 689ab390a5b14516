"""An import's proposals carry their candidates' JSON text made from each fact's text made once
(engine/interop/import_proposals.py): that text is exactly what json.dumps writes for the
candidate dicts, which is what the review queue reads back."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.interop.import_proposals import encoded_candidates

TEXTS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(['say "hi"', "back\\slash", "tab\there", "é café 🙂", "line\nbreak", ""]),
)
FACTS = st.fixed_dictionaries(
    {
        "uri": TEXTS,
        "recordId": st.from_regex(r"\Amem-[0-9a-f]{16}\Z"),
        "text": TEXTS,
        "scopes": st.lists(TEXTS, max_size=3),
        "supersedes": st.lists(TEXTS, max_size=2),
    },
    optional={"source": TEXTS},
)
SCORES = st.one_of(st.floats(min_value=0, max_value=1), st.sampled_from([1.0, 0.86, 0.9381, 1, 0]))


@settings(max_examples=200)
@given(st.lists(st.tuples(FACTS, SCORES, st.sampled_from(["weak", "likely", "exact"])), max_size=8))
def test_the_candidates_text_is_what_json_dumps_writes(
    chosen: list[tuple[dict[str, Any], float, str]],
) -> None:
    entries = [(fact, json.dumps(fact)[:-1], score, tier) for fact, score, tier in chosen]
    encoded = encoded_candidates(entries)
    dicts = [{**fact, "similarity": score, "match": tier} for fact, score, tier in chosen]
    assert encoded.encoded == json.dumps(dicts)
    assert encoded.value() == dicts
