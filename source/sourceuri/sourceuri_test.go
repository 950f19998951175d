package sourceuri

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const secret = "hunter2"

// secretURIs hold the secret in every spelling that errors once echoed, and a few more that a user
// may write.
var secretURIs = []string{
	"kafka://b1:9092/t?sasl=plain&user=u&password=" + secret,
	"kafka://b1:9092/t?sasl=plain&user=u&PASSWORD=" + secret,
	"kafka://b1:9092/t?sasl=plain&user=u&pass%77ord=" + secret,
	"kafka://b1:9092/t?password=x&user=u&password=" + secret, // repeated: the first alone was masked
	"kafka://b1:9092/t?password=" + secret + "&password=" + secret,
	"kafka://u:" + secret + "@b1:9092/t",
	"kafka://u:" + secret + "@b1:9092,b2/t?format=json",
	"kafka://u:" + secret + "@b1:9092", // no topic
	"kafka://u:" + secret + "@b1:9092?format=json",
	"kafka://b1:9092/t?sasl.password=" + secret,
	"kafka://b1:9092/t?sasl.jaas.config=password%3D" + secret,
	"kafka://b1:9092/t?token=" + secret,
	"kafka://b1:9092/t?Pass+Word=" + secret,
	"kafka://b1:9092/t?user=u;password=" + secret, // ';' is refused by net/url
	"kafka://b1:9092/t?password" + secret,         // a forgotten '='
	"kafka://u:hun/ter2@b1:9092/t",                // characters a password may hold, unescaped
	"kafka://u:hun?ter2@b1:9092/t",
	"kafka://u:hun#ter2@b1:9092/t",
	"kafka://u:hun@ter2@b1:9092/t",
	"kafka://u:hun%40ter2@b1:9092/t",
	"cassandra://h/ks/t?PASSWORD=" + secret,
	"cassandra://h/ks/t?password=" + secret,
	"cassandra://app:" + secret + "@h1,h2:9042/ks/t",
	"cassandra://h/ks/t?pwd=" + secret + "&consistency=one",
	// a URI in a parameter's value with a password in its user info: an object store's endpoint=
	"s3://bucket/p?endpoint=http://AKIA:" + secret + "@127.0.0.1:9000",
	"s3://bucket/p?region=r&endpoint=http%3A%2F%2FAKIA%3A" + secret + "%40h&path_style=true",
	"oss://bucket/p?endpoint=https://AKIA:" + secret + "@h/x&region=cn-hangzhou",
	// an object store's parameter naming a key, an access or a session: s3store refuses it as a credential
	"s3://bucket/p?access_key=" + secret,
	"S3://bucket/p?region=r&session=" + secret,
	"oss://bucket/p/*.csv?format=csv&AccessKeyId=" + secret,
	"s3://bucket/p?key=" + secret,
	"mysql://u@h/db?access_key=" + secret,
}

// secretParts are the pieces of the secret a malformed URI may split it into.
func hasSecret(s string) bool {
	return strings.Contains(s, secret) || strings.Contains(s, "hun") || strings.Contains(s, "ter2")
}

func TestRedact(t *testing.T) {
	for _, uri := range secretURIs {
		got := Redact(uri)
		if hasSecret(got) {
			t.Errorf("Redact(%s) = %s: the secret shows", uri, got)
		}
		if !strings.Contains(got, Mask) {
			t.Errorf("Redact(%s) = %s: nothing masked", uri, got)
		}
	}
	for uri, want := range map[string]string{
		"kafka://u:pw@b1:9092/t?format=json":                 "kafka://u:xxxxx@b1:9092/t?format=json",
		"kafka://b1/t?password=a&format=json&PASSWORD=b":     "kafka://b1/t?password=xxxxx&format=json&PASSWORD=xxxxx",
		"kafka://b1/t?sasl=plain&user=me@corp.com":           "kafka://b1/t?sasl=plain&user=me@corp.com", // an '@' in a value is no user info
		"s3://b/p?endpoint=http://AKIA@h:9000":               "s3://b/p?endpoint=http://AKIA@h:9000",     // a user name alone is no secret
		"s3://b/p/*.csv?format=csv&header=false&region=r":    "s3://b/p/*.csv?format=csv&header=false&region=r",
		"kafka://b1/t?tls=true&cert=c.pem&key=k.pem":         "kafka://b1/t?tls=true&cert=c.pem&key=k.pem", // a key file's name, not a key
		"s3://b/p?endpoint=http://u:pw@h:9000&region=r":      "s3://b/p?endpoint=xxxxx&region=r",
		"cassandra://app@h1,h2:9042/ks/t?consistency=quorum": "cassandra://app@h1,h2:9042/ks/t?consistency=quorum",
		"gen:orders?rows=10":                                 "gen:orders?rows=10",
		"file:/data/user@corp:x/orders.csv":                  "file:/data/user@corp:x/orders.csv", // no authority, no user info
		"":                                                   "",
	} {
		if got := Redact(uri); got != want {
			t.Errorf("Redact(%s) = %s, want %s", uri, got, want)
		}
	}
}

func TestParseRefusesPasswords(t *testing.T) {
	for _, uri := range secretURIs {
		scheme, _, _ := strings.Cut(uri, "://")
		_, err := Parse(uri, scheme, "REKEY_X_PASSWORD")
		if !errors.Is(err, ErrPassword) {
			t.Errorf("%s: %v, want ErrPassword", uri, err)
			continue
		}
		if hasSecret(err.Error()) || !strings.Contains(err.Error(), "REKEY_X_PASSWORD") {
			t.Errorf("%s: %v", uri, err)
		}
	}
}

func TestParse(t *testing.T) {
	u, err := Parse("kafka://al%20ice@b1:9092, b2,/my%2Ftopic?Format=json&GROUP=g&group=h&user=me@corp.com", "kafka", "E")
	if err != nil {
		t.Fatal(err)
	}
	want := &URI{User: "al ice", Hosts: []string{"b1:9092", "b2"}, Path: "my%2Ftopic",
		Query: map[string][]string{"format": {"json"}, "group": {"g", "h"}, "user": {"me@corp.com"}}}
	if !reflect.DeepEqual(u, want) {
		t.Errorf("got %+v\nwant %+v", u, want)
	}
	u, err = Parse("cassandra://h1,h2:9142,[::1]?dc=x", "cassandra", "E")
	if err != nil || strings.Join(u.Hosts, " ") != "h1 h2:9142 [::1]" || u.Path != "" || u.Query.Get("dc") != "x" {
		t.Errorf("%+v %v", u, err)
	}
	for uri, want := range map[string]string{
		"cql://h/ks/t":           "want cassandra://",
		"cassandra://h/ks/t#x":   "'#'",
		"cassandra://h/ks/t?a=%": "parameters",
		"cassandra://a%zz@h/k/t": "user name",
	} {
		if _, err := Parse(uri, "cassandra", "E"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", uri, err, want)
		}
	}
}

func TestIsSecretName(t *testing.T) {
	for _, n := range []string{"password", "PASSWORD", "passwd", "pwd", "pw", "pass", "sasl.password", "sasl_jaas_config",
		"secret", "client_secret", "token", "access-token", "credentials", "api_key", "Pass Word"} {
		if !IsSecretName(n) {
			t.Errorf("%q is not taken for a secret", n)
		}
	}
	// every parameter the sources accept
	for _, n := range []string{"group", "format", "keycol", "start", "max", "sasl", "user", "tls", "ca", "cert", "key",
		"servername", "insecure", "client_id", "consistency", "dc", "page_size", "pagesize", "splits", "workers",
		"concurrency", "rate", "writetime", "ttl", "shard", "retries", "timeout", "ssl", "proto", "protocol", "rows", "seed"} {
		if IsSecretName(n) {
			t.Errorf("%q is taken for a secret", n)
		}
	}
}
