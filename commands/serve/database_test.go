package servecmd

import "testing"

// TestDatabaseFlag: -database defaults to $TOOLRET_DATABASE_URL; the flag wins.
func TestDatabaseFlag(t *testing.T) {
	t.Setenv("TOOLRET_DATABASE_URL", "postgres://env@db/toolret")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-index", "x"}, "postgres://env@db/toolret"},
		{[]string{"-index", "x", "-database", "postgres://flag@db/toolret"}, "postgres://flag@db/toolret"},
	} {
		o, err := parse(c.args)
		if err != nil {
			t.Fatal(err)
		}
		if o.cfg.Database != c.want {
			t.Errorf("%q: -database %q, want %q", c.args, o.cfg.Database, c.want)
		}
	}
}
