package serve

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Scopes an API key (Keys) may hold.
const (
	// ScopeSearch finds tools: POST /v1/retrieve, /v1/embeddings, /v1/search, GET /v1/tools,
	// the MCP tools find_tools and search_tools.
	ScopeSearch = "search"
	// ScopeCall calls tools: POST /v1/call, the MCP tool call_tool.
	ScopeCall = "call"
	// ScopeAdmin changes the library: POST and DELETE /v1/tools.
	ScopeAdmin = "admin"
)

// Key is one API key of a keys file: its name (logged; the key never is) and scopes.
type Key struct {
	Name   string
	Scopes []string
	sum    [sha256.Size]byte // sha256 of the key
}

// Has reports whether k holds scope.
func (k *Key) Has(scope string) bool { return slices.Contains(k.Scopes, scope) }

// Keys are the API keys a server accepts, each with its scopes.
type Keys struct {
	keys []*Key
}

// ReadKeys reads the keys file at path (ParseKeys).
func ReadKeys(path string) (*Keys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	k, err := ParseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	return k, nil
}

// ParseKeys parses a keys file: one key a line, "NAME KEY SCOPES", where NAME names the key
// in logs, KEY is the key itself (at least 16 characters) or "sha256:" and the hex sha256
// of it, and SCOPES is a comma-separated list of search, call and admin. Blank lines and
// lines starting with '#' are skipped. Errors name the line, never a key.
func ParseKeys(b []byte) (*Keys, error) {
	ks := &Keys{}
	names := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want NAME KEY SCOPES (3 fields), got %d fields", n, len(f))
		}
		k := &Key{Name: f[0]}
		if prev, dup := names[k.Name]; dup {
			return nil, fmt.Errorf("line %d: key name %q repeats line %d", n, k.Name, prev)
		}
		names[k.Name] = n
		if h, ok := strings.CutPrefix(f[1], "sha256:"); ok {
			b, err := hex.DecodeString(h)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("line %d (key %s): sha256: want 64 hex digits", n, k.Name)
			}
			copy(k.sum[:], b)
		} else {
			if len(f[1]) < 16 {
				return nil, fmt.Errorf("line %d (key %s): the key is shorter than 16 characters", n, k.Name)
			}
			k.sum = sha256.Sum256([]byte(f[1]))
		}
		for _, s := range strings.Split(f[2], ",") {
			switch s {
			case ScopeSearch, ScopeCall, ScopeAdmin:
				if !k.Has(s) {
					k.Scopes = append(k.Scopes, s)
				}
			default:
				return nil, fmt.Errorf("line %d (key %s): unknown scope %q (search, call, admin)", n, k.Name, s)
			}
		}
		for _, o := range ks.keys {
			if o.sum == k.sum {
				return nil, fmt.Errorf("line %d (key %s): the same key as %s", n, k.Name, o.Name)
			}
		}
		ks.keys = append(ks.keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ks.keys) == 0 {
		return nil, fmt.Errorf("no keys: want lines NAME KEY SCOPES (scopes: search, call, admin)")
	}
	return ks, nil
}

// Lookup returns the key token is, comparing in constant time; nil when none.
func (ks *Keys) Lookup(token string) *Key {
	if ks == nil || token == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	var found *Key
	for _, k := range ks.keys {
		if subtle.ConstantTimeCompare(sum[:], k.sum[:]) == 1 {
			found = k
		}
	}
	return found
}

// Len is the number of keys.
func (ks *Keys) Len() int {
	if ks == nil {
		return 0
	}
	return len(ks.keys)
}
