package importer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// markedProcesses returns the process group of each live process (zombies left out) whose
// environment holds mark, by pid, from /proc.
func markedProcesses(t *testing.T, mark string) map[int]int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte("\x00"+mark+"\x00")) && !bytes.HasPrefix(env, []byte(mark+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so read after its ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		out[pid], _ = strconv.Atoi(f[2])
	}
	return out
}

// TestMCPStdioProcessGroup starts stdio MCP servers behind shell wrappers whose children
// outlive the server, closes each session and checks that no process the command started
// is left: the command runs in a process group of its own, stopped whole on close.
func TestMCPStdioProcessGroup(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	defer func(g time.Duration) { stopGrace = g }(stopGrace)
	stopGrace = 300 * time.Millisecond
	tests := []struct {
		name   string
		script string // run by sh -c with $0 the fake MCP server
		min    int    // processes expected while the session is open
		quick  bool   // the server exits on its own when its input closes: no grace spent
	}{
		{"server alone", `exec "$0"`, 1, true},
		{"wrapper waits for its child", `sleep 300 & "$0"; wait`, 3, false},
		{"child outlives the server", `sleep 300 & exec "$0"`, 2, false},
		{"child ignores SIGTERM", `(trap "" TERM; exec sleep 300) & "$0"; wait`, 3, false},
		{"grandchild", `sh -c 'sleep 300 & wait' & "$0"; wait`, 4, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mark := fmt.Sprintf("TOOLRET_PGTEST_MARK=%d.%d", os.Getpid(), i)
			k, v, _ := strings.Cut(mark, "=")
			s := MCPServer{Command: "/bin/sh", Args: []string{"-c", tc.script, self}, Env: map[string]string{fakeMCPEnv: "1", k: v}}
			cs, err := Connect(t.Context(), "wrapped", s, nil)
			if err != nil {
				t.Fatal(err)
			}
			running := markedProcesses(t, mark)
			if len(running) < tc.min {
				t.Errorf("%d processes of the server running (%v), want at least %d", len(running), running, tc.min)
			}
			groups := map[int]bool{}
			for _, g := range running {
				groups[g] = true
			}
			if len(groups) != 1 || groups[os.Getpid()] || groups[syscall.Getpgrp()] {
				t.Errorf("process groups %v of the server's processes: want one of their own", groups)
			}
			start := time.Now()
			cs.Close()
			elapsed := time.Since(start)
			var left map[int]int
			for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if left = markedProcesses(t, mark); len(left) == 0 || time.Now().After(deadline) {
					break
				}
			}
			if len(left) > 0 {
				for pid := range left {
					if p, err := os.FindProcess(pid); err == nil {
						p.Kill()
					}
				}
				t.Fatalf("after the session closed (in %v), processes of the server left: pid→pgid %v", elapsed, left)
			}
			if tc.quick && elapsed >= stopGrace {
				t.Errorf("closing a server that exits on its own took %v, want less than %v", elapsed, stopGrace)
			}
			if elapsed > 4*stopGrace+time.Second {
				t.Errorf("closing took %v, want about %v at most", elapsed, 3*stopGrace)
			}
		})
	}
}
