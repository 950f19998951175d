package files_test

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
)

// Spark holds a timestamp as microseconds in an int64: a TIMESTAMP(MILLIS) value beyond that
// range made Spark fail the read of the whole file (ArithmeticException: long overflow), so a
// bulkload job would fail for one row. Such a value is a reject naming the column; the edges
// themselves are written.
func TestTimestampBeyondSparkRangeIsRejected(t *testing.T) {
	col := pipeline.Column{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1}
	for _, ms := range []int64{files.MinTimestamp, files.MaxTimestamp, 0, -1, 253402300799999} {
		if err := files.CheckValue(col, pipeline.Int(ms)); err != nil {
			t.Errorf("%d: %v", ms, err)
		}
	}
	for _, ms := range []int64{files.MinTimestamp - 1, files.MaxTimestamp + 1, -9223372036854775808, 9223372036854775807} {
		err := files.CheckValue(col, pipeline.Int(ms))
		if err == nil || err.Code != pipeline.CodeType || err.Field != "ts" || !strings.Contains(err.Message, "Spark") {
			t.Errorf("%d: %v, want a type reject of ts that names Spark's range", ms, err)
		}
	}
	if files.MaxTimestamp*1000/1000 != files.MaxTimestamp || files.MinTimestamp*1000/1000 != files.MinTimestamp {
		t.Error("the bounds overflow as microseconds")
	}
}
