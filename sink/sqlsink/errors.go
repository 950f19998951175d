package sqlsink

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"

	"github.com/rekey/rekey/pipeline"
)

// CodeTargetRefused is the reject code of a row the server refused (a value too long, out of
// range, of the wrong type for the column): rejects.jsonl names the server's error.
const CodeTargetRefused = "target_refused"

// errClass is what to do about a failed statement.
type errClass int

const (
	classFatal     errClass = iota // stop the run: the error says what to fix
	classTransient                 // retry the statement with backoff
	classRow                       // a row of the statement is refused: bisect to find it
)

// serverErrors is the one table of MySQL server error numbers rekey acts on, with the numbers
// of Lindorm's own that it documents beside them (Lindorm SQL's common error codes reference,
// alibabacloud.com/help/en/lindorm/developer-reference/common-error-codes-reference: 1040 there
// too means too many connections on a node). Anything not listed is fatal: the run stops with the
// server's message rather than guess.
//
//	number  name                            class      why
var serverErrors = map[uint16]errClass{
	1040: classTransient, // ER_CON_COUNT_ERROR          too many connections
	1053: classTransient, // ER_SERVER_SHUTDOWN          the server is shutting down
	1077: classTransient, // ER_NORMAL_SHUTDOWN
	1079: classTransient, // ER_SHUTDOWN_COMPLETE
	1152: classTransient, // ER_ABORTING_CONNECTION
	1158: classTransient, // ER_NET_READ_ERROR
	1159: classTransient, // ER_NET_READ_INTERRUPTED     network read timeout
	1160: classTransient, // ER_NET_ERROR_ON_WRITE
	1161: classTransient, // ER_NET_WRITE_INTERRUPTED    network write timeout
	1205: classTransient, // ER_LOCK_WAIT_TIMEOUT
	1213: classTransient, // ER_LOCK_DEADLOCK
	1290: classTransient, // ER_OPTION_PREVENTS_STATEMENT  e.g. --read-only during a failover (see readOnly)
	1792: classTransient, // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION (see readOnly)
	1836: classTransient, // ER_READ_ONLY_MODE           InnoDB's read-only mode (see readOnly)
	1927: classTransient, // ER_CONNECTION_KILLED (MariaDB)
	1969: classTransient, // ER_STATEMENT_TIMEOUT (MariaDB) max_statement_time exceeded
	2006: classTransient, // CR_SERVER_GONE_ERROR
	2013: classTransient, // CR_SERVER_LOST
	3024: classTransient, // ER_QUERY_TIMEOUT            max_execution_time exceeded
	4031: classTransient, // ER_CLIENT_INTERACTION_TIMEOUT
	8008: classTransient, // Lindorm: resource limit exceeded (throttling: the instance's request quota)

	1048: classRow, // ER_BAD_NULL_ERROR              column cannot be null
	1153: classRow, // ER_NET_PACKET_TOO_LARGE        statement over max_allowed_packet (see packetTooLarge)
	1264: classRow, // ER_WARN_DATA_OUT_OF_RANGE      out of range value for column
	1265: classRow, // WARN_DATA_TRUNCATED            data truncated for column
	1292: classRow, // ER_TRUNCATED_WRONG_VALUE       incorrect datetime/date/decimal value
	1366: classRow, // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD  incorrect string/integer value (charset, type)
	1367: classRow, // ER_ILLEGAL_VALUE_FOR_TYPE      illegal double value
	1406: classRow, // ER_DATA_TOO_LONG               data too long for column
	1690: classRow, // ER_DATA_OUT_OF_RANGE           value out of range
	3140: classRow, // ER_INVALID_JSON_TEXT (MySQL)
	3150: classRow, // ER_JSON_VALUE_TOO_BIG (MySQL)  too big for a JSON column
	3151: classRow, // ER_JSON_KEY_TOO_BIG (MySQL)    an object key over 64 KiB
	3157: classRow, // ER_JSON_DOCUMENT_TOO_DEEP (MySQL)  nested deeper than 100 (Go reads 10,000)
	3819: classRow, // ER_CHECK_CONSTRAINT_VIOLATED (MySQL 8)  the row breaks a CHECK of the table
	4025: classRow, // ER_CONSTRAINT_FAILED (MariaDB: a CHECK of the table, JSON_VALID of a JSON column)
}

// transientMessages are Lindorm's words for overload and throttling, which it reports under a
// generic error number. UNCERTAIN: Lindorm's exact texts; these fragments are the HBase-side
// exceptions LindormTable is built on (RegionTooBusyException, CallQueueTooBigException,
// ipc.ServerTooBusyException, NotServingRegionException, RegionMovedException).
var transientMessages = []string{"throttl", "regiontoobusy", "server is busy", "too many requests",
	"notservingregion", "regionmoved", "callqueuetoobig", "servertoobusy", "timeout"}

// rowMessages are refusals of a value that servers report under a generic number (1105,
// ER_UNKNOWN_ERROR: go-mysql-server; Lindorm's own errors). UNCERTAIN for Lindorm's texts.
var rowMessages = []string{"too large for column", "too long for column", "data too long", "out of range",
	"incorrect datetime", "incorrect date value", "incorrect decimal", "incorrect integer", "incorrect string value",
	"invalid json", "cannot be null", "check constraint"}

// classify says what to do about err.
// isDeadlock tells whether the server rolled the statement back as a deadlock's victim.
func isDeadlock(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}

func classify(err error) errClass {
	if err == nil {
		return classFatal
	}
	if errors.Is(err, context.Canceled) {
		return classFatal
	}
	if errors.Is(err, mysql.ErrPktTooLarge) {
		return classRow
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		if c, ok := serverErrors[me.Number]; ok {
			return c
		}
		msg := strings.ToLower(me.Message)
		for _, m := range rowMessages {
			if strings.Contains(msg, m) {
				return classRow
			}
		}
		for _, m := range transientMessages {
			if strings.Contains(msg, m) {
				return classTransient
			}
		}
		return classFatal
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, context.DeadlineExceeded) {
		return classTransient
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return classTransient
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return classTransient
	}
	return classFatal
}

// readOnly tells whether err is a server refusing writes as read-only (--read-only,
// super_read_only, InnoDB's read-only mode): after a failover, the connections opened before it
// still reach the old primary. The connection is left (sessionConn.ExecContext) so that the retry
// runs on a new one, which reaches the new primary.
func readOnly(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1290 || me.Number == 1792 || me.Number == 1836)
}

// columnInMessage finds the refused column in a server's message: 'v' (MySQL), or `v` and
// `db`.`t`.`v` (MariaDB's incorrect string and datetime values), the last name back-quoted.
var columnInMessage = regexp.MustCompile("(?i)column (?:'([^']+)'|(?:`(?:[^`]|``)*`\\.)*`((?:[^`]|``)*)`)")

// packetTooLarge tells whether err is a statement larger than the server's max_allowed_packet:
// the driver refuses to send it (it read the setting when it connected), or the server refuses
// it (1153: the setting shrank since). Retrying cannot help: a statement of several rows is
// split as any refused statement is, and a row alone too large is rejected.
func packetTooLarge(err error) bool {
	var me *mysql.MySQLError
	return errors.Is(err, mysql.ErrPktTooLarge) || errors.As(err, &me) && me.Number == 1153
}

// rowError turns a server's refusal of one row of table, whose statement was stmtBytes long,
// into its reject.
func rowError(err error, stmtBytes int, table string) *pipeline.RowError {
	if packetTooLarge(err) {
		return &pipeline.RowError{Code: CodeTargetRefused, Message: fmt.Sprintf("the row's statement (%d bytes) is larger than the server's max_allowed_packet: "+
			"raise max_allowed_packet on the server (SET GLOBAL max_allowed_packet = N, and in its configuration file; MariaDB's default is 16 MiB, "+
			"MySQL's 64 MiB) and run the rejected rows again", stmtBytes)}
	}
	field := ""
	if m := columnInMessage.FindStringSubmatch(err.Error()); m != nil {
		field = m[1]
		if field == "" {
			field = strings.ReplaceAll(m[2], "``", "`")
		}
		if strings.Contains(err.Error(), "Invalid JSON text") { // MySQL's 3140 says 'table.column'
			field = strings.TrimPrefix(field, table+".")
		}
	}
	return &pipeline.RowError{Code: CodeTargetRefused, Field: field, Message: "the server refused the row: " + err.Error()}
}
