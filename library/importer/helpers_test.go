package importer

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// cacheDir is where scripts/install-mcp-test.sh installs the tests' real inputs.
func cacheDir() string {
	if d := os.Getenv("TOOLRET_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "toolret")
}

const installHint = "run scripts/install-mcp-test.sh to install it"

// npmPath returns the path of file under the test npm packages, skipping t when absent.
func npmPath(t testing.TB, file string) string {
	t.Helper()
	p := filepath.Join(cacheDir(), "mcp-npm", "node_modules", file)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not installed (%v): %s", file, err, installHint)
	}
	return p
}

// nodeServer returns the entry point of npm MCP reference server pkg and the node binary.
func nodeServer(t testing.TB, pkg string) (node, entry string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found: %s", installHint)
	}
	return node, npmPath(t, filepath.Join("@modelcontextprotocol", pkg, "dist", "index.js"))
}

// pythonMCP returns the Python of the venv that has the MCP SDK.
func pythonMCP(t testing.TB) string {
	t.Helper()
	py := filepath.Join(cacheDir(), "mcp-venv", "bin", "python")
	if err := exec.Command(py, "-c", "import mcp.server.fastmcp").Run(); err != nil {
		t.Skipf("Python MCP SDK not installed in %s (%v): %s", filepath.Dir(filepath.Dir(py)), err, installHint)
	}
	return py
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startHTTPServer starts cmd (an MCP server listening on port) and waits until the port
// accepts connections; the server is killed at the end of the test.
func startHTTPServer(t testing.TB, cmd *exec.Cmd, port int) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not listen on port %d in 30s", cmd, port)
}
