package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolret/toolret/library"
)

// MaxResponse bounds the body of an upstream HTTP answer the gateway reads.
const MaxResponse = 4 << 20

// errPrivate is the dial error of an address the gateway may not reach.
var errPrivate = errors.New("private, loopback or link-local address")

// errLocalName is the dial error of a host name the gateway may not reach: one that names
// this machine or a local or private network.
var errLocalName = errors.New("host name of this machine or a local network")

// newHTTPClient returns the client of OpenAPI calls: no proxy from the environment, no
// redirect to another host, and unless private is set, no connection to a private,
// loopback, link-local or unspecified address (checked on the address dialled, after name
// resolution, so a DNS answer cannot smuggle one in) and no lookup of a host name that
// names this machine or a local network (localName): such a call is refused before any DNS
// query. Names are looked up with r (nil: the default resolver).
func newHTTPClient(private bool, r *net.Resolver) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Resolver: r}
	dial := d.DialContext
	if !private {
		d.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot parse %s", errPrivate, address)
			}
			if !publicAddr(ap.Addr()) {
				return fmt.Errorf("%w %s refused (allow_private in the upstream configuration allows it)", errPrivate, ap.Addr())
			}
			return nil
		}
		dial = func(ctx context.Context, network, address string) (net.Conn, error) {
			if host, _, err := net.SplitHostPort(address); err == nil && localName(host) {
				return nil, &net.OpError{Op: "dial", Net: network,
					Err: fmt.Errorf("%w %s refused (allow_private in the upstream configuration allows it)", errLocalName, host)}
			}
			return d.DialContext(ctx, network, address)
		}
	}
	tr := &http.Transport{DialContext: dial, ForceAttemptHTTP2: true, MaxIdleConns: 100,
		IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 0}
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
			return fmt.Errorf("redirect to another host (%s) refused: calls go only to configured upstreams", req.URL.Host)
		}
		return nil
	}}
}

// localSuffixes are the domains reserved for this machine and for local and private
// networks (RFC 6761 localhost, RFC 6762 .local, RFC 8375 .home.arpa, ICANN's .internal).
var localSuffixes = []string{".localhost", ".local", ".internal", ".home.arpa"}

// localName reports whether host names this machine or a local or private network:
// localhost, or one of localSuffixes or a name under it, in any case, with or without the
// final dot.
func localName(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" {
		return true
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix("."+h, s) {
			return true
		}
	}
	return false
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// publicAddr reports whether a is an address on the public internet.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && !a.IsLoopback() && !a.IsPrivate() && !a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast() &&
		!a.IsUnspecified() && !a.IsMulticast() && !a.IsInterfaceLocalMulticast() && !cgnat.Contains(a)
}

// callOpenAPI performs the OpenAPI operation of tool t with args. Faults are tool errors.
func (g *Gateway) callOpenAPI(ctx context.Context, t *library.Tool, args map[string]any) *mcp.CallToolResult {
	var up OpenAPIUpstream
	ok := false
	if g.up != nil {
		up, ok = g.up.OpenAPI[t.Namespace]
	}
	if !ok {
		return toolError("tool %s: OpenAPI namespace %q is not an upstream of the gateway's configuration (-upstreams %s, \"openapi\"): calls go only to configured upstreams", t.ID(), t.Namespace, g.upPath())
	}
	req, err := g.openAPIRequest(ctx, t, up, args)
	if err != nil {
		return toolError("tool %s: %s", t.ID(), g.up.Redact(err.Error()))
	}
	timeout := g.callTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := g.http[0]
	if up.AllowPrivate || g.up.AllowPrivate {
		client = g.http[1]
	}
	start := time.Now()
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		switch {
		case errors.Is(err, errPrivate) || errors.Is(err, errLocalName):
			var op *net.OpError
			msg := err.Error()
			if errors.As(err, &op) && op.Err != nil {
				msg = op.Err.Error()
			}
			return toolError("tool %s: upstream %s: %s", t.ID(), req.URL.Host, g.up.Redact(msg))
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return toolError("tool %s: upstream %s did not answer within %v (the gateway's call timeout)", t.ID(), req.URL.Host, timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL, which may hold a credential
		}
		return toolError("tool %s: calling upstream %s failed: %s", t.ID(), req.URL.Host, g.up.Redact(err.Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return toolError("tool %s: upstream %s did not finish its answer within %v (the gateway's call timeout)", t.ID(), req.URL.Host, timeout)
		}
		return toolError("tool %s: reading the answer of upstream %s: %s", t.ID(), req.URL.Host, g.up.Redact(err.Error()))
	}
	if len(body) > MaxResponse {
		return toolError("tool %s: upstream %s answered more than %d bytes: refused", t.ID(), req.URL.Host, MaxResponse)
	}
	text := g.up.Redact(string(bytes.ToValidUTF8(body, []byte("\uFFFD"))))
	g.log.Debug("openapi call", "tool", t.ID(), "status", resp.StatusCode, "ms", time.Since(start).Milliseconds())
	if resp.StatusCode >= 400 {
		return toolError("tool %s: upstream %s answered HTTP %s: %s", t.ID(), req.URL.Host, resp.Status, clip(text, 2000))
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		var obj map[string]any
		if json.Unmarshal([]byte(text), &obj) == nil {
			res.StructuredContent = obj
		}
	}
	return res
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// openAPIRequest builds the HTTP request of operation t: the base URL (the upstream's, else
// the description's), path, query, header and cookie parameters from args, the JSON body,
// then the upstream's configured headers and query (credentials).
func (g *Gateway) openAPIRequest(ctx context.Context, t *library.Tool, up OpenAPIUpstream, args map[string]any) (*http.Request, error) {
	src := t.Source
	base := up.BaseURL
	if base == "" {
		base = src.BaseURL
	} else {
		var err error
		if base, err = g.up.expand(base); err != nil {
			return nil, err
		}
	}
	if base == "" {
		return nil, fmt.Errorf("no base URL: the description has no server; give \"base_url\" for namespace %q in the upstream configuration", t.Namespace)
	}
	bu, err := url.Parse(base)
	if err != nil || (bu.Scheme != "http" && bu.Scheme != "https") || bu.Host == "" {
		return nil, fmt.Errorf("base URL %q is not an absolute http or https URL: give \"base_url\" for namespace %q in the upstream configuration", base, t.Namespace)
	}
	path := src.Path
	q := url.Values{}
	hdr := http.Header{}
	var cookies []*http.Cookie
	inParams := map[string]bool{}
	for _, p := range src.Params {
		inParams[p.Prop()] = true
		v, ok := args[p.Prop()]
		if !ok || v == nil {
			continue
		}
		switch p.In {
		case library.InPath:
			s := scalar(v)
			if s == "" || s == "." || s == ".." {
				return nil, fmt.Errorf("argument %q: %q is not a valid path segment", p.Prop(), s)
			}
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(s))
		case library.InQuery:
			if l, ok := v.([]any); ok {
				for _, x := range l {
					q.Add(p.Name, scalar(x))
				}
			} else {
				q.Add(p.Name, scalar(v))
			}
		case library.InHeader:
			s := scalar(v)
			if strings.ContainsAny(s, "\r\n") {
				return nil, fmt.Errorf("argument %q: a header value may not hold a line break", p.Prop())
			}
			hdr.Set(p.Name, s)
		case library.InCookie:
			cookies = append(cookies, &http.Cookie{Name: p.Name, Value: scalar(v)})
		}
	}
	if strings.Contains(path, "{") {
		return nil, fmt.Errorf("path %s: a path parameter has no value", src.Path)
	}
	var body io.Reader
	ctype := src.ContentType
	switch src.Body {
	case "":
	case library.BodyMerged:
		obj := map[string]any{}
		for k, v := range args {
			if !inParams[k] {
				obj[k] = v
			}
		}
		if len(obj) > 0 || src.Method == http.MethodPost || src.Method == http.MethodPut || src.Method == http.MethodPatch {
			b, err := encodeBody(obj, ctype)
			if err != nil {
				return nil, err
			}
			body = bytes.NewReader(b)
		}
	default:
		if v, ok := args[src.Body]; ok {
			b, err := encodeBody(v, ctype)
			if err != nil {
				return nil, err
			}
			body = bytes.NewReader(b)
		}
	}
	u := *bu
	u.RawPath = strings.TrimSuffix(bu.EscapedPath(), "/") + path
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return nil, fmt.Errorf("path %s: %w", src.Path, err)
	}
	extra, err := g.up.expandMap(up.Query, "query")
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	method := src.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, errors.New("cannot build the request")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		if ctype == "" {
			ctype = "application/json"
		}
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	req.Header.Set("User-Agent", "toolret-gateway")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	h, err := g.up.expandMap(up.Headers, "headers")
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	return req, nil
}

// scalar is a parameter value as text: strings as they are, other values as JSON.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func encodeBody(v any, ctype string) ([]byte, error) {
	switch {
	case ctype == "" || strings.Contains(ctype, "json"):
		return json.Marshal(v)
	case strings.HasPrefix(ctype, "application/x-www-form-urlencoded"):
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, errors.New("a form body must be an object")
		}
		f := url.Values{}
		for k, x := range obj {
			f.Set(k, scalar(x))
		}
		return []byte(f.Encode()), nil
	case strings.HasPrefix(ctype, "text/"):
		return []byte(scalar(v)), nil
	}
	return nil, fmt.Errorf("request body of media type %s: the gateway sends JSON, form and text bodies only", ctype)
}
