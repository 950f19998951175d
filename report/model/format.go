package model

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rekey/rekey/pipeline"
)

func Itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [24]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// SortedCodes lists reject codes by decreasing count.
func SortedCodes(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// Pct prints a share as a percentage: 0% and 100.0% only for none and all.
func Pct(x float64) string {
	switch {
	case x == 0:
		return "0%"
	case x < 0.001:
		return "<0.1%"
	case x >= 0.9995 && x < 1:
		return ">99.9%" // short of all, which %.1f would round to 100.0%
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

func Count(n int64) string {
	s := Itoa(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func IsTextType(t string) bool {
	return t == pipeline.TypeVarchar.String() || t == pipeline.TypeVarbinary.String()
}

func B2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
