package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/library/importer"
)

// Upstreams is the gateway's configuration of the servers it may call: the mcpServers
// configuration MCP clients keep (the same file `toolret import -mcp` reads), plus the
// OpenAPI upstreams and the settings of calls:
//
//	{
//	  "mcpServers": {"everything": {"command": "npx", "args": ["-y", "..."]}, "remote": {"url": "https://..."}},
//	  "openapi": {"petstore": {"base_url": "https://api.example.com/v3",
//	                           "headers": {"Authorization": "Bearer ${PETSTORE_TOKEN}"}}},
//	  "secrets": "secrets.env",
//	  "allow_private": false,
//	  "call_timeout": "30s"
//	}
//
// Tools are called only through an upstream configured here: an MCP tool through the server
// its source names, an OpenAPI operation when its namespace is a key of "openapi" (the base
// URL there, else the description's). Values of env, headers, args, url and query may name
// ${VAR} or ${env:VAR}: the secrets file (KEY=VALUE lines, beside the configuration unless
// absolute) first, then the environment. Their values are never logged or answered.
type Upstreams struct {
	// Path is the file the configuration was read from.
	Path string
	// MCP is the mcpServers configuration; nil when the file has none.
	MCP *importer.MCPConfig
	// OpenAPI maps OpenAPI namespaces to their upstream.
	OpenAPI map[string]OpenAPIUpstream
	// AllowPrivate lets OpenAPI calls reach private, loopback and link-local addresses
	// (refused by default); OpenAPIUpstream.AllowPrivate allows one upstream.
	AllowPrivate bool
	// CallTimeout bounds one call (0: DefaultCallTimeout).
	CallTimeout time.Duration

	secrets   map[string]string
	values    []string // secret values to redact
	recording bool     // expand records the values it substitutes (ParseUpstreams only)
}

// DefaultCallTimeout bounds a tool call when the configuration gives no call_timeout.
const DefaultCallTimeout = 30 * time.Second

// OpenAPIUpstream is where and how the operations of one OpenAPI namespace are called.
type OpenAPIUpstream struct {
	// BaseURL replaces the description's server URL (Source.BaseURL) when set.
	BaseURL string `json:"base_url,omitempty"`
	// Headers and Query are added to every request (credentials: "${VAR}").
	Headers map[string]string `json:"headers,omitempty"`
	Query   map[string]string `json:"query,omitempty"`
	// AllowPrivate lets this upstream's calls reach private and loopback addresses.
	AllowPrivate bool `json:"allow_private,omitempty"`
}

type fileConfig struct {
	MCPServers   json.RawMessage            `json:"mcpServers"`
	Servers      json.RawMessage            `json:"servers"`
	OpenAPI      map[string]OpenAPIUpstream `json:"openapi"`
	Secrets      string                     `json:"secrets"`
	AllowPrivate bool                       `json:"allow_private"`
	CallTimeout  string                     `json:"call_timeout"`
}

// ReadUpstreams reads the upstream configuration at path (ParseUpstreams).
func ReadUpstreams(path string) (*Upstreams, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-upstreams %w", err)
	}
	u, err := ParseUpstreams(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("-upstreams %s: %w", path, err)
	}
	u.Path = path
	if u.MCP != nil {
		u.MCP.Path = path
	}
	return u, nil
}

// ParseUpstreams parses an upstream configuration; dir is where a relative secrets file is.
// Every ${VAR} it names must be set (in the secrets file or the environment).
func ParseUpstreams(b []byte, dir string) (*Upstreams, error) {
	var f fileConfig
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	u := &Upstreams{OpenAPI: f.OpenAPI, AllowPrivate: f.AllowPrivate}
	if len(f.MCPServers) > 0 || len(f.Servers) > 0 {
		c, err := importer.ParseMCPConfig(b)
		if err != nil {
			return nil, err
		}
		u.MCP = c
	}
	if f.CallTimeout != "" {
		d, err := time.ParseDuration(f.CallTimeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("call_timeout %q: want a positive duration (30s)", f.CallTimeout)
		}
		u.CallTimeout = d
	}
	if f.Secrets != "" {
		p := f.Secrets
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		s, err := readSecrets(p)
		if err != nil {
			return nil, err
		}
		u.secrets = s
	}
	for ns, o := range u.OpenAPI {
		if !library.ValidNamespace(ns) || ns == "" {
			return nil, fmt.Errorf("openapi %q: not a namespace (letters, digits, '_' and '-')", ns)
		}
		if o.BaseURL != "" {
			if err := checkBaseURL(o.BaseURL); err != nil {
				return nil, fmt.Errorf("openapi %q: base_url: %w", ns, err)
			}
		}
	}
	// Every variable must resolve now, not at the first call.
	u.recording = true
	defer func() { u.recording = false }()
	if err := u.checkVars(); err != nil {
		return nil, err
	}
	return u, nil
}

// readSecrets reads a secrets file: KEY=VALUE lines, '#' comments, optional quotes.
func readSecrets(p string) (map[string]string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("secrets file: %w", err)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		k = strings.TrimSpace(k)
		if !ok || !varName.MatchString(k) {
			return nil, fmt.Errorf("secrets file %s:%d: want KEY=VALUE", p, n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		m[k] = v
	}
	return m, sc.Err()
}

var (
	varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	varRE   = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// expand replaces ${VAR} and ${env:VAR} in s: the secrets file's value, else the
// environment's. Every value substituted is remembered, to be redacted from what the
// gateway answers and logs.
func (u *Upstreams) expand(s string) (string, error) {
	var missing []string
	out := varRE.ReplaceAllStringFunc(s, func(m string) string {
		name := varRE.FindStringSubmatch(m)[1]
		v, ok := u.secrets[name]
		if !ok {
			v, ok = os.LookupEnv(name)
		}
		if !ok {
			missing = append(missing, name)
			return ""
		}
		if u.recording && len(v) >= 4 {
			u.values = append(u.values, v)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("variable %s is set neither in the secrets file nor in the environment", strings.Join(missing, ", "))
	}
	return out, nil
}

func (u *Upstreams) expandMap(m map[string]string, what string) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for k, v := range m {
		x, err := u.expand(v)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, k, err)
		}
		out[k] = x
	}
	return out, nil
}

// checkVars expands every value once, so that a missing variable is an error at start and
// every secret value is known to the redactor.
func (u *Upstreams) checkVars() error {
	if u.MCP != nil {
		for _, name := range u.MCP.Names() {
			if _, err := u.mcpServer(name); err != nil {
				return err
			}
		}
	}
	for _, ns := range sortedKeys(u.OpenAPI) {
		o := u.OpenAPI[ns]
		if _, err := u.expandMap(o.Headers, "headers"); err != nil {
			return fmt.Errorf("openapi %q: %w", ns, err)
		}
		if _, err := u.expandMap(o.Query, "query"); err != nil {
			return fmt.Errorf("openapi %q: %w", ns, err)
		}
		if _, err := u.expand(o.BaseURL); err != nil {
			return fmt.Errorf("openapi %q: base_url: %w", ns, err)
		}
	}
	for _, v := range u.secrets {
		if len(v) >= 4 {
			u.values = append(u.values, v)
		}
	}
	return nil
}

// mcpServer returns MCP server name of the configuration with its variables expanded.
func (u *Upstreams) mcpServer(name string) (importer.MCPServer, error) {
	if u == nil || u.MCP == nil {
		return importer.MCPServer{}, fmt.Errorf("MCP server %q: the gateway has no mcpServers configuration (-upstreams)", name)
	}
	s, ok := u.MCP.Servers[name]
	if !ok || s.Disabled {
		return importer.MCPServer{}, fmt.Errorf("MCP server %q is not in the gateway's configuration %s (or is disabled)", name, u.Path)
	}
	var err error
	wrap := func(e error) error { return fmt.Errorf("MCP server %q: %w", name, e) }
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		if args[i], err = u.expand(a); err != nil {
			return s, wrap(fmt.Errorf("args: %w", err))
		}
	}
	s.Args = args
	if s.Env, err = u.expandMap(s.Env, "env"); err != nil {
		return s, wrap(err)
	}
	if s.Headers, err = u.expandMap(s.Headers, "headers"); err != nil {
		return s, wrap(err)
	}
	if s.URL, err = u.expand(s.URL); err != nil {
		return s, wrap(fmt.Errorf("url: %w", err))
	}
	if s.Command, err = u.expand(s.Command); err != nil {
		return s, wrap(fmt.Errorf("command: %w", err))
	}
	return s, nil
}

// Redact replaces every secret value of the configuration in s with "[redacted]".
func (u *Upstreams) Redact(s string) string {
	if u == nil {
		return s
	}
	for _, v := range u.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
		if q := url.QueryEscape(v); q != v && strings.Contains(s, q) {
			s = strings.ReplaceAll(s, q, "[redacted]")
		}
	}
	return s
}

func checkBaseURL(raw string) error {
	if strings.Contains(raw, "${") {
		return nil // checked once expanded
	}
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return errors.New("want an absolute http or https URL")
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
