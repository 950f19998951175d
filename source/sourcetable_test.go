package source

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A mapping's source.table reaches a kind that reads topics of several tables (Kind.Tables), and
// is refused, naming it, by the others, whose rows name no table: never ignored.
func TestSetRefusesSourceTableWhereItDoesNotApply(t *testing.T) {
	topic := fakeKind("kafka://", false, "")
	topic.Tables = true
	s := NewSet(fakeKind("file:", true, ""), topic)
	in := Input{SourceTable: "shop.orders"}
	_, err := s.Open(context.Background(), "file:rows.csv", in)
	if err == nil || !strings.Contains(err.Error(), "source.table (shop.orders)") {
		t.Errorf("a file source given source.table: %v, want refused naming it", err)
	}
	_, err = s.Open(context.Background(), "kafka://b:9092/t?format=debezium", in)
	var o *opened
	if !errors.As(err, &o) {
		t.Errorf("a topic given source.table: %v, want opened", err)
	}
}
