package sqlsink

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/backoff"
)

// settleTimeout bounds how long a statement whose connection was lost is waited for on the
// server before it is tried again anyway (the server unreachable, a session that does not end).
const settleTimeout = time.Minute

// sessionConnector opens the pool's connections and reads each one's session id (the dialect's
// SessionID), so that a statement whose connection is lost while the server runs it can be
// ended there before anything else runs: a server goes on with a statement whose client is gone
// (a connection a load balancer cuts, a read timeout, a cancelled context), and its first try,
// landing after its retry and after the key's later changes, would write an older value over
// them.
type sessionConnector struct {
	driver.Connector
	d       *Dialect
	log     *zap.Logger
	onRetry func() // a try again to end a lost statement's session
}

// execConn is what database/sql asks of a go-sql-driver connection.
type execConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// session is a server's session: its id, and its client as the server sees it (host:port).
// A server numbers its sessions anew when it restarts, so the id alone may name another
// client's session after a restart; the client tells them apart.
type session struct {
	id   int64
	host string
}

// sessionConn is a connection that knows its session.
type sessionConn struct {
	execConn
	c *sessionConnector
	session
}

func (c *sessionConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil || c.d.SessionID == "" {
		return dc, err
	}
	ec, ok := dc.(execConn)
	if !ok {
		return dc, nil
	}
	row, err := queryRow(ctx, ec, c.d.SessionID, 2)
	var s session
	if err == nil {
		s.id, err = intValue(row[0])
		s.host = textValue(row[1])
	}
	if err != nil {
		dc.Close()
		return nil, fmt.Errorf("read the session's id (%s): %w", c.d.SessionID, err)
	}
	return &sessionConn{execConn: ec, c: c, session: s}, nil
}

// ExecContext runs a statement; when its connection was lost with the statement sent, the
// session is ended on the server (settle) before ExecContext returns, and so before the
// statement is tried again.
func (s *sessionConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.execConn.ExecContext(ctx, query, args)
	if err != nil && fateUnknown(err, s.execConn.IsValid()) {
		s.c.settle(ctx, s.session, err)
	}
	if err != nil && readOnly(err) {
		// a server that refuses writes (the old primary after a failover): closed, the
		// connection leaves the pool, and the statement's retry opens a new one
		s.execConn.Close()
	}
	return r, err
}

// fateUnknown tells whether a statement that failed with err may still run on the server: the
// driver closed its connection (open is false) after it was sent, without the server's answer.
// A connection left open had the answer, or sent nothing (a context cancelled before, a packet
// too large); driver.ErrBadConn is a connection found broken before anything was sent.
func fateUnknown(err error, open bool) bool {
	var me *mysql.MySQLError
	return !open && !errors.As(err, &me) && !errors.Is(err, driver.ErrBadConn)
}

// settle ends the session id on the server and waits until it is gone, on a connection of its
// own (the pool's may all be busy), within settleTimeout even when ctx is cancelled (a hard stop
// must not leave its statement to land after the next owner's). When it cannot, it says so and
// lets the retry run.
func (c *sessionConnector) settle(ctx context.Context, s session, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	err := c.endSession(ctx, s)
	if err != nil {
		c.log.Warn("could not make sure that a statement whose connection was lost has ended on the server: its retry may run beside it",
			zap.Int64("session", s.id), zap.NamedError("lost", cause), zap.Error(err))
		return
	}
	c.log.Debug("ended the session of a statement whose connection was lost", zap.Int64("session", s.id), zap.NamedError("lost", cause))
}

// endSession kills the session until it is gone, with backoff while the server cannot be
// reached or the session is still there, until ctx ends. Each try again counts as a retry
// (onRetry): the statement waits for it, as for a retry.
func (c *sessionConnector) endSession(ctx context.Context, s session) error {
	bo := backoff.Policy{Min: 10 * time.Millisecond, Max: time.Second}.Start()
	for {
		err := c.tryEndSession(ctx, s)
		if err == nil {
			return nil
		}
		if bo.Wait(ctx) != nil {
			return err
		}
		if c.onRetry != nil {
			c.onRetry()
		}
	}
}

// tryEndSession kills the session, on a new connection, and tells whether it is gone: nil once
// it is (a session killed again, or gone already, is no error). The id's session is the lost
// one only while its client is the same: after a restart the id may be another client's.
func (c *sessionConnector) tryEndSession(ctx context.Context, s session) error {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return err
	}
	defer dc.Close()
	ec, ok := dc.(execConn)
	if !ok {
		return errors.New("the driver's connection cannot run statements")
	}
	alive := fmt.Sprintf(c.d.SessionAlive, s.id, sqlString(s.host))
	for killed := false; ; killed = true {
		// a killed session ends once it notices: a statement rolls back first
		n, err := queryInt(ctx, ec, alive)
		switch {
		case err != nil:
			return err
		case n == 0:
			return nil
		case killed:
			return fmt.Errorf("session %d still there after it was killed", s.id)
		}
		if _, err := ec.ExecContext(ctx, fmt.Sprintf(c.d.KillSession, s.id), nil); err != nil {
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1094 { // ER_NO_SUCH_THREAD: gone already
				return fmt.Errorf("kill session %d: %w", s.id, err)
			}
		}
	}
}

// queryInt runs a query of one integer on a driver connection.
func queryInt(ctx context.Context, c driver.QueryerContext, q string) (int64, error) {
	row, err := queryRow(ctx, c, q, 1)
	if err != nil {
		return 0, err
	}
	return intValue(row[0])
}

// queryRow runs a query of one row of n columns on a driver connection.
func queryRow(ctx context.Context, c driver.QueryerContext, q string, n int) ([]driver.Value, error) {
	rows, err := c.QueryContext(ctx, q, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	if len(dest) != n {
		return nil, fmt.Errorf("%s: %d columns, want %d", q, len(dest), n)
	}
	if err := rows.Next(dest); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s: no row", q)
		}
		return nil, err
	}
	return dest, nil
}

// intValue is an integer column's value.
func intValue(v driver.Value) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case uint64:
		return int64(v), nil
	case []byte:
		return strconv.ParseInt(string(v), 10, 64)
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, fmt.Errorf("got %T, want an integer", v)
}

// sqlString is s as a string literal of rekey's sessions (which take backslash escapes).
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
}

// textValue is a text column's value.
func textValue(v driver.Value) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}
