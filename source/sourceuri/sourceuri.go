// Package sourceuri splits the kafka:// and cassandra:// source URIs and keeps secrets out of
// them. A password in a URI shows in process lists, shell history, CI logs and every error that
// quotes the URI, so Parse refuses one (the sources read it from the environment), and every
// error that quotes a URI quotes Redact's form of it.
package sourceuri

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Mask replaces a secret in Redact's output.
const Mask = "xxxxx"

// ErrPassword is wrapped by Parse's error for a URI holding a password.
var ErrPassword = errors.New("a password in the URI")

// URI is a source URI split into its parts: scheme://[user@]host[,host...][/path][?query].
// net/url cannot parse such a URI whole: its authority may list several hosts, some with a
// port and some without (h1,h2:9042), which url.Parse refuses; the query is parsed by net/url.
type URI struct {
	User  string     // the user name before '@', unescaped; "" when none
	Hosts []string   // the comma-separated hosts, trimmed, empty ones dropped, as written
	Path  string     // what follows the hosts' '/', still escaped
	Query url.Values // parameter names unescaped and lower-cased
}

// Parse splits raw, which must start with scheme://, and refuses a password in it: a password
// after the user name (user:password@host) or any parameter whose name looks like a secret
// (IsSecretName: password, PASSWORD, pass%77ord, sasl.password, token...; in every URI
// but kafka://'s also IsStoreCredentialName) or whose value is a URI with a password
// (endpoint=http://KEY:SECRET@host), however often it is given. The error then says to set passwordEnv. Errors do not quote raw: callers prefix
// them with Redact(raw).
func Parse(raw, scheme, passwordEnv string) (*URI, error) {
	if err := CheckSecrets(raw, passwordEnv); err != nil {
		return nil, err
	}
	rest, ok := strings.CutPrefix(raw, scheme+"://")
	if !ok {
		return nil, fmt.Errorf("want %s://", scheme)
	}
	if strings.ContainsRune(rest, '#') {
		return nil, errors.New("a '#' has no meaning in a source URI: write it as %23 in a name")
	}
	u := &URI{}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, rest := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, err := url.PathUnescape(authority[:at])
		if err != nil {
			return nil, fmt.Errorf("user name: %w", err)
		}
		u.User, authority = user, authority[at+1:]
	}
	for _, h := range strings.Split(authority, ",") {
		if h = strings.TrimSpace(h); h != "" {
			u.Hosts = append(u.Hosts, h)
		}
	}
	path, query, _ := strings.Cut(rest, "?")
	u.Path = strings.TrimPrefix(path, "/")
	u.Query = url.Values{}
	for _, piece := range strings.Split(query, "&") { // one at a time: repeats stay in order
		q, err := url.ParseQuery(piece)
		if err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		for name, vals := range q {
			name = strings.ToLower(name)
			u.Query[name] = append(u.Query[name], vals...)
		}
	}
	return u, nil
}

// CheckSecrets returns an error wrapping ErrPassword when raw holds a password (see Parse). The
// error names what was found but never its value.
func CheckSecrets(raw, passwordEnv string) error {
	s := scan(raw)
	found := ""
	switch {
	case s.passStart >= 0:
		found = "after the user name, as in user:password@host"
	default:
		for _, p := range s.params {
			if !p.secret {
				continue
			}
			found = "in a parameter named like a secret"
			if p.eq >= 0 { // without '=', the name may run into the secret
				found = fmt.Sprintf("in the parameter %q", raw[p.start:p.eq])
			}
			break
		}
	}
	if found == "" {
		return nil
	}
	return fmt.Errorf("%w (%s) is refused: it would show in process lists, shell history and logs; remove it and set the environment variable %s", ErrPassword, found, passwordEnv)
}

// Redact returns raw with every secret Parse refuses masked, for error messages and logs: the
// password of user:password@host and the value of each parameter whose name looks like a secret
// or that holds a URI with a password.
// It works on any string, however malformed, and hides more than needed rather than less.
func Redact(raw string) string {
	s := scan(raw)
	if s.passStart < 0 && !s.anySecret {
		return raw
	}
	var b strings.Builder
	last := 0
	if s.passStart >= 0 {
		b.WriteString(raw[:s.passStart])
		b.WriteString(Mask)
		last = s.passEnd
	}
	for _, p := range s.params {
		if !p.secret || p.start < last {
			continue
		}
		b.WriteString(raw[last:p.start])
		if p.eq >= 0 {
			b.WriteString(raw[p.start : p.eq+1])
		}
		b.WriteString(Mask)
		last = p.end
	}
	b.WriteString(raw[last:])
	return b.String()
}

// IsSecretName tells whether a parameter name (unescaped) looks like it carries a secret:
// compared without case and without separators, it contains pass, pwd, secret, token,
// credential, jaas (a Kafka JAAS configuration holds the password) or apikey, or is pw.
func IsSecretName(name string) bool {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		}
	}
	n := b.String()
	if n == "pw" {
		return true
	}
	for _, s := range []string{"pass", "pwd", "pswd", "secret", "token", "credential", "jaas", "apikey"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// IsStoreCredentialName tells whether a parameter names a credential of an object store
// (s3://, oss://) beyond IsSecretName: an access key, its id or a session (access_key,
// AccessKeyId, session_token), which the store refuses. Such a parameter is a secret in every
// URI but kafka://'s, which takes key= (a TLS key file) and keycol=; no other URI takes one.
func IsStoreCredentialName(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "key") || strings.Contains(n, "access") || strings.Contains(n, "session")
}

// scanned is where the secrets of a URI are, by byte offsets into it.
type scanned struct {
	passStart, passEnd int // the user info's password, or -1
	params             []param
	anySecret          bool
}

type param struct {
	start, eq, end int    // the piece raw[start:end]; eq is the '=' in it, or -1
	name           string // unescaped
	secret         bool
}

// scan finds the user info's password and the parameters of raw lexically: Parse and Redact
// must agree on malformed URIs too, where net/url fails or, worse, splits a password containing
// '/', '?', '#' or '@' into a host, a path and a query.
func scan(raw string) scanned {
	s := scanned{passStart: -1, passEnd: -1}
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	q := strings.IndexByte(raw[start:], '?')
	if q >= 0 {
		q += start
	}
	if start > 0 {
		// The user info ends at the last '@' before the query: neither the hosts nor the path
		// of a source URI holds one. Without one there, a '?' in the password put its '@' into
		// a parameter name, which holds none otherwise.
		at := -1
		end := q
		if end < 0 {
			end = len(raw)
		}
		if i := strings.LastIndexByte(raw[start:end], '@'); i >= 0 {
			at = start + i
		} else if q >= 0 {
			for _, p := range params(raw, q+1) {
				key := raw[p.start:p.end]
				if p.eq >= 0 {
					key = raw[p.start:p.eq]
				}
				if i := strings.LastIndexByte(key, '@'); i >= 0 {
					at = p.start + i
				}
			}
		}
		if at > start {
			if c := strings.IndexByte(raw[start:at], ':'); c >= 0 {
				s.passStart, s.passEnd = start+c+1, at
				if at > q {
					q = strings.IndexByte(raw[at:], '?')
					if q >= 0 {
						q += at
					}
				}
			}
		}
	}
	if q >= 0 {
		s.params = params(raw, q+1)
		// kafka:// alone takes parameters named so (key=, the TLS key file; keycol=)
		credentials := start > 0 && !strings.EqualFold(raw[:start-3], "kafka")
		for i := range s.params {
			if credentials && IsStoreCredentialName(s.params[i].name) {
				s.params[i].secret = true
			}
			if s.params[i].secret {
				s.anySecret = true
			}
		}
	}
	return s
}

// holdsPassword tells whether a parameter's value (escaped or not) is itself a URI with a
// password in its user info, as an object store's endpoint=http://KEY:SECRET@host may be.
func holdsPassword(v string) bool {
	if u, err := url.QueryUnescape(v); err == nil {
		v = u
	}
	_, rest, ok := strings.Cut(v, "://")
	if !ok {
		return false
	}
	at := strings.LastIndexByte(rest, '@')
	return at >= 0 && strings.ContainsRune(rest[:at], ':')
}

// params splits raw[from:] at '&' and ';' (net/url refuses ';', a user may still write it).
func params(raw string, from int) []param {
	var ps []param
	for i := from; i <= len(raw); {
		j := strings.IndexAny(raw[i:], "&;")
		end := len(raw)
		if j >= 0 {
			end = i + j
		}
		p := param{start: i, eq: -1, end: end}
		key := raw[i:end]
		if e := strings.IndexByte(key, '='); e >= 0 {
			p.eq, key = i+e, key[:e]
		}
		p.name = key
		if k, err := url.QueryUnescape(key); err == nil {
			p.name = k
		}
		p.secret = IsSecretName(p.name) || p.eq >= 0 && holdsPassword(raw[p.eq+1:end])
		ps = append(ps, p)
		i = end + 1
	}
	return ps
}
