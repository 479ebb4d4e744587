package library

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"
)

// MaxClientName is the longest client name: OpenAI function names and Anthropic tool names
// both match ^[a-zA-Z0-9_-]{1,64}$.
const MaxClientName = 64

// clientHash is the number of hex digits of the ID's hash a client name ends with when it
// is not the ID spelt plainly (ClientName).
const clientHash = 8

var clientNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidClientName reports whether s is a valid OpenAI function name and Anthropic tool name:
// 1 to 64 letters, digits, '_' and '-'.
func ValidClientName(s string) bool { return clientNameRE.MatchString(s) }

// ClientName returns the name a model client (OpenAI function calling, Anthropic tool use)
// can give the tool with ID id ("namespace.name"). The namespace and the name are joined by
// "__" instead of "."; when the name holds nothing but letters, digits, '_' and '-' and the
// result fits in 64 characters, that is the client name ("fake.echo" → "fake__echo").
// Otherwise every other character becomes '_', the result is cut to 55 characters and '_'
// and the first 8 hex digits of the SHA-256 of id are appended
// ("github.issues/list-for-repo" → "github__issues_list-for-repo_" + 8 hex digits), so that
// two IDs that differ only in the characters replaced or cut get different names. The
// result always satisfies ValidClientName. Names of a whole library, with collisions
// resolved, come from ClientNames.
func ClientName(id string) string {
	return clientName(id, clientHash)
}

func clientName(id string, hashLen int) string {
	ns, name, ok := strings.Cut(id, ".")
	if !ok {
		ns, name = "", id
	}
	var b strings.Builder
	plain := true
	if ok {
		b.WriteString(sanitize(ns, &plain))
		b.WriteString("__")
	}
	b.WriteString(sanitize(name, &plain))
	s := b.String()
	if plain && len(s) <= MaxClientName && len(s) > 0 && hashLen == clientHash {
		return s
	}
	sum := sha256.Sum256([]byte(id))
	h := hex.EncodeToString(sum[:])[:hashLen]
	if keep := max(MaxClientName-1-hashLen, 0); len(s) > keep {
		s = s[:keep]
	}
	if s == "" {
		return h
	}
	return s + "_" + h
}

// sanitize replaces each character of s that is not a letter, digit, '_' or '-' by '_'
// (one per character, not per byte), clearing *plain if it replaced any.
func sanitize(s string, plain *bool) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
			*plain = false
		}
	}
	return b.String()
}

// ClientNames returns the client name of each tool of l (in l.Tools' order): its ClientName,
// unless another tool's comes first, taking IDs in sorted order, in which case its ID's hash
// is appended (or lengthened) until the name is unique. The names are unique, valid
// (ValidClientName) and depend only on the set of IDs in l.
func (l *Library) ClientNames() []string {
	ids := make([]string, len(l.Tools))
	for i, t := range l.Tools {
		ids[i] = t.ID()
	}
	return ClientNamesOf(ids)
}

// ClientNamesOf is ClientNames for a list of tool IDs.
func ClientNamesOf(ids []string) []string {
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ids[order[a]] < ids[order[b]] })
	// Each tool's ClientName is reserved, so that a tool keeps it whenever no other tool has
	// it; a tool that loses it to an earlier ID gets a longer hash, avoiding every reserved name.
	reserved := make(map[string]bool, len(ids))
	for _, id := range ids {
		reserved[ClientName(id)] = true
	}
	out := make([]string, len(ids))
	taken := make(map[string]bool, len(ids))
	for _, i := range order {
		n := ClientName(ids[i])
		if taken[n] {
			for h := clientHash + 4; ; h += 4 {
				n = clientName(ids[i], min(h, 64))
				if (!taken[n] && !reserved[n]) || h >= 64 {
					break
				}
			}
		}
		taken[n] = true
		out[i] = n
	}
	return out
}
