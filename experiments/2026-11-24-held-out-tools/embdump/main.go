// Command embdump writes the query and tool embeddings of an exported index for a dataset, as
// little-endian float32 rows (queries.f32, tools.f32) with their ids (queries.txt, tools.txt), for
// offline analysis of a dense model's scores (experiments/2026-11-24-held-out-tools/capacity.py).
//
//	go run -tags onnx ./experiments/2026-11-24-held-out-tools/embdump -index DIR -data DIR -out DIR [-backend onnx]
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/toolindex"
)

func main() {
	index := flag.String("index", "", "exported index directory")
	dataDir := flag.String("data", "", "dataset directory (BEIR or Parquet)")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if err := run(*index, *dataDir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "embdump:", err)
		os.Exit(1)
	}
}

func run(index, dataDir, out string) error {
	r, err := toolindex.Load(index)
	if err != nil {
		return err
	}
	d, err := data.Load(dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	texts := make([]string, len(d.Queries))
	ids := make([]string, len(d.Queries))
	for i, q := range d.Queries {
		texts[i], ids[i] = q.Text, q.ID
	}
	var qe [][]float32
	for i := 0; i < len(texts); i += 512 {
		e, err := r.Embed(biencoder.QueryTower, texts[i:min(i+512, len(texts))])
		if err != nil {
			return err
		}
		qe = append(qe, e...)
		fmt.Fprintf(os.Stderr, "\rqueries %d/%d", len(qe), len(texts))
	}
	fmt.Fprintln(os.Stderr)
	if err := write(filepath.Join(out, "queries"), ids, qe); err != nil {
		return err
	}
	lib := r.Library()
	tids := make([]string, lib.Len())
	te := make([][]float32, lib.Len())
	for i := range te {
		tids[i], te[i] = lib.Tool(i).ID, lib.Embedding(i) // text vectors
	}
	return write(filepath.Join(out, "tools"), tids, te)
}

func write(p string, ids []string, rows [][]float32) error {
	f, err := os.Create(p + ".f32")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var b [4]byte
	for _, row := range rows {
		for _, v := range row {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			w.Write(b[:])
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	t, err := os.Create(p + ".txt")
	if err != nil {
		return err
	}
	for _, id := range ids {
		fmt.Fprintln(t, id)
	}
	return t.Close()
}
