package serve

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// bearer returns the token of r's "Authorization: Bearer" header ("" when none).
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// caller identifies the sender of a request for rate limits and logs: the API key's name,
// "token" for the admin token, else the remote address's host.
func (s *Server) caller(r *http.Request) (id string, key *Key, token bool) {
	tok := bearer(r)
	if k := s.cfg.Keys.Lookup(tok); k != nil {
		return "key:" + k.Name, k, false
	}
	if s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1 {
		return "token", nil, true
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host, nil, false
}

// authorize checks that r may use an endpoint of scope ("" open to all) and is within its
// rate limit. Without Keys, search and call are open; admin needs Token when one is set.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, scope string) *apiError {
	id, key, token := s.caller(r)
	if key != nil {
		info(r).key = key.Name
	}
	if aerr := s.limit(w, id); aerr != nil {
		return aerr
	}
	switch {
	case scope == "":
		return nil
	case scope == ScopeAdmin && s.cfg.Keys == nil:
		if s.cfg.Token == "" || token {
			return nil
		}
		switch got := r.Header.Get("Authorization"); {
		case got == "":
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolret"`)
			return errorf(http.StatusUnauthorized, `missing "Authorization: Bearer <token>" header: tool updates need the server's $TOOLRET_TOKEN`)
		case strings.TrimSpace(got) == "Bearer": // curl -H "Authorization: Bearer $TOOLRET_TOKEN" with it unset
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolret", error="invalid_token"`)
			return errorf(http.StatusUnauthorized, `empty bearer token in the "Authorization" header: is TOOLRET_TOKEN exported in the shell that sends the request?`)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolret", error="invalid_token"`)
		return errorf(http.StatusUnauthorized, `invalid bearer token in the "Authorization" header`)
	case s.cfg.Keys == nil:
		return nil
	case scope == ScopeAdmin && token:
		return nil
	case key == nil:
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolret"`)
		if bearer(r) == "" {
			return errorf(http.StatusUnauthorized, `missing "Authorization: Bearer <key>" header: this endpoint needs an API key with scope %q`, scope)
		}
		return errorf(http.StatusUnauthorized, `invalid API key in the "Authorization" header`)
	case !key.Has(scope):
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="toolret", error="insufficient_scope", scope=%q`, scope))
		return errorf(http.StatusForbidden, "API key %q lacks scope %q (it has %s)", key.Name, scope, strings.Join(key.Scopes, ", "))
	}
	return nil
}

// limit takes one request from id's rate budget (Config.Rate per second, bursts of
// Config.Burst); over it, a 429 with Retry-After.
func (s *Server) limit(w http.ResponseWriter, id string) *apiError {
	if s.limits == nil {
		return nil
	}
	res := s.limits.get(id).Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		w.Header().Set("Retry-After", strconv.Itoa(int(d/time.Second)+1))
		return errorf(http.StatusTooManyRequests, "rate limit of %g requests a second (bursts of %d) exceeded: retry in %v", s.cfg.Rate, s.limits.burst, d.Round(time.Millisecond))
	}
	return nil
}

// limiters holds one token bucket per caller; it forgets them all when maxCallers is
// reached (callers by address are unbounded).
type limiters struct {
	mu    sync.Mutex
	rate  rate.Limit
	burst int
	m     map[string]*rate.Limiter
}

const maxCallers = 10000

func newLimiters(perSecond float64, burst int) *limiters {
	if perSecond <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = max(1, int(perSecond))
	}
	return &limiters{rate: rate.Limit(perSecond), burst: burst, m: map[string]*rate.Limiter{}}
}

func (l *limiters) get(id string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[id]
	if !ok {
		if len(l.m) >= maxCallers {
			clear(l.m)
		}
		lim = rate.NewLimiter(l.rate, l.burst)
		l.m[id] = lim
	}
	return lim
}

// mcpAccess guards the MCP endpoint: the caller's rate limit, and with Keys a valid API key,
// whose scopes the tools check (Allowed). A request refused gets the REST endpoints' JSON
// error body ({"error": "..."}).
func (s *Server) mcpAccess(h http.Handler) http.Handler {
	if s.cfg.Keys != nil {
		verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
			k := s.cfg.Keys.Lookup(tok)
			if k == nil {
				return nil, fmt.Errorf("%w: not a key of this server", auth.ErrInvalidToken)
			}
			return &auth.TokenInfo{Scopes: k.Scopes, UserID: k.Name}, nil
		}
		h = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, key, _ := s.caller(r)
		if key != nil {
			info(r).key = key.Name
		}
		if aerr := s.limit(w, id); aerr != nil {
			setError(w, aerr.msg)
			writeJSON(w, aerr.status, map[string]string{"error": aerr.msg})
			return
		}
		if s.cfg.Keys != nil && key == nil {
			// Refused here, as the REST endpoints refuse, rather than by the SDK's
			// middleware, which answers plain text.
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolret"`)
			msg := `invalid API key in the "Authorization" header`
			if bearer(r) == "" {
				msg = `missing "Authorization: Bearer <key>" header: the MCP endpoint needs an API key (its scopes decide which tools it may use)`
			}
			setError(w, msg)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": msg})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Allowed reports whether the MCP request with extra may use a tool of scope: always over
// stdio and over HTTP without keys; with keys, when the request's key holds scope.
func Allowed(extra *mcp.RequestExtra, scope string) error {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	if slices.Contains(extra.TokenInfo.Scopes, scope) {
		return nil
	}
	return fmt.Errorf("API key %q lacks scope %q (it has %s)", extra.TokenInfo.UserID, scope, strings.Join(extra.TokenInfo.Scopes, ", "))
}
