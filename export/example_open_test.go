package export_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/toolindex"
)

// ExampleOpen builds a zero-shot index straight from a pre-trained model (here a tiny
// stand-in directory; any model reference works: a run, an HF directory or a hub id such as
// "sentence-transformers/all-MiniLM-L6-v2") over a tool library, and retrieves with it.
func ExampleOpen() {
	be, _ := backend.Open("go")
	tmp, _ := os.MkdirTemp("", "open-example")
	defer os.RemoveAll(tmp)
	ref := filepath.Join(tmp, "model")
	if err := exporttest.WriteHF(ref, exporttest.Options{}, be, 1); err != nil {
		fmt.Println(err)
		return
	}
	m, err := export.Open(context.Background(), ref, be)
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt := "query: "
	if err := (export.Prompts{Query: &prompt}).Apply(m); err != nil {
		fmt.Println(err)
		return
	}
	lib, _ := data.Default()
	out := filepath.Join(tmp, "index")
	man, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: out, Data: lib})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := toolindex.Load(out, toolindex.WithBackend(be))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := r.Retrieve(context.Background(), "what is the weather in Paris", 3)
	fmt.Println(man.Tools, man.QueryPrompt, len(res), err)
	// Output: 70 query:  3 <nil>
}
