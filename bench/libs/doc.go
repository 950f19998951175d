// Package libs holds the benchmarks of the code rekey keeps for something a well-kept library also
// does, each next to that library on the same input: the reason the code is kept. The comment above
// each piece of such code names its benchmark, here or in its package.
//
//	go test ./bench/libs -run XXX -bench . -benchmem
//
// In their packages, because they need unexported code or because importing sink/parquet here
// would replace arrow's zstd codec for BenchmarkZstdPage:
//
//	go test ./sink/parquet -run XXX -bench 'DictTable|DictColumn|Recycling' -benchmem
//	go test ./source/cassandra -run XXX -bench DecodeRow -benchmem
//	go test ./transform -run XXX -bench MD5Short
//
// sink/parquet BenchmarkDictTable: dictTable against map[string]int32 and arrow's
// BinaryDictionaryBuilder; BenchmarkDictColumn: rekey's dictionary encoding against arrow's own
// (WriteBatch, dictionary on); BenchmarkRecycling: the recycling allocator and the slice pools
// against memory.GoAllocator and fresh slices. source/cassandra BenchmarkDecodeRow: decode.go
// against gocql.Unmarshal; transform BenchmarkMD5Short: md5Short (a one-block input) against
// crypto/md5.Sum. Read their cpu-ns figures on a shared machine.
package libs
