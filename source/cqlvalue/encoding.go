package cqlvalue

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/rekey/rekey/pipeline"
)

// EncodingError is a text value that is not valid UTF-8. Lindorm's VARCHAR (a Parquet STRING)
// must be UTF-8: one invalid byte makes readers refuse the whole file, so such a value is a
// reject (code "encoding"), never written.
type EncodingError struct {
	Offset int    // byte offset of the first invalid byte in the value
	Bytes  string // up to 4 bytes from there
	Detail string // what is wrong, when more specific than an invalid byte
}

func (e *EncodingError) Error() string {
	what := e.Detail
	if what == "" {
		what = fmt.Sprintf("invalid UTF-8 byte 0x%x at byte %d", e.Bytes[0], e.Offset)
	}
	return what + ": text must be UTF-8 (convert the input, e.g. iconv -f GBK -t UTF-8, or declare the column blob for binary data)"
}

// CheckUTF8 returns an *EncodingError naming the first invalid byte of s, or nil when s is
// valid UTF-8.
func CheckUTF8(s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	return invalidUTF8(s)
}

func invalidUTF8(s string) *EncodingError {
	if i := pipeline.InvalidUTF8At(s); i >= 0 {
		return &EncodingError{Offset: i, Bytes: s[i:min(i+4, len(s))]}
	}
	return &EncodingError{Detail: "invalid UTF-8"}
}

// ErrorCode is the reject code for an error of ParseText or FromJSON: "encoding" for text that
// is not UTF-8, "type" for everything else.
func ErrorCode(err error) string {
	var ee *EncodingError
	if errors.As(err, &ee) {
		return pipeline.CodeEncoding
	}
	return pipeline.CodeType
}
