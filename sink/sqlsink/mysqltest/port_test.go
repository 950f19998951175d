package mysqltest

import (
	"net"
	"os"
	"testing"
)

// A MariaDB whose port another process bound first (between freeAddr's check and mariadbd's
// bind) starts again on another port instead of failing the test.
func TestMariaDBStartsAgainWhenItsPortIsTaken(t *testing.T) {
	if os.Getenv("REKEY_MYSQL_DSN") != "" {
		t.Skip("REKEY_MYSQL_DSN names a server: this package starts none")
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	picks := 0
	pickAddr = func(t testing.TB) string {
		picks++
		if picks == 1 {
			return held.Addr().String() // taken
		}
		return freeAddr(t)
	}
	t.Cleanup(func() { pickAddr = freeAddr })
	s := OwnMariaDB(t)
	if picks != 2 || s.Addr == held.Addr().String() {
		t.Fatalf("started on %s after %d picks; want the second pick, not the taken %s", s.Addr, picks, held.Addr())
	}
	s.Exec(t, "CREATE TABLE t (k INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
}
