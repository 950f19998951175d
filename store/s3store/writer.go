package s3store

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.uber.org/zap"

	"github.com/rekey/rekey/store"
)

// spoolBufSize buffers the small writes of the formats (page headers) before the spool file.
const spoolBufSize = 32 << 10

var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, spoolBufSize) }}

// errClosed is returned by a Write after Commit or Abort.
var errClosed = errors.New("writer already committed or aborted")

// Create implements store.Store. Nothing is sent until a part is full or Commit is called;
// ctx governs the writer's background uploads until Commit or Abort returns.
func (s *Store) Create(ctx context.Context, name string) (store.Writer, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	return &writer{s: s, name: name, key: s.key(name), ctx: ctx, cancel: cancel}, nil
}

// writer streams one object: bytes go to a spool file; a full spool is uploaded as a part in
// the background while the next bytes go to a new spool; Commit sends the rest and completes
// the upload (or, for an object under one part, sends a single PutObject).
type writer struct {
	s      *Store
	name   string
	key    string
	ctx    context.Context // canceled by Abort and by a failed part, to stop the others
	cancel context.CancelFunc

	// Used by Write and Commit only (one goroutine at a time, as for any io.Writer).
	spool   *os.File
	buf     *bufio.Writer
	spooled int64 // bytes in spool (flushed or buffered)
	total   int64
	nparts  int32 // parts handed to uploads
	closed  bool

	create   sync.Once // CreateMultipartUpload, by the first part's upload
	uploadID string
	wg       sync.WaitGroup // part uploads running

	mu    sync.Mutex
	parts []types.CompletedPart
	err   error // the first failed part
}

func (w *writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, fmt.Errorf("write %s: %w", w.s.Location(w.name), errClosed)
	}
	if err := w.failed(); err != nil {
		return 0, err
	}
	if w.spool == nil {
		if err := w.newSpool(); err != nil {
			return 0, err
		}
	}
	n, err := w.buf.Write(p)
	w.spooled += int64(n)
	w.total += int64(n)
	if err != nil {
		return n, fmt.Errorf("write %s: spool file in %s: %w", w.s.Location(w.name), w.s.opts.SpoolDir, err)
	}
	if w.spooled >= w.partSize(w.nparts+1) {
		if err := w.sendPart(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// partSize grows past every 1,000 parts (8, 16, 24 MiB ...) so an object of up to
// PartSize x 55,000 fits S3's 10,000 parts.
func (w *writer) partSize(n int32) int64 {
	return w.s.opts.PartSize * int64(1+(n-1)/1000)
}

func (w *writer) newSpool() error {
	f, err := os.CreateTemp(w.s.opts.SpoolDir, "rekey-s3-*.spool")
	if err != nil {
		return fmt.Errorf("write %s: spool file: %w (set TMPDIR to a folder with room for a few parts per open file)", w.s.Location(w.name), err)
	}
	// Unlinked at once: the open file keeps its bytes, and a crash leaves nothing behind.
	// (Where a file cannot be removed while open, discard removes it.)
	_ = os.Remove(f.Name())
	w.spool = f
	if w.buf == nil {
		w.buf = bufPool.Get().(*bufio.Writer)
	}
	w.buf.Reset(f)
	w.spooled = 0
	return nil
}

// failed returns the first failed part's error, or the writer's context's.
func (w *writer) failed() error {
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("write %s: %w", w.s.Location(w.name), err)
	}
	return nil
}

func (w *writer) setErr(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.cancel()
}

// sendPart hands the spool to a background upload, waiting for a free upload slot: that wait
// is the backpressure that bounds the parts on disk when the network is slower than the writers.
func (w *writer) sendPart() error {
	if err := w.buf.Flush(); err != nil {
		return fmt.Errorf("write %s: spool file in %s: %w", w.s.Location(w.name), w.s.opts.SpoolDir, err)
	}
	if w.nparts >= maxParts {
		return fmt.Errorf("write %s: over %d parts: the object is too large for a multipart upload; lower --max-file-size", w.s.Location(w.name), maxParts)
	}
	select {
	case w.s.slots <- struct{}{}:
	case <-w.ctx.Done():
		return w.failed() // not nil once ctx is done
	}
	w.nparts++
	f, size, num := w.spool, w.spooled, w.nparts
	w.spool, w.spooled = nil, 0
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.s.slots }()
		defer discard(f)
		if err := w.uploadPart(f, size, num); err != nil {
			w.setErr(err)
		}
	}()
	return nil
}

func (w *writer) uploadPart(f *os.File, size int64, num int32) error {
	w.create.Do(func() {
		out, err := w.s.client.CreateMultipartUpload(w.ctx, &s3.CreateMultipartUploadInput{
			Bucket: aws.String(w.s.t.bucket), Key: aws.String(w.key),
		})
		if err != nil {
			w.setErr(w.s.fail("write: start the multipart upload of", w.name, err))
			w.abortOthers("") // a failed attempt may have started one all the same
			return
		}
		w.uploadID = aws.ToString(out.UploadId)
		if attempts, ok := retry.GetAttemptResults(out.ResultMetadata); ok && len(attempts.Results) > 1 {
			// An attempt that timed out may have started an upload whose answer was lost: it
			// would stay in the bucket, empty and billed, after a successful run.
			if err := w.abortOthers(w.uploadID); err != nil {
				w.setErr(err)
			}
		}
	})
	if w.uploadID == "" {
		return w.failed()
	}
	start := time.Now()
	// A seekable body: the SDK signs (or retries) it by seeking, never as aws-chunked.
	out, err := w.s.client.UploadPart(w.ctx, &s3.UploadPartInput{
		Bucket:        aws.String(w.s.t.bucket),
		Key:           aws.String(w.key),
		UploadId:      aws.String(w.uploadID),
		PartNumber:    aws.Int32(num),
		Body:          io.NewSectionReader(f, 0, size),
		ContentLength: aws.Int64(size),
	}, w.s.bodyOpts...)
	if err != nil {
		return w.s.fail(fmt.Sprintf("write: upload part %d of", num), w.name, err)
	}
	w.s.log.Debug("part uploaded", zap.String("file", w.name), zap.Int32("part", num), zap.Int64("bytes", size), zap.Duration("took", time.Since(start)))
	w.mu.Lock()
	w.parts = append(w.parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
	w.mu.Unlock()
	return nil
}

// Commit implements store.Writer: the rest as the last part and CompleteMultipartUpload, the
// atomic step that makes the object visible; an object under one part is a single PutObject.
func (w *writer) Commit(ctx context.Context) (int64, error) {
	if w.closed {
		return 0, fmt.Errorf("commit %s: %w", w.s.Location(w.name), errClosed)
	}
	if err := w.failed(); err != nil {
		return 0, err
	}
	if w.spool == nil && w.nparts == 0 {
		if err := w.newSpool(); err != nil { // an empty object
			return 0, err
		}
	}
	if w.buf != nil && w.spool != nil {
		if err := w.buf.Flush(); err != nil {
			return 0, fmt.Errorf("commit %s: spool file: %w", w.s.Location(w.name), err)
		}
	}
	if w.nparts == 0 {
		_, err := w.s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(w.s.t.bucket),
			Key:           aws.String(w.key),
			Body:          io.NewSectionReader(w.spool, 0, w.spooled),
			ContentLength: aws.Int64(w.spooled),
		}, w.s.bodyOpts...)
		if err != nil {
			return 0, w.s.fail("commit", w.name, err)
		}
		w.finish()
		return w.total, nil
	}
	if w.spool != nil && w.spooled > 0 {
		if err := w.sendPart(); err != nil {
			return 0, err
		}
	}
	w.wg.Wait()
	if err := w.failed(); err != nil {
		return 0, err
	}
	parts := slices.Clone(w.parts)
	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	_, err := w.s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(w.s.t.bucket),
		Key:             aws.String(w.key),
		UploadId:        aws.String(w.uploadID),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil && !w.completed(ctx, parts) {
		return 0, w.s.fail("commit", w.name, err)
	}
	w.uploadID = "" // complete: nothing for Abort to abort
	w.finish()
	return w.total, nil
}

// completed tells whether the key holds this writer's object after a CompleteMultipartUpload
// that failed: the server may have completed the upload and lost its answer, and a retry of it
// finds no upload (NoSuchUpload, on servers whose Complete is not idempotent). The object is the
// writer's when it has the size written and the ETag of a multipart upload of these parts (the
// MD5 of their MD5s, "-" and their count): no other writer uses the key (see abortOthers).
func (w *writer) completed(ctx context.Context, parts []types.CompletedPart) bool {
	want, ok := multipartETag(parts)
	if !ok {
		return false
	}
	out, err := w.s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(w.s.t.bucket), Key: aws.String(w.key)})
	if err != nil || aws.ToInt64(out.ContentLength) != w.total || !strings.EqualFold(strings.Trim(aws.ToString(out.ETag), `"`), want) {
		return false
	}
	w.s.log.Warn("the upload was completed though its answer was lost", zap.String("file", w.name), zap.Int64("bytes", w.total))
	return true
}

// multipartETag is the ETag S3 gives the object of a multipart upload of parts (in order): the
// hex MD5 of their MD5s, "-" and their count. false when a part's ETag is not an MD5 (a server
// that computes ETags otherwise).
func multipartETag(parts []types.CompletedPart) (string, bool) {
	h := md5.New()
	for _, p := range parts {
		sum, err := hex.DecodeString(strings.Trim(aws.ToString(p.ETag), `"`))
		if err != nil || len(sum) != md5.Size {
			return "", false
		}
		h.Write(sum)
	}
	return fmt.Sprintf("%x-%d", h.Sum(nil), len(parts)), true
}

// finish releases the writer's spool and buffer after a successful Commit.
func (w *writer) finish() {
	w.closed = true
	w.cancel()
	w.release()
}

func (w *writer) release() {
	if w.spool != nil {
		discard(w.spool)
		w.spool = nil
	}
	if w.buf != nil {
		w.buf.Reset(nil)
		bufPool.Put(w.buf)
		w.buf = nil
	}
}

// Abort implements store.Writer: it stops the part uploads and aborts the multipart upload, so
// the bucket keeps no parts. If the server cannot be reached, Sweep removes the upload later.
func (w *writer) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.cancel()
	w.wg.Wait()
	w.release()
	if w.uploadID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := w.s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(w.s.t.bucket), Key: aws.String(w.key), UploadId: aws.String(w.uploadID),
	})
	if err != nil && !isCode(err, "NoSuchUpload") {
		return fmt.Errorf("%w; the next run's resume removes the upload's parts", w.s.fail("abort", w.name, err))
	}
	w.uploadID = ""
	return nil
}

// abortOthers aborts the unfinished uploads of the writer's key but keep: those started by
// attempts of CreateMultipartUpload whose answer never came. No other writer uses the key (one
// run per output, and a run names each file once), so they are all this writer's.
func (w *writer) abortOthers(keep string) error {
	return w.s.abortLost(w.name, keep)
}

// abortLost aborts the unfinished uploads of name's key but keep: those started by attempts of
// CreateMultipartUpload whose answer never came, which would stay in the bucket, billed.
func (s *Store) abortLost(name, keep string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := s.key(name)
	return s.abortUploads(ctx, key, "write: abort a lost multipart upload of",
		func(u types.MultipartUpload) bool {
			return aws.ToString(u.Key) != key || aws.ToString(u.UploadId) == keep
		},
		func(u types.MultipartUpload) {
			s.log.Warn("aborted a multipart upload started by a request that timed out", zap.String("file", name), zap.String("upload", aws.ToString(u.UploadId)))
		})
}

// discard closes a spool file and removes it where newSpool could not.
func discard(f *os.File) {
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
}
