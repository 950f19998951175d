package parquet

import (
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/parquet/file"
)

// Verify checks that r holds a whole Parquet file: magic at both ends and a footer that
// decodes. A file cut short, or overwritten, fails here before a resume relies on it.
func (*Format) Verify(r io.ReaderAt, size int64) (err error) {
	// arrow's footer decoding panics on some damaged footers (a nil dereference): that is a
	// damaged file too, not a crash of the resume
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("not a whole Parquet file: its footer is damaged (%v)", p)
		}
	}()
	rdr, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		return fmt.Errorf("not a whole Parquet file: %w", err)
	}
	return rdr.Close()
}
