package gateway

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
)

// TestLocalNameNotResolved checks that a call to a host name of this machine or a local
// network is refused before its name is looked up: the injected resolver sees no query.
func TestLocalNameNotResolved(t *testing.T) {
	var queries atomic.Int32
	r := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		queries.Add(1)
		return nil, errors.New("no DNS in this test")
	}}
	c := newHTTPClient(false, r)
	for _, host := range []string{"localhost", "LocalHost.", "api.localhost", "printer.local", "db.internal",
		"nas.home.arpa", "home.arpa", "metadata.google.internal"} {
		queries.Store(0)
		_, err := c.Get("http://" + host + ":8080/v1/pets")
		if !errors.Is(err, errLocalName) {
			t.Errorf("%s: error %v, want %v", host, err, errLocalName)
		}
		if n := queries.Load(); n != 0 {
			t.Errorf("%s: %d DNS queries before the call was refused, want none", host, n)
		}
	}
	// A public name is looked up (through r: the check above means something), then fails.
	queries.Store(0)
	if _, err := c.Get("http://api.example.com/v1/pets"); err == nil || errors.Is(err, errLocalName) {
		t.Errorf("api.example.com: error %v, want a failed lookup", err)
	}
	if queries.Load() == 0 {
		t.Error("api.example.com: no DNS query through the injected resolver")
	}
	// allow_private: such names are called as any other.
	queries.Store(0)
	if _, err := newHTTPClient(true, r).Get("http://db.internal/"); errors.Is(err, errLocalName) || queries.Load() == 0 {
		t.Errorf("allow_private: db.internal: error %v after %d queries, want a lookup", err, queries.Load())
	}
}

func TestLocalName(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "a.b.localhost.": true, "x.LOCAL": true, "internal": true,
		"example.com": false, "localhost.example.com": false, "notlocal": false, "myinternal": false, "127.0.0.1": false} {
		if got := localName(host); got != want {
			t.Errorf("localName(%q) = %v, want %v", host, got, want)
		}
	}
}
