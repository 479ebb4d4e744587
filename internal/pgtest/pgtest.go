// Package pgtest starts throwaway PostgreSQL servers for tests: a cluster of its own in a
// temporary directory on a free port (initdb once into a template that later servers
// copy; run as the postgres user when the tests run as root, as PostgreSQL refuses root),
// or, when TOOLRET_TEST_DATABASE_URL is set, fresh databases in that server. Tests skip,
// saying why, where no PostgreSQL binaries are found (Debian's postgresql package puts
// them in /usr/lib/postgresql/VERSION/bin; TOOLRET_PG_BIN names another directory).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable of an existing server's URL to use instead of a cluster of
// the tests' own (its user must be allowed to create databases).
const EnvURL = "TOOLRET_TEST_DATABASE_URL"

// Server is a PostgreSQL server for a test.
type Server struct {
	// URL is the server's maintenance database ("postgres") as its superuser.
	URL  string
	bin  string // directory of pg_ctl; "" for a server of EnvURL
	dir  string // the cluster: data/ and server.log
	port int
	as   string // user the server runs as ("" : the test's)
	// settings are postgres -c settings after the defaults.
	settings []string
}

// Start returns a running server, stopped and removed when t ends, or skips t when
// there is no PostgreSQL. The tests' own server runs with fsync off unless settings
// ("name=value", postgres -c) say otherwise.
func Start(t testing.TB, settings ...string) *Server {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return &Server{URL: u}
	}
	bin, err := binDir()
	if err != nil {
		t.Skipf("no PostgreSQL server binaries (%v): install Debian's postgresql package, or set %s", err, EnvURL)
	}
	as := ""
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			t.Skip("running as root and there is no postgres user to run PostgreSQL as (it refuses root)")
		}
		as = "postgres"
	}
	tmpl, err := template(bin, as)
	if err != nil {
		t.Fatalf("pgtest: initdb: %v", err)
	}
	dir, err := os.MkdirTemp("", "toolret-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin, dir: dir, as: as, settings: settings}
	t.Cleanup(func() {
		s.stop()
		os.RemoveAll(dir)
	})
	if out, err := exec.Command("cp", "-a", tmpl, filepath.Join(dir, "data")).CombinedOutput(); err != nil {
		t.Fatalf("pgtest: copying the template cluster: %v\n%s", err, out)
	}
	if as != "" {
		if out, err := exec.Command("chown", "-R", as, dir).CombinedOutput(); err != nil {
			t.Fatalf("pgtest: chown: %v\n%s", err, out)
		}
	}
	if s.port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// Local reports whether the server is the tests' own (Stop and Restart work).
func (s *Server) Local() bool { return s.bin != "" }

// NewDB creates an empty database, dropped when t ends, and returns its URL.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "toolret_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// Stop stops the server (fast shutdown: sessions are ended).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if !s.Local() {
		t.Skipf("stopping PostgreSQL needs the tests' own server (%s is set)", EnvURL)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
}

// Restart starts the stopped server again, on the same port.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if !s.Local() {
		t.Skipf("restarting PostgreSQL needs the tests' own server (%s is set)", EnvURL)
	}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

// Log returns the server's log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return string(b)
}

func (s *Server) start() error {
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c max_connections=300", s.port, s.dir)
	for _, kv := range s.settings {
		opts += " -c " + kv
	}
	out, err := s.run(filepath.Join(s.bin, "pg_ctl"), "-D", filepath.Join(s.dir, "data"), "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "60", "-o", opts, "start")
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl start: %v\n%s\n%s", err, out, s.Log())
	}
	return nil
}

func (s *Server) stop() error {
	if s.bin == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(s.dir, "data", "postmaster.pid")); err != nil {
		return nil // not running
	}
	out, err := s.run(filepath.Join(s.bin, "pg_ctl"), "-D", filepath.Join(s.dir, "data"), "-m", "fast", "-w", "-t", "60", "stop")
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

// run runs a PostgreSQL program as s.as.
func (s *Server) run(prog string, args ...string) ([]byte, error) {
	return command(s.as, prog, args...).CombinedOutput()
}

func command(as, prog string, args ...string) *exec.Cmd {
	if as == "" {
		return exec.Command(prog, args...)
	}
	return exec.Command("runuser", append([]string{"-u", as, "--", prog}, args...)...)
}

var templates sync.Map // bin → *tmplOnce

type tmplOnce struct {
	once sync.Once
	dir  string
	err  error
}

// template returns a cluster initialised by initdb (superuser postgres, trust
// authentication), made once per PostgreSQL version and user into the temporary
// directory and kept there for later runs.
func template(bin, as string) (string, error) {
	v, _ := templates.LoadOrStore(bin, &tmplOnce{})
	to := v.(*tmplOnce)
	to.once.Do(func() {
		ver := filepath.Base(filepath.Dir(bin))
		if _, err := strconv.Atoi(ver); err != nil {
			ver = strings.NewReplacer("/", "_").Replace(strings.Trim(bin, "/"))
		}
		to.dir = filepath.Join(os.TempDir(), fmt.Sprintf("toolret-pgtest-template-%s-%d", ver, os.Geteuid()))
		if _, err := os.Stat(filepath.Join(to.dir, "PG_VERSION")); err == nil {
			return
		}
		tmp, err := os.MkdirTemp("", "toolret-pgtest-initdb-")
		if err != nil {
			to.err = err
			return
		}
		defer os.RemoveAll(tmp)
		if as != "" {
			if err := os.Chmod(tmp, 0o755); err != nil {
				to.err = err
				return
			}
			if out, err := exec.Command("chown", as, tmp).CombinedOutput(); err != nil {
				to.err = fmt.Errorf("chown: %v: %s", err, out)
				return
			}
		}
		data := filepath.Join(tmp, "data")
		out, err := command(as, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput()
		if err != nil {
			to.err = fmt.Errorf("%v\n%s", err, out)
			return
		}
		// Another test process may have made it meanwhile: either is good.
		if err := os.Rename(data, to.dir); err != nil && !errors.Is(err, os.ErrExist) {
			if _, serr := os.Stat(filepath.Join(to.dir, "PG_VERSION")); serr != nil {
				to.err = err
			}
		}
	})
	return to.dir, to.err
}

// binDir finds the directory of initdb and pg_ctl: TOOLRET_PG_BIN, Debian's
// /usr/lib/postgresql/VERSION/bin (the newest), pg_config --bindir, or PATH.
func binDir() (string, error) {
	ok := func(d string) bool {
		_, e1 := os.Stat(filepath.Join(d, "initdb"))
		_, e2 := os.Stat(filepath.Join(d, "pg_ctl"))
		return e1 == nil && e2 == nil
	}
	if d := os.Getenv("TOOLRET_PG_BIN"); d != "" {
		if ok(d) {
			return d, nil
		}
		return "", fmt.Errorf("TOOLRET_PG_BIN=%s has no initdb and pg_ctl", d)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); ok(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && ok(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", errors.New("initdb and pg_ctl not found")
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Connect opens a connection to the database at url.
func Connect(ctx context.Context, url string) (*pgx.Conn, error) { return pgx.Connect(ctx, url) }
