package transform

import (
	"fmt"
	"testing"
)

func TestKeySourceColumns(t *testing.T) {
	m, err := Decode([]byte(`
version: 1
source:
  columns: {userid: text, orderid: bigint, ts: timestamp, channel: text}
target:
  table: t
  primary_key: "[md5(userid).substr(0,4) + userid AS pk1][bucket][ts][random(8)][pk2]"
  columns:
    bucket: ts % 16
    pk2: code(channel, d) + str(orderid)
  codes:
    d: {a: b}
`), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(p.KeySourceColumns())
	if want := "[[userid] [ts] [ts] [] [channel orderid]]"; got != want {
		t.Errorf("KeySourceColumns = %s, want %s", got, want)
	}
}
