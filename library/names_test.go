package library_test

import (
	"strings"
	"testing"

	"github.com/toolret/toolret/library"
)

// TestClientNames: every tool ID (GitHub-style with '/', BFCL-style with dots, over-long,
// non-ASCII, colliding) gets a client name valid for OpenAI and Anthropic, unique in its
// library, that maps back to the ID; plain IDs keep the documented namespace__name spelling.
func TestClientNames(t *testing.T) {
	long := "bfcl." + strings.Repeat("very_long_function_name_", 4)
	for _, tc := range []struct {
		name  string
		ids   []string
		plain map[string]string // ID -> the client name expected exactly
	}{
		{"plain", []string{"fake.echo", "pets.getPet", "noname", "a-b.c-d"},
			map[string]string{"fake.echo": "fake__echo", "pets.getPet": "pets__getPet", "noname": "noname", "a-b.c-d": "a-b__c-d"}},
		{"github slashes", []string{"github.issues/list-for-repo", "github.issues/list", "github.repos/get", "github.issues_list"}, nil},
		{"bfcl dots", []string{"bfcl.math.circle_area", "bfcl.math_circle_area", "bfcl.math__circle_area", "bfcl.spotify.play"},
			map[string]string{"bfcl.math_circle_area": "bfcl__math_circle_area", "bfcl.math__circle_area": "bfcl__math__circle_area"}},
		{"over-long", []string{long, long + "x", long + "y", "bfcl." + strings.Repeat("a", 59), "bfcl." + strings.Repeat("a", 60)},
			map[string]string{"bfcl." + strings.Repeat("a", 58): "bfcl__" + strings.Repeat("a", 58)}},
		{"collisions", []string{"a.b__c", "a__b.c", "x.y/z", "x.y.z", "x.y z", "x.y_z", "pets.créer", "pets.cr_er"},
			map[string]string{"a.b__c": "a__b__c", "x.y_z": "x__y_z", "pets.cr_er": "pets__cr_er"}},
		{"spaces and methods", []string{"api.GET /pets/{id}", "api.POST /pets", "api.GET_/pets/{id}"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := tc.ids
			for id := range tc.plain {
				if !contains(ids, id) {
					ids = append(ids, id)
				}
			}
			names := library.ClientNamesOf(ids)
			back := map[string]string{}
			for i, n := range names {
				if !library.ValidClientName(n) {
					t.Errorf("%q: client name %q is not valid (^[a-zA-Z0-9_-]{1,64}$)", ids[i], n)
				}
				if prev, ok := back[n]; ok {
					t.Errorf("%q and %q share the client name %q", prev, ids[i], n)
				}
				back[n] = ids[i]
				if want, ok := tc.plain[ids[i]]; ok && n != want {
					t.Errorf("%q: client name %q, want %q", ids[i], n, want)
				}
			}
			// Deterministic: the same IDs in another order give the same names.
			rev := make([]string, len(ids))
			for i := range ids {
				rev[len(ids)-1-i] = ids[i]
			}
			for i, n := range library.ClientNamesOf(rev) {
				if back[n] != rev[i] {
					t.Errorf("reordered: %q got %q (was %q's)", rev[i], n, back[n])
				}
			}
		})
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
