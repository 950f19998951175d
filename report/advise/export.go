package advise

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/transform"
)

// --write-mapping: every alternative design as a mapping file, ready for `rekey check` and
// `rekey migrate`. Each file is the user's mapping edited where the design differs (the primary
// key, the target.columns entries the design had to drop, the regions: analysed), so everything
// else (source, vars, codes, options, comments, fields this rekey does not edit) stays as written.

// WrittenMapping is one file --write-mapping wrote.
type WrittenMapping struct {
	ID   string
	Rank int
	Path string
}

// WriteMappings writes one mapping file per alternative of rep (not the mapping's own design,
// nor one that could not be built) into dir as <id>.yaml, derived from the mapping file at path,
// and checks that each decodes and compiles against src.
func WriteMappings(dir, path string, rep *model.Report, src pipeline.SourceSchema) ([]WrittenMapping, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--write-mapping: read the mapping: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--write-mapping: %w", err)
	}
	var out []WrittenMapping
	for _, a := range rep.Alternatives {
		if a.IsMapping || a.Error != "" || a.Edit.Pk == "" {
			continue
		}
		doc, err := editMapping(data, a, rep)
		if err != nil {
			return out, fmt.Errorf("--write-mapping %s: %w", a.ID, err)
		}
		name := filepath.Join(dir, a.ID+".yaml")
		m, err := transform.Decode(doc, name)
		if err == nil {
			_, err = transform.Compile(m, src)
		}
		if err != nil {
			return out, fmt.Errorf("--write-mapping %s: the derived mapping does not compile (a bug: please report it): %w", a.ID, err)
		}
		if err := writeFileAtomic(name, doc); err != nil {
			return out, fmt.Errorf("--write-mapping: %w", err)
		}
		out = append(out, WrittenMapping{ID: a.ID, Rank: a.Rank, Path: name})
	}
	return out, nil
}

func writeFileAtomic(path string, data []byte) error {
	f, err := atomicfile.CreateTemp(path, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	return atomicfile.Commit(f, path)
}

// editMapping applies a design's edit to the mapping's YAML.
func editMapping(data []byte, a model.Alternative, rep *model.Report) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the mapping is not a YAML mapping")
	}
	root := doc.Content[0]
	ed := a.Edit
	target := field(root, "target")
	if target == nil || target.Kind != yaml.MappingNode {
		return nil, errors.New("the mapping has no target: section")
	}
	editTarget(target, ed)
	if !ed.KeepRegions {
		// the region count analysed; a size-based plan fits any key and stays
		if r := field(root, "regions"); r == nil || field(r, "size") == nil {
			setField(root, "regions", &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Tag: "!!str", Value: "count"},
				{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(a.Regions)},
			}})
		}
	}
	if len(rep.Queries) > 0 && rep.Queries[0].Origin == "--query" {
		setField(root, "queries", queriesNode(rep.Queries))
	}
	// the workload the designs were ranked under (--workload overrides the file's)
	if w := field(root, "workload"); w != nil && w.Value != rep.Workload || w == nil && rep.Workload == transform.WorkloadWriteHeavy {
		setField(root, "workload", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: rep.Workload})
	}
	// the file's opening comment described the user's design: say what this one is instead
	if len(root.Content) > 0 {
		root.Content[0].HeadComment = headerComment(a, rep)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// editTarget gives the mapping's target: section the design's key, and drops what the key now
// reads from the value columns and exclude:, adding the dictionary a code() reads.
func editTarget(target *yaml.Node, ed model.MappingEdit) {
	setField(target, "primary_key", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ed.Pk, Style: yaml.DoubleQuotedStyle})
	if ed.DropAll {
		removeField(target, "columns")
	} else if cols := field(target, "columns"); cols != nil && cols.Kind == yaml.MappingNode {
		for _, c := range ed.DropColumns {
			removeField(cols, c)
		}
		if len(cols.Content) == 0 {
			removeField(target, "columns")
		}
	}
	if d := ed.Codes; d.Name != "" {
		// the dictionary the design's code() reads, with the mapping's own
		codes := field(target, "codes")
		if codes == nil || codes.Kind != yaml.MappingNode {
			codes = &yaml.Node{Kind: yaml.MappingNode}
			setField(target, "codes", codes)
		}
		dict := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		for _, e := range d.Entries {
			dict.Content = append(dict.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e[0]}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e[1]})
		}
		setField(codes, d.Name, dict)
	}
	if ex := field(target, "exclude"); ex != nil && ex.Kind == yaml.SequenceNode && len(ed.DropExclude) > 0 {
		drop := map[string]bool{}
		for _, x := range ed.DropExclude {
			drop[x] = true
		}
		kept := ex.Content[:0]
		for _, e := range ex.Content {
			if !drop[e.Value] {
				kept = append(kept, e)
			}
		}
		ex.Content = kept
		if len(kept) == 0 {
			removeField(target, "exclude")
		}
	}
}

// queriesNode writes the declared queries as the mapping's queries: section.
func queriesNode(queries []model.QueryInfo) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, q := range queries {
		e := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		if len(q.Equal) > 0 {
			eq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, c := range q.Equal {
				eq.Content = append(eq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: c})
			}
			e.Content = append(e.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "equal"}, eq)
		}
		if q.Range != "" {
			e.Content = append(e.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "range"},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: q.Range})
		}
		if q.NewestFirst {
			e.Content = append(e.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "order"},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "newest_first"})
		}
		seq.Content = append(seq.Content, e)
	}
	return seq
}

func headerComment(a model.Alternative, rep *model.Report) string {
	file := rep.Mapping.File
	if file == "" {
		file = "the mapping"
	}
	lines := []string{
		fmt.Sprintf("%s: %s, derived from %s by rekey report --write-mapping", a.ID, a.Name, file),
		"",
		"  " + a.PrimaryKey,
		"",
		fmt.Sprintf("Rank %d of %d, grade %s, over %d regions (%s): hot factor %.1fx, rows max/mean %.2f, rows lost %s.",
			a.Rank, len(rep.Alternatives), a.Grade, a.Regions, a.Strategy, a.HotFactor, a.RowsMaxMean, model.Count(a.LostRows)),
	}
	for _, q := range a.Queries {
		lines = append(lines, "Query "+q.Query+": "+q.Note+".")
	}
	if len(a.Queries) == 0 && a.TradeOff != "" {
		lines = append(lines, a.TradeOff)
	}
	if a.Salt > 0 {
		lines = append(lines, "The salt's cost: "+transform.SaltCost(a.Salt)+".")
	}
	lines = append(lines, "Check it with: rekey report -m <this file> --source ...")
	var out []string
	for _, l := range lines {
		if l == "" {
			out = append(out, "#")
			continue
		}
		for _, w := range wrap(l, 96) {
			out = append(out, "# "+w)
		}
	}
	return strings.Join(out, "\n")
}

// wrap breaks a line at spaces into lines of at most width characters.
func wrap(s string, width int) []string {
	if s == "" {
		return nil
	}
	var out []string
	cur := ""
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	for _, w := range strings.Fields(s) {
		if cur != "" && len(cur)+1+len(w) > width {
			out = append(out, cur)
			cur = lead + w
			continue
		}
		if cur == "" {
			cur = lead + w
		} else {
			cur += " " + w
		}
	}
	return append(out, cur)
}

// field returns a mapping node's value for key, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// setField replaces (or appends) a mapping node's value for key, dropping the old value's
// comments (they described the old value).
func setField(n *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content[i].LineComment = ""
			n.Content[i+1] = v
			return
		}
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func removeField(n *yaml.Node, key string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return
		}
	}
}
