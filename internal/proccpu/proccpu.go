// Package proccpu reads the CPU time other processes have used from Linux's
// /proc, for benchmarks that report a server's CPU per operation: a figure a
// noisy machine moves far less than a rate.
package proccpu

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Of is the user and system CPU process pid has used; ok is false where
// /proc does not have it.
func Of(pid int) (used time.Duration, ok bool) {
	if pid <= 0 {
		return 0, false
	}
	return ofStat(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
}

// Named is the CPU used by every live process whose command is name (as
// /proc/PID/comm gives it, e.g. "postgres": the backends and the writers
// that flush for them); zero where there is no /proc.
func Named(name string) time.Duration {
	var sum time.Duration
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		if comm, err := os.ReadFile(c); err != nil || string(bytes.TrimSpace(comm)) != name {
			continue
		}
		if used, ok := ofStat(filepath.Join(filepath.Dir(c), "stat")); ok {
			sum += used
		}
	}
	return sum
}

func ofStat(path string) (time.Duration, bool) {
	stat, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: state is the first, utime and stime the 12th and 13th.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's times: 100 on
// every Linux Go runs on.
const clockTicks = 100
