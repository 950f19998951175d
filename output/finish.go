package output

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/rekey/rekey/store"
)

// File is one of the final files a run writes beside data/ before its manifest: the table's
// DDL and the bulkload job (sink/lindorm's Finals makes them).
type File struct {
	Name string // DDLFile, BulkloadFile
	Data []byte
}

// Finish writes the final files of a run whose source was read to its end, beside data/:
// files in the order given, then the manifest m, each atomically, the manifest last (its
// presence marks a complete run).
func (o *Output) Finish(ctx context.Context, m *Manifest, files ...File) error {
	for _, f := range files {
		if err := o.Store.Put(ctx, f.Name, f.Data); err != nil {
			return fmt.Errorf("write %s: %w", f.Name, err)
		}
	}
	return WriteManifest(ctx, o.Store, m)
}

// InBucket tells whether location, an output as --out gives it or as a store names it
// (Location), is a prefix of an object store (s3://, oss://) rather than a local folder: a
// bulkload job reads it by its URL, not by a path.
func InBucket(location string) bool { return !store.IsLocal(location) }

// Finished tells whether the output holds a complete run: its manifest was written.
func (o *Output) Finished(ctx context.Context) (bool, error) {
	_, err := o.Store.Stat(ctx, ManifestFile)
	switch {
	case err == nil:
		return true, nil
	case store.IsNotExist(err):
		return false, nil
	}
	return false, err
}

// LoaderPath is folder (of the output's layout: DataDir) of the output at location as a loader
// outside rekey names it, with a trailing slash: an absolute path for a local folder; for a
// bucket (inBucket) its key prefix inside the bucket ("runs/data/"), as a data source rooted at
// the bucket reads it.
func LoaderPath(location, folder string, inBucket bool) (string, error) {
	if !inBucket {
		abs, err := filepath.Abs(location)
		if err != nil {
			return "", fmt.Errorf("output folder %s: %w", location, err)
		}
		return filepath.ToSlash(filepath.Join(abs, folder)) + "/", nil
	}
	u, err := url.Parse(location)
	if err != nil || u.Host == "" || (u.Scheme != "s3" && u.Scheme != "oss") {
		return "", fmt.Errorf("output %q is not s3://BUCKET/PREFIX or oss://BUCKET/PREFIX", location)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix == "" {
		return folder + "/", nil
	}
	return path.Join(prefix, folder) + "/", nil
}

// loaderPathSpecials are the characters a bucket prefix may not hold, as the bulkload job's
// filePath (LoaderPath) cannot name it: '?', '#' and '%' end or escape the path of the URI the
// path is read from, and '*', '?', '[', ']', '{', '}' and '\' are glob syntax for the job's
// Spark (Hadoop's globStatus), which would read other folders' files too, or none.
const loaderPathSpecials = `?#%*[]{}\`

// CheckLoaderPath refuses a bucket output whose prefix the bulk load's filePath cannot name:
// location is the store's Location (scheme://bucket/prefix/, the prefix as its keys spell it).
// A run checks it before it writes anything there; a local folder passes.
func CheckLoaderPath(location string) error {
	if !InBucket(location) {
		return nil
	}
	_, rest, _ := strings.Cut(location, "://")
	_, prefix, _ := strings.Cut(rest, "/")
	if i := strings.IndexAny(prefix, loaderPathSpecials); i >= 0 {
		return fmt.Errorf("the prefix %q holds %q, which bulkload.json's filePath (a Hadoop path and glob) cannot name: "+
			"the job would read other files, or none; choose a prefix without any of %s", strings.TrimSuffix(prefix, "/"), prefix[i], strings.Join(strings.Split(loaderPathSpecials, ""), " "))
	}
	return nil
}

// BucketLocation is the location of a bucket output as its command-line tools name it: scheme,
// bucket and prefix, without the query (?endpoint=...) or a trailing slash.
func BucketLocation(location string) string {
	u, err := url.Parse(location)
	if err != nil {
		return location
	}
	return strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/")
}

// CopyCommand is the command that copies an object of the bucket output at location (as --out
// gives it, or as BucketLocation names it) to a local file: OSS's ossutil, or the AWS CLI for
// S3, told the server's endpoint when --out names one (an S3-compatible server: without it the
// CLI would ask AWS for a bucket of that name). ossutil is told the bucket's endpoint as well,
// from endpoint= or region=: it would ask the endpoint of its configuration, another region's
// for a bucket elsewhere.
func CopyCommand(location string) string {
	var ep, region string
	if u, err := url.Parse(location); err == nil {
		ep, region = shellWord(u.Query().Get("endpoint")), shellWord(u.Query().Get("region"))
	}
	if strings.HasPrefix(location, "oss://") {
		switch {
		case strings.HasSuffix(hostOf(ep), ".aliyuncs.com"):
			// OSS's own host (oss-REGION[-internal].aliyuncs.com), which --out may give as the
			// S3 API's (s3.oss-...), as ossutil's documentation names endpoints.
			return "ossutil cp -e " + strings.TrimPrefix(hostOf(ep), "s3.")
		case ep != "":
			return "ossutil cp -e " + ep // an OSS-compatible server
		case region != "":
			return "ossutil cp -e oss-" + region + ".aliyuncs.com"
		}
		return "ossutil cp"
	}
	if ep != "" {
		if !strings.Contains(ep, "://") {
			ep = "https://" + ep // as --out reads it
		}
		return "aws s3 cp --endpoint-url " + ep
	}
	return "aws s3 cp"
}

// shellWord is v when a shell reads it as one word, as it is; "" otherwise (the user's own tool
// settings then).
func shellWord(v string) string {
	if strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_:/", r))
	}) >= 0 {
		return ""
	}
	return v
}

// hostOf is the host name of an endpoint= value: http(s)://host[:port] or host[:port].
func hostOf(endpoint string) string {
	if endpoint == "" {
		return ""
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
