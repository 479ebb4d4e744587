package biencoder

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/toolret/toolret/data"
)

// NegativesLine is one line of a mined-negatives file (JSONL): a query id and the tool ids
// the retriever ranked highest that are not relevant, best first.
type NegativesLine struct {
	Query string   `json:"query_id"`
	Tools []string `json:"tool_ids"`
}

// WriteNegatives writes mined negatives (query index -> tool indices) as JSONL with ids.
func WriteNegatives(path string, d *data.Dataset, negs map[int][]int, order []int) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, q := range order {
		line := NegativesLine{Query: d.Queries[q].ID}
		for _, t := range negs[q] {
			line.Tools = append(line.Tools, d.Tools[t].ID)
		}
		b, _ := json.Marshal(line)
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// ReadNegatives reads a mined-negatives file; unknown ids are errors naming the line.
func ReadNegatives(path string, d *data.Dataset) (map[int][]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int][]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l NegativesLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: malformed JSON: %w", path, n, err)
		}
		q, ok := d.QueryIndex[l.Query]
		if !ok {
			return nil, fmt.Errorf("%s:%d: unknown query id %q", path, n, l.Query)
		}
		for _, id := range l.Tools {
			t, ok := d.ToolIndex[id]
			if !ok {
				return nil, fmt.Errorf("%s:%d: unknown tool id %q", path, n, id)
			}
			out[q] = append(out[q], t)
		}
	}
	return out, sc.Err()
}
