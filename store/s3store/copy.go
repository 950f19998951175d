package s3store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.uber.org/zap"

	"github.com/rekey/rekey/store"
)

// Server-side copies (store.Copier), which merge uses to gather the shards' files under one
// data/ folder without their bytes passing through rekey.
//
// An object up to copyMax is one CopyObject (atomic, like PutObject). OSS copies at most 1 GB
// that way between buckets (more within one); S3 at most 5 GiB: 1 GiB is under both. A larger
// object is a multipart upload of UploadPartCopy ranges of copyPartSize (both servers take up to
// 5 GiB a part), completed at the end: the object appears whole or not at all, as with Commit.
// Tests lower both.
var (
	copyMax      int64 = 1 << 30
	copyPartSize int64 = 1 << 30
)

const maxCopyPart = 5 << 30 // S3's and OSS's largest part

var _ store.Copier = (*Store)(nil)

// CopyFrom implements store.Copier: src of from is copied to dst by the server when from is a
// prefix of the same bucket on the same endpoint; otherwise it reports false and the caller
// copies the bytes. Another bucket is not tried, even on the same endpoint: the copy would need
// this store's key to read that bucket, and OSS allows it only within a region.
func (s *Store) CopyFrom(ctx context.Context, from store.Store, src, dst string) (bool, error) {
	f, ok := from.(*Store)
	if !ok || !s.sameBucket(f) {
		return false, nil
	}
	if err := checkName(src); err != nil {
		return false, err
	}
	if err := checkName(dst); err != nil {
		return false, err
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(f.t.bucket), Key: aws.String(f.key(src))})
	if err != nil {
		return false, f.fail("copy", src, err)
	}
	size := aws.ToInt64(head.ContentLength)
	start := time.Now()
	if size <= copyMax {
		_, err = s.client.CopyObject(ctx, &s3.CopyObjectInput{
			Bucket:            aws.String(s.t.bucket),
			Key:               aws.String(s.key(dst)),
			CopySource:        aws.String(copySource(f.t.bucket, f.key(src))),
			CopySourceIfMatch: head.ETag, // the object merge checked, not one replaced since
		})
		if err != nil {
			return false, s.fail(fmt.Sprintf("copy %s to", f.Location(src)), dst, err)
		}
	} else if err := s.copyParts(ctx, f, src, dst, size, head.ETag); err != nil {
		return false, err
	}
	s.log.Debug("copied on the server", zap.String("from", f.Location(src)), zap.String("file", dst),
		zap.Int64("bytes", size), zap.Duration("took", time.Since(start)))
	return true, nil
}

// sameBucket tells whether o is a prefix of s's bucket, reached the same way.
func (s *Store) sameBucket(o *Store) bool {
	return s.t.scheme == o.t.scheme && s.t.bucket == o.t.bucket && s.t.endpoint == o.t.endpoint && s.t.region == o.t.region
}

// copyParts copies an object over copyMax as a multipart upload of UploadPartCopy ranges.
func (s *Store) copyParts(ctx context.Context, f *Store, src, dst string, size int64, etag *string) error {
	part := max(copyPartSize, (size+maxParts-1)/maxParts)
	if part > maxCopyPart {
		return fmt.Errorf("copy %s: %d bytes is more than %d parts of 5 GiB", f.Location(src), size, maxParts)
	}
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.t.bucket), Key: aws.String(s.key(dst))})
	if err != nil {
		_ = s.abortLost(dst, "") // a failed attempt may have started one all the same
		return s.fail("copy: start the multipart upload of", dst, err)
	}
	id := up.UploadId
	abort := func() {
		actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// on failure the next resume's Sweep aborts it; the copy's error is the one to report
		_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: aws.String(s.t.bucket), Key: aws.String(s.key(dst)), UploadId: id})
	}
	if attempts, ok := retry.GetAttemptResults(up.ResultMetadata); ok && len(attempts.Results) > 1 {
		// an attempt that timed out may have started an upload whose answer was lost, as a
		// writer's may (writer.uploadPart): no other copy or writer uses the key
		if err := s.abortLost(dst, aws.ToString(id)); err != nil {
			abort()
			return err
		}
	}
	var parts []types.CompletedPart
	for off, n := int64(0), int32(1); off < size; off, n = off+part, n+1 {
		end := min(off+part, size) - 1
		out, err := s.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
			Bucket:            aws.String(s.t.bucket),
			Key:               aws.String(s.key(dst)),
			UploadId:          id,
			PartNumber:        aws.Int32(n),
			CopySource:        aws.String(copySource(f.t.bucket, f.key(src))),
			CopySourceRange:   aws.String(fmt.Sprintf("bytes=%d-%d", off, end)),
			CopySourceIfMatch: etag, // every range of the same version
		})
		if err != nil {
			abort()
			return s.fail(fmt.Sprintf("copy part %d of %s to", n, f.Location(src)), dst, err)
		}
		if out.CopyPartResult == nil || out.CopyPartResult.ETag == nil {
			abort()
			return fmt.Errorf("copy part %d of %s to %s: the server returned no ETag", n, f.Location(src), s.Location(dst))
		}
		parts = append(parts, types.CompletedPart{ETag: out.CopyPartResult.ETag, PartNumber: aws.Int32(n)})
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(s.t.bucket),
		Key:             aws.String(s.key(dst)),
		UploadId:        id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		abort()
		return s.fail(fmt.Sprintf("copy %s to", f.Location(src)), dst, err)
	}
	return nil
}

// copySource is the x-amz-copy-source value: bucket/key, each path segment URL-encoded.
func copySource(bucket, key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(url.PathEscape(s), "+", "%2B") // a '+' would read as a space
	}
	return bucket + "/" + strings.Join(segs, "/")
}
