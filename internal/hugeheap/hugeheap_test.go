package hugeheap

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// What the process allocates after Reserve lands in huge pages: a buffer filled afterwards is
// backed by 2 MiB pages (the kernel's own account of the mapping says so), where without the
// advice the kernel would give it 4 KiB pages one fault at a time.
func TestAllocationsAfterReserveGetHugePages(t *testing.T) {
	if runtime.GOOS != "linux" || !offered() {
		t.Skip("the kernel offers no transparent huge pages here")
	}
	if disabled(os.Getenv("GODEBUG")) {
		t.Skip("GODEBUG=disablethp=1")
	}
	once.Store(false) // as in a fresh process (go test -count=N runs this again)
	const n = 64 << 20
	if got := Reserve(n); got != n {
		t.Fatalf("Reserve advised %d bytes, want %d", got, n)
	}
	if again := Reserve(n); again != 0 {
		t.Fatalf("a second Reserve advised %d bytes, want none (the first one's range is the heap's)", again)
	}
	buf := make([]byte, 32<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	start := uintptr(unsafe.Pointer(&buf[0]))
	huge, err := anonHugeBytes(start, start+uintptr(len(buf)))
	if err != nil {
		t.Fatal(err)
	}
	if huge < 16<<20 {
		t.Fatalf("the mapping of a 32 MiB buffer filled after Reserve holds %d bytes of huge pages, want most of it", huge)
	}
	runtime.KeepAlive(buf)
}

// GODEBUG=disablethp=1 is the runtime's switch for processes that must not use huge pages:
// Reserve honours it.
func TestReserveHonoursDisableTHP(t *testing.T) {
	t.Setenv("GODEBUG", "disablethp=1")
	if got := Reserve(64 << 20); got != 0 {
		t.Fatalf("Reserve advised %d bytes under GODEBUG=disablethp=1, want none", got)
	}
}

func TestDisabled(t *testing.T) {
	for godebug, want := range map[string]bool{"": false, "disablethp=1": true, "gctrace=1,disablethp=1": true,
		"disablethp=0": false, "disablethp=1,disablethp=0": false, "madvdontneed=1": false, "xdisablethp=1": false} {
		if got := disabled(godebug); got != want {
			t.Errorf("GODEBUG=%q: disabled %v, want %v", godebug, got, want)
		}
	}
}

// anonHugeBytes returns the AnonHugePages of the mappings that overlap [lo, hi) (/proc/self/smaps).
func anonHugeBytes(lo, hi uintptr) (int64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if from, to, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			l, err1 := strconv.ParseUint(from, 16, 64)
			h, err2 := strconv.ParseUint(to, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(l) < hi && lo < uintptr(h)
			continue
		}
		if in && len(fields) >= 2 && fields[0] == "AnonHugePages:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("smaps: %q: %w", sc.Text(), err)
			}
			total += kb << 10
		}
	}
	return total, sc.Err()
}
