package cqlvalue

import "strings"

// NormalizeType puts a CQL type spelling in a canonical form for comparisons: lowercase, no
// blanks, no frozen<...> wrappers, varchar as text ("Map<Text, frozen<list<int>>>" ->
// "map<text,list<int>>").
func NormalizeType(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), ""))
	for {
		i := strings.Index(s, "frozen<")
		if i < 0 {
			break
		}
		depth, j := 1, i+len("frozen<") // find the matching '>'
		for ; j < len(s) && depth > 0; j++ {
			switch s[j] {
			case '<':
				depth++
			case '>':
				depth--
			}
		}
		if depth != 0 {
			break
		}
		s = s[:i] + s[i+len("frozen<"):j-1] + s[j:]
	}
	return strings.ReplaceAll(s, "varchar", "text")
}
