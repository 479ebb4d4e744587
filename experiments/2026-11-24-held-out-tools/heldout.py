"""Reading a held-out-tool view in BEIR layout (convert -holdout-tools F -format beir), shared by
capacity.py and wordbag.py."""
import collections
import json
import re


class View:
    """tools (corpus rows), ti (tool id -> row), queries (id -> text), test / train (query id ->
    set of relevant tool rows), held (rows of the held-out tools)."""

    def __init__(self, data):
        self.tools = [json.loads(l) for l in open(f"{data}/corpus.jsonl")]
        self.ti = {t["_id"]: i for i, t in enumerate(self.tools)}
        self.queries = {}
        for l in open(f"{data}/queries.jsonl"):
            q = json.loads(l)
            self.queries[q["_id"]] = q["text"]
        self.test, self.train = self._qrels(data, "test"), self._qrels(data, "train")
        self.held = {self.ti[t] for t in json.load(open(f"{data}/holdout.json"))["held_out_tools"]}

    def _qrels(self, data, split):
        m = collections.defaultdict(set)
        with open(f"{data}/qrels/{split}.tsv") as f:
            next(f)
            for l in f:
                q, d, r = l.split("\t")[:3]
                if int(r) > 0:
                    m[q].add(self.ti[d])
        return m


def words(text):
    """The [a-z0-9]+ words of text, lower-cased."""
    return re.findall(r"[a-z0-9]+", text.lower())
