package cqltest

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Protocol opcodes (native_protocol_v4.spec section 2.4).
const (
	opError        = 0x00
	opStartup      = 0x01
	opReady        = 0x02
	opAuthenticate = 0x03
	opOptions      = 0x05
	opSupported    = 0x06
	opQuery        = 0x07
	opResult       = 0x08
	opPrepare      = 0x09
	opExecute      = 0x0A
	opRegister     = 0x0B
	opEvent        = 0x0C
	opBatch        = 0x0D
)

// Frame header flags.
const (
	flagCompression   = 0x01
	flagTracing       = 0x02
	flagCustomPayload = 0x04
	flagWarning       = 0x08
)

// Query parameter flags (section 4.1.4).
const (
	qfValues            = 0x01
	qfSkipMetadata      = 0x02
	qfPageSize          = 0x04
	qfPagingState       = 0x08
	qfSerialConsistency = 0x10
	qfDefaultTimestamp  = 0x20
	qfNamesForValues    = 0x40
)

// Result kinds and rows metadata flags (section 4.2.5).
const (
	resultVoid        = 0x0001
	resultRows        = 0x0002
	resultSetKeyspace = 0x0003
	resultPrepared    = 0x0004

	mfGlobalTableSpec = 0x0001
	mfHasMorePages    = 0x0002
	mfNoMetadata      = 0x0004
)

const headerSize = 9

// maxBodySize bounds request bodies; Cassandra's default native_transport_max_frame_size is 16 MiB.
const maxBodySize = 256 << 20

// ErrorCode is a CQL protocol error code (native_protocol_v4.spec section 9).
type ErrorCode int32

// Error codes a test can inject or that the server returns.
const (
	ErrServer          ErrorCode = 0x0000
	ErrProtocol        ErrorCode = 0x000A
	ErrBadCredentials  ErrorCode = 0x0100
	ErrUnavailable     ErrorCode = 0x1000
	ErrOverloaded      ErrorCode = 0x1001
	ErrIsBootstrapping ErrorCode = 0x1002
	ErrTruncate        ErrorCode = 0x1003
	ErrWriteTimeout    ErrorCode = 0x1100
	ErrReadTimeout     ErrorCode = 0x1200
	ErrReadFailure     ErrorCode = 0x1300
	ErrSyntax          ErrorCode = 0x2000
	ErrUnauthorized    ErrorCode = 0x2100
	ErrInvalid         ErrorCode = 0x2200
	ErrConfig          ErrorCode = 0x2300
	ErrAlreadyExists   ErrorCode = 0x2400
	ErrUnprepared      ErrorCode = 0x2500
)

// cqlError is an error answered to the client as an ERROR frame.
type cqlError struct {
	code ErrorCode
	msg  string
	id   []byte // Unprepared: the statement id
}

func (e *cqlError) Error() string { return fmt.Sprintf("cql error 0x%04x: %s", int32(e.code), e.msg) }

func errorf(code ErrorCode, format string, args ...any) *cqlError {
	return &cqlError{code: code, msg: fmt.Sprintf(format, args...)}
}

// appendErrorBody encodes an ERROR body, including the extra fields each code carries in v4.
func appendErrorBody(b []byte, e *cqlError) []byte {
	b = appendInt(b, int32(e.code))
	b = appendString(b, e.msg)
	const consistencyOne = 0x0001
	switch e.code {
	case ErrUnavailable:
		b = appendShort(b, consistencyOne)
		b = appendInt(b, 1) // required
		b = appendInt(b, 0) // alive
	case ErrWriteTimeout:
		b = appendShort(b, consistencyOne)
		b = appendInt(b, 0)
		b = appendInt(b, 1)
		b = appendString(b, "SIMPLE")
	case ErrReadTimeout:
		b = appendShort(b, consistencyOne)
		b = appendInt(b, 0) // received
		b = appendInt(b, 1) // blockfor
		b = append(b, 0)    // data_present
	case ErrReadFailure:
		b = appendShort(b, consistencyOne)
		b = appendInt(b, 0)
		b = appendInt(b, 1)
		b = appendInt(b, 1) // numfailures
		b = append(b, 0)
	case ErrAlreadyExists:
		b = appendString(b, "")
		b = appendString(b, "")
	case ErrUnprepared:
		b = appendShortBytes(b, e.id)
	}
	return b
}

// ---- encoding ----

func appendShort(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func appendInt(b []byte, v int32) []byte    { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func appendLong(b []byte, v int64) []byte   { return binary.BigEndian.AppendUint64(b, uint64(v)) }

func appendString(b []byte, s string) []byte {
	b = appendShort(b, uint16(len(s)))
	return append(b, s...)
}

func appendShortBytes(b []byte, p []byte) []byte {
	b = appendShort(b, uint16(len(p)))
	return append(b, p...)
}

// appendValue appends a [bytes] value: int32 length then the bytes, or -1 for null (nil).
func appendValue(b []byte, p []byte) []byte {
	if p == nil {
		return appendInt(b, -1)
	}
	b = appendInt(b, int32(len(p)))
	return append(b, p...)
}

func appendStringList(b []byte, l []string) []byte {
	b = appendShort(b, uint16(len(l)))
	for _, s := range l {
		b = appendString(b, s)
	}
	return b
}

// ---- decoding ----

var errShort = errors.New("frame body too short")

type reader struct {
	b   []byte
	err error
}

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b) < n {
		r.err = errShort
		return false
	}
	return true
}

func (r *reader) byte() byte {
	if !r.need(1) {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) short() uint16 {
	if !r.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

func (r *reader) int() int32 {
	if !r.need(4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.b))
	r.b = r.b[4:]
	return v
}

func (r *reader) long() int64 {
	if !r.need(8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *reader) raw(n int) []byte {
	if !r.need(n) {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string     { return string(r.raw(int(r.short()))) }
func (r *reader) longString() string { return string(r.raw(int(r.int()))) }
func (r *reader) shortBytes() []byte { return r.raw(int(r.short())) }

// value reads a [value]: n >= 0 bytes, -1 null (nil), -2 unset (reported by unset).
func (r *reader) value() (v []byte, unset bool) {
	n := r.int()
	switch {
	case r.err != nil:
		return nil, false
	case n == -1:
		return nil, false
	case n == -2:
		return nil, true
	case n < 0:
		r.err = fmt.Errorf("invalid value length %d", n)
		return nil, false
	}
	v = r.raw(int(n))
	if v == nil && r.err == nil {
		v = []byte{}
	}
	return v, false
}

func (r *reader) stringMap() map[string]string {
	n := int(r.short())
	m := make(map[string]string, n)
	for i := 0; i < n && r.err == nil; i++ {
		k := r.string()
		m[k] = r.string()
	}
	return m
}

func (r *reader) bytesMap() {
	n := int(r.short())
	for i := 0; i < n && r.err == nil; i++ {
		r.string()
		r.value()
	}
}

func (r *reader) stringList() []string {
	n := int(r.short())
	l := make([]string, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		l = append(l, r.string())
	}
	return l
}

// queryParams are the decoded <query_parameters> of QUERY and EXECUTE.
type queryParams struct {
	values       [][]byte
	unset        []bool
	skipMetadata bool
	pageSize     int32
	pagingState  []byte
}

func (r *reader) queryParams() queryParams {
	var p queryParams
	r.short() // consistency
	flags := r.byte()
	if flags&qfValues != 0 {
		n := int(r.short())
		p.values = make([][]byte, n)
		p.unset = make([]bool, n)
		for i := 0; i < n && r.err == nil; i++ {
			if flags&qfNamesForValues != 0 {
				r.string()
			}
			p.values[i], p.unset[i] = r.value()
		}
	}
	p.skipMetadata = flags&qfSkipMetadata != 0
	if flags&qfPageSize != 0 {
		p.pageSize = r.int()
	}
	if flags&qfPagingState != 0 {
		p.pagingState, _ = r.value()
	}
	if flags&qfSerialConsistency != 0 {
		r.short()
	}
	if flags&qfDefaultTimestamp != 0 {
		r.long()
	}
	// Named values (flag 0x40) are taken by position, in the order the markers appear.
	return p
}
