package render

import (
	"encoding/json"
	"io"

	"github.com/rekey/rekey/report/model"
)

// WriteJSON writes the report as indented JSON (schema: README.md in this folder).
func WriteJSON(w io.Writer, rep *model.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
