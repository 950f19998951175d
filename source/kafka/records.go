package kafka

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"time"

	"github.com/pierrec/lz4/v4"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// errLegacyMessages says that a fetch's record set holds messages of format v0 or v1 (written
// before Kafka 0.11, kept in old segments): recordSet reads format v2 only, kafka-go's own reader
// reads those.
var errLegacyMessages = errors.New("kafka: message format v0/v1")

// The offsets in a record batch's header (message format v2, Kafka's DefaultRecordBatch).
const (
	batchLengthEnd   = 12 // baseOffset int64, batchLength int32
	batchMagic       = 16
	batchCRC         = 17
	batchAttributes  = 21
	batchLastDelta   = 23
	batchBaseTime    = 27
	batchMaxTime     = 35
	batchProducerID  = 43
	batchRecordCount = 57
	batchHeaderLen   = 61

	attrCompression   = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// abortedTxn is an aborted transaction a fetch response lists: its producer and first offset.
type abortedTxn struct{ producer, first int64 }

// recordSet reads the messages of a fetch's record set (a partition's record batches, as the
// broker stored them) without copying them: keys and values are slices of the record set, or of
// a compressed batch's decompressed bytes, so that a message costs no allocation. It reads at
// isolation level read-committed, as Kafka's own consumer does with isolation.level set so: the
// batches of an aborted transaction are left out (the fetch response lists the transactions;
// a producer's batches are aborted from its listed first offset to its abort marker), and so are
// control records (a transaction's commit or abort marker), which are no change of the topic's
// data.
type recordSet struct {
	rest  []byte // the batches not yet started
	recs  []byte // the current batch's records not yet read
	left  int    // how many of them
	base  int64  // the current batch's base offset and timestamp
	time0 int64
	// appended says that time0 is the batch's log append time, every record's timestamp
	// (message.timestamp.type=LogAppendTime: the records' deltas are the producer's)
	appended bool
	min      int64 // messages below it are skipped: a batch may start before the offset fetched
	// next is the offset after the last batch started (control batches and records a compaction
	// removed included), at least min: where the next fetch starts.
	next  int64
	ratio int // decompressed bytes per compressed byte of the last compressed batch: the next one's guess
	// aliased says that a message read is a slice of the set's own bytes (an uncompressed batch's):
	// otherwise they may be fetched into again.
	aliased bool
	// aborted are the response's aborted transactions not reached yet, by first offset;
	// aborting the producers whose aborted transaction the batches have reached.
	aborted  []abortedTxn
	aborting map[int64]bool
	// whole counts the batches the set held whole; cut says that it ended with one cut short
	whole int
	cut   bool
}

func newRecordSet(b []byte, min int64, aborted []abortedTxn) *recordSet {
	slices.SortFunc(aborted, func(a, b abortedTxn) int { return cmp.Compare(a.first, b.first) })
	return &recordSet{rest: b, min: min, next: min, ratio: 4, aborted: aborted}
}

// read fills m with the next message; false at the set's end (a batch the broker cut short at
// the fetch's MaxBytes ends it too: the next fetch reads it whole).
func (s *recordSet) read(m *kafkago.Message) (bool, error) {
	for {
		for s.left > 0 {
			s.left--
			ok, err := s.record(m)
			if err != nil {
				return false, err
			}
			if ok {
				return true, nil
			}
		}
		if more, err := s.startBatch(); !more || err != nil {
			return false, err
		}
	}
}

// record reads the current batch's next record into m; false when it is below min.
func (s *recordSet) record(m *kafkago.Message) (bool, error) {
	length, n := varint(s.recs)
	if n <= 0 || length < 0 || int64(len(s.recs)-n) < length {
		return false, fmt.Errorf("kafka: record batch at offset %d: bad record length", s.base)
	}
	r := s.recs[n : n+int(length)]
	s.recs = s.recs[n+int(length):]
	if len(r) < 1 {
		return false, fmt.Errorf("kafka: record batch at offset %d: empty record", s.base)
	}
	i := 1 // the record's attributes: unused
	tsDelta, n := varint(r[i:])
	if n <= 0 { // n < 0: an overflow, whose bytes are not to step back by
		return false, fmt.Errorf("kafka: record batch at offset %d: bad record header", s.base)
	}
	i += n
	offDelta, n := varint(r[i:])
	if n <= 0 {
		return false, fmt.Errorf("kafka: record batch at offset %d: bad record header", s.base)
	}
	i += n
	offset := s.base + offDelta
	if offset < s.min {
		return false, nil
	}
	key, i, err := recordBytes(r, i)
	if err != nil {
		return false, fmt.Errorf("kafka: record at offset %d: key: %w", offset, err)
	}
	value, _, err := recordBytes(r, i)
	if err != nil {
		return false, fmt.Errorf("kafka: record at offset %d: value: %w", offset, err)
	}
	// the headers follow: nothing reads them
	m.Offset, m.Key, m.Value = offset, key, value
	if s.appended {
		tsDelta = 0
	}
	m.Time = time.UnixMilli(s.time0 + tsDelta)
	return true, nil
}

// recordBytes reads a record's key or value at r[i:]: nil for a null one, a slice of r capped at
// its end otherwise (an append to it copies); and the index after it.
func recordBytes(r []byte, i int) ([]byte, int, error) {
	l, n := varint(r[i:])
	if n <= 0 {
		return nil, 0, errors.New("bad length")
	}
	i += n
	if l < 0 {
		return nil, i, nil
	}
	if int64(len(r)-i) < l {
		return nil, 0, fmt.Errorf("length %d past the record's end", l)
	}
	end := i + int(l)
	return r[i:end:end], end, nil
}

// startBatch starts the next record batch that is whole in the set and not a control batch;
// false when there is none.
func (s *recordSet) startBatch() (bool, error) {
	for len(s.rest) >= batchLengthEnd {
		base := int64(binary.BigEndian.Uint64(s.rest))
		end := batchLengthEnd + int64(int32(binary.BigEndian.Uint32(s.rest[8:])))
		if end > int64(len(s.rest)) || end <= batchMagic {
			s.cut = true
			return false, nil // cut short at MaxBytes
		}
		s.whole++
		b := s.rest[:end]
		s.rest = s.rest[end:]
		if b[batchMagic] != 2 {
			return false, errLegacyMessages
		}
		if len(b) < batchHeaderLen {
			return false, fmt.Errorf("kafka: record batch at offset %d: %d bytes, shorter than its header", base, len(b))
		}
		// Kafka's consumer checks it too: lz4 frames are read without their own checksum
		if crc32.Checksum(b[batchAttributes:], castagnoli) != binary.BigEndian.Uint32(b[batchCRC:]) {
			return false, fmt.Errorf("kafka: record batch at offset %d: CRC mismatch", base)
		}
		attrs := binary.BigEndian.Uint16(b[batchAttributes:])
		last := base + int64(int32(binary.BigEndian.Uint32(b[batchLastDelta:])))
		s.next = max(s.next, last+1)
		if s.abortedBatch(b, attrs, last) || attrs&attrControl != 0 || last < s.min {
			continue
		}
		recs := b[batchHeaderLen:]
		if codec := attrs & attrCompression; codec == 0 {
			s.aliased = true
		} else {
			var err error
			if recs, err = s.decompress(compress.Compression(codec), recs); err != nil {
				return false, fmt.Errorf("kafka: record batch at offset %d: %w", base, err)
			}
		}
		s.base, s.recs = base, recs
		s.time0 = int64(binary.BigEndian.Uint64(b[batchBaseTime:]))
		if s.appended = attrs&attrLogAppendTime != 0; s.appended {
			s.time0 = int64(binary.BigEndian.Uint64(b[batchMaxTime:]))
		}
		s.left = int(int32(binary.BigEndian.Uint32(b[batchRecordCount:])))
		return true, nil
	}
	s.cut = len(s.rest) > 0 // part of a batch's length itself
	return false, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// abortedBatch tells whether batch b (attributes attrs, last offset last) holds messages of an
// aborted transaction, as Kafka's consumer decides it at read-committed: a producer's aborted
// transaction starts at the first offset the response lists for it and ends at the producer's
// abort marker (a control batch, which is skipped in any case).
func (s *recordSet) abortedBatch(b []byte, attrs uint16, last int64) bool {
	if len(s.aborted) == 0 && len(s.aborting) == 0 {
		return false
	}
	producer := int64(binary.BigEndian.Uint64(b[batchProducerID:]))
	if producer < 0 {
		return false // not written by an idempotent or transactional producer
	}
	for len(s.aborted) > 0 && s.aborted[0].first <= last {
		if s.aborting == nil {
			s.aborting = map[int64]bool{}
		}
		s.aborting[s.aborted[0].producer] = true
		s.aborted = s.aborted[1:]
	}
	if attrs&attrControl != 0 {
		if abortMarker(b[batchHeaderLen:]) {
			delete(s.aborting, producer)
		}
		return false
	}
	return attrs&attrTransactional != 0 && s.aborting[producer]
}

// abortMarker tells whether a control batch's records (never compressed) start with an abort
// marker: a record whose key is a version (int16) and a type (int16), 0 for abort, 1 for commit.
func abortMarker(recs []byte) bool {
	s := recordSet{recs: recs}
	var m kafkago.Message
	ok, err := s.record(&m)
	return ok && err == nil && len(m.Key) >= 4 && binary.BigEndian.Uint16(m.Key[2:]) == 0
}

// decompress returns a compressed batch's records in a buffer of their own: the batch's
// messages alias it for as long as they live.
func (s *recordSet) decompress(c compress.Compression, src []byte) ([]byte, error) {
	codec := c.Codec()
	if codec == nil {
		return nil, fmt.Errorf("unknown compression codec %d", c)
	}
	// a little over the last ratio: a buffer that grows copies what it holds
	dst := make([]byte, 0, len(src)*s.ratio+512)
	var err error
	if c == compress.Lz4 {
		dst, err = appendLZ4(dst, src)
	} else {
		r := codec.NewReader(bytes.NewReader(src))
		buf := bytes.NewBuffer(dst)
		_, err = buf.ReadFrom(r)
		r.Close()
		dst = buf.Bytes()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", codec.Name(), err)
	}
	if len(src) > 0 {
		s.ratio = max(1, len(dst)/len(src)+1)
	}
	return dst, nil
}

// lz4Magic starts an LZ4 frame (Kafka's lz4 codec since message format v1).
const lz4Magic = 0x184D2204

// appendLZ4 decompresses an LZ4 frame block by block straight into dst: the frame reader copied
// each block out of a buffer of its own and hashed the content, which the batch's CRC covers.
func appendLZ4(dst, src []byte) ([]byte, error) {
	if len(src) < 7 || binary.LittleEndian.Uint32(src) != lz4Magic || src[4]>>6 != 1 {
		return nil, errors.New("not an LZ4 frame")
	}
	flg, bd := src[4], src[5]
	blockMax := 1 << (8 + 2*int(bd>>4&7)) // 4: 64 KiB ... 7: 4 MiB
	linked := flg&0x20 == 0               // blocks refer to the 64 KiB before them
	i := 7                                // magic, FLG, BD, header checksum
	if flg&0x08 != 0 {
		i += 8 // content size
	}
	if flg&0x01 != 0 {
		i += 4 // dictionary id
	}
	for {
		if len(src)-i < 4 {
			return nil, errors.New("LZ4 frame cut short")
		}
		n := binary.LittleEndian.Uint32(src[i:])
		i += 4
		if n == 0 {
			return dst, nil // the end mark (a content checksum may follow)
		}
		size := int(n &^ (1 << 31))
		if len(src)-i < size {
			return nil, errors.New("LZ4 block past the frame's end")
		}
		blk := src[i : i+size]
		i += size
		if flg&0x10 != 0 {
			i += 4 // block checksum
		}
		if n&(1<<31) != 0 { // stored uncompressed
			dst = append(dst, blk...)
			continue
		}
		var err error
		if dst, err = appendLZ4Block(dst, blk, blockMax, linked); err != nil {
			return nil, err
		}
	}
}

// appendLZ4Block decompresses one block after dst. Too short a destination fails as corrupt
// input does: only one with a whole block's room left tells them apart.
func appendLZ4Block(dst, blk []byte, blockMax int, linked bool) ([]byte, error) {
	for {
		start := len(dst)
		var dict []byte
		if linked {
			dict = dst[max(0, start-64<<10):start]
		}
		k, err := lz4.UncompressBlockWithDict(blk, dst[start:cap(dst)], dict)
		if err == nil {
			return dst[:start+k], nil
		}
		if cap(dst)-start >= blockMax {
			return nil, err
		}
		dst = slices.Grow(dst, max(blockMax, cap(dst)))
	}
}

// varint reads a zigzag varint (Kafka's varint and varlong are Go's binary.Varint); n <= 0 when
// b does not hold one.
func varint(b []byte) (int64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return int64(b[0]>>1) ^ -int64(b[0]&1), 1
	}
	return binary.Varint(b)
}
