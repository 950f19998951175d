// Package s3store is the store.Store of an S3 bucket prefix (s3://BUCKET/PREFIX) or an Alibaba
// Cloud OSS one (oss://BUCKET/PREFIX, through OSS's S3-compatible API).
//
// The client is aws-sdk-go-v2's service/s3, called at the level of single requests
// (CreateMultipartUpload, UploadPart, ...). Why this one:
//   - it exposes every call the store needs, multipart uploads and ListMultipartUploads
//     included, so uploads can stream from a spool the store controls. gocloud.dev/blob hides
//     them behind a writer that buffers its parts in memory (part size x concurrency per open
//     writer) and cannot list or abort another run's unfinished uploads, which resume needs;
//   - its checksum behaviour is a documented switch (RequestChecksumCalculation): since
//     service/s3 v1.73 it sends CRC32 checksums by default, as an aws-chunked trailer on
//     streamed bodies, which OSS refuses ("aws-chunked encoding is not supported",
//     apache/doris#58467, pingcap/tidb#65840). Here checksums are computed only where an
//     operation requires one, and every body is seekable, so no request is ever aws-chunked.
//     minio-go, the other candidate, decides checksums and streaming signatures itself from
//     the transport (aws-chunked signing over plain HTTP; CRC32C on multipart uploads in
//     recent versions), which is harder to keep OSS-safe;
//   - versitygw, the real S3 server the tests run, is built on the same SDK; the standard
//     retryer (exponential backoff with jitter) covers transient errors.
//
// OSS quirk: DeleteObjects honours only Content-MD5 (it ignores x-amz-checksum-*, see
// milvus-io/milvus-storage#500), so Remove adds it.
//
// Memory: rekey keeps one file open per region, hundreds at once, so a writer does not hold a
// part in RAM. Its bytes go to a spool file (unlinked at once, so a crash leaves nothing on the
// disk) through a 32 KiB buffer; when the spool reaches the part size it becomes a part
// uploaded in the background and the next bytes go to a new spool. Parts in flight are capped
// for the whole store (Options.Uploads): a Write that completes a part waits for a free slot,
// which is the backpressure when the network is slower than the writers. Heap per open writer:
// the buffer and a few small structs; temporary disk: at most (open writers + Uploads) parts.
//
// Credentials come from the environment only: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN for s3://; OSS_ACCESS_KEY_ID, OSS_ACCESS_KEY_SECRET and OSS_SESSION_TOKEN
// for oss://. No shared config file, no instance metadata: what rekey uses is what the user set.
package s3store

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.uber.org/zap"

	"github.com/rekey/rekey/store"
)

// Options tune a Store. The zero value gives the defaults.
type Options struct {
	// PartSize is the size of a multipart upload's parts (the last may be smaller), and the
	// size under which Commit sends one PutObject instead. Default 8 MiB; S3 and OSS refuse
	// parts under 5 MiB. Past 1,000 parts the size grows, so an object may reach 10,000 parts.
	PartSize int64
	// Uploads caps the parts being uploaded at once by all writers of the store. Default 16.
	Uploads int
	// SpoolDir holds the writers' spool files. Default os.TempDir().
	SpoolDir string
	// StallTimeout fails a request whose connection moves no byte for this long (a server
	// that hangs). Default 60 s.
	StallTimeout time.Duration
	// MaxAttempts is how often a request is tried before its error is returned. Default 5.
	MaxAttempts int
	// Logger gets the store's debug and warning logs; nil logs nothing.
	Logger *zap.Logger
}

// minPartSize is S3's and OSS's minimum for all parts but the last. Tests may lower it.
var minPartSize int64 = 5 << 20

const (
	defaultPartSize = 8 << 20
	maxParts        = 10000
	deleteBatch     = 1000 // DeleteObjects takes at most 1,000 keys
)

// uploadsPage is how many unfinished uploads a ListMultipartUploads page holds (S3's and OSS's
// most). Tests lower it.
var uploadsPage int32 = 1000

func (o *Options) fill() error {
	if o.PartSize == 0 {
		o.PartSize = defaultPartSize
	}
	if o.PartSize < minPartSize || o.PartSize > 5<<30 {
		return fmt.Errorf("part size %d: want 5 MiB to 5 GiB", o.PartSize)
	}
	if o.Uploads <= 0 {
		o.Uploads = 16
	}
	if o.SpoolDir == "" {
		o.SpoolDir = os.TempDir()
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 60 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return nil
}

// Store is a bucket prefix. It is safe for concurrent use.
type Store struct {
	t       *target
	client  *s3.Client
	opts    Options
	log     *zap.Logger
	secrets []string      // values that must never show in an error
	slots   chan struct{} // a token per part being uploaded
	env     credEnv
	// bodyOpts are the options of the calls that send object bytes (PutObject, UploadPart).
	bodyOpts []func(*s3.Options)
}

var _ store.Store = (*Store)(nil)

// Open connects to s3://BUCKET/PREFIX or oss://BUCKET/PREFIX with the default Options.
// getenv gives the credentials (os.Getenv in rekey; a map in tests).
func Open(ctx context.Context, uri string, getenv func(string) string) (*Store, error) {
	return OpenWith(ctx, uri, getenv, Options{})
}

// Opener is Open as a store.Opener, for store.Register("s3", s3store.Opener) and "oss".
func Opener(ctx context.Context, uri string, getenv func(string) string) (store.Store, error) {
	s, err := Open(ctx, uri, getenv)
	if err != nil {
		return nil, err
	}
	return s, nil
}

var _ store.Opener = Opener

// OpenWith is Open with Options. It checks that the credentials are set and that the bucket
// exists and takes them (one ListObjectsV2 call), so a run fails before it writes anything.
func OpenWith(ctx context.Context, uri string, getenv func(string) string, opts Options) (*Store, error) {
	t, err := parseURI(uri, getenv("AWS_REGION"))
	if err != nil {
		return nil, &store.UsageError{Err: fmt.Errorf("output %s: %w", redactURI(uri), err)}
	}
	if err := opts.fill(); err != nil {
		return nil, fmt.Errorf("output %s: %w", t.location(""), err)
	}
	env := credEnvs[t.scheme]
	creds := aws.Credentials{
		AccessKeyID:     getenv(env.id),
		SecretAccessKey: getenv(env.secret),
		SessionToken:    getenv(env.token),
		Source:          "environment",
	}
	var missing []string
	if creds.AccessKeyID == "" {
		missing = append(missing, env.id)
	}
	if creds.SecretAccessKey == "" {
		missing = append(missing, env.secret)
	}
	if len(missing) > 0 {
		return nil, &store.UsageError{Err: fmt.Errorf("output %s: no credentials: set %s (and %s for temporary credentials) in the environment", t.location(""), strings.Join(missing, " and "), env.token)}
	}
	s := &Store{
		t:     t,
		opts:  opts,
		log:   opts.Logger.Named("store.s3").With(zap.String("bucket", t.bucket), zap.String("prefix", t.prefix)),
		slots: make(chan struct{}, opts.Uploads),
		env:   env,
	}
	if isLoopbackHTTP(t.endpoint) {
		// Over plain HTTP the SDK signs a SHA-256 of every body (over HTTPS it sends
		// UNSIGNED-PAYLOAD and TLS guards the bytes): an extra read and hash of each part,
		// about a third of the upload's CPU. The hash guards bytes crossing a network without
		// TLS; a loopback connection (a gateway on the same host) crosses none.
		s.bodyOpts = append(s.bodyOpts, s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware))
	}
	for _, v := range []string{creds.SecretAccessKey, creds.SessionToken} {
		if len(v) >= 4 { // shorter values would mask innocent text, and are no real secret
			s.secrets = append(s.secrets, v)
		}
	}
	s.client = s3.New(s3.Options{
		Region:       t.region,
		UsePathStyle: t.pathStyle,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return creds, nil
		}),
		HTTPClient: newHTTPClient(opts),
		Retryer: &warnRetryer{RetryerV2: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = opts.MaxAttempts
			o.MaxBackoff = 5 * time.Second
			// No retry quota shared by the client's requests: the default one (500 tokens,
			// 14 a retry, given back only by a retry that succeeds) runs out in a burst of
			// 500s or 503s over the parts in flight, and every request after it then fails
			// at its first error. Each request is tried MaxAttempts times, with backoff.
			o.RateLimiter = ratelimit.None
		}), s: s},
		// Checksums only where an operation requires one (DeleteObjects): OSS refuses the
		// default aws-chunked CRC32 trailers, and the responses of S3-compatible servers often
		// carry none to validate.
		RequestChecksumCalculation:                aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation:                aws.ResponseChecksumValidationWhenRequired,
		DisableLogOutputChecksumValidationSkipped: true,
		Logger: logging.Nop{},
	}, func(o *s3.Options) {
		if t.endpoint != "" {
			o.BaseEndpoint = aws.String(t.endpoint)
		}
	})
	// The probe: one cheap call that needs the bucket, the credentials and the permission to list.
	// A probe that moved no byte for the stall timeout is not tried again: a server that
	// accepts connections and never answers fails the command within one stall timeout.
	_, err = s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket:  aws.String(t.bucket),
		Prefix:  aws.String(t.prefix),
		MaxKeys: aws.Int32(1),
	}, func(o *s3.Options) {
		if r, ok := o.Retryer.(aws.RetryerV2); ok {
			o.Retryer = stallFails{r}
		}
	})
	var ne net.Error
	if err != nil && ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout() {
		return nil, s.redact(fmt.Errorf("open %s: %s does not answer (no byte for %s): check the endpoint and that the server is up, then run the same command again: %w",
			s.Location(""), s.endpointName(), opts.StallTimeout, err))
	}
	if err != nil {
		return nil, s.fail("open", "", err)
	}
	return s, nil
}

// stallFails is a retryer that does not retry a request whose connection stalled.
type stallFails struct{ aws.RetryerV2 }

func (r stallFails) IsErrorRetryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return r.RetryerV2.IsErrorRetryable(err)
}

// warnRetryer is the SDK's standard retryer (exponential backoff with jitter) that logs each
// retry: a run slowed by a flaky link says so.
type warnRetryer struct {
	aws.RetryerV2
	s *Store
}

// RetryDelay is asked only for a retry that follows (IsErrorRetryable is asked of the last
// attempt's error too, which is returned instead): the retry is logged here.
func (r *warnRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	d, derr := r.RetryerV2.RetryDelay(attempt, err)
	if derr == nil {
		r.s.log.Warn("retrying a request", zap.Int("attempt", attempt+1), zap.Duration("after", d), zap.Error(r.s.redact(err)))
	}
	return d, derr
}

// newHTTPClient gives requests timeouts: a dead server fails the dial at once and a hung one
// fails once its connection moved no byte for StallTimeout, rather than hanging the run.
func newHTTPClient(opts Options) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	stall := opts.StallTimeout
	return &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyFromEnvironment,
		TLSClientConfig: testTLSConfig,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &stallConn{Conn: c, stall: stall}, nil
		},
		TLSHandshakeTimeout: 10 * time.Second,
		// Below the stall timeout, so an idle pooled connection is closed before its deadline
		// could fail the next request sent on it.
		IdleConnTimeout:       stall / 2,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   opts.Uploads + 16,
		ExpectContinueTimeout: time.Second,
	}}
}

// isLoopbackHTTP tells whether endpoint is plain HTTP to this host.
func isLoopbackHTTP(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// testTLSConfig lets tests trust an httptest TLS server; nil (the system's roots) otherwise.
var testTLSConfig *tls.Config

// stallConn pushes its deadline forward on every read and write: a request fails only when
// nothing moved for stall, however long a large part takes on a slow link.
type stallConn struct {
	net.Conn
	stall time.Duration
}

func (c *stallConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(c.stall))
	return c.Conn.Read(p)
}

func (c *stallConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(c.stall))
	return c.Conn.Write(p)
}

// key is the object key of a store name.
func (s *Store) key(name string) string { return s.t.prefix + name }

// checkName refuses names that would leave the prefix or name a folder.
func checkName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("object name %q: want a clean relative path such as data/region-0000/part-00000.parquet", name)
	}
	return nil
}

// Scheme is "s3" or "oss"; Bucket the bucket; Region its region; Endpoint the endpoint URL
// given or derived ("" for AWS's own); Key the object key of a name, the prefix included.
// They hold no secret. The bulkload job names its files by them, relative to a data source
// that is the bucket.
func (s *Store) Scheme() string         { return s.t.scheme }
func (s *Store) Bucket() string         { return s.t.bucket }
func (s *Store) Region() string         { return s.t.region }
func (s *Store) Endpoint() string       { return s.t.endpoint }
func (s *Store) Key(name string) string { return s.key(name) }

// Location implements store.Store: s3://bucket/prefix/name, with no parameters and no secret.
func (s *Store) Location(name string) string { return s.t.location(name) }

// Put implements store.Store with one PutObject, which replaces an object atomically.
func (s *Store) Put(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.t.bucket),
		Key:           aws.String(s.key(name)),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}, s.bodyOpts...)
	if err != nil {
		return s.fail("put", name, err)
	}
	return nil
}

var _ store.ConditionalPutter = (*Store)(nil)

// GetVersion implements store.ConditionalPutter: the object and its ETag.
func (s *Store) GetVersion(ctx context.Context, name string) ([]byte, string, error) {
	return s.get(ctx, name)
}

// PutIf implements store.ConditionalPutter with PutObject's If-Match (or If-None-Match: *).
// AWS S3 and versitygw evaluate them; OSS's support is UNCERTAIN (it documents
// x-oss-forbid-overwrite, not If-Match on PutObject): where a server ignores them this is a
// Put, and the lock's read-back is what remains. A server that refuses them (NotImplemented)
// gives an error wrapping errors.ErrUnsupported, and the caller falls back to Put.
func (s *Store) PutIf(ctx context.Context, name string, data []byte, ifVersion string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.t.bucket),
		Key:           aws.String(s.key(name)),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	if ifVersion == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(ifVersion)
	}
	out, err := s.client.PutObject(ctx, in, s.bodyOpts...)
	if code := errorCode(err); code == "PreconditionFailed" || code == "ConditionalRequestConflict" || httpStatus(err) == http.StatusPreconditionFailed {
		return "", fmt.Errorf("put %s: %w (%w)", s.Location(name), store.ErrChanged, err)
	}
	if code := errorCode(err); code == "NotImplemented" || httpStatus(err) == http.StatusNotImplemented {
		return "", fmt.Errorf("put %s: conditional writes: %w (%w)", s.Location(name), errors.ErrUnsupported, err)
	}
	if err != nil {
		return "", s.fail("put", name, err)
	}
	return aws.ToString(out.ETag), nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) ([]byte, error) {
	data, _, err := s.get(ctx, name)
	return data, err
}

func (s *Store) get(ctx context.Context, name string) ([]byte, string, error) {
	if err := checkName(name); err != nil {
		return nil, "", err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.t.bucket), Key: aws.String(s.key(name))})
	if err != nil {
		return nil, "", s.fail("get", name, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", s.fail("get", name, err)
	}
	if out.ContentLength != nil && int64(len(data)) != *out.ContentLength {
		return nil, "", fmt.Errorf("get %s: read %d bytes of %d: the connection broke, try again", s.Location(name), len(data), *out.ContentLength)
	}
	return data, aws.ToString(out.ETag), nil
}

// Stat implements store.Store with HeadObject.
func (s *Store) Stat(ctx context.Context, name string) (store.Info, error) {
	if err := checkName(name); err != nil {
		return store.Info{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.t.bucket), Key: aws.String(s.key(name))})
	if err != nil {
		return store.Info{}, s.fail("stat", name, err)
	}
	return store.Info{Name: name, Size: aws.ToInt64(out.ContentLength), Modified: aws.ToTime(out.LastModified), ETag: aws.ToString(out.ETag)}, nil
}

// List implements store.Store: ListObjectsV2 page by page, without a delimiter so every depth
// is listed. Unfinished multipart uploads are not objects, so they never show.
func (s *Store) List(ctx context.Context, prefix string) ([]store.Info, error) {
	var infos []store.Info
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.t.bucket),
		Prefix: aws.String(s.key(prefix)),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.fail("list", prefix, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			name, ok := strings.CutPrefix(k, s.t.prefix)
			if !ok || name == "" || strings.HasSuffix(name, "/") {
				continue // a folder marker made by a console, not an object of ours
			}
			infos = append(infos, store.Info{Name: name, Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified), ETag: aws.ToString(o.ETag)})
		}
	}
	slices.SortFunc(infos, func(a, b store.Info) int { return strings.Compare(a.Name, b.Name) })
	return infos, nil
}

// Remove implements store.Store with DeleteObjects, 1,000 keys a call. S3 reports no error for
// a key that does not exist.
func (s *Store) Remove(ctx context.Context, names ...string) error {
	for len(names) > 0 {
		n := min(len(names), deleteBatch)
		batch := names[:n]
		names = names[n:]
		objs := make([]types.ObjectIdentifier, 0, len(batch))
		for _, name := range batch {
			if err := checkName(name); err != nil {
				return err
			}
			objs = append(objs, types.ObjectIdentifier{Key: aws.String(s.key(name))})
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(s.t.bucket),
			Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)},
		}, s3.WithAPIOptions(smithyhttp.AddContentChecksumMiddleware))
		if err != nil {
			return s.fail("remove", batch[0], err)
		}
		var failed []string
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			failed = append(failed, fmt.Sprintf("%s (%s: %s)", s.t.location(strings.TrimPrefix(aws.ToString(e.Key), s.t.prefix)), aws.ToString(e.Code), aws.ToString(e.Message)))
		}
		if len(failed) > 0 {
			if len(failed) > 5 {
				failed = append(failed[:5], fmt.Sprintf("and %d more", len(failed)-5))
			}
			return fmt.Errorf("remove: the server kept %s", strings.Join(failed, ", "))
		}
	}
	return nil
}

// Sweep implements store.Store: it aborts every unfinished multipart upload under prefix (a
// crashed run's parts, which the bucket keeps, and bills, until aborted). The spool files of
// a crashed process need nothing: they were unlinked when created.
func (s *Store) Sweep(ctx context.Context, prefix string) error {
	n := 0
	err := s.abortUploads(ctx, s.key(prefix), "sweep: abort the unfinished upload of", nil, func(types.MultipartUpload) { n++ })
	if n > 0 {
		s.log.Info("aborted unfinished uploads", zap.String("under", s.Location(prefix)), zap.Int("uploads", n))
	}
	return err
}

// abortUploads aborts every unfinished multipart upload whose key starts with keyPrefix, but
// those keep (when not nil) holds, and calls aborted for each; op names the step in errors.
//
// Once a page's uploads are aborted, the listing starts again from the first: what is left is
// listed first anyway, and the next page's markers would name an upload just aborted, which a
// server may refuse as a marker (versitygw: "Invalid uploadId marker"), leaving the uploads of
// every later page. Only a page that shows no upload but those already aborted or kept (a
// listing that lags behind the aborts) is passed by its markers.
func (s *Store) abortUploads(ctx context.Context, keyPrefix, op string, keep func(types.MultipartUpload) bool, aborted func(types.MultipartUpload)) error {
	seen := map[[2]string]bool{}
	in := s.uploadsInput(keyPrefix)
	for {
		out, err := s.listUploads(ctx, in)
		if err != nil || out == nil {
			return err
		}
		fresh := false
		for _, u := range out.Uploads {
			id := [2]string{aws.ToString(u.Key), aws.ToString(u.UploadId)}
			if seen[id] {
				continue
			}
			seen[id] = true
			if keep != nil && keep(u) {
				continue
			}
			fresh = true
			_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(s.t.bucket), Key: u.Key, UploadId: u.UploadId,
			})
			if err != nil && !isCode(err, "NoSuchUpload") {
				return s.fail(op, strings.TrimPrefix(aws.ToString(u.Key), s.t.prefix), err)
			}
			aborted(u)
		}
		if !morePages(out) {
			return nil
		}
		if fresh {
			in.KeyMarker, in.UploadIdMarker = nil, nil
		} else {
			in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
		}
	}
}

// Unfinished lists the names of the multipart uploads under prefix that were neither completed
// nor aborted (what Sweep would abort): after a run, or a resume, there must be none.
//
// Its pages go on from the last key listed alone: the uploads of that key on the next page are
// of a name already listed, and an upload-id marker is what some servers mishandle (versitygw
// leaves the marker key's uploads out before looking for the marker in them, and refuses every
// second page: "Invalid uploadId marker").
func (s *Store) Unfinished(ctx context.Context, prefix string) ([]string, error) {
	var names []string
	in := s.uploadsInput(s.key(prefix))
	for {
		out, err := s.listUploads(ctx, in)
		if err != nil || out == nil {
			return names, err
		}
		for _, u := range out.Uploads {
			names = append(names, strings.TrimPrefix(aws.ToString(u.Key), s.t.prefix))
		}
		if !morePages(out) || aws.ToString(out.NextKeyMarker) <= aws.ToString(in.KeyMarker) {
			return names, nil // the last page, or one that does not go on (no later key)
		}
		in.KeyMarker = out.NextKeyMarker
	}
}

func (s *Store) uploadsInput(keyPrefix string) *s3.ListMultipartUploadsInput {
	return &s3.ListMultipartUploadsInput{Bucket: aws.String(s.t.bucket), Prefix: aws.String(keyPrefix), MaxUploads: aws.Int32(uploadsPage)}
}

// listUploads lists a page of unfinished uploads; nil, with no error, when there are none.
func (s *Store) listUploads(ctx context.Context, in *s3.ListMultipartUploadsInput) (*s3.ListMultipartUploadsOutput, error) {
	out, err := s.client.ListMultipartUploads(ctx, in)
	if isCode(err, "NoSuchUpload") {
		return nil, nil // gofakes3's answer for a bucket that never had an upload; S3 lists none
	}
	if err != nil {
		return nil, s.fail("list the unfinished uploads under", strings.TrimPrefix(aws.ToString(in.Prefix), s.t.prefix), err)
	}
	return out, nil
}

// morePages tells whether a page of unfinished uploads has a next one.
func morePages(out *s3.ListMultipartUploadsOutput) bool {
	return aws.ToBool(out.IsTruncated) && (out.NextKeyMarker != nil || out.NextUploadIdMarker != nil)
}

// Open implements store.Store: a Reader whose ReadAt is a ranged GetObject, pinned to the
// object's ETag so a replaced object fails the read instead of mixing two versions. ctx
// governs every ReadAt.
func (s *Store) Open(ctx context.Context, name string) (store.Reader, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.t.bucket), Key: aws.String(s.key(name))})
	if err != nil {
		return nil, s.fail("open", name, err)
	}
	return &reader{s: s, ctx: ctx, name: name, size: aws.ToInt64(out.ContentLength), etag: out.ETag}, nil
}

type reader struct {
	s    *Store
	ctx  context.Context
	name string
	size int64
	etag *string
}

func (r *reader) Size() int64  { return r.size }
func (r *reader) Close() error { return nil }

// ETag implements store.VersionedReader: the version every ReadAt is pinned to.
func (r *reader) ETag() string { return aws.ToString(r.etag) }

var _ store.VersionedReader = (*reader)(nil)

func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", r.s.Location(r.name), off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	end := min(off+int64(len(p)), r.size)
	out, err := r.s.client.GetObject(r.ctx, &s3.GetObjectInput{
		Bucket:  aws.String(r.s.t.bucket),
		Key:     aws.String(r.s.key(r.name)),
		Range:   aws.String(fmt.Sprintf("bytes=%d-%d", off, end-1)),
		IfMatch: r.etag,
	})
	if r.etag != nil && (isCode(err, "PreconditionFailed") || httpStatus(err) == http.StatusPreconditionFailed) {
		return 0, fmt.Errorf("read %s: the object changed while it was read (it is no longer ETag %s, the version opened): "+
			"run again once nothing replaces it: %w", r.s.Location(r.name), *r.etag, r.s.redact(err))
	}
	if err != nil {
		return 0, r.s.fail("read", r.name, err)
	}
	defer out.Body.Close()
	// a server that ignores If-Match answers with the version it has: its ETag tells
	if r.etag != nil && out.ETag != nil && *out.ETag != *r.etag {
		return 0, fmt.Errorf("read %s: the object changed while it was read (ETag %s when opened, %s now): "+
			"run again once nothing replaces it", r.s.Location(r.name), *r.etag, *out.ETag)
	}
	// a server (or a proxy) that ignores Range answers with the object from its first byte
	if !rangeStartsAt(aws.ToString(out.ContentRange), off) {
		return 0, fmt.Errorf("read %s: asked for bytes %d-%d, the server at %s answered with %s: it does not honour "+
			"the Range header of a read, which rekey needs; read the object from a server (or without a proxy) that does, or copy it to a local file",
			r.s.Location(r.name), off, end-1, r.s.endpointName(), rangeAnswer(out.ContentRange))
	}
	n, err := io.ReadFull(out.Body, p[:end-off])
	if err != nil {
		return n, r.s.fail("read", r.name, err)
	}
	if end-off < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// rangeStartsAt tells whether a ranged GetObject's Content-Range ("bytes 500-599/1000") starts at
// off. An answer with none (200, the whole object) starts at 0.
func rangeStartsAt(contentRange string, off int64) bool {
	if contentRange == "" {
		return off == 0
	}
	first, _, ok := strings.Cut(strings.TrimPrefix(contentRange, "bytes "), "-")
	return ok && first == strconv.FormatInt(off, 10)
}

func rangeAnswer(contentRange *string) string {
	if contentRange == nil {
		return "the whole object"
	}
	return "Content-Range " + *contentRange
}

// fail wraps an error of op on the object name (or on the store when name is "") with what to
// do about it, and masks any secret the server echoed.
func (s *Store) fail(op, name string, err error) error {
	loc := s.Location(name)
	var wrapped error
	var dns *net.DNSError
	switch code := errorCode(err); {
	case s.t.endpoint != "" && !s.t.pathStyle && errors.As(err, &dns) && strings.HasPrefix(dns.Name, s.t.bucket+"."):
		// virtual-hosted addressing names the bucket as a host of its own under the endpoint's
		wrapped = fmt.Errorf("%s %s: the bucket's host name %s (the bucket before the endpoint's host) does not resolve: "+
			"for a server that takes the bucket in the path (MinIO, Ceph, versitygw, most gateways), add path_style=true to the URI: %w", op, loc, dns.Name, err)
	case code == "NoSuchBucket":
		wrapped = fmt.Errorf("%s %s: bucket %q does not exist at %s: create it first (rekey does not create buckets) or fix the URI: %w", op, loc, s.t.bucket, s.endpointName(), err)
	case errors.Is(err, http.ErrSchemeMismatch):
		wrapped = fmt.Errorf("%s %s: the server at %s speaks plain HTTP, not HTTPS (an endpoint= without a scheme is https): write endpoint=http://%s: %w",
			op, loc, s.t.endpoint, strings.TrimPrefix(s.t.endpoint, "https://"), err)
	case code == "PermanentRedirect" || httpStatus(err) == http.StatusMovedPermanently ||
		(code == "AuthorizationHeaderMalformed" && bucketRegion(err) != ""):
		// S3 names the bucket's region in a header of its answer
		region := bucketRegion(err)
		if region == "" {
			region = "REGION"
		}
		wrapped = fmt.Errorf("%s %s: bucket %q is not in region %s, which requests are signed for: add ?region=%s (the bucket's region) to the URI: %w", op, loc, s.t.bucket, s.t.region, region, err)
	case credentialCodes[code]:
		wrapped = fmt.Errorf("%s %s: the server refused the credentials from %s/%s (%s): check them, and %s when they are temporary: %w", op, loc, s.env.id, s.env.secret, code, s.env.token, err)
	case code == "AccessDenied" || code == "Forbidden" || httpStatus(err) == http.StatusForbidden:
		wrapped = fmt.Errorf("%s %s: access denied: the key in %s needs permission to list, read, write and delete objects and multipart uploads under %s: %w", op, loc, s.env.id, s.Location(""), err)
	case name != "" && (code == "NoSuchKey" || code == "NotFound" || (code == "" && httpStatus(err) == http.StatusNotFound)):
		wrapped = fmt.Errorf("%s %s: %w (%w)", op, loc, store.ErrNotExist, err)
	default:
		wrapped = fmt.Errorf("%s %s: %w", op, loc, err)
	}
	return s.redact(wrapped)
}

func (s *Store) endpointName() string {
	if s.t.endpoint != "" {
		return s.t.endpoint
	}
	return "AWS region " + s.t.region
}

// redactedError masks secrets in an error's text and keeps its chain for errors.Is/As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (s *Store) redact(err error) error {
	msg := err.Error()
	masked := msg
	for _, v := range s.secrets {
		masked = strings.ReplaceAll(masked, v, "xxxxx")
	}
	if masked == msg {
		return err
	}
	return &redactedError{msg: masked, err: err}
}

// redactURI masks what parseURI refuses before an error quotes the URI.
func redactURI(uri string) string {
	scheme, rest, ok := strings.Cut(uri, "://")
	if ok {
		host, tail, _ := strings.Cut(rest, "/")
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			uri = scheme + "://xxxxx@" + host[at+1:] + "/" + tail
		}
	}
	// Every parameter value but the known, harmless ones could be a credential.
	base, query, ok := strings.Cut(uri, "?")
	if !ok {
		return uri
	}
	var kept []string
	for _, p := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(p, "=")
		switch strings.ToLower(k) {
		case "endpoint", "region", "path_style":
			if strings.Contains(v, "@") || strings.Contains(v, "%40") { // user:password@host
				p = k + "=xxxxx"
			}
			kept = append(kept, p)
		default:
			kept = append(kept, k+"=xxxxx")
		}
	}
	return base + "?" + strings.Join(kept, "&")
}

// bucketRegion is the bucket's region as S3 names it in the answer refusing a request signed for
// another (the x-amz-bucket-region header); "" when the answer does not.
func bucketRegion(err error) string {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		if r := re.Response.Header.Get("x-amz-bucket-region"); regionName.MatchString(r) {
			return r
		}
	}
	return ""
}

// regionName is what a region's name looks like (eu-west-1, cn-hangzhou): nothing else is quoted
// in an error as one.
var regionName = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)

func errorCode(err error) string {
	var api interface{ ErrorCode() string }
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func isCode(err error, code string) bool { return errorCode(err) == code }

func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// credentialCodes are the error codes of refused credentials: S3's, OSS's and versitygw's.
var credentialCodes = map[string]bool{
	"InvalidAccessKeyId":    true,
	"SignatureDoesNotMatch": true,
	"InvalidToken":          true,
	"ExpiredToken":          true,
	"TokenRefreshRequired":  true,
	"InvalidSecurity":       true,
	"SecurityTokenExpired":  true, // OSS
	"InvalidSecurityToken":  true, // OSS
	"XAdminUserNotFound":    true, // versitygw, for an unknown access key
}
