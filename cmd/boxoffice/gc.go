package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// The servers' garbage collector. At a sale's opening the front door
// allocates fast against a small live heap (about 45 MB in production at
// 15,000 202s a second), so at Go's default (GOGC=100) the collector runs
// four times a second and took about 30 % of serve's CPU; at 400 it runs a
// quarter as often, for a heap of up to five times the live one. Under a
// container's memory limit the collector is also told to keep below 80 %
// of it (GOMEMLIMIT), so it runs earlier when memory, not CPU, is short.
// Either variable set in the environment wins (docs/operations.md).
const (
	serverGCPercent = 400
	memoryShare     = 0.8
)

// gcSettings is what the servers set: a GC percent and a soft memory
// limit in bytes, 0 for each left to the runtime. cgroupLimit is the
// container's memory limit, 0 for none.
func gcSettings(getenv func(string) string, cgroupLimit int64) (percent int, limit int64) {
	if getenv("GOGC") != "" {
		return 0, 0 // the operator's choice, with whatever limit they set
	}
	if getenv("GOMEMLIMIT") == "" && cgroupLimit > 0 {
		limit = int64(float64(cgroupLimit) * memoryShare)
	}
	return serverGCPercent, limit
}

// tuneGC applies gcSettings to this process.
func tuneGC(getenv func(string) string, log *slog.Logger) {
	percent, limit := gcSettings(getenv, cgroupMemoryLimit("/sys/fs/cgroup"))
	if percent == 0 {
		return
	}
	debug.SetGCPercent(percent)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	log.Debug("garbage collector", "gc_percent", percent, "memory_limit", limit)
}

// cgroupMemoryLimit reads the memory limit of the cgroup mounted at root
// (v2's memory.max, else v1's limit_in_bytes), 0 if there is none: in a
// container, the container's own limit.
func cgroupMemoryLimit(root string) int64 {
	for _, f := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		// "max", or v1's page-rounded MaxInt64, means no limit.
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0
		}
		return n
	}
	return 0
}
