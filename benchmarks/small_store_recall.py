"""Recall on small stores and on large ones: does a paraphrased question find its fact when the
store holds a handful of facts, and how many facts that are not about it come back?

Small stores (one home each, so BM25 and word idf are the store's own): a LoCoMo question's
gold observation plus N - 1 other observations of the same conversation that are not gold for
it, N in 1 / 5 / 20 / 100. Each store answers
- the question: hit@k (a gold fact among the first k returned), the empty-result rate, and
  false matches (returned facts that are not gold; the distractors are other facts about the
  same two speakers, so this counts some related facts as false);
- an unrelated question (one of another conversation, other people): every fact it returns
  is a false match.
"No shared word" rows keep the questions whose gold fact shares no stemmed content word with
them: only there does the semantic match floor decide whether the fact is found at all.
LoCoMo questions nearly always name a speaker, who is in most facts, so each question is also
asked as a person types a search: its content words without the speakers' names ("goals
basketball career" for "What are John's goals with regards to his basketball career?").

Large stores: each conversation's full observation store (170-324 facts) with its questions
(R@10, matches per question) and another conversation's questions (matches); and one store of
10,000 MSC persona facts beside the five conversations' observations (about 11,200 facts),
where each question looks in its conversation's scope and the MSC scope: R@10, and MSC facts
among the first 10 (a flood of loosely related facts).

    python benchmarks/small_store_recall.py [--per-size N] [--msc N] [--name REPORT]
        [--floors COSINE,WORDS]

--floors overrides engine/retrieval/ranking.py's SEMANTIC_MATCH_FLOOR and WORD_MATCH_FLOOR
for the run (0.30,2 is the rule before 2026-12-01: a cosine of 0.30, no word coverage).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, machine, write_report
from benchmarks.locomo_recall import questions, units
from engine.facade.service import MemoryService, open_service
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval import ranking
from engine.retrieval.embeddings import EmbedderStatus, load_embedder
from engine.retrieval.lexical import content_words, tokenize

SIZES = (1, 5, 20, 100)
KS = (1, 5, 10)
MAX_FACTS = 10  # what a recall returns at most here (the default is 8)
SEED = 17
KINDS = ("question", "keywords")


def remember_all(memory: MemoryService, items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Remember (text, scope) pairs; record id -> text."""
    ids = {}
    for text, scope in items:
        result = memory.remember(
            RememberRequest(text=text, scopes=[scope], caller="bench", session="s", decision="add")
        )
        ids[result["record"]["recordId"]] = text
    return ids


def recall(memory: MemoryService, query: str, scopes: list[str]) -> tuple[list[str], int]:
    """The returned facts' texts, and every match (returned + omitted)."""
    result = memory.recall(
        RecallRequest(
            query=query,
            scopes=scopes,
            caller="bench",
            session="s",
            max_facts=MAX_FACTS,
            max_tokens=65_536,
        )
    )
    texts = [fact["text"] for fact in result["facts"]]
    return texts, len(texts) + int(result["budget"]["omitted"])


def cases(conversations: list[dict]) -> list[dict]:
    """Per question with a gold observation: its gold texts, the other observations of its
    conversation, and an unrelated question from another conversation."""
    rng = random.Random(SEED)
    out = []
    for index, conversation in enumerate(conversations):
        names = {conversation["conversation"][k].lower() for k in ("speaker_a", "speaker_b")}
        observations = units(conversation, "observations")
        others = [q for j, c in enumerate(conversations) if j != index for q, _ in questions(c)]
        for question, evidence in questions(conversation):
            gold = sorted({text for text, dia in observations if dia in evidence})
            if not gold:
                continue
            rest = sorted({text for text, _ in observations} - set(gold))
            out.append(
                {
                    "question": question,
                    "keywords": keywords(question, names) or question,
                    "gold": rng.choice(gold),
                    "rest": rest,
                    "unrelated": rng.choice(others),
                }
            )
    return out


def keywords(question: str, names: set[str]) -> str:
    """The question's content words without the speakers' names."""
    words = [w for w in content_words(question) if w.removesuffix("'s") not in names]
    return " ".join(words)


def shares_word(question: str, fact: str) -> bool:
    return bool(set(tokenize(question)) & set(tokenize(fact)))


def small_stores(status: EmbedderStatus, all_cases: list[dict], per_size: int) -> list[list]:
    rng = random.Random(SEED)
    rows = []
    for size in SIZES:
        chosen = rng.sample(all_cases, min(per_size, len(all_cases)))
        stats: dict[str, list[float]] = {}

        def add(key: str, value: float, stats: dict[str, list[float]] = stats) -> None:
            stats.setdefault(key, []).append(value)

        for case in chosen:
            facts = [case["gold"], *rng.sample(case["rest"], min(size - 1, len(case["rest"])))]
            with tempfile.TemporaryDirectory() as home:
                memory = open_service(home=home, embedder_status=status)
                remember_all(memory, ((text, "s") for text in facts))
                answers = {kind: recall(memory, case[kind], ["s"])[0] for kind in KINDS}
                unrelated, _ = recall(memory, case["unrelated"], ["s"])
                memory.close()
            for kind in KINDS:
                returned = answers[kind]
                subsets = [kind]
                if not shares_word(case[kind], case["gold"]):
                    subsets.append(f"{kind}, no shared word")
                for subset in subsets:
                    for k in KS:
                        add(f"{subset} hit@{k}", float(case["gold"] in returned[:k]))
                    add(f"{subset} empty", float(not returned))
                    add(f"{subset} false", float(sum(t != case["gold"] for t in returned)))
            add("unrelated false", float(len(unrelated)))
            add("unrelated any", float(bool(unrelated)))
        for subset in (f"{kind}{tail}" for kind in KINDS for tail in ("", ", no shared word")):
            n = len(stats.get(f"{subset} empty", []))
            if not n:
                continue
            rows.append(
                [f"small, {size} fact{'s' if size > 1 else ''}", subset, n]
                + [f"{statistics.mean(stats[f'{subset} hit@{k}']):.3f}" for k in KS]
                + [
                    f"{statistics.mean(stats[f'{subset} empty']):.3f}",
                    f"{statistics.mean(stats[f'{subset} false']):.2f}",
                    f"{statistics.mean(stats['unrelated any']):.3f}",
                    f"{statistics.mean(stats['unrelated false']):.2f}",
                ]
            )
            print(rows[-1], file=sys.stderr)
    return rows


def asked(conversation: dict) -> dict[str, list[tuple[str, set[str]]]]:
    """The conversation's questions with their evidence, as asked and as keywords."""
    names = {conversation["conversation"][k].lower() for k in ("speaker_a", "speaker_b")}
    pairs = questions(conversation)
    return {
        "question": pairs,
        "keywords": [(keywords(q, names) or q, evidence) for q, evidence in pairs],
    }


def mean(values: list[float]) -> float:
    return statistics.mean(values) if values else 0.0


def full_conversations(status: EmbedderStatus, conversations: list[dict]) -> list[list]:
    """Each conversation's whole observation store: its own questions and another's."""
    stats: dict[str, list[float]] = {}
    for index, conversation in enumerate(conversations):
        mine = asked(conversation)
        other = asked(conversations[(index + 1) % len(conversations)])
        with tempfile.TemporaryDirectory() as home:
            memory = open_service(home=home, embedder_status=status)
            dia_of: dict[str, set[str]] = {}
            for text, dia in units(conversation, "observations"):
                dia_of.setdefault(text, set()).add(dia)
            remember_all(memory, ((text, "s") for text in dia_of))
            for kind in KINDS:
                for query, evidence in mine[kind]:
                    returned, matches = recall(memory, query, ["s"])
                    found = set().union(*(dia_of[t] for t in returned)) if returned else set()
                    stats.setdefault(f"{kind} recall", []).append(
                        len(found & evidence) / len(evidence)
                    )
                    stats.setdefault(f"{kind} matches", []).append(matches)
                for query, _ in other[kind]:
                    stats.setdefault(f"{kind} unrelated", []).append(
                        recall(memory, query, ["s"])[1]
                    )
            memory.close()
    return [
        [
            "large, each conversation's observations (170-324 facts)",
            kind,
            len(stats[f"{kind} recall"]),
            f"R@10 {mean(stats[f'{kind} recall']):.3f}",
            f"matches / question {mean(stats[f'{kind} matches']):.1f}",
            f"matches / unrelated question {mean(stats[f'{kind} unrelated']):.1f}",
        ]
        for kind in KINDS
    ]


def msc_store(status: EmbedderStatus, conversations: list[dict], msc: int) -> list[list]:
    """10k MSC persona facts beside all the conversations' observations, in one store."""
    personas = json.loads((DATA / "msc" / "msc_personas_all.json").read_text())
    pool = sorted(
        {fact for split in personas.values() for d in split for k, v in d.items()
         if k.startswith("Speaker") for fact in v}
    )  # fmt: skip
    filler = random.Random(SEED).sample(pool, msc)
    stats: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as home:
        memory = open_service(home=home, embedder_status=status)
        start = time.perf_counter()
        msc_texts = set(remember_all(memory, ((text, "msc") for text in filler)).values())
        dia_of: list[dict[str, set[str]]] = []
        for index, conversation in enumerate(conversations):
            mine: dict[str, set[str]] = {}
            for text, dia in units(conversation, "observations"):
                mine.setdefault(text, set()).add(dia)
            remember_all(memory, ((text, f"conv{index}") for text in mine))
            dia_of.append(mine)
        print(f"msc store built in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        for index, conversation in enumerate(conversations):
            for kind, pairs in asked(conversation).items():
                for query, evidence in pairs:
                    returned, count = recall(memory, query, [f"conv{index}", "msc"])
                    found = set().union(*(dia_of[index].get(t, set()) for t in returned))
                    stats.setdefault(f"{kind} recall", []).append(
                        len(found & evidence) / len(evidence)
                    )
                    stats.setdefault(f"{kind} flood", []).append(
                        sum(t in msc_texts for t in returned)
                    )
                    stats.setdefault(f"{kind} matches", []).append(count)
        memory.close()
    return [
        [
            f"large, {msc:,} MSC facts + all observations",
            kind,
            len(stats[f"{kind} recall"]),
            f"R@10 {mean(stats[f'{kind} recall']):.3f}",
            f"MSC facts in top 10 {mean(stats[f'{kind} flood']):.2f}",
            f"matches / question {mean(stats[f'{kind} matches']):.1f}",
        ]
        for kind in KINDS
    ]


def example(status: EmbedderStatus) -> list[list]:
    """The README's OB1 example, one data point among the others."""
    rows = []
    with tempfile.TemporaryDirectory() as home:
        memory = open_service(home=home, embedder_status=status)
        remember_all(memory, [("Alice prefers green tea", "user:alice")])
        for query in ("drinks", "What does Alice drink?", "Where does Alice live?"):
            returned, _ = recall(memory, query, ["user:alice"])
            rows.append([f'README example, query "{query}"', "", 1, "returned", returned or "[]"])
        memory.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--per-size", type=int, default=300, help="questions per store size")
    parser.add_argument("--msc", type=int, default=10_000, help="MSC facts in the large store")
    parser.add_argument("--name", default="small_store_recall", help="the report's file name")
    parser.add_argument("--floors", help="COSINE,WORDS: the match floors for this run")
    args = parser.parse_args()
    if args.floors:
        cosine, words = (float(value) for value in args.floors.split(","))
        ranking.SEMANTIC_MATCH_FLOOR, ranking.WORD_MATCH_FLOOR = cosine, words
    conversations = json.loads(Path(args.data).read_text())
    status = load_embedder()
    if status.embedder is None:
        sys.exit(f"the bundled model did not load: {status.unavailable_reason}")
    all_cases = cases(conversations)
    rows = example(status) + small_stores(status, all_cases, args.per_size)
    rows += full_conversations(status, conversations)
    if args.msc:
        rows += msc_store(status, conversations, args.msc)
    header = ["store", "questions", "n"] + [f"hit@{k}" for k in KS]
    header += ["empty", "false / question", "unrelated: any", "unrelated: false"]
    write_report(
        args.name,
        header,
        rows,
        notes=[
            f"data: {args.data} (observations), {DATA / 'msc' / 'msc_personas_all.json'}",
            f"bundled model, in-memory backend; recall maxFacts {MAX_FACTS}, seed {SEED}; "
            f"match floors: cosine {ranking.SEMANTIC_MATCH_FLOOR}, "
            f"word coverage {ranking.WORD_MATCH_FLOOR}",
            "small stores: a gold observation + N - 1 non-gold observations of the same "
            "conversation, one home each; hit@k: the gold among the first k returned; "
            "false: returned facts that are not gold; unrelated: a question of another "
            "conversation on the same store (any: share of them returning anything)",
            "large rows: the cells name their measure",
            f"machine: {machine()}",
        ],
    )


if __name__ == "__main__":
    main()
