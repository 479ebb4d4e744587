"""Checks `toolret export -keep-layers` against sentence-transformers: the model directory
toolret pruned (OUT) must embed as MODEL does in sentence-transformers with its encoder's layer
list cut to the same layers (the usual way to prune a model in PyTorch).

Usage: python scripts/parity/keep_layers_st.py MODEL OUT LAYERS [TEXTS.jsonl]
  e.g. bin/toolret export -model sentence-transformers/all-MiniLM-L6-v2 -keep-layers 0,2,4 -out /tmp/l3
       ~/.cache/toolret/venv/bin/python scripts/parity/keep_layers_st.py sentence-transformers/all-MiniLM-L6-v2 /tmp/l3 0,2,4 \\
           ../shared/datasets/toollens/corpus.jsonl
Prints the largest absolute difference; exits 1 above 1e-5.
"""
import json
import sys

import torch
from sentence_transformers import SentenceTransformer


def main():
    model, out, layers = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split(",")]
    texts = ["find flights from London to Paris", "weather forecast for tomorrow",
             "convert 100 USD to EUR and tell me the time in Tokyo"]
    if len(sys.argv) > 4:
        with open(sys.argv[4]) as f:
            texts = [json.loads(line)["text"] for line in f if line.strip()]
    ref = SentenceTransformer(model, device="cpu")
    enc = ref[0].auto_model
    enc.encoder.layer = torch.nn.ModuleList([enc.encoder.layer[i] for i in layers])
    enc.config.num_hidden_layers = len(layers)
    ours = SentenceTransformer(out, device="cpu")
    ours.max_seq_length = ref.max_seq_length
    a = ref.encode(texts, convert_to_tensor=True, batch_size=32)
    b = ours.encode(texts, convert_to_tensor=True, batch_size=32)
    diff = (a - b).abs().max().item()
    print(f"{len(texts)} texts, layers {layers}: max |toolret-pruned - torch-pruned| = {diff:.3g}")
    sys.exit(0 if diff <= 1e-5 else 1)


if __name__ == "__main__":
    main()
