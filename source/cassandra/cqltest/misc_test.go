package cqltest

import (
	"testing"

	"github.com/gocql/gocql"
)

// A statement the server no longer knows (here: its table was dropped and created again)
// gets Unprepared (0x2500); gocql prepares it again and the query succeeds.
func TestUnpreparedReprepare(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 10)
	sess := newSession(t, s)
	const q = "SELECT count(*) FROM ks.t"
	var n int64
	must(t, sess.Query(q).Scan(&n))
	prepares := s.Stats().Prepares

	must(t, s.DropTable("ks", "t"))
	seedInts(t, s, "t", 25)
	must(t, sess.Query(q).Scan(&n))
	if n != 25 {
		t.Errorf("count after re-creating the table = %d, want 25", n)
	}
	if got := s.Stats().Prepares; got != prepares+1 {
		t.Errorf("prepares %d -> %d, want one re-prepare", prepares, got)
	}
}

func TestTruncateRowsDelete(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 100)
	if got := s.Rows("ks", "t"); got != 100 {
		t.Fatalf("Rows = %d", got)
	}
	// Re-inserting an existing key replaces the row.
	must(t, s.Insert("ks", "t", map[string]any{"id": 5, "v": "replaced"}))
	if got := s.Rows("ks", "t"); got != 100 {
		t.Fatalf("Rows after upsert = %d", got)
	}
	sess := newSession(t, s)
	var v string
	must(t, sess.Query("SELECT v FROM ks.t WHERE id = ?", 5).Scan(&v))
	if v != "replaced" {
		t.Errorf("v = %q", v)
	}
	if ok, err := s.Delete("ks", "t", map[string]any{"id": 5}); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if err := sess.Query("SELECT v FROM ks.t WHERE id = ?", 5).Scan(&v); err != gocql.ErrNotFound {
		t.Errorf("deleted row: %v", err)
	}
	must(t, s.Truncate("ks", "t"))
	if got := s.Rows("ks", "t"); got != 0 {
		t.Errorf("Rows after Truncate = %d", got)
	}
	if got := s.Rows("ks", "missing"); got != -1 {
		t.Errorf("Rows of a missing table = %d", got)
	}
	if err := s.CreateTable("ks", "t", []Column{{"id", "int"}}, []string{"id"}, nil); err == nil {
		t.Error("creating an existing table succeeded")
	}
	if err := s.CreateTable("ks", "bad", []Column{{"id", "int"}}, []string{"nope"}, nil); err == nil {
		t.Error("a partition key on an undeclared column was accepted")
	}
	if err := s.CreateTable("ks", "bad", []Column{{"id", "varchar2"}}, []string{"id"}, nil); err == nil {
		t.Error("an unknown type was accepted")
	}
	must(t, s.Close())
	must(t, s.Close())
}

// gocql drops a configured compressor the server does not list in SUPPORTED, so a client
// configured for Snappy still works, uncompressed.
func TestCompressorFallsBack(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 3)
	sess := newSession(t, s, func(c *gocql.ClusterConfig) { c.Compressor = gocql.SnappyCompressor{} })
	var n int64
	must(t, sess.Query("SELECT count(*) FROM ks.t").Scan(&n))
	if n != 3 {
		t.Errorf("count = %d", n)
	}
}
