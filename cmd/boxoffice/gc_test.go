package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGCSettings(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		name    string
		getenv  func(string) string
		cgroup  int64
		percent int
		limit   int64
	}{
		{"defaults", env(), 0, 400, 0},
		{"in a container", env(), 1 << 30, 400, 858993459},
		{"GOMEMLIMIT set", env("GOMEMLIMIT", "300MiB"), 1 << 30, 400, 0},
		{"GOGC set", env("GOGC", "100"), 1 << 30, 0, 0},
		{"GOGC off", env("GOGC", "off"), 0, 0, 0},
	} {
		if p, l := gcSettings(c.getenv, c.cgroup); p != c.percent || l != c.limit {
			t.Errorf("%s: %d %d, want %d %d", c.name, p, l, c.percent, c.limit)
		}
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		file, text string
		want       int64
	}{
		{"memory.max", "1073741824\n", 1 << 30},
		{"memory.max", "max\n", 0},
		{"memory/memory.limit_in_bytes", "536870912\n", 1 << 29},
		{"memory/memory.limit_in_bytes", "9223372036854771712\n", 0},
		{"", "", 0},
	} {
		root := t.TempDir()
		if c.file != "" {
			p := filepath.Join(root, c.file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := cgroupMemoryLimit(root); got != c.want {
			t.Errorf("%s %q: %d, want %d", c.file, c.text, got, c.want)
		}
	}
}
