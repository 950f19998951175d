package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rekey/rekey/report/model"
)

// A long SPLITKEYS clause is shortened in the text at a character's boundary: cut at 400 bytes,
// a clause of Chinese split keys ended in half a character, printed as "\xe4".
func TestRecommendationSQLClipWholeCharacters(t *testing.T) {
	keys := strings.Repeat("城市,", 200)
	var b bytes.Buffer
	p := &printer{w: &b}
	p.recommendation(&model.Report{Recommendation: model.Recommendation{Bulkload: model.RegionAdvice{Regions: 201, SQL: "SPLITKEYS='" + keys + "'"}}})
	out := b.String()
	if strings.Contains(out, `\x`) || !strings.Contains(out, "…' (full list in --json)") {
		t.Errorf("the clause is cut inside a character:\n%s", out)
	}
}
