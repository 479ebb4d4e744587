package toolret_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
	evalcmd "github.com/toolret/toolret/commands/eval"
	"github.com/toolret/toolret/export/exporttest"
)

// smallRun is the encoder of the bi-encoder and cross-encoder runs the tests comparing the
// library with eval write.
var smallRun = exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}

// recordedRun opens the go backend and writes, in a new temporary folder, an untrained
// bi-encoder run (smallRun, seed 5) that records its dev split; it returns the backend and
// the run.
func recordedRun(t *testing.T) (compute.Backend, string) {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "be")
	if err := exporttest.WriteRecordedRun(run, smallRun, be, 5); err != nil {
		t.Fatal(err)
	}
	return be, run
}

// rerankRuns is recordedRun's backend and run (the first stage) with an untrained
// cross-encoder run over it (writeCrossEncoderRun), in a new temporary folder.
func rerankRuns(t *testing.T) (be compute.Backend, first, ce string) {
	t.Helper()
	be, first = recordedRun(t)
	ce = filepath.Join(t.TempDir(), "ce")
	writeCrossEncoderRun(t, ce, first)
	return be, first, ce
}

// commandJSON runs `toolret eval args... -json` and returns what it prints.
func commandJSON(t *testing.T, args ...string) []byte {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdout := os.Stdout
	os.Stdout = f
	code := evalcmd.Main(append(args, "-json"))
	os.Stdout = stdout
	if code != 0 {
		t.Fatalf("eval %s: exit code %d", strings.Join(args, " "), code)
	}
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// encodeJSON is what json.NewEncoder writes for v, as eval -json prints it.
func encodeJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sameJSON checks that lib, encoded as eval -json prints it, is byte for byte what eval
// args... -json prints, both passed through norm first where norm is not nil; what names
// the library's call in the error.
func sameJSON(t *testing.T, what string, lib any, norm func(*testing.T, []byte) []byte, args ...string) {
	t.Helper()
	a, b := encodeJSON(t, lib), commandJSON(t, args...)
	if norm != nil {
		a, b = norm(t, a), norm(t, b)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s:\n%s\neval %s:\n%s", what, a, strings.Join(args, " "), b)
	}
}
