package numfmt

import (
	"math"
	"testing"
)

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 70000: "70,000", 100000: "100,000",
		1234567: "1,234,567", -1: "-1", -999: "-999", -4200: "-4,200", -100000: "-100,000",
		math.MinInt64: "-9,223,372,036,854,775,808",
	} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Thousands(int(70000)); got != "70,000" {
		t.Errorf("Thousands(int 70000) = %q", got)
	}
}
