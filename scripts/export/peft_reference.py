#!/usr/bin/env python3
"""Encodes texts with a PEFT LoRA adapter directory that `toolret export -lora-export adapter` wrote.

    python3 scripts/export/peft_reference.py ADAPTER_DIR REQUEST.json

Needs torch, transformers, sentence-transformers and peft. REQUEST.json is {"texts": [...]}.
The base model is adapter_config.json's base_model_name_or_path (the export's base/). Two
loads are made:
  peft   PeftModel.from_pretrained(AutoModel.from_pretrained(base), ADAPTER_DIR), with mean
         pooling and L2 normalisation (the export's modules; the test's models use them)
  st     SentenceTransformer(base).load_adapter(ADAPTER_DIR)
Prints {"peft": [[...], ...], "st": [[...], ...], "adapted_modules": N} on stdout, N being the
number of LoRA modules of the PEFT model whose lora_B is not all zeros (the adapter's weights
were loaded, not left at PEFT's zero initialisation).
"""
import json
import sys

import torch
from peft import PeftModel
from sentence_transformers import SentenceTransformer
from transformers import AutoModel


def main():
    adapter, request = sys.argv[1], sys.argv[2]
    with open(request, encoding="utf-8") as f:
        texts = json.load(f)["texts"]
    with open(adapter + "/adapter_config.json", encoding="utf-8") as f:
        base = json.load(f)["base_model_name_or_path"]
    torch.manual_seed(0)

    peft = PeftModel.from_pretrained(AutoModel.from_pretrained(base), adapter)
    peft.eval()
    adapted = sum(1 for n, p in peft.named_parameters() if "lora_B" in n and bool(p.detach().abs().sum() > 0))
    # The sentence-transformers export's modules by hand: the tokenizer truncating to
    # max_seq_length, mean pooling over real tokens, L2 normalisation.
    st = SentenceTransformer(base, device="cpu")
    enc = st.tokenizer(texts, padding=True, truncation=True, max_length=st.max_seq_length, return_tensors="pt")
    with torch.no_grad():
        h = peft(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
    e = torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=-1)
    out = {"peft": e.tolist(), "adapted_modules": adapted}

    st2 = SentenceTransformer(base, device="cpu")
    st2.load_adapter(adapter)
    out["st"] = st2.encode(texts, convert_to_numpy=True).tolist()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
