package boxoffice

import (
	"encoding/json"
	"testing"
)

// An ID decodes from its decimal string, escaped or not, and from a bare
// number; anything else is refused.
func TestIDUnmarshalJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ID
		ok   bool
	}{
		{`"266168001122795520"`, 266168001122795520, true},
		{`266168001122795520`, 266168001122795520, true},
		{`"\u0031\u0032"`, 12, true},
		{`"1\"2"`, 0, false},
		{`""`, 0, false},
		{`"0"`, 0, false},
		{`"-5"`, 0, false},
		{`" 12"`, 0, false},
		{`"12x"`, 0, false},
		{`"9223372036854775808"`, 0, false},
		{`null`, 0, false},
		{`true`, 0, false},
	} {
		var v struct {
			ID ID `json:"id"`
		}
		err := json.Unmarshal([]byte(`{"id":`+tc.in+`}`), &v)
		if (err == nil) != tc.ok || v.ID != tc.want {
			t.Errorf("%s: got %d, %v; want %d, ok %v", tc.in, v.ID, err, tc.want, tc.ok)
		}
	}
	// Called directly, not through the decoder: a lone quote is no string.
	var id ID
	if err := id.UnmarshalJSON([]byte(`"`)); err == nil {
		t.Errorf(`a lone quote decoded to %d`, id)
	}
}
