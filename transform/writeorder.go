package transform

import (
	"fmt"
	"strings"

	"github.com/rekey/rekey/pipeline"
)

// WriteOrderKind tells how a source column of CQL type t can order rows by creation: "time"
// (timestamp, date, timeuuid: values are instants), "integer" (a sequence or epoch number), or
// "" when its values say nothing about when a row was written.
func WriteOrderKind(t string) string {
	n := pipeline.NormalizeSourceType(t)
	if i := strings.IndexByte(n, '('); i >= 0 {
		n = n[:i] // timestamp(s): a unit, still a timestamp
	}
	switch n {
	case "timestamp", "date", "timeuuid":
		return "time"
	case "bigint", "int", "smallint", "tinyint", "varint", "counter":
		return "integer"
	}
	return ""
}

// CheckWriteOrder validates a write-order column (source.write_order, or report's
// --write-order) against the source columns: it must be one of them, of a time or integer type.
func CheckWriteOrder(col string, src pipeline.SourceSchema) error {
	i := src.Index(col)
	if i < 0 {
		return fmt.Errorf("%q is not a source column (source columns: %s)", col, strings.Join(src.Names(), ", "))
	}
	if WriteOrderKind(src[i].Type) == "" {
		return fmt.Errorf("column %q is %s: a write order is a timestamp, date, timeuuid or integer column (the row's creation time, or a sequence)", col, src[i].Type)
	}
	return nil
}
