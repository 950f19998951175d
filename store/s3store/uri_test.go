package s3store

import (
	"context"
	"strings"
	"testing"
)

func TestParseURI(t *testing.T) {
	for _, tc := range []struct {
		uri, envRegion string
		want           target
	}{
		{"s3://bucket", "", target{scheme: "s3", bucket: "bucket", region: "us-east-1"}},
		{"s3://bucket/", "eu-west-1", target{scheme: "s3", bucket: "bucket", region: "eu-west-1"}},
		{"s3://my.bucket/a/b/", "", target{scheme: "s3", bucket: "my.bucket", prefix: "a/b/", region: "us-east-1"}},
		{"s3://bucket/run%201?region=ap-south-1", "eu-west-1", target{scheme: "s3", bucket: "bucket", prefix: "run 1/", region: "ap-south-1"}},
		{"s3://rekey/out?endpoint=http://127.0.0.1:9000&path_style=true", "", target{scheme: "s3", bucket: "rekey", prefix: "out/", endpoint: "http://127.0.0.1:9000", region: "us-east-1", pathStyle: true}},
		{"s3://b01/p?endpoint=minio.local:9000", "", target{scheme: "s3", bucket: "b01", prefix: "p/", endpoint: "https://minio.local:9000", region: "us-east-1"}},
		// OSS: virtual-hosted, the S3-compatible endpoint of the region by default
		{"oss://lindorm-bulk/job1?region=cn-hangzhou", "", target{scheme: "oss", bucket: "lindorm-bulk", prefix: "job1/", endpoint: "https://s3.oss-cn-hangzhou.aliyuncs.com", region: "cn-hangzhou"}},
		{"oss://b-1/x?endpoint=https://oss-cn-beijing-internal.aliyuncs.com", "", target{scheme: "oss", bucket: "b-1", prefix: "x/", endpoint: "https://oss-cn-beijing-internal.aliyuncs.com", region: "cn-beijing"}},
		{"oss://b-1/x?endpoint=s3.oss-ap-southeast-1.aliyuncs.com", "", target{scheme: "oss", bucket: "b-1", prefix: "x/", endpoint: "https://s3.oss-ap-southeast-1.aliyuncs.com", region: "ap-southeast-1"}},
		{"oss://rekey/out?endpoint=http://127.0.0.1:9000&path_style=true&region=cn-hangzhou", "", target{scheme: "oss", bucket: "rekey", prefix: "out/", endpoint: "http://127.0.0.1:9000", region: "cn-hangzhou", pathStyle: true}},
	} {
		got, err := parseURI(tc.uri, tc.envRegion)
		if err != nil {
			t.Errorf("parseURI(%q): %v", tc.uri, err)
			continue
		}
		if *got != tc.want {
			t.Errorf("parseURI(%q) = %+v, want %+v", tc.uri, *got, tc.want)
		}
	}
}

// Credentials in the URI are refused in every form, and the error neither quotes them nor
// fails to say which variables to set instead.
func TestParseURIRefusesCredentials(t *testing.T) {
	const secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
	for _, tc := range []struct{ uri, wantEnv string }{
		{"s3://AKIAEXAMPLE:" + secret + "@bucket/out", "AWS_SECRET_ACCESS_KEY"},
		{"s3://AKIAEXAMPLE@bucket/out", "AWS_SECRET_ACCESS_KEY"},
		{"s3://bucket/out?secret_access_key=" + secret, "AWS_SECRET_ACCESS_KEY"},
		{"s3://bucket/out?aws_secret=" + secret, "AWS_SECRET_ACCESS_KEY"},
		{"s3://bucket/out?session_token=" + secret, "AWS_SECRET_ACCESS_KEY"},
		{"s3://bucket/out?access_key_id=" + secret, "AWS_SECRET_ACCESS_KEY"},
		{"oss://bucket/out?region=cn-hangzhou&AccessKeySecret=" + secret, "OSS_ACCESS_KEY_SECRET"},
		{"oss://bucket/out?region=cn-hangzhou&accessKeyId=" + secret, "OSS_ACCESS_KEY_SECRET"},
		{"oss://id:" + secret + "@bucket/out?region=cn-hangzhou", "OSS_ACCESS_KEY_SECRET"},
		{"s3://bucket/out?endpoint=http://id:" + secret + "@127.0.0.1:9000", "AWS_SECRET_ACCESS_KEY"},
	} {
		_, err := Open(context.Background(), tc.uri, func(string) string { return "" })
		if err == nil {
			t.Errorf("Open(%q) accepted credentials in the URI", tc.uri)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Open(%q): the error quotes the secret: %v", tc.uri, err)
		}
		if !strings.Contains(err.Error(), tc.wantEnv) && !strings.Contains(err.Error(), "environment") {
			t.Errorf("Open(%q): %v, want it to name %s or the environment", tc.uri, err, tc.wantEnv)
		}
	}
}

func TestParseURIErrors(t *testing.T) {
	for _, tc := range []struct{ uri, want string }{
		{"gs://bucket/x", "want s3://"},
		{"s3://", "bucket name"},
		{"s3://B/x", "bucket name"},
		{"s3://ab/x", "bucket name"},
		{"s3://bucket/../x", "'..'"},
		{"s3://bucket/runs//x", "empty folder name"},
		{"oss://bucket/runs%2F%2Fx?region=cn-hangzhou", "empty folder name"},
		{"s3://bucket/x?part_size=5", "unknown parameter"},
		{"s3://bucket/x?region=a&region=b", "once"},
		{"s3://bucket/x?path_style=maybe", "path_style"},
		{"s3://bucket/x?endpoint=ftp://host", "http"},
		{"s3://bucket/x#frag", "'#'"},
		{"oss://bucket/x", "region"},
		{"oss://bucket/x?region=cn-hangzhou&path_style=true", "virtual-hosted"},
		// the OSS region ID, as OSS's endpoint tables and its own SDKs' examples name it: the S3
		// API's endpoint would be s3.oss-oss-cn-hangzhou.aliyuncs.com, which does not exist
		{"oss://bucket/x?region=oss-cn-hangzhou", "region=cn-hangzhou"},
		{"oss://bucket/x?region=oss-cn-hangzhou&endpoint=https://s3.oss-cn-hangzhou.aliyuncs.com", "region=cn-hangzhou"},
	} {
		_, err := parseURI(tc.uri, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseURI(%q) = %v, want an error saying %q", tc.uri, err, tc.want)
		}
	}
}

func TestLocationHoldsNoParameters(t *testing.T) {
	tg, err := parseURI("s3://rekey/run/1?endpoint=http://127.0.0.1:9000&path_style=true&region=x", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"":              "s3://rekey/run/1/",
		"data/":         "s3://rekey/run/1/data/",
		"manifest.json": "s3://rekey/run/1/manifest.json",
	} {
		if got := tg.location(name); got != want {
			t.Errorf("location(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestRedactURI(t *testing.T) {
	for in, want := range map[string]string{
		"s3://k:s@b/p?region=r":             "s3://xxxxx@b/p?region=r",
		"s3://b/p?region=r&token=abc":       "s3://b/p?region=r&token=xxxxx",
		"oss://b/p?endpoint=h&accessKey=ab": "oss://b/p?endpoint=h&accessKey=xxxxx",
		"s3://b/p":                          "s3://b/p",
	} {
		if got := redactURI(in); got != want {
			t.Errorf("redactURI(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactURIEndpointUserInfo(t *testing.T) {
	if got := redactURI("s3://b/p?endpoint=http://u:pw@h:9000"); got != "s3://b/p?endpoint=xxxxx" {
		t.Errorf("redactURI kept the endpoint's password: %q", got)
	}
}

// Only plain HTTP to this host skips the payload hash; every other endpoint keeps the SDK's
// choice (a SHA-256 over HTTP, UNSIGNED-PAYLOAD under TLS).
func TestIsLoopbackHTTP(t *testing.T) {
	for endpoint, want := range map[string]bool{
		"http://127.0.0.1:7070":                   true,
		"http://127.1.2.3":                        true,
		"http://[::1]:9000":                       true,
		"http://localhost:9000":                   true,
		"https://127.0.0.1:7070":                  false,
		"http://10.0.0.5:9000":                    false,
		"http://minio.internal":                   false,
		"https://s3.oss-cn-hangzhou.aliyuncs.com": false,
		"": false,
	} {
		if got := isLoopbackHTTP(endpoint); got != want {
			t.Errorf("isLoopbackHTTP(%q) = %v, want %v", endpoint, got, want)
		}
	}
}
