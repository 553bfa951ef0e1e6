package httpapi

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOpenAPIMatchesRouter fails when a route is added, removed or renamed
// without the OpenAPI document following, or the other way round.
func TestOpenAPIMatchesRouter(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	var routed []string
	for _, rt := range (&Server{}).Routes() {
		routed = append(routed, rt.Method+" "+rt.Pattern)
	}
	sort.Strings(documented)
	sort.Strings(routed)
	if diff := cmp.Diff(routed, documented); diff != "" {
		t.Errorf("routes vs OpenAPI paths mismatch (-router +openapi):\n%s", diff)
	}
}

// TestOpenAPIDocumentsEveryProblemStatus checks that each operation lists
// the statuses its errors can produce that every authenticated route has.
func TestOpenAPIDocumentsAuthFailures(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Security  []map[string][]string      `json:"security"`
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if len(op.Security) == 0 {
				continue
			}
			if _, ok := op.Responses["401"]; !ok {
				t.Errorf("%s %s: authenticated but no 401 documented", method, path)
			}
		}
	}
}
