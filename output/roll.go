package output

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rekey/rekey/store"
)

// The files of a replication's rolls (rekey replicate). A segment holds one Kafka partition's
// messages of one roll routed to one region:
//
//	data/region-0003/p0002-0000000000001234-0000000000005678.parquet   upserts (RollFile under RegionDir)
//	deletes/region-0003/p0002-0000000000001234-0000000000005678.sql    deletes (RollFile under DeletesRegionDir), after the upserts
//	rejects/p0002-0000000000001234-0000000000005678.jsonl              the roll's rejects (RollRejectsFile)
//
// Data files alone are under data/, which the bulk load reads whole; the delete files are SQL
// that must never be read as data, so they live beside it, under deletes/.
//
// 1234 is the offset of the segment's first message, 5678 the offset of its roll's last one.
// Offsets are zero-padded to 16 digits so that names sort in offset order, which is the order
// to apply segments in (".sql" sorts after ".parquet" and ".csv": a segment's deletes come after
// its upserts). The name is a function of the messages alone: a replay of the same offsets writes
// the same names with the same content. A replication into a SQL table names the rejects file of
// each applied batch the same way, in its state folder.
//
// Until its roll commits, a file has a temporary name that starts with the partition and names
// the member writing it: .rekey-tmp-p0002-0000000000001234-<member>.parquet (RollPendingName
// after the store's temporary prefix). The partition says which member may remove it; the member
// keeps the temporary files of two members apart should a partition's former owner still be
// writing when the next one starts.
const rollOffsetDigits = 16

// RollDeletesExt is the extension of a roll's delete files; RollRejectsExt of its rejects file.
const (
	RollDeletesExt = "sql"
	RollRejectsExt = "jsonl"
)

// RollName is the base name (without extension) of a roll's file of partition, from the
// offset first to the roll's last offset rollLast: "p0002-0000000000001234-0000000000005678".
func RollName(partition int, first, rollLast int64) string {
	return fmt.Sprintf("p%04d-%0*d-%0*d", partition, rollOffsetDigits, first, rollOffsetDigits, rollLast)
}

// ParseRollName reads a name written by RollName (any extension).
func ParseRollName(name string) (partition int, first, rollLast int64, ok bool) {
	base, _, _ := strings.Cut(name, ".")
	var p int
	var f, l int64
	if n, err := fmt.Sscanf(base, "p%d-%d-%d", &p, &f, &l); err != nil || n != 3 {
		return 0, 0, 0, false
	}
	return p, f, l, RollName(p, f, l) == base
}

// RollFile is the committed name of a roll's file in the folder dir (RegionDir, DeletesRegionDir
// or RejectsDir): "data/region-0003/p0002-...-....parquet".
func RollFile(dir string, partition int, first, rollLast int64, ext string) string {
	return dir + "/" + RollName(partition, first, rollLast) + "." + ext
}

// RollRejectsFile is the committed name of the rejects of a roll (or of a batch applied to a
// SQL table): "rejects/p0002-...-....jsonl".
func RollRejectsFile(partition int, first, rollLast int64) string {
	return RollFile(RejectsDir, partition, first, rollLast, RollRejectsExt)
}

// RollPendingName is the base name of a roll's file while it is written, before its last offset
// is known: the partition, the first offset and the member writing it ("p0002-...-<member>.parquet").
func RollPendingName(partition int, first int64, member, ext string) string {
	return fmt.Sprintf("p%04d-%0*d-%s.%s", partition, rollOffsetDigits, first, member, ext)
}

// RollPartitionPrefix starts the base name of every file of partition, committed (RollName) or
// pending (RollPendingName): "p0002-".
func RollPartitionPrefix(partition int) string { return fmt.Sprintf("p%04d-", partition) }

// RollRejectsPrefix starts the name of every rejects file of partition, committed or pending:
// "rejects/p0002-".
func RollRejectsPrefix(partition int) string {
	return RejectsDir + "/" + RollPartitionPrefix(partition)
}

// RollPartition returns the partition of a roll's file from its base name: committed (RollName),
// or temporary (the store's temporary prefix and RollPendingName).
func RollPartition(base string) (int, bool) {
	if rest, ok := strings.CutPrefix(base, store.TempPrefix); ok {
		return RollPendingPartition(rest)
	}
	p, _, _, ok := ParseRollName(base)
	return p, ok
}

// RollPendingPartition returns the partition of an uncommitted file from its pending name
// (RollPendingName, without the temporary prefix).
func RollPendingPartition(name string) (int, bool) {
	digits, _, ok := strings.Cut(strings.TrimPrefix(name, "p"), "-")
	if !ok || len(digits) < 4 || !strings.HasPrefix(name, "p") {
		return 0, false
	}
	p, err := strconv.Atoi(digits)
	return p, err == nil && p >= 0
}
