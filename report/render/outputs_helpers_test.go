package render

import (
	"bytes"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// pageOf renders rep as the HTML page.
func pageOf(t *testing.T, rep *model.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// textOf renders rep as the text report.
func textOf(t *testing.T, rep *model.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
