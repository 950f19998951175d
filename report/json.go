package report

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the report as indented JSON (schema: README.md in this folder).
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
