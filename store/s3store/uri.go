package s3store

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/rekey/rekey/source/sourceuri"
)

// target is an s3:// or oss:// URI split into what the client needs. It holds no secret: the
// URI may not carry one (parseURI refuses it).
type target struct {
	scheme    string // "s3" or "oss"
	bucket    string
	prefix    string // "" or ending in "/": the keys of the store's objects start with it
	endpoint  string // "" for AWS's own endpoints; else scheme://host[:port][/path]
	region    string
	pathStyle bool
}

// Environment variables the credentials come from, per scheme.
type credEnv struct{ id, secret, token string }

var credEnvs = map[string]credEnv{
	"s3":  {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"},
	"oss": {"OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET", "OSS_SESSION_TOKEN"},
}

// bucketName is S3's rule for bucket names that work with virtual-hosted addressing (OSS's is
// the same without dots and underscores, which the server refuses itself).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// ossRegion finds the region in an OSS endpoint host: oss-cn-hangzhou.aliyuncs.com,
// s3.oss-cn-hangzhou-internal.aliyuncs.com.
var ossRegion = regexp.MustCompile(`^(?:s3\.)?oss-([a-z0-9-]+?)(?:-internal)?\.aliyuncs\.com$`)

// parseURI reads s3://BUCKET/PREFIX or oss://BUCKET/PREFIX with the parameters endpoint=,
// region= and path_style=. Credentials in the URI are refused, whatever their form: the user
// info (s3://KEY:SECRET@bucket, or s3://KEY@bucket), a parameter named like a secret, or one
// naming an access key. envRegion is AWS_REGION's value, used when region= is not given.
func parseURI(raw, envRegion string) (*target, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "s3" && scheme != "oss") {
		return nil, errors.New("want s3://BUCKET/PREFIX or oss://BUCKET/PREFIX")
	}
	env := credEnvs[scheme]
	if err := sourceuri.CheckSecrets(raw, env.secret); err != nil {
		return nil, err
	}
	if strings.ContainsRune(rest, '#') {
		return nil, errors.New("a '#' has no meaning in an object store URI: write it as %23 in a name")
	}
	path, query, _ := strings.Cut(rest, "?")
	host, prefix, _ := strings.Cut(path, "/")
	if strings.ContainsRune(host, '@') {
		return nil, fmt.Errorf("credentials in the URI (before '@') are refused: they would show in process lists, shell history and logs; remove them and set %s and %s", env.id, env.secret)
	}
	t := &target{scheme: scheme, bucket: host}
	if !bucketName.MatchString(t.bucket) || strings.Contains(t.bucket, "..") {
		return nil, fmt.Errorf("bucket name %q: want 3 to 63 lower-case letters, digits, '-' or '.', as %s://BUCKET/PREFIX", t.bucket, scheme)
	}
	p, err := url.PathUnescape(prefix)
	if err != nil {
		return nil, fmt.Errorf("prefix: %w", err)
	}
	for _, seg := range strings.Split(strings.Trim(p, "/"), "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("prefix %q: '.' and '..' are not folder names in a bucket", p)
		}
		// The bulk load's filePath (a Hadoop path, which drops empty names) and the paths
		// of the next steps would name another prefix than the one the keys are under.
		if seg == "" && strings.Trim(p, "/") != "" {
			return nil, fmt.Errorf("prefix %q: an empty folder name ('//'): write the prefix with single slashes", p)
		}
	}
	if p = strings.Trim(p, "/"); p != "" {
		t.prefix = p + "/"
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	for name, vals := range q {
		if len(vals) != 1 {
			return nil, fmt.Errorf("parameter %q is given %d times: give it once", name, len(vals))
		}
		v := vals[0]
		switch strings.ToLower(name) {
		case "endpoint":
			if t.endpoint, err = parseEndpoint(v); err != nil {
				return nil, err
			}
		case "region":
			t.region = v
		case "path_style":
			switch strings.ToLower(v) {
			case "true", "1":
				t.pathStyle = true
			case "false", "0":
			default:
				return nil, fmt.Errorf("path_style=%q: want true or false", v)
			}
		default:
			n := strings.ToLower(name)
			if strings.Contains(n, "key") || strings.Contains(n, "access") || strings.Contains(n, "session") {
				return nil, fmt.Errorf("parameter %q is refused: credentials come from the environment only; set %s and %s", name, env.id, env.secret)
			}
			return nil, fmt.Errorf("unknown parameter %q: want endpoint=, region= or path_style=", name)
		}
	}
	switch scheme {
	case "oss":
		// OSS serves the S3 API with virtual-hosted addressing only; path style is for
		// S3-compatible test servers given by endpoint=.
		if t.pathStyle && t.endpoint == "" {
			return nil, errors.New("path_style=true: OSS accepts virtual-hosted addressing only; path_style is for an S3-compatible server given by endpoint=")
		}
		if id, ok := strings.CutPrefix(t.region, "oss-"); ok {
			// OSS's tables name each region twice: its region ID (cn-hangzhou), which signs
			// requests and names the S3 API's endpoint, and its "OSS region ID" (oss-cn-hangzhou)
			return nil, fmt.Errorf("region=%s is the OSS region ID: region= takes the region ID, region=%s", t.region, id)
		}
		if t.region == "" && t.endpoint != "" {
			if u, err := url.Parse(t.endpoint); err == nil {
				if m := ossRegion.FindStringSubmatch(u.Hostname()); m != nil {
					t.region = m[1]
				}
			}
		}
		if t.region == "" {
			return nil, errors.New("oss:// needs its region: add ?region=cn-hangzhou (the bucket's region), or ?endpoint= with the OSS endpoint")
		}
		if t.endpoint == "" {
			// OSS's S3-compatible endpoint (help: "use Amazon S3 SDKs to access OSS").
			t.endpoint = "https://s3.oss-" + t.region + ".aliyuncs.com"
		}
	default:
		if t.region == "" {
			t.region = envRegion
		}
		if t.region == "" {
			t.region = "us-east-1"
		}
	}
	return t, nil
}

// parseEndpoint accepts host[:port] (https then) or http(s)://host[:port][/path].
func parseEndpoint(v string) (string, error) {
	if v == "" {
		return "", errors.New("endpoint= is empty: give the server as https://host[:port]")
	}
	if !strings.Contains(v, "://") {
		v = "https://" + v
	}
	u, err := url.Parse(v)
	if err != nil {
		return "", fmt.Errorf("endpoint: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("endpoint %q: want http:// or https://", v)
	}
	if u.User != nil {
		return "", errors.New("endpoint: credentials before '@' are refused; credentials come from the environment only")
	}
	if u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("endpoint %q: want http(s)://host[:port]", v)
	}
	if h := u.Hostname(); h == "" || (strings.Contains(h, ":") && net.ParseIP(h) == nil) {
		return "", fmt.Errorf("endpoint %q: bad host", v)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// location is the URI of an object or folder for people and for the bulkload job: no
// parameters, so no endpoint, and never a secret.
func (t *target) location(name string) string {
	return t.scheme + "://" + t.bucket + "/" + t.prefix + name
}
