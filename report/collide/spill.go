package collide

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/zeebo/xxh3"
	"go.uber.org/zap"

	spillfolder "github.com/rekey/rekey/internal/spill" // this package's spill is the collision check
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// Exact collision counting in bounded memory. Every accepted row appends a fixed record
//
//	hash64(target key) | hash64(source values) | text length (32 bits)
//
// to one of `buckets` temp files chosen by the key hash's top bits, and its text to that
// bucket's text file, in the same order: a text's offset is the sum of the lengths before it.
// The text is only read back for the rows of colliding keys, so the bucket pass reads 20 bytes
// per row when keys are unique. The text is the row's salt
// (see saltToken), a 32-bit hash of each of its first 64 source values, and its origin (where it
// was read, its key values when kept, and the source values the key is computed from, each
// capped). When the advisor needs salts and every source value of a row is short, its text is
// instead its origin with every source value whole (appendWhole): the counter computes the salt
// and the column hashes of the few rows it reads, where hashing every row's salt cost a tenth of
// the report's time. Afterwards each bucket is loaded on its own (a bucket holds about 1/buckets of the
// rows) and sorted by (key hash, source hash): a key with more than one distinct source hash is a
// collision, and rows beyond the distinct ones are identical duplicates. Only the rows of
// colliding keys have their text read (one pread each, or the bucket's whole text file once
// there are many): the column hashes tell in which columns colliding rows
// differ (for the uniqueness rule's advice) and how many rows a key reading other columns would
// lose (for the advisor). Memory: the workers' write buffers and one bucket at a time; disk:
// about 20 + len(text) bytes per row, removed by close. A source that can be read again leaves
// the texts out (countSpec.keysOnly) and is read again for the colliding keys' rows (runner.recount).
type Spill struct {
	dir   string
	shift uint
	files []*os.File
	mu    []sync.Mutex
	// texts[b] holds the texts of bucket b's rows, textSize[b] bytes so far (under mu[b])
	texts    []*os.File
	textSize []int64
	failed   error
	errOnce  sync.Once

	bufSize int

	// srcCols are the source columns an origin shows (the key's, see appendOrigin; a whole
	// row's origin holds every source value and shows these); skip: see leaveOutOriginHashes
	srcCols []int
	Skip    uint64

	streamMu sync.Mutex
	streams  map[string]uint64
	names    []string
}

const (
	// MinBuckets: as few buckets as the input allows. Each row's record and text go to the end
	// of its bucket's buffers: with 64 buckets those ends stay in the core's cache, with 256 a
	// row's writes miss it (measured: 64 instead of 256 buckets cut a 5M-row report's CPU time
	// by 5%).
	MinBuckets = 64
	maxBuckets = 512 // open files; beyond, oversized buckets are split when counted
	// unknownSizeBuckets is the bucket count when the row count is not known beforehand
	unknownSizeBuckets = 256
	// spillBufBytes is each worker's record buffer, shared out over the buckets (8-32 KiB
	// each; a bucket's text buffer is twice its record buffer). Smaller buffers hold less heap
	// but cost more: 330 MB written 8 KiB at a time over 512 files takes twice the system time
	// of 32 KiB writes.
	spillBufBytes = 8 << 20
	// spillTextSlack is room beyond a text buffer's flush size, so the row that crosses it
	// does not grow (and copy) the buffer.
	spillTextSlack = 1 << 10
	// spillRecBytes is a bucket file's record: key hash, source hash, text length.
	spillRecBytes = 20
	// splitRecBytes is the record of a bucket file's part (see split): its texts are not in
	// order, so it keeps the text's position (spillRec.pos).
	splitRecBytes = 24
	// maxSpillText bounds a row's text (its length shares the position's 64 bits).
	maxSpillText = 1<<24 - 1
)

// SpillBuckets is the number of temp files for an expected row count: enough that a file stays
// under maxBucketBytes, between minBuckets and maxBuckets (a power of two).
func SpillBuckets(expectedRows int64) int {
	const rowBytes = spillRecBytes
	if expectedRows <= 0 {
		// a stream of unknown length: buckets that stay small over a long one (their text
		// files are then read whole when many of their rows collide)
		return unknownSizeBuckets
	}
	n := MinBuckets
	for n < maxBuckets && expectedRows*rowBytes/int64(n) > maxBucketBytes*3/4 {
		n *= 2
	}
	return n
}

// NewSpill makes the collision check's temp files in a spill folder under tmp (spillfolder.New: the
// texts hold source values; the folders of killed runs are removed).
func NewSpill(tmp string, buckets int, log *zap.Logger) (*Spill, error) {
	dir, err := spillfolder.New(tmp, "rekey-report-", log)
	if err != nil {
		return nil, fmt.Errorf("report: temp directory for the collision check: %w", err)
	}
	shift := uint(64)
	for b := buckets; b > 1; b /= 2 {
		shift--
	}
	s := &Spill{dir: dir, shift: shift, files: make([]*os.File, buckets), mu: make([]sync.Mutex, buckets),
		texts: make([]*os.File, buckets), textSize: make([]int64, buckets),
		streams: map[string]uint64{}, bufSize: min(max(spillBufBytes/buckets, 8<<10), 32<<10)}
	for i := range s.files {
		f, err := os.Create(fmt.Sprintf("%s/bucket-%03d", dir, i))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("report: collision check: %w", err)
		}
		s.files[i] = f
		if s.texts[i], err = os.Create(fmt.Sprintf("%s/text-%03d", dir, i)); err != nil {
			s.Close()
			return nil, fmt.Errorf("report: collision check: %w", err)
		}
	}
	return s, nil
}

// Close removes the temp files.
func (s *Spill) Close() {
	for _, f := range s.files {
		if f != nil {
			f.Close()
		}
	}
	for _, f := range s.texts {
		if f != nil {
			f.Close()
		}
	}
	spillfolder.Remove(s.dir)
}

func (s *Spill) fail(err error) {
	s.errOnce.Do(func() { s.failed = err })
}

func (s *Spill) StreamID(name string) uint64 {
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	id, ok := s.streams[name]
	if !ok {
		id = uint64(len(s.names))
		s.streams[name] = id
		s.names = append(s.names, name)
	}
	return id
}

func (s *Spill) streamName(id uint64) string {
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	if id < uint64(len(s.names)) {
		return s.names[id]
	}
	return "?"
}

// SpillWriter buffers one worker's records and texts per bucket; a flush writes both under the
// bucket's lock, so the texts stay in the records' order.
type SpillWriter struct {
	S     *Spill
	bufs  [][]byte
	texts [][]byte
	// Rows are appended to small per-bucket stages, which stay in the core's cache, and moved
	// to bufs and texts a stage at a time: written a row at a time, the buffers' cold lines
	// stalled the worker (measured: 3-4% of a report's time).
	rstage [][]byte
	tstage [][]byte
	// stageRecs and stageTexts are the stages' sizes (stageSizes)
	stageRecs, stageTexts int
}

// A writer's stages take about stagesBytes in all (they must stay in the core's cache): 32
// records and 2 KiB of texts a bucket with 64 buckets, 8 and 512 bytes with 256.
const stagesBytes = 170 << 10

// stageSizes are the record and text stage sizes of a bucket when there are n buckets.
func stageSizes(n int) (recs, texts int) {
	recs = max(8, stagesBytes/n/4/spillRecBytes) * spillRecBytes
	return recs, max(512, stagesBytes/n-recs)
}

func (s *Spill) Writer() *SpillWriter {
	n := len(s.files)
	w := &SpillWriter{S: s, bufs: make([][]byte, n), texts: make([][]byte, n), rstage: make([][]byte, n), tstage: make([][]byte, n)}
	w.stageRecs, w.stageTexts = stageSizes(n)
	return w
}

func (w *SpillWriter) Add(keyHash, srcHash uint64, text []byte) {
	w.Commit(keyHash, srcHash, append(w.TextFor(keyHash), text...))
}

// TextFor returns the text stage of keyHash's bucket: a row's text appended to it (no copy)
// is then added by commit.
func (w *SpillWriter) TextFor(keyHash uint64) []byte {
	b := int(keyHash >> w.S.shift)
	if w.bufs[b] == nil {
		// the text buffer comes with the first text: a spill without texts has none
		w.bufs[b] = make([]byte, 0, w.S.bufSize)
		w.rstage[b] = make([]byte, 0, w.stageRecs)
		w.tstage[b] = make([]byte, 0, w.stageTexts+spillTextSlack)
	}
	return w.tstage[b]
}

// Commit adds a row whose text was appended to textFor(keyHash): tb is that stage with it.
func (w *SpillWriter) Commit(keyHash, srcHash uint64, tb []byte) {
	b := int(keyHash >> w.S.shift)
	start := len(w.tstage[b])
	n := len(tb) - start
	if n > maxSpillText {
		w.S.fail(fmt.Errorf("report: collision check: a row's text takes %d bytes, over %d", n, maxSpillText))
		return
	}
	rs := w.rstage[b]
	rs = binary.LittleEndian.AppendUint64(rs, keyHash)
	rs = binary.LittleEndian.AppendUint64(rs, srcHash)
	rs = binary.LittleEndian.AppendUint32(rs, uint32(n))
	w.rstage[b], w.tstage[b] = rs, tb
	if len(rs) >= w.stageRecs || len(tb) >= w.stageTexts {
		w.unstage(b)
	}
}

// unstage moves bucket b's stages to its buffers, flushing the buffers first when the stages
// would not fit.
func (w *SpillWriter) unstage(b int) {
	rs, ts := w.rstage[b], w.tstage[b]
	if len(w.bufs[b])+len(rs) > w.S.bufSize || len(w.texts[b])+len(ts) > 2*w.S.bufSize {
		w.flushBucket(b)
	}
	w.bufs[b] = append(w.bufs[b], rs...)
	if w.texts[b] == nil && len(ts) > 0 {
		w.texts[b] = make([]byte, 0, 2*w.S.bufSize+spillTextSlack)
	}
	w.texts[b] = append(w.texts[b], ts...)
	w.rstage[b], w.tstage[b] = rs[:0], ts[:0]
}

func (w *SpillWriter) flushBucket(b int) {
	buf, tb := w.bufs[b], w.texts[b]
	if len(buf) == 0 {
		return
	}
	s := w.S
	s.mu[b].Lock()
	_, err := s.files[b].Write(buf)
	if err == nil && len(tb) > 0 { // none without texts: no empty write
		_, err = s.texts[b].Write(tb)
	}
	s.textSize[b] += int64(len(tb))
	s.mu[b].Unlock()
	if err != nil {
		s.fail(fmt.Errorf("report: collision check: write temp file: %w", err))
	}
	w.bufs[b], w.texts[b] = buf[:0], tb[:0]
}

func (w *SpillWriter) Flush() {
	for b := range w.bufs {
		if w.bufs[b] != nil {
			w.unstage(b)
		}
		w.flushBucket(b)
	}
}

// MaxOriginText caps each text value kept in the temp files for examples.
const MaxOriginText = 160

// MaxHashedColumns is how many source columns (the first ones) have a hash of their own in the
// temp files: a column set is a uint64 bit mask.
const MaxHashedColumns = 64

// AppendRowInfo starts a row's text: its salt and the 32-bit hashes of its first n (at most
// maxHashedColumns) source values; cols holds 64-bit hashes (folded here), a missing one is a
// null's. n is the same for every row of a spill (countSpec.cols), so it is not written. The
// columns of skip (spill.skip, or 0) are left out, and the salt's low bit says so: the row's
// origin holds their values whole, the counter hashes those.
func AppendRowInfo(dst []byte, salt uint64, cols []uint64, n int, skip uint64) []byte {
	left := uint64(0)
	if skip != 0 {
		left = 1
	}
	dst = binary.AppendUvarint(dst, salt<<2|left)
	for i := 0; i < n; i++ {
		if skip>>uint(i)&1 != 0 {
			continue
		}
		h := nullHash
		if i < len(cols) {
			h = cols[i]
		}
		dst = binary.LittleEndian.AppendUint32(dst, foldHash(h))
	}
	return dst
}

var nullHash = HashValue(pipeline.Null, 0)

// foldHash is a column hash as a row's text keeps it: 32 bits.
func foldHash(h uint64) uint32 { return uint32(h ^ h>>32) }

// A row's text starts with a varint whose low two bits say what follows: bit 1 clear, the salt
// (v>>2), column hashes and origin of appendRowInfo and appendOrigin, bit 0 set when hashes are
// left out; bit 1 set, appendWhole's origin with every source value (bit 2: the salt hashes the
// origin, pipeline.Batch.SaltOrigin).
const (
	textLeft  = 1
	textWhole = 2
)

// AppendWhole writes a row's text as its origin with every source value whole (none longer
// than maxOriginText, see fitsWhole): the counter derives the salt and the column hashes. It
// returns the text and the row's source hash: that of the values' encoding (equal rows encode
// alike), one hash where hashColumns takes one a column.
func AppendWhole(dst []byte, saltOrigin bool, streamID uint64, seq int64, key []pipeline.Value, vals []pipeline.Value) ([]byte, uint64) {
	v := uint64(textWhole)
	if saltOrigin {
		v |= 4
	}
	dst = binary.AppendUvarint(dst, v)
	dst = binary.AppendUvarint(dst, streamID)
	dst = binary.AppendVarint(dst, seq)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	for _, v := range key {
		dst = appendValue(dst, v, MaxOriginText)
	}
	at := len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	for _, v := range vals {
		dst = appendValue(dst, v, MaxOriginText)
	}
	return dst, xxh3.HashSeed(dst[at:], wyp3)
}

// maxWholeBytes bounds the values of a whole row: a wider row keeps 4-byte column hashes, not
// its values (20 text columns of 30 bytes would take 640 bytes a row on disk instead of ~120).
const maxWholeBytes = 256

// FitsWhole: the values are few and short enough to be kept whole in a row's text (none cut).
func FitsWhole(vals []pipeline.Value) bool {
	n := 0
	for i := range vals {
		n += len(vals[i].Str) + 2 // the kind and a length (or an integer's few bytes)
		if n > maxWholeBytes || len(vals[i].Str) > MaxOriginText {
			return false
		}
	}
	return true
}

// wholeRow is a row read back from appendWhole's text.
type wholeRow struct {
	origin     origin           // src: the values of srcCols
	vals       []pipeline.Value // every source value
	saltOrigin bool
}

// readWhole reads appendWhole's text (b after its first varint v).
func (s *Spill) readWhole(v uint64, b []byte) (wholeRow, bool) {
	w := wholeRow{saltOrigin: v&4 != 0}
	o, ok := s.readOrigin(b)
	if !ok || o.srcTrunc {
		return w, false
	}
	w.vals = o.Src
	o.Src = make([]pipeline.Value, len(s.srcCols))
	for i, c := range s.srcCols {
		o.Src[i] = pipeline.Null
		if c < len(w.vals) {
			o.Src[i] = w.vals[c]
		}
	}
	w.origin = o
	return w, true
}

// salt is the row's salt as the worker would have computed it (transform.SaltToken % n), its
// values hashed in order (transform.Program.SaltOrder).
func (w *wholeRow) salt(n uint64, order []int, buf []byte) (uint64, []byte) {
	if n == 0 {
		return 0, buf
	}
	b := pipeline.Batch{Stream: w.origin.Stream, SaltOrigin: w.saltOrigin}
	rec := pipeline.Record{Values: w.vals, Seq: w.origin.Seq}
	tok, buf := transform.SaltToken(buf, &b, &rec, order)
	return tok % n, buf
}

// decodeRowInfo reads what appendRowInfo wrote with n column hashes and skip; the hashes are
// appended to cols, a left-out one as 0, and left says whether the origin must give them.
func decodeRowInfo(b []byte, n int, skip uint64, cols []uint32) (salt uint64, _ []uint32, rest []byte, left, ok bool) {
	v, k := binary.Uvarint(b)
	if k <= 0 || n > MaxHashedColumns || v&textWhole != 0 {
		return 0, cols, nil, false, false
	}
	salt, left = v>>2, v&textLeft != 0
	if !left {
		skip = 0
	}
	b = b[k:]
	for i := 0; i < n; i++ {
		if skip>>uint(i)&1 != 0 {
			cols = append(cols, 0)
			continue
		}
		if len(b) < 4 {
			return 0, cols, nil, false, false
		}
		cols = append(cols, binary.LittleEndian.Uint32(b))
		b = b[4:]
	}
	return salt, cols, b, left, true
}

// LeaveOutOriginHashes makes rows whose origin holds the source columns srcCols whole (none cut
// to maxOriginText) leave their hashes out: the counter hashes the origin's values instead.
// srcCols are also the columns whole rows' origins show. Only for a spill whose texts all have
// an origin.
func (s *Spill) LeaveOutOriginHashes(srcCols []int, hashed int) {
	s.srcCols = srcCols
	for _, c := range srcCols {
		if c < hashed {
			s.Skip |= 1 << uint(c)
		}
	}
}

// origin text: stream id, seq, key values (when kept), source values.
func AppendOrigin(dst []byte, streamID uint64, seq int64, key []pipeline.Value, srcCols []int, rec []pipeline.Value) []byte {
	dst = binary.AppendUvarint(dst, streamID)
	dst = binary.AppendVarint(dst, seq)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	for _, v := range key {
		dst = appendValue(dst, v, MaxOriginText)
	}
	dst = binary.AppendUvarint(dst, uint64(len(srcCols)))
	for _, c := range srcCols {
		v := pipeline.Null
		if c < len(rec) {
			v = rec[c]
		}
		dst = appendValue(dst, v, MaxOriginText)
	}
	return dst
}

type origin struct {
	Stream string
	Seq    int64
	key    []pipeline.Value
	Src    []pipeline.Value
	// trunc: a key or source value was cut to maxOriginText; srcTrunc: a source value was
	// (the check cannot hash or salt it)
	trunc, srcTrunc bool
}

// decodeOrigin reads a row's text (row info with cols column hashes, then origin).
func (s *Spill) decodeOrigin(b []byte, cols int) (origin, bool) {
	if v, k := binary.Uvarint(b); k > 0 && v&textWhole != 0 {
		w, ok := s.readWhole(v, b[k:])
		return w.origin, ok
	}
	_, _, b, _, ok := decodeRowInfo(b, cols, s.Skip, nil)
	if !ok {
		return origin{}, false
	}
	return s.readOrigin(b)
}

// readOrigin reads the origin that follows a row's info.
func (s *Spill) readOrigin(b []byte) (origin, bool) {
	var o origin
	id, k := binary.Uvarint(b)
	if k <= 0 {
		return o, false
	}
	b = b[k:]
	seq, k := binary.Varint(b)
	if k <= 0 {
		return o, false
	}
	b = b[k:]
	o.Stream, o.Seq = s.streamName(id), seq
	for _, dst := range []*[]pipeline.Value{&o.key, &o.Src} {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > 1<<16 {
			return o, false
		}
		b = b[k:]
		for i := uint64(0); i < n; i++ {
			v, tr, rest, ok := decodeValue(b)
			if !ok {
				return o, false
			}
			o.trunc = o.trunc || tr
			o.srcTrunc = o.srcTrunc || tr && dst == &o.Src
			*dst = append(*dst, v)
			b = rest
		}
	}
	return o, true
}

// CountSpec says what the bucket pass looks for beyond the mapping's own collisions.
type CountSpec struct {
	MaxExamples, MaxOrigins int
	// Sets are column sets (bit i: source column i) whose collisions are counted too: the rows a
	// key that reads exactly these columns (and tells their values apart) would overwrite. Exact
	// when rows that agree on a set always share a key of the spill, i.e. every set holds the
	// columns the spill's key is computed from and that key is deterministic.
	Sets []uint64
	// Salted: every set is also counted with each row's salt as one more column: the advisor's
	// salt designs, [random(n)][set...]; saltN is that n (whole rows' salts are computed here).
	Salted bool
	SaltN  uint64
	// SaltOrder is the order the salt hashes a row's source values in (Program.SaltOrder)
	SaltOrder []int
	// Pairs: compare the rows of colliding keys column by column (pair masks, for the smallest
	// key change).
	Pairs bool
	// Cols is the number of column hashes every row's text holds (min(source columns, 64)); 0
	// when the texts hold none (then sets, salted and pairs are ignored).
	Cols int
	// KeysOnly: the texts were left out (a source that can be read again, see runner.recount):
	// the colliding keys are listed (up to maxRecountKeys), not examined.
	KeysOnly bool
}

// MaxPairRows bounds the distinct source rows of one colliding key compared pairwise (up to
// MaxPairRows*(maxPairRows-1)/2 pairs): keys with more are compared on their first maxPairRows.
const MaxPairRows = 32

// maxMasks bounds the distinct pair masks kept; pairs with a new mask beyond it are counted as
// unrecorded.
const maxMasks = 1 << 16

// CollisionResult is what the bucket pass finds.
type CollisionResult struct {
	Keys       int64 // distinct target keys
	Colliding  int64 // keys produced by more than one distinct source row
	Rows       int64 // rows that would be overwritten: per key, distinct source rows - 1
	Duplicates int64 // identical source rows repeated: per key, rows - distinct source rows
	Examples   []collisionExample

	SetRows  []int64 // per countSpec.sets: rows overwritten under a key reading that set
	SaltRows []int64 // the same with the salt (countSpec.salted)

	// Pair masks: for pairs of distinct source rows that share a key, the columns in which they
	// differ (bit i: source column i), with the number of pairs.
	Masks       map[uint64]int64
	Pairs       int64 // pairs compared
	NoDiff      int64 // pairs whose hashed columns are all equal (they differ beyond column 64)
	Unrecorded  int64 // pairs not kept: more than maxMasks distinct masks
	CheckedKeys int64 // colliding keys whose rows were all compared pairwise
	PartialKeys int64 // colliding keys with more than maxPairRows distinct rows: their first ones compared

	// CollidingKeys are the colliding keys' hashes, with countSpec.keysOnly (the first
	// maxRecountKeys counted; Colliding says whether there were more)
	CollidingKeys []uint64
}

type collisionExample struct {
	keyHash uint64
	Rows    int64 // rows with this key
	Sources int64 // distinct source rows among them
	Origins []origin
	Diff    uint64 // columns in which the key's distinct rows do not all agree (bit i: source column i)
	Hashed  int    // source columns with a hash (Diff covers these)
}

// SpillRec is a bucket file's record, with its text's position.
type SpillRec struct {
	Key, Src uint64
	pos      uint64 // offset of the text in the bucket's text file << 24 | its length
}

func (r SpillRec) off() int64 { return int64(r.pos >> 24) }
func (r SpillRec) n() int     { return int(r.pos & (1<<24 - 1)) }

// Count processes every bucket (two at a time) and returns the totals and up to maxExamples
// examples: the colliding keys with the smallest key hashes (deterministic), each with up to
// maxOrigins distinct source rows.
func (s *Spill) Count(spec CountSpec) (CollisionResult, error) {
	if s.failed != nil {
		return CollisionResult{}, s.failed
	}
	for _, f := range s.files {
		if err := f.Close(); err != nil {
			return CollisionResult{}, fmt.Errorf("report: collision check: %w", err)
		}
	}
	type part struct {
		res CollisionResult
		err error
	}
	parts := make([]part, len(s.files))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &counter{s: s, spec: spec}
			for b := range next {
				name := s.files[b].Name()
				c.bucket, c.textReads, c.textHeld = b, 0, false
				parts[b].res, parts[b].err = c.file(name, 0)
				// free the disk as we go: the pages of a removed file are freed when its last
				// descriptor closes, which for a large input takes a while (0.5 CPU-s for 50M
				// rows) and is better spent here, next to the other counter, than at the end
				os.Remove(name)
				os.Remove(s.texts[b].Name())
				s.texts[b].Close()
			}
		}()
	}
	for b := range s.files {
		next <- b
	}
	close(next)
	wg.Wait()
	res := newResult(spec)
	for _, p := range parts {
		if p.err != nil {
			return res, p.err
		}
		res.add(p.res, spec.MaxExamples)
	}
	return res, nil
}

func newResult(spec CountSpec) CollisionResult {
	return CollisionResult{SetRows: make([]int64, len(spec.Sets)), SaltRows: make([]int64, len(spec.Sets)), Masks: map[uint64]int64{}}
}

func (r *CollisionResult) add(o CollisionResult, maxExamples int) {
	r.Keys += o.Keys
	r.Colliding += o.Colliding
	r.Rows += o.Rows
	r.Duplicates += o.Duplicates
	for i := range o.SetRows {
		r.SetRows[i] += o.SetRows[i]
	}
	for i := range o.SaltRows {
		r.SaltRows[i] += o.SaltRows[i]
	}
	r.Pairs += o.Pairs
	r.NoDiff += o.NoDiff
	r.Unrecorded += o.Unrecorded
	r.CheckedKeys += o.CheckedKeys
	r.PartialKeys += o.PartialKeys
	for m, n := range o.Masks {
		r.addMask(m, n)
	}
	if room := MaxRecountKeys - len(r.CollidingKeys); room > 0 {
		r.CollidingKeys = append(r.CollidingKeys, o.CollidingKeys[:min(room, len(o.CollidingKeys))]...)
	}
	r.Examples = append(r.Examples, o.Examples...)
	slices.SortFunc(r.Examples, func(a, b collisionExample) int {
		switch {
		case a.keyHash < b.keyHash:
			return -1
		case a.keyHash > b.keyHash:
			return 1
		}
		return 0
	})
	if len(r.Examples) > maxExamples {
		r.Examples = r.Examples[:maxExamples]
	}
}

func (r *CollisionResult) addMask(m uint64, n int64) {
	if _, ok := r.Masks[m]; ok || len(r.Masks) < maxMasks {
		r.Masks[m] += n
		return
	}
	r.Unrecorded += n
}

// maxBucketBytes bounds the bucket file one goroutine sorts in memory (its records, twice, for
// the radix sort): a larger one (an input of more than ~100M rows) is first split into 16 files
// by the next 4 bits of the key hash, so memory stays flat however large the input. A file that
// cannot be split (one key with millions of rows) is sorted as it is.
var maxBucketBytes int64 = 8 << 20

// counter counts bucket files, reusing its buffers from one file to the next.
type counter struct {
	s    *Spill
	spec CountSpec

	recs, tmp []SpillRec
	chunk     []byte

	bucket    int    // the bucket whose (sub)files are counted: its text file holds their texts
	textReads int    // texts of the bucket read one by one so far
	textHeld  bool   // the bucket's text file is in text
	text      []byte // the bucket's whole text file, once many of its texts are needed
	order     []int

	reps  []int    // indexes of one row per distinct source row of a key
	salts []uint64 // per rep
	colh  []uint32 // per rep, spec.cols column hashes
	projs []uint64
	buf   []byte

	saltBuf []byte // scratch for wholeRow.salt
}

// file counts one bucket file (see spill), splitting it first when it is too large.
func (c *counter) file(path string, depth int) (CollisionResult, error) {
	res := newResult(c.spec)
	st, err := os.Stat(path)
	if err != nil {
		return res, fmt.Errorf("report: collision check: %w", err)
	}
	if st.Size() > maxBucketBytes && depth < 8 && c.s.shift >= 4*uint(depth+1) {
		return c.split(path, depth)
	}
	c.recs = c.recs[:0]
	err = c.readRecs(path, depth, func(r SpillRec) error {
		c.recs = append(c.recs, r)
		return nil
	})
	if err != nil {
		return res, err
	}
	c.recs, c.tmp = sortByKey(c.recs, c.tmp, 64-c.s.shift+4*uint(depth))
	recs := c.recs
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].Key == recs[i].Key {
			j++
		}
		if err := c.group(recs[i:j], &res); err != nil {
			return res, err
		}
		i = j
	}
	return res, nil
}

// readRecs calls fn with each record of a bucket file (depth 0) or of one of its parts (see
// split), in file order.
func (c *counter) readRecs(path string, depth int, fn func(SpillRec) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("report: collision check: %w", err)
	}
	defer f.Close()
	size := spillRecBytes
	if depth > 0 {
		size = splitRecBytes
	}
	// a multiple of both record sizes
	const chunk = 256 << 10 / (spillRecBytes * splitRecBytes) * (spillRecBytes * splitRecBytes)
	if c.chunk == nil {
		c.chunk = make([]byte, chunk)
	}
	var off uint64 // depth 0: the texts are in the records' order
	for {
		n, err := io.ReadFull(f, c.chunk)
		if n%size != 0 {
			return errors.New("report: collision check: truncated temp file")
		}
		for o := 0; o < n; o += size {
			b := c.chunk[o : o+size]
			r := SpillRec{Key: binary.LittleEndian.Uint64(b), Src: binary.LittleEndian.Uint64(b[8:])}
			if depth > 0 {
				r.pos = binary.LittleEndian.Uint64(b[16:])
			} else {
				n := uint64(binary.LittleEndian.Uint32(b[16:]))
				r.pos = off<<24 | n
				off += n
			}
			if ferr := fn(r); ferr != nil {
				return ferr
			}
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return nil
		case err != nil:
			return fmt.Errorf("report: collision check: read temp file: %w", err)
		}
	}
}

// group counts the rows of one key hash.
func (c *counter) group(g []SpillRec, res *CollisionResult) error {
	if len(g) > 1 {
		// order the key's rows by source hash, then position
		slices.SortFunc(g, func(a, b SpillRec) int {
			switch {
			case a.Src != b.Src:
				if a.Src < b.Src {
					return -1
				}
				return 1
			case a.pos < b.pos:
				return -1
			case a.pos > b.pos:
				return 1
			}
			return 0
		})
	}
	reps := c.reps[:0]
	for q := range g {
		if q == 0 || g[q].Src != g[q-1].Src {
			reps = append(reps, q)
		}
	}
	c.reps = reps
	distinct := int64(len(reps))
	res.Keys++
	res.Duplicates += int64(len(g)) - distinct
	if distinct == 1 {
		return nil
	}
	res.Colliding++
	res.Rows += distinct - 1
	spec := c.spec
	if spec.KeysOnly {
		if len(res.CollidingKeys) < MaxRecountKeys {
			res.CollidingKeys = append(res.CollidingKeys, g[0].Key)
		}
		return nil
	}
	m := spec.Cols
	if m > 0 {
		if err := c.rowInfo(g); err != nil {
			return err
		}
		for j, set := range spec.Sets {
			res.SetRows[j] += c.lost(set, false)
			if spec.Salted {
				res.SaltRows[j] += c.lost(set, true)
			}
		}
		if spec.Pairs {
			c.comparePairs(res)
		}
	}
	if len(res.Examples) < spec.MaxExamples {
		ex, err := c.example(g, distinct)
		if err != nil {
			return err
		}
		res.Examples = append(res.Examples, ex)
	}
	return nil
}

// comparePairs counts, for every pair of the key's distinct rows (the first MaxPairRows), the
// columns that tell them apart.
func (c *counter) comparePairs(res *CollisionResult) {
	m, reps := c.spec.Cols, c.reps
	n := min(len(reps), MaxPairRows)
	if len(reps) > MaxPairRows {
		res.PartialKeys++
	} else {
		res.CheckedKeys++
	}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			d := diffMask(c.colh[a*m:(a+1)*m], c.colh[b*m:(b+1)*m])
			res.Pairs++
			if d == 0 {
				res.NoDiff++
				continue
			}
			res.addMask(d, 1)
		}
	}
}

// example is the colliding key's example: where its first distinct rows came from (in source
// order) and the columns that differ over all of them.
func (c *counter) example(g []SpillRec, distinct int64) (collisionExample, error) {
	m, reps := c.spec.Cols, c.reps
	ex := collisionExample{keyHash: g[0].Key, Rows: int64(len(g)), Sources: distinct, Hashed: m}
	n := min(len(reps), c.spec.MaxOrigins)
	err := c.texts(g, reps[:n], func(_ int, text []byte) {
		if o, ok := c.s.decodeOrigin(text, m); ok {
			ex.Origins = append(ex.Origins, o)
		}
	})
	if err != nil {
		return ex, err
	}
	if m > 0 {
		// over every distinct row of the key, not only the origins shown
		for q := 1; q < len(reps); q++ {
			ex.Diff |= diffMask(c.colh[:m], c.colh[q*m:(q+1)*m])
		}
	}
	slices.SortFunc(ex.Origins, func(a, b origin) int {
		if a.Stream != b.Stream {
			if a.Stream < b.Stream {
				return -1
			}
			return 1
		}
		return int(min(max(a.Seq-b.Seq, -1), 1))
	})
	return ex, nil
}

// rowInfo reads the salt and column hashes of the key's distinct rows (c.reps) into c.salts and
// c.colh (spec.cols hashes per row).
func (c *counter) rowInfo(g []SpillRec) error {
	m := c.spec.Cols
	k := len(c.reps)
	c.salts = slices.Grow(c.salts[:0], k)[:k]
	c.colh = slices.Grow(c.colh[:0], k*m)[:k*m]
	var bad bool
	var scratch []uint32
	err := c.texts(g, c.reps, func(i int, text []byte) {
		if v, k := binary.Uvarint(text); k > 0 && v&textWhole != 0 {
			w, ok := c.s.readWhole(v, text[k:])
			if !ok {
				bad = true
				return
			}
			row := c.colh[i*m : (i+1)*m]
			for col := range row {
				h := nullHash
				if col < len(w.vals) {
					h = HashValue(w.vals[col], 0)
				}
				row[col] = foldHash(h)
			}
			c.salts[i] = 0
			if c.spec.Salted {
				c.salts[i], c.saltBuf = w.salt(c.spec.SaltN, c.spec.SaltOrder, c.saltBuf)
			}
			return
		}
		salt, cols, rest, left, ok := decodeRowInfo(text, m, c.s.Skip, scratch[:0])
		scratch = cols
		if !ok || len(cols) != m {
			bad = true
			return
		}
		if left {
			o, ok := c.s.readOrigin(rest)
			if !ok || o.srcTrunc || len(o.Src) != len(c.s.srcCols) {
				bad = true
				return
			}
			for k, col := range c.s.srcCols {
				if col < m {
					h := HashValue(o.Src[k], 0)
					cols[col] = foldHash(h)
				}
			}
		}
		c.salts[i] = salt
		copy(c.colh[i*m:], cols)
	})
	if err != nil {
		return err
	}
	if bad {
		return errors.New("report: collision check: corrupt temp file")
	}
	return nil
}

// textReads is how many texts of a bucket are read one by one (a pread each) before its whole
// text file is read instead, when it is small enough to hold (2 x maxBucketBytes).
const textReads = 64

// texts calls fn(i, text) with the text of each row g[idx[i]] (valid during the call): in index
// order when they are read one by one or the text file is held in memory, else in file order, in
// one pass over the text file.
func (c *counter) texts(g []SpillRec, idx []int, fn func(i int, text []byte)) error {
	f, size := c.s.texts[c.bucket], c.s.textSize[c.bucket]
	if !c.textHeld && c.textReads+len(idx) > textReads && size <= 2*maxBucketBytes {
		c.text = slices.Grow(c.text[:0], int(size))[:size]
		if _, err := f.ReadAt(c.text, 0); err != nil && !(err == io.EOF && size == 0) {
			return fmt.Errorf("report: collision check: read temp file: %w", err)
		}
		c.textHeld = true
	}
	switch {
	case c.textHeld:
		for i, q := range idx {
			r := g[q]
			if r.off()+int64(r.n()) > size {
				return errors.New("report: collision check: corrupt temp file")
			}
			fn(i, c.text[r.off():r.off()+int64(r.n())])
		}
		return nil
	case len(idx) <= textReads:
		c.textReads += len(idx)
		for i, q := range idx {
			r := g[q]
			t := c.textBuf(r.n())
			if _, err := f.ReadAt(t, r.off()); err != nil {
				return fmt.Errorf("report: collision check: read temp file: %w", err)
			}
			fn(i, t)
		}
		return nil
	}
	c.order = c.order[:0]
	for i := range idx {
		c.order = append(c.order, i)
	}
	slices.SortFunc(c.order, func(a, b int) int { return int(min(max(g[idx[a]].off()-g[idx[b]].off(), -1), 1)) })
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 256<<10)
	cur := int64(0)
	for _, i := range c.order {
		r := g[idx[i]]
		if _, err := br.Discard(int(r.off() - cur)); err != nil {
			return fmt.Errorf("report: collision check: read temp file: %w", err)
		}
		t := c.textBuf(r.n())
		if _, err := io.ReadFull(br, t); err != nil {
			return fmt.Errorf("report: collision check: read temp file: %w", err)
		}
		fn(i, t)
		cur = r.off() + int64(r.n())
	}
	return nil
}

func (c *counter) textBuf(n int) []byte {
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	return c.buf[:n]
}

// lost is the rows a key reading exactly the columns of set (and the salt, with salt) would
// overwrite among the key's distinct rows: their number minus the distinct projections.
func (c *counter) lost(set uint64, salt bool) int64 {
	m := c.spec.Cols
	k := len(c.reps)
	p := c.projs[:0]
	for i := 0; i < k; i++ {
		h := uint64(0x9e3779b97f4a7c15)
		row := c.colh[i*m : (i+1)*m]
		for col, v := range row {
			if set&(1<<uint(col)) != 0 {
				h = Mix64(h^uint64(v), uint64(col))
			}
		}
		if salt {
			h = Mix64(h^c.salts[i], 0x5a17)
		}
		p = append(p, h)
	}
	c.projs = p
	slices.Sort(p)
	return int64(k - len(slices.Compact(p)))
}

// diffMask is the columns in which two rows' hashes differ.
func diffMask(a, b []uint32) uint64 {
	var d uint64
	for i := range a {
		if a[i] != b[i] {
			d |= 1 << uint(i)
		}
	}
	return d
}

// split distributes a bucket file over 16 files by the next 4 bits of the key hash (the caller
// checked that there are bits left), removes it, and counts each part.
func (c *counter) split(path string, depth int) (CollisionResult, error) {
	res := newResult(c.spec)
	var err error
	shift := c.s.shift - 4*uint(depth+1)
	var parts [16]*os.File
	var ws [16]*bufio.Writer
	closeAll := func() {
		for _, p := range parts {
			if p != nil {
				p.Close()
			}
		}
	}
	for i := range parts {
		if parts[i], err = os.Create(fmt.Sprintf("%s.%x", path, i)); err != nil {
			closeAll()
			return res, fmt.Errorf("report: collision check: %w", err)
		}
		ws[i] = bufio.NewWriterSize(parts[i], 32<<10)
	}
	var rec [splitRecBytes]byte
	err = c.readRecs(path, depth, func(r SpillRec) error {
		binary.LittleEndian.PutUint64(rec[:], r.Key)
		binary.LittleEndian.PutUint64(rec[8:], r.Src)
		binary.LittleEndian.PutUint64(rec[16:], r.pos)
		_, err := ws[(r.Key>>shift)&15].Write(rec[:])
		return err
	})
	for _, w := range ws {
		if ferr := w.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("report: collision check: write temp file: %w", ferr)
		}
	}
	closeAll()
	if err != nil {
		return res, err
	}
	os.Remove(path)
	for i := range parts {
		r, err := c.file(parts[i].Name(), depth+1)
		os.Remove(parts[i].Name())
		if err != nil {
			return res, err
		}
		res.add(r, c.spec.MaxExamples)
	}
	return res, nil
}

// radixSort orders records by key hash (LSD radix over the low 56 bits: the top 8 or more bits
// are the bucket, the same for all); tmp is scratch space. Both slices are returned for reuse.
func radixSort(recs, tmp []SpillRec) ([]SpillRec, []SpillRec) { return RadixSortBits(recs, tmp, 56) }

// RadixSortBits sorts by the low bits of the key hash.
func RadixSortBits(recs, tmp []SpillRec, bits uint) ([]SpillRec, []SpillRec) {
	if len(recs) < 64 {
		slices.SortFunc(recs, func(a, b SpillRec) int {
			switch {
			case a.Key < b.Key:
				return -1
			case a.Key > b.Key:
				return 1
			}
			return 0
		})
		return recs, tmp
	}
	if cap(tmp) < len(recs) {
		tmp = make([]SpillRec, len(recs))
	}
	tmp = tmp[:len(recs)]
	const bitsPer = 14
	var counts [1 << bitsPer]int
	for shift := uint(0); shift < bits; shift += bitsPer {
		clear(counts[:])
		for i := range recs {
			counts[(recs[i].Key>>shift)&(1<<bitsPer-1)]++
		}
		sum := 0
		for i, c := range counts {
			counts[i] = sum
			sum += c
		}
		for i := range recs {
			d := (recs[i].Key >> shift) & (1<<bitsPer - 1)
			tmp[counts[d]] = recs[i]
			counts[d]++
		}
		recs, tmp = tmp, recs
	}
	return recs, tmp
}

// sortByKey orders a bucket's records by key hash; its top bits are the same for all. The key
// hashes are uniform below them: two counting passes of 11 bits (2,048 destinations, which stay
// in cache where one pass of 16 bits did not) order them by the next 22 bits, which leaves runs
// of a record or two, each sorted on its own; a long run (a key with many rows) is sorted by
// comparison. Four passes over the records where a full radix sort takes eight.
func sortByKey(recs, tmp []SpillRec, top uint) ([]SpillRec, []SpillRec) {
	const digit = 11
	if len(recs) < 64 || top+2*digit > 64 {
		return radixSort(recs, tmp)
	}
	if cap(tmp) < len(recs) {
		tmp = make([]SpillRec, len(recs))
	}
	tmp = tmp[:len(recs)]
	var counts [1 << digit]int
	for pass := 0; pass < 2; pass++ {
		shift := 64 - top - digit*uint(2-pass) // the lower digit first
		clear(counts[:])
		for i := range recs {
			counts[recs[i].Key>>shift&(1<<digit-1)]++
		}
		sum := 0
		for d, c := range counts {
			counts[d] = sum
			sum += c
		}
		for i := range recs {
			d := recs[i].Key >> shift & (1<<digit - 1)
			tmp[counts[d]] = recs[i]
			counts[d]++
		}
		recs, tmp = tmp, recs
	}
	prefix := ^uint64(0) << (64 - top - 2*digit)
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && (recs[j].Key^recs[i].Key)&prefix == 0 {
			j++
		}
		if run := recs[i:j]; len(run) > 32 {
			slices.SortStableFunc(run, func(a, b SpillRec) int { return cmp.Compare(a.Key, b.Key) })
		} else {
			for a := 1; a < len(run); a++ {
				for b := a; b > 0 && run[b].Key < run[b-1].Key; b-- {
					run[b], run[b-1] = run[b-1], run[b]
				}
			}
		}
		i = j
	}
	return recs, tmp
}

// MaxRecountKeys bounds the colliding keys a second read looks for (8 MiB of key hashes); with
// more it spills every row again.
var MaxRecountKeys = 1 << 20
