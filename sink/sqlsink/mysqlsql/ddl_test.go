package mysqlsql

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// DDL, byte for byte: every identifier back-quoted, the MySQL types CheckTable accepts,
// key text in the binary NO PAD collation given, key lengths shared within InnoDB's 3,072-byte
// index limit, NOT NULL keys, "PRIMARY KEY (" with no DESC (MySQL ignores it), no options.
func TestDDLText(t *testing.T) {
	s := pipeline.TargetSchema{Table: "order", KeyLen: 3, Columns: []pipeline.Column{
		{Name: "pk", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "raw`id", Type: pipeline.TypeVarbinary, KeyPos: 1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: 2, Desc: true},
		{Name: "log-event", Type: pipeline.TypeJSON, KeyPos: -1},
		{Name: "note", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "blob", Type: pipeline.TypeVarbinary, KeyPos: -1},
		{Name: "price", Type: pipeline.TypeDecimal, Precision: 12, Scale: 3, KeyPos: -1},
		{Name: "day", Type: pipeline.TypeDate, KeyPos: -1},
		{Name: "n", Type: pipeline.TypeBigint, KeyPos: -1},
		{Name: "ok", Type: pipeline.TypeBoolean, KeyPos: -1},
	}}
	got := DDL(s, "utf8mb4_0900_bin")
	want := "CREATE TABLE IF NOT EXISTS `order` (\n" +
		"  `pk` varchar(613) CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin NOT NULL,\n" +
		"  `raw``id` varbinary(613) NOT NULL,\n" +
		"  `ts` datetime(3) NOT NULL,\n" +
		"  `log-event` json,\n" +
		"  `note` longtext CHARACTER SET utf8mb4,\n" +
		"  `blob` longblob,\n" +
		"  `price` decimal(12,3),\n" +
		"  `day` date,\n" +
		"  `n` bigint,\n" +
		"  `ok` boolean,\n" +
		"  PRIMARY KEY (`pk`, `raw``id`, `ts`)\n" +
		");\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
