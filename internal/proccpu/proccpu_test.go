package proccpu

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestOfReadsTheStatFields(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stat")
	// A command with spaces and a parenthesis, as a process may name
	// itself; utime 250 and stime 50 ticks are 3 s.
	stat := "1234 (odd ) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 5 0 0\n"
	if err := os.WriteFile(path, []byte(stat), 0o600); err != nil {
		t.Fatal(err)
	}
	if used, ok := ofStat(path); !ok || used != 3*time.Second {
		t.Fatalf("ofStat = %v, %v; want 3s, true", used, ok)
	}
	for _, bad := range []string{"", "1234 no parenthesis", "1 (x) S 1 2 3", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 50 0"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if used, ok := ofStat(path); ok {
			t.Errorf("ofStat(%q) = %v, true; want not ok", bad, used)
		}
	}
	if _, ok := Of(0); ok {
		t.Error("Of(0) is ok")
	}
}

func TestOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	before, ok := Of(os.Getpid())
	if !ok {
		t.Fatal("no CPU for this process")
	}
	// Spin until the kernel's 10 ms tick has counted some of it.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if after, _ := Of(os.Getpid()); after > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("this process's CPU did not grow while it spun")
		}
	}
	// Named counts this process among those of its command.
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	if named := Named(strings.TrimSpace(string(comm))); named < before {
		t.Fatalf("Named(%q) = %v, less than this process's own %v", comm, named, before)
	}
}
