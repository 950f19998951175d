package file

import (
	"github.com/rekey/rekey/pipeline"

	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"

	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Spec is what a file: URI names: the input and how to read it.
type Spec struct {
	// Path is the input as written: a file, a directory (the files in it), a glob, several of
	// these separated by commas, or "-" for stdin. Open resolves it.
	Path string
	// Format overrides the file extensions (required for stdin): csv, tsv, jsonl or ndjson,
	// optionally followed by .gz.
	Format string
	// CSV is the dialect of the CSV files.
	CSV CSVOptions
	// csvParams are the CSV parameters given, as written (header=true): one given with its
	// default value leaves CSV as it is, but applies no more to JSON Lines.
	csvParams []string
	// Skip is how many records to pass over first and Limit (when > 0) how many to read at
	// most, over the whole input in order: for trying a mapping on the head of a big input.
	Skip, Limit int64
	// Store, when set, holds the files: objects under a bucket prefix (SplitObjectURI), those
	// matching Pattern, or with no Pattern every data file directly under the prefix.
	Store   store.Store
	Pattern string
	// Shard, when not whole, reads only the shard's files (shardFiles), or with fewer files
	// than shards the shard's byte range of every file (Config.Part): several machines read one
	// export, each its part.
	Shard pipeline.Shard
}

// URIParams documents the parameters ParseURI takes, for --help.
const URIParams = `parameters (file:PATH?header=false&delimiter=%09):
  format=csv|tsv|jsonl[.gz]  the format, whatever the names (required for stdin)
  delimiter=C   field separator: one character, or tab (%09); .tsv files default to tab
  header=false  no header line: fields follow the mapping's source.columns order
  null=TEXT     an unquoted field that is null (NULL, \N); an empty one always is
  quote=C       the quote character (default ")
  escape=C      escapes a quote inside quotes: default "" (RFC 4180); dsbulk unload: \
  comment=C     skip the lines that start with C
  multiline=false  each line is one record (no line breaks inside quoted fields):
                lets --shard split one large CSV file by bytes
  skip=N        pass over the first N rows (of all the files, in order)
  limit=N       read at most N rows: try a mapping on the head of a big input`

var uriParams = map[string]bool{"format": true, "delimiter": true, "header": true, "null": true,
	"quote": true, "escape": true, "comment": true, "skip": true, "limit": true, "multiline": true}

// ParseURI parses file:PATH?param=value&... (the file: prefix is optional). Parameter values are
// percent-decoded (%09 is a tab). A '?' whose suffix is not made of parameters belongs to the
// path (a glob's one-character wildcard).
func ParseURI(uri string) (Spec, error) {
	rest := strings.TrimPrefix(uri, "file:")
	var spec Spec
	path, params, err := splitParams(rest)
	if err != nil {
		return spec, err
	}
	spec.Path = path
	if path == "" {
		return spec, fmt.Errorf("--source %s: no path: give file:PATH (a file, a directory, a glob, several separated by commas, or - for stdin)", sourceuri.Redact(uri))
	}
	for _, p := range params {
		k, v := p[0], p[1]
		switch k {
		case "delimiter", "quote", "escape", "comment", "header", "multiline", "null":
			spec.csvParams = append(spec.csvParams, k+"="+v)
		}
		switch k {
		case "format":
			if _, _, _, err := parseFormat("", v); err != nil {
				return spec, err
			}
			spec.Format = v
		case "delimiter":
			spec.CSV.Delimiter, err = parseChar(k, v)
		case "quote":
			spec.CSV.Quote, err = parseChar(k, v)
		case "escape":
			spec.CSV.Escape, err = parseChar(k, v)
		case "comment":
			spec.CSV.Comment, err = parseChar(k, v)
		case "header":
			var h bool
			if h, err = strconv.ParseBool(v); err != nil {
				err = fmt.Errorf("header=%s: want true or false", v)
			}
			spec.CSV.NoHeader = !h
		case "multiline":
			var m bool
			if m, err = strconv.ParseBool(v); err != nil {
				err = fmt.Errorf("multiline=%s: want true or false", v)
			}
			spec.CSV.SingleLine = !m
		case "null":
			if v == "" {
				err = fmt.Errorf("null= needs a value (an unquoted empty field is null anyway)")
			}
			spec.CSV.Null = v
		case "skip", "limit":
			var n int64
			n, err = strconv.ParseInt(v, 10, 64)
			switch {
			case err != nil || n < 0:
				err = fmt.Errorf("%s=%s: want a row count", k, v)
			case k == "limit" && n == 0:
				err = fmt.Errorf("limit=0 reads nothing: give the number of rows to read, or leave limit= out to read all")
			case k == "skip":
				spec.Skip = n
			default:
				spec.Limit = n
			}
		}
		if err != nil {
			// a bucket's file: URI keeps the user info the store refuses later: never quote it
			return spec, fmt.Errorf("--source %s: %w", sourceuri.Redact(uri), err)
		}
	}
	return spec, nil
}

// csvOptions writes the CSV parameters given, for messages; "" when none was.
func (s Spec) csvOptions() string {
	if len(s.csvParams) > 0 {
		return strings.Join(s.csvParams, "&")
	}
	return s.CSV.String()
}

// splitParams splits PATH?params. The parameters are the text after the last '?' when it is a
// list of name=value pairs; with a name not known, it is an error when the text cannot be a part
// of a path either (no '/').
func splitParams(s string) (path string, params [][2]string, err error) {
	i := strings.LastIndexByte(s, '?')
	if i < 0 || i == len(s)-1 {
		return s, nil, nil
	}
	q := s[i+1:]
	var unknown []string
	seen := map[string]bool{}
	for _, kv := range strings.Split(q, "&") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return s, nil, nil // not a parameter list: part of the path
		}
		if !uriParams[k] {
			unknown = append(unknown, k)
			continue
		}
		if seen[k] {
			return "", nil, fmt.Errorf("--source: %s= given twice", k)
		}
		seen[k] = true
		dv, err := url.PathUnescape(v)
		if err != nil {
			return "", nil, fmt.Errorf("--source: %s=%s: %w", k, v, err)
		}
		params = append(params, [2]string{k, dv})
	}
	if len(unknown) > 0 {
		if strings.Contains(q, "/") {
			return s, nil, nil
		}
		known := make([]string, 0, len(uriParams))
		for k := range uriParams {
			known = append(known, k)
		}
		sort.Strings(known)
		return "", nil, fmt.Errorf("--source: unknown parameter %s for file: (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return s[:i], params, nil
}

// parseChar reads a one-character parameter: the character itself, or tab (also \t).
func parseChar(name, v string) (byte, error) {
	switch v {
	case "tab", `\t`:
		return '\t', nil
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("%s=%s: want one character (or tab, %%09)", name, v)
	}
	return v[0], nil
}
