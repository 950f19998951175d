package report

import (
	"io"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/report/render"
	"github.com/rekey/rekey/transform"
)

// The report's model (package model) as the commands use it: Run builds a Report, the writers
// render it.
type (
	Report         = model.Report
	Finding        = model.Finding
	Alternative    = model.Alternative
	Sample         = model.Sample
	OrderHints     = model.OrderHints
	WriteOrder     = model.WriteOrder
	WrittenMapping = advise.WrittenMapping
)

// Severities of a finding.
const (
	SevError   = model.SevError
	SevWarning = model.SevWarning
	SevInfo    = model.SevInfo
)

// Write-order evidence, best first (WriteOrder.Evidence).
const (
	OrderDeclared    = model.OrderDeclared
	OrderWriteTime   = model.OrderWriteTime
	OrderKafkaTime   = model.OrderKafkaTime
	OrderTimeColumn  = model.OrderTimeColumn
	OrderKafkaOffset = model.OrderKafkaOffset
	OrderArrival     = model.OrderArrival
)

// ParseQuery reads one --query: see advise.ParseQuery.
func ParseQuery(s string) (transform.Query, error) { return advise.ParseQuery(s) }

// CheckQueries checks declared queries against the source's columns: see advise.CheckQueries.
func CheckQueries(qs []transform.Query, src pipeline.SourceSchema) error {
	return advise.CheckQueries(qs, src)
}

// WriteMappings writes every alternative design as a mapping file: see advise.WriteMappings.
func WriteMappings(dir, path string, rep *Report, src pipeline.SourceSchema) ([]WrittenMapping, error) {
	return advise.WriteMappings(dir, path, rep, src)
}

// WriteText writes the report for a terminal.
func WriteText(w io.Writer, rep *Report) error { return render.WriteText(w, rep) }

// WriteJSON writes the report as JSON (docs/schema/report.v1.json).
func WriteJSON(w io.Writer, rep *Report) error { return render.WriteJSON(w, rep) }

// WriteHTML writes the report as one self-contained HTML page.
func WriteHTML(w io.Writer, rep *Report) error { return render.WriteHTML(w, rep) }

// VerdictLine is the one-line verdict (--quiet).
func VerdictLine(rep *Report) string { return render.VerdictLine(rep) }
