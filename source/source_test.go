package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rekey/rekey/pipeline"
)

// fakeFlags is one flag, refused for a source of another kind when given.
type fakeFlags struct{ name, value string }

func (f *fakeFlags) Add(fs *pflag.FlagSet, use Use) {
	if use.Scan {
		fs.StringVar(&f.value, f.name, "", "a flag of the kind")
	}
}

func (f *fakeFlags) Refuse(uri string) error {
	if f.value != "" {
		return errors.New("--" + f.name + " is not for " + uri)
	}
	return nil
}

// opened is the error a fake kind's Open returns, naming the kind and the flags it got.
type opened struct {
	kind, uri string
	flags     Flags
}

func (o *opened) Error() string { return o.kind + " " + o.uri }

func fakeKind(prefix string, paths bool, flag string) Kind {
	k := Kind{Prefix: prefix, Paths: paths, Help: "  " + prefix + "...",
		Open: func(_ context.Context, uri string, in Input) (pipeline.Source, error) {
			return nil, &opened{prefix, uri, in.Flags}
		}}
	if flag != "" {
		k.NewFlags = func() Flags { return &fakeFlags{name: flag} }
	}
	return k
}

// A Set picks a URI's kind by its prefix, or a bare path that exists for the kind that reads
// paths; an empty URI or one of no kind is refused with the help, which lists every kind in
// order; flags are registered for the command's use, bound per Set, handed to their kind's
// Open, and refused for a source of another kind.
func TestSetPicksTheKindOfAURI(t *testing.T) {
	set := func() *Set {
		return NewSet(fakeKind("file:", true, ""), fakeKind("gen:", false, ""), fakeKind("cassandra://", false, "rate"))
	}
	s := set()
	if got, want := s.Help(), "where rows come from:\n  file:...\n  gen:...\n  cassandra://..."; got != want {
		t.Fatalf("help %q, want %q", got, want)
	}
	bare := filepath.Join(t.TempDir(), "rows.csv")
	if err := os.WriteFile(bare, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for uri, kind := range map[string]string{"file:a.csv": "file:", "gen:orders?rows=1": "gen:", "cassandra://h/ks/t": "cassandra://", bare: "file:"} {
		_, err := s.Open(context.Background(), uri, Input{})
		var o *opened
		if !errors.As(err, &o) || o.kind != kind || o.uri != uri {
			t.Errorf("%s: opened as %v, want %s", uri, err, kind)
		}
		if got := s.Is(uri, kind); !got {
			t.Errorf("Is(%s, %s) = false", uri, kind)
		}
	}
	for _, uri := range []string{"", "mysql://h/db", "cassandra:h", filepath.Join(t.TempDir(), "missing.csv")} {
		_, err := s.Open(context.Background(), uri, Input{})
		var o *opened
		if errors.As(err, &o) || err == nil || !strings.Contains(err.Error(), s.Help()) {
			t.Errorf("%q: %v, want a refusal with the help", uri, err)
		}
	}

	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	s.AddFlags(fs, Use{Scan: true})
	if err := fs.Parse([]string{"--rate", "10"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Refuse("cassandra://h/ks/t"); err != nil {
		t.Errorf("the kind's own flag refused: %v", err)
	}
	if err := s.Refuse("gen:orders"); err == nil || !strings.Contains(err.Error(), "--rate") {
		t.Errorf("another kind's flag: %v, want a refusal naming --rate", err)
	}
	_, err := s.Open(context.Background(), "cassandra://h/ks/t", Input{})
	var o *opened
	if !errors.As(err, &o) || o.flags.(*fakeFlags).value != "10" {
		t.Errorf("the kind opened without its flags: %v", err)
	}
	if other := set(); other.Refuse("gen:orders") != nil {
		t.Error("a flag given to one command line is seen by another Set")
	}
	check := pflag.NewFlagSet("check", pflag.ContinueOnError)
	set().AddFlags(check, Use{})
	if check.Lookup("rate") != nil {
		t.Error("a scan flag registered for a command that does not scan")
	}
}

// --shard is the Set's, for a command that reads shards: each kind opens with its part, and a
// kind not read in shards refuses it, saying why.
func TestSetShard(t *testing.T) {
	topic := fakeKind("kafka://", false, "")
	topic.Unsharded = "a topic is not read in shards"
	var got pipeline.Shard
	gen := fakeKind("gen:", false, "")
	gen.Open = func(_ context.Context, _ string, in Input) (pipeline.Source, error) { got = in.Shard; return nil, nil }
	s := NewSet(gen, topic)
	fs := pflag.NewFlagSet("migrate", pflag.ContinueOnError)
	s.AddFlags(fs, Use{Scan: true, Shards: true})
	if err := fs.Parse([]string{"--shard", "1/3"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Refuse("kafka://b/t"); err == nil || err.Error() != "--shard 1/3: a topic is not read in shards" {
		t.Errorf("--shard of a topic: %v", err)
	}
	if err := s.Refuse("gen:orders"); err != nil {
		t.Errorf("--shard of gen: refused: %v", err)
	}
	if _, err := s.Open(context.Background(), "gen:orders", Input{}); err != nil || got != (pipeline.Shard{Index: 1, Count: 3}) {
		t.Errorf("gen: opened with shard %v (%v), want 1/3", got, err)
	}
	report := pflag.NewFlagSet("report", pflag.ContinueOnError)
	NewSet(gen).AddFlags(report, Use{Scan: true})
	if report.Lookup("shard") != nil {
		t.Error("--shard registered for a command that does not read shards")
	}
}

// A kind with a schema hook is opened through it, with its flags, the mapping's source name
// and --shard; a kind without one has no schema to read, and OpenSchema refuses it.
func TestSetOpensThroughTheSchemaHook(t *testing.T) {
	tbl := fakeKind("cassandra://", false, "rate")
	var got struct {
		uri, table string
		in         Input
	}
	tbl.OpenSchema = func(_ context.Context, uri, table string, in Input) (SchemaSource, error) {
		got.uri, got.table, got.in = uri, table, in
		return nil, errors.New("opened")
	}
	s := NewSet(fakeKind("gen:", false, ""), tbl)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	s.AddFlags(fs, Use{Scan: true, Shards: true})
	if err := fs.Parse([]string{"--rate", "5", "--shard", "1/3"}); err != nil {
		t.Fatal(err)
	}
	if s.HasSchema("gen:orders") || !s.HasSchema("cassandra://h/ks/t") || s.HasSchema("nothing:") {
		t.Fatal("HasSchema: want true for the kind with a schema hook only")
	}
	if _, err := s.OpenSchema(context.Background(), "gen:orders", "ks.t", Input{}); err == nil || !strings.Contains(err.Error(), "does not read its schema") {
		t.Fatalf("OpenSchema of a kind without a hook: %v", err)
	}
	if _, err := s.OpenSchema(context.Background(), "cassandra://h", "ks.t", Input{Workers: 4}); err == nil || err.Error() != "opened" {
		t.Fatalf("OpenSchema: %v", err)
	}
	if got.uri != "cassandra://h" || got.table != "ks.t" || got.in.Workers != 4 || got.in.Shard != (pipeline.Shard{Index: 1, Count: 3}) {
		t.Fatalf("the hook got %q %q %+v", got.uri, got.table, got.in)
	}
	if f, ok := got.in.Flags.(*fakeFlags); !ok || f.value != "5" {
		t.Fatalf("the hook got flags %#v, want the kind's (--rate 5)", got.in.Flags)
	}
}

// A kind that catches up (Kind.CatchUp) is told by its URIs; the others and unknown URIs are not.
func TestSetCatchesUp(t *testing.T) {
	tbl := fakeKind("cassandra://", false, "")
	tbl.CatchUp = true
	s := NewSet(fakeKind("gen:", false, ""), tbl)
	if !s.CatchesUp("cassandra://h/ks/t") || s.CatchesUp("gen:orders") || s.CatchesUp("nothing:") {
		t.Fatal("CatchesUp: want true for the kind that catches up only")
	}
}
