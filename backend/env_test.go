package backend

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestBuildEnvDocumented: what a build by hand needs (the Makefile's GOTOOLCHAIN and
// GOEXPERIMENT) is one export line that the README gives before its first `go run`, that
// `make -s env` prints, and that the warning of a build without SIMD names.
func TestBuildEnvDocumented(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export (GOTOOLCHAIN|GOEXPERIMENT) := (\S+)$`).FindAllStringSubmatch(string(mk), -1) {
		vars[m[1]] = m[2]
	}
	if len(vars) != 2 {
		t.Fatalf("Makefile: exports %v, want GOTOOLCHAIN and GOEXPERIMENT", vars)
	}
	line := "export GOTOOLCHAIN=" + vars["GOTOOLCHAIN"] + " GOEXPERIMENT=" + vars["GOEXPERIMENT"]
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	at, run := strings.Index(string(readme), line), strings.Index(string(readme), "\ngo run ")
	if at < 0 || (run >= 0 && run < at) {
		t.Errorf("README.md: %q is not given before the first `go run` (at %d, go run at %d)", line, at, run)
	}
	src, err := os.ReadFile("simd_off.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "`"+line+"`") {
		t.Errorf("simd_off.go: the warning does not say `%s`", line)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not found: `make -s env` not checked")
	}
	out, err := exec.Command("make", "-s", "-C", "..", "env").Output()
	if err != nil {
		t.Fatalf("make -s env: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != line {
		t.Errorf("make -s env printed %q, want %q", got, line)
	}
}
