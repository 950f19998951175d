package render

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"reflect"
	"strings"

	"github.com/rekey/rekey/report/model"
)

// WriteHTML writes the report as one self-contained page: inline CSS and SVG, no script, no
// network. The markup is well-formed XML (XHTML-compatible: every element closed, only the XML
// entities and numeric character references), so tools can parse it with an XML parser.
//
// Charts: rows per region (one <rect class="bar"> per region), a heatmap of key ranges (region
// groups, labelled by their start keys) against time (one <rect class="cell"> per time slice and
// key range, like TiDB's Key Visualizer: time runs left to right, the key space top to bottom):
// the mapping's timestamp column when it has one, else the windows of the input in arrival
// order; the busiest region's share per window, and for every alternative a small bar chart and
// share line.
//
// The markup is in templates/ (html/template escapes every value for where it lands); the
// values come from the view model in htmlview.go and htmlchart.go.
func WriteHTML(w io.Writer, rep *model.Report) error {
	view := newPageView(rep)
	replaceForbiddenRunes(reflect.ValueOf(view))
	if err := pageTemplates.ExecuteTemplate(w, "page", view); err != nil {
		return fmt.Errorf("HTML report: %w", err)
	}
	return nil
}

//go:embed templates/*.tmpl
var templateFiles embed.FS

var pageTemplates = template.Must(template.ParseFS(templateFiles, "templates/*.tmpl"))

// replaceForbiddenRunes replaces, in every string of the view, the characters XML forbids
// (control characters other than tab and newline, U+FFFE, U+FFFF) with U+FFFD. html/template
// escapes markup but passes control characters through, and the page must stay well-formed XML
// and show that a value held something unprintable.
func replaceForbiddenRunes(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); strings.IndexFunc(s, forbiddenInXML) >= 0 {
			v.SetString(strings.Map(func(r rune) rune {
				if forbiddenInXML(r) {
					return '\uFFFD'
				}
				return r
			}, s))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			replaceForbiddenRunes(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			replaceForbiddenRunes(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			replaceForbiddenRunes(v.Index(i))
		}
	}
}

func forbiddenInXML(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r == 0xfffe || r == 0xffff
}
