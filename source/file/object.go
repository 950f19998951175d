package file

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"
)

// Object is a file in a bucket (s3://, oss://), read through the store with ranged reads: nothing
// is copied to local disk, and memory stays bounded by the read-ahead.
type Object struct {
	Store store.Store
	Info  store.Info // as listed; Info.Info.Name is relative to the store's root
}

// readAhead is how much of an object is fetched per request, and how many requests run ahead of
// the parser: large ranged reads keep a bucket's latency off the read rate.
var readAheadBlock int64 = 8 << 20 // a variable for tests

const readAheadDepth = 2

// objectReader reads an object sequentially from an offset to an end, readAheadDepth blocks ahead.
// A block's buffer, once read out, is fetched into again: the reader holds readAheadDepth+2
// buffers however large the object, instead of leaving the collector a fresh 8 MiB each time.
type objectReader struct {
	cancel context.CancelFunc
	blocks chan objectBlock
	spare  chan []byte // buffers read out, for the next fetches
	cur    []byte
	whole  []byte // the buffer cur is in
	err    error
	r      store.Reader
	// stopped, set before blocks is closed, is why the read-ahead ended before the range's end
	// (its context ended): the reader's error then, not io.EOF, which would pass a cut read for
	// the whole object.
	stopped error
}

type objectBlock struct {
	data []byte
	err  error
}

// open opens the object for reads at any offset, refusing it when it is no longer the version
// listed: the run's identity (which a resume and merge compare) records that version's size and
// ETag, and a part's record boundaries are found in it. The store pins each read to the version
// it opened, so a rewrite after this check fails the reads.
func (o *Object) open(ctx context.Context) (store.Reader, error) {
	r, err := o.Store.Open(ctx, o.Info.Name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", o.Store.Location(o.Info.Name), err)
	}
	if r.Size() != o.Info.Size {
		r.Close()
		return nil, fmt.Errorf("%s changed since it was listed (%d bytes, now %d): was it replaced?", o.Store.Location(o.Info.Name), o.Info.Size, r.Size())
	}
	if v, ok := r.(store.VersionedReader); ok && o.Info.ETag != "" && !sameETag(v.ETag(), o.Info.ETag) {
		r.Close()
		return nil, fmt.Errorf("%s changed since it was listed (ETag %s, now %s, of the same size): was it written again?", o.Store.Location(o.Info.Name), o.Info.ETag, v.ETag())
	}
	return r, nil
}

// sameETag compares two ETags of an object as a listing and a HeadObject give them, which some
// servers quote or case differently.
func sameETag(a, b string) bool {
	return strings.EqualFold(strings.Trim(a, `"`), strings.Trim(b, `"`))
}

func openObject(ctx context.Context, o *Object, off, end int64) (io.ReadCloser, error) {
	r, err := o.open(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	or := &objectReader{cancel: cancel, blocks: make(chan objectBlock, readAheadDepth), spare: make(chan []byte, readAheadDepth+2), r: r}
	go func() {
		defer close(or.blocks)
		end := min(end, r.Size())
		for at := off; at < end; at += readAheadBlock {
			need := min(readAheadBlock, end-at)
			var buf []byte
			select {
			case buf = <-or.spare:
			default:
			}
			if int64(cap(buf)) < need {
				buf = make([]byte, need)
			}
			buf = buf[:need]
			n, err := r.ReadAt(buf, at)
			if errors.Is(err, io.EOF) && n == len(buf) {
				err = nil
			}
			select {
			case or.blocks <- objectBlock{buf[:n], err}:
			case <-ctx.Done():
				or.stopped = fmt.Errorf("read %s at offset %d: %w", o.Store.Location(o.Info.Name), at, ctx.Err())
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return or, nil
}

func (o *objectReader) Read(p []byte) (int, error) {
	for len(o.cur) == 0 {
		if o.whole != nil {
			select {
			case o.spare <- o.whole[:cap(o.whole)]:
			default:
			}
			o.whole = nil
		}
		if o.err != nil {
			return 0, o.err
		}
		b, ok := <-o.blocks
		if !ok {
			o.err = io.EOF
			if o.stopped != nil {
				o.err = o.stopped
			}
			continue
		}
		o.cur, o.whole, o.err = b.data, b.data, b.err
	}
	n := copy(p, o.cur)
	o.cur = o.cur[n:]
	return n, nil
}

func (o *objectReader) Close() error {
	o.cancel()
	for range o.blocks { // let the read-ahead goroutine end
	}
	return o.r.Close()
}

// IsObjectURI tells whether a --source names files in a bucket.
func IsObjectURI(uri string) bool { return store.IsBucket(uri) }

func knownExtension(name string) bool {
	_, _, _, err := parseFormat(name, "")
	return err == nil
}

// storeParams are the parameters of a bucket URI that belong to the store, not to the files.
var storeParams = map[string]bool{"endpoint": true, "region": true, "path_style": true}

// SplitObjectURI splits s3://BUCKET/PATTERN?params into the store's URI (the bucket and the
// pattern's folder, with endpoint=, region=, path_style=), the pattern of object names under that
// folder ("" for every data file in it, as for a directory), and the file: URI of the rest
// (format=, the CSV dialect, skip=, limit=).
func SplitObjectURI(uri string) (storeURI, pattern, fileURI string, err error) {
	scheme, rest, _ := strings.Cut(uri, "://")
	loc, query, _ := strings.Cut(rest, "?")
	// The file parameters pass on as written, for ParseURI to decode as it decodes a local
	// file's: decoded here as a query (url.ParseQuery), delimiter=%20 came out as '+' and
	// delimiter=; was refused.
	storeQ, fileQ := url.Values{}, []string{}
	for _, kv := range strings.Split(query, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		// a credential goes to the store, which refuses it naming the variables to set
		credential := sourceuri.IsSecretName(k) || sourceuri.IsStoreCredentialName(k)
		if !storeParams[k] && !credential {
			fileQ = append(fileQ, k+"="+v)
			continue
		}
		dv, err := url.QueryUnescape(v)
		if err != nil {
			return "", "", "", fmt.Errorf("--source %s: parameter %s: %w", sourceuri.Redact(uri), k, err)
		}
		storeQ.Add(k, dv)
	}
	sort.Strings(fileQ)
	bucket, key, _ := strings.Cut(loc, "/")
	dir := key
	switch base := path.Base(key); {
	case hasGlobMeta(key):
		// the folder is what precedes the first path element holding a wildcard
		i := strings.IndexAny(key, "*?[")
		j := strings.LastIndexByte(key[:i], '/')
		dir, pattern = key[:j+1], key[j+1:]
	case key != "" && !strings.HasSuffix(key, "/") && knownExtension(base):
		// one object named as such
		dir, pattern = path.Dir(key), base
		if dir == "." {
			dir = ""
		}
	}
	// the folder is decoded by the store (s3store's parseURI), the name here: both as a URI's
	// path, so %20 is a space and %25 a '%' in either
	if pattern, err = unescapePattern(pattern); err != nil {
		return "", "", "", fmt.Errorf("--source %s: %w", sourceuri.Redact(uri), err)
	}
	storeURI = scheme + "://" + bucket + "/" + strings.Trim(dir, "/")
	if len(storeQ) > 0 {
		storeURI += "?" + storeQ.Encode()
	}
	fileURI = "file:" + scheme + "://" + loc
	if len(fileQ) > 0 {
		fileURI += "?" + strings.Join(fileQ, "&")
	}
	return storeURI, pattern, fileURI, nil
}

// unescapePattern decodes the %XX escapes of a pattern of object names as a URI path's: a
// wildcard written escaped (%2A) is the character itself, escaped for path.Match.
func unescapePattern(p string) (string, error) {
	if !strings.Contains(p, "%") {
		return p, nil
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			b.WriteByte(p[i])
			continue
		}
		var dec [1]byte
		end := min(i+3, len(p))
		if _, err := hex.Decode(dec[:], []byte(p[i+1:end])); err != nil || end-i < 3 {
			return "", fmt.Errorf("object name %q: %q is not an escape (%%XX): write a '%%' as %%25", p, p[i:end])
		}
		c := dec[0]
		if strings.IndexByte(`*?[]\`, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), nil
}

// listObjects returns the objects to read under st: those matching pattern (path.Match on the
// name under the folder), or with no pattern every data file directly in it (as for a directory:
// hidden ones, _SUCCESS and, without format=, names without a known extension are left out).
// A store whose folder is a single object (s3://bucket/export/orders.csv) gives that one.
func listObjects(ctx context.Context, st store.Store, pattern, format string, log *zap.Logger) ([]Object, error) {
	infos, err := st.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", st.Location(""), err)
	}
	var objs []Object
	var skipped []string
	listed := gzipCopies{}
	for _, in := range infos {
		name := in.Name
		base := path.Base(name)
		switch {
		case pattern != "":
			ok, err := path.Match(pattern, name)
			if err != nil {
				return nil, fmt.Errorf("--source %s%s: bad pattern: %w", st.Location(""), pattern, err)
			}
			if !ok {
				continue
			}
			if hiddenMatch(pattern, name) {
				skipped = append(skipped, name)
				continue
			}
		case strings.Contains(name, "/"):
			skipped = append(skipped, name[:strings.IndexByte(name, '/')+1])
			continue
		case strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_"):
			skipped = append(skipped, name)
			continue
		case format == "" && !knownExtension(name):
			skipped = append(skipped, name)
			continue
		}
		if err := listed.add(name, st.Location("")+pattern); err != nil {
			return nil, err
		}
		objs = append(objs, Object{Store: st, Info: in})
	}
	if len(objs) == 0 {
		if pattern != "" && len(skipped) > 0 {
			return nil, fmt.Errorf("--source %s%s: the pattern matches no object but hidden ones or ones starting with _ (%s), which are left out: "+
				"name them in the pattern (.*.csv) to read them", st.Location(""), pattern, listNames(skipped))
		}
		if pattern != "" {
			return nil, fmt.Errorf("--source %s%s: the pattern matches no object", st.Location(""), pattern)
		}
		return nil, fmt.Errorf("%s holds no files named .csv, .tsv, .jsonl or .ndjson (optionally .gz)%s", st.Location(""), skippedNote(skipped))
	}
	if len(skipped) > 0 && pattern != "" {
		log.Info("leaving out the pattern's hidden matches and those starting with _ (name them in the pattern to read them: .*.csv)",
			zap.String("pattern", st.Location("")+pattern), zap.Strings("skipped", skipped))
	} else if len(skipped) > 0 {
		log.Info("leaving out what is not a data file under the prefix (sub-folders are not read)",
			zap.String("prefix", st.Location("")), zap.Strings("skipped", dedupe(skipped)))
	}
	return objs, nil
}

func skippedNote(skipped []string) string {
	if len(skipped) == 0 {
		return ""
	}
	return ": it holds " + listNames(dedupe(skipped)) + "; to read files of another name as one format, add ?format=csv, tsv or jsonl"
}

func dedupe(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
