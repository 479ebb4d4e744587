#!/usr/bin/env python3
"""Zero-shot retrieval with sentence-transformers, scored as toolret's eval scores it.

Usage: st_zeroshot.py MODEL DATA_DIR [SPLIT] [RUN_FILE]

Embeds every tool text (encode_document) and every query of the split (encode_query) of a
BEIR-layout dataset, ranks all tools by cosine (dot of normalised embeddings, or the model's
similarity function), and prints one JSON object with recall@K, ndcg@K and comp@K (percent,
K in 1,3,5,10) averaged over judged queries, as `go run ./cmd/toolret eval -json` prints them. With
RUN_FILE, also writes the top-100 rankings as a TREC run file (for eval -compare).
"""
import json
import math
import os
import sys

import numpy as np
from sentence_transformers import SentenceTransformer


def load_jsonl(p):
    with open(p, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_beir(ddir, split):
    """Tools (list of corpus records), query texts by id, and the judged query ids of a split
    with their relevant tool ids, in qrels order."""
    tools = load_jsonl(os.path.join(ddir, "corpus.jsonl"))
    queries = {str(q["_id"]): q["text"] for q in load_jsonl(os.path.join(ddir, "queries.jsonl"))}
    rel = {}
    order = []
    with open(os.path.join(ddir, "qrels", split + ".tsv"), encoding="utf-8") as f:
        for n, line in enumerate(f):
            parts = line.split()
            if len(parts) < 3 or (n == 0 and not parts[2].replace(".", "").lstrip("-").isdigit()):
                continue  # header
            qid, tid, score = parts[0], parts[1], float(parts[2])
            if qid not in rel:
                rel[qid] = set()
                order.append(qid)
            if score > 0:
                rel[qid].add(tid)
    return tools, queries, [q for q in order if rel[q]], rel


def evaluate(m, ddir, split="test", run_file=None, tag="st"):
    """Ranks every tool for every judged query of split with model m; returns the metrics
    (percent) and writes the top-100 as a TREC run file when run_file is given."""
    tools, queries, qids, rel = load_beir(ddir, split)
    tids = [str(t["_id"]) for t in tools]
    te = m.encode_document([t["text"] for t in tools], batch_size=32, convert_to_numpy=True)
    qe = m.encode_query([queries[q] for q in qids], batch_size=64, convert_to_numpy=True)
    scores = np.asarray(m.similarity(qe, te))
    cut = (1, 3, 5, 10)
    sums = {f"{m_}@{k}": 0.0 for m_ in ("recall", "ndcg", "comp") for k in cut}
    lines = []
    for i, q in enumerate(qids):
        top = np.argsort(-scores[i], kind="stable")[:100]
        r = rel[q]
        for k in cut:
            hits = [tids[j] in r for j in top[:k]]
            sums[f"recall@{k}"] += sum(hits) / len(r)
            dcg = sum(1 / math.log2(p + 2) for p, h in enumerate(hits) if h)
            idcg = sum(1 / math.log2(p + 2) for p in range(min(len(r), k)))
            sums[f"ndcg@{k}"] += dcg / idcg
            sums[f"comp@{k}"] += 1.0 if sum(hits) == len(r) else 0.0
        for rank, j in enumerate(top):
            lines.append(f"{q} Q0 {tids[j]} {rank + 1} {scores[i][j]:.6f} {tag}\n")
    out = {k: round(100 * v / len(qids), 4) for k, v in sums.items()}
    out["queries"] = len(qids)
    if run_file:
        with open(run_file + ".tmp", "w") as f:
            f.writelines(lines)
        os.replace(run_file + ".tmp", run_file)
    return out


def load(ref, device="cpu"):
    """SentenceTransformer(ref), read from the local hub cache first: on a machine with no hub
    (models put there by `make models`) the hub client would otherwise retry every optional
    file for minutes before using the cache. Falls back to the hub when the cache lacks it."""
    if os.environ.get("HF_HUB_OFFLINE", "") in ("", "0"):
        try:
            return SentenceTransformer(ref, device=device, local_files_only=True)
        except (OSError, ValueError):
            pass
    return SentenceTransformer(ref, device=device)


def main():
    ref, ddir = sys.argv[1], sys.argv[2]
    split = sys.argv[3] if len(sys.argv) > 3 else "test"
    run_file = sys.argv[4] if len(sys.argv) > 4 else None
    m = load(ref)
    print(json.dumps(evaluate(m, ddir, split, run_file, "st-zeroshot"), sort_keys=True))


if __name__ == "__main__":
    main()
