package main

import "testing"

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1024": 1024, "512MiB": 512 << 20, "2GiB": 2 << 30, "64KiB": 64 << 10,
		"10MB": 10_000_000, "1gb": 1_000_000_000, "7 B": 7, " 3 MiB ": 3 << 20,
	} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "12XB", "1.5GiB", "lots"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, b)
		}
	}
	for b, want := range map[byteSize]string{1 << 30: "1GiB", 3 << 20: "3MiB", 1000: "1000", 0: "0", 2048: "2KiB"} {
		if got := b.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(b), got, want)
		}
	}
}
