package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/hub"
)

// Import a local model directory into a hub cache under its hub id, then resolve the id
// offline, as -init org/name and -model org/name do.
func Example() {
	tmp, _ := os.MkdirTemp("", "hub-example")
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "model")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "config.json"), []byte(`{"model_type": "bert"}`), 0o644)

	cache := filepath.Join(tmp, "cache")
	id, _ := hub.ParseID("acme/tool-encoder")
	if _, err := hub.Import(cache, id, "", "main", src); err != nil {
		fmt.Println(err)
		return
	}
	c := &hub.Client{Cache: cache, Offline: true}
	dir, err := c.Snapshot(context.Background(), id)
	if err != nil {
		fmt.Println(err)
		return
	}
	rel, _ := filepath.Rel(cache, filepath.Dir(filepath.Dir(dir)))
	b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	fmt.Println(rel)
	fmt.Println(string(b))

	_, err = c.Snapshot(context.Background(), hub.ID{Repo: "acme/missing"})
	fmt.Println(err != nil)
	// Output:
	// models--acme--tool-encoder
	// {"model_type": "bert"}
	// true
}
