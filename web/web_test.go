package web

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string, headers ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIndexIsRevalidatedAndNamesTheAssets(t *testing.T) {
	ui := New()
	for _, path := range []string{"/app/", "/app/events/123", "/app/checkout/9", "/app/anything/at/all"} {
		res := get(t, ui, path)
		if res.StatusCode != 200 {
			t.Fatalf("%s: status %d", path, res.StatusCode)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("%s: Cache-Control %q, want no-cache", path, got)
		}
		if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/html") {
			t.Errorf("%s: Content-Type %q", path, got)
		}
		b := body(t, res)
		if strings.Contains(b, "{{ASSETS}}") || !strings.Contains(b, ui.AssetPrefix()+"js/main.js") {
			t.Errorf("%s: the asset prefix is not filled in", path)
		}
	}
	res := get(t, ui, "/app")
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/app/" {
		t.Errorf("/app: %d to %q, want a redirect to /app/", res.StatusCode, res.Header.Get("Location"))
	}
}

func TestAssetsAreImmutableUnderTheirVersion(t *testing.T) {
	ui := New()
	res := get(t, ui, ui.AssetPrefix()+"js/main.js")
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got := res.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
		t.Errorf("Cache-Control %q", got)
	}
	if got := res.Header.Get("Content-Type"); got != "text/javascript; charset=utf-8" {
		t.Errorf("Content-Type %q: module scripts need a JavaScript type", got)
	}
	etag := res.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if res := get(t, ui, ui.AssetPrefix()+"js/main.js", "If-None-Match", etag); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", res.StatusCode)
	}
	// A page of an older build still gets its files, but nothing caches
	// today's under yesterday's name.
	res = get(t, ui, Prefix+assetsDir+"0ld/js/main.js")
	if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("old version: %d, Cache-Control %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	for _, path := range []string{ui.AssetPrefix() + "js/nope.js", ui.AssetPrefix() + "../../etc/passwd", ui.AssetPrefix(), ui.AssetPrefix() + "index.html"} {
		if res := get(t, ui, path); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404 (a missing asset is never the app's shell)", path, res.StatusCode)
		}
	}
}

// TestModuleImportsResolve checks that every relative import of every
// module names an embedded file, so a typo fails here rather than as a
// blank page.
func TestModuleImportsResolve(t *testing.T) {
	sub, _ := fs.Sub(static, "static")
	importRE := regexp.MustCompile(`(?m)^\s*import\s+(?:[^'"]*?\s+from\s+)?['"]([^'"]+)['"]`)
	n := 0
	err := fs.WalkDir(sub, "js", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		for _, m := range importRE.FindAllStringSubmatch(string(b), -1) {
			n++
			target := m[1]
			if !strings.HasPrefix(target, "./") && !strings.HasPrefix(target, "../") {
				t.Errorf("%s imports %q: only relative imports stay under the versioned prefix", p, target)
				continue
			}
			dir := p[:strings.LastIndex(p, "/")]
			resolved := cleanJoin(dir, target)
			if _, err := fs.Stat(sub, resolved); err != nil {
				t.Errorf("%s imports %q (%s): no such file", p, target, resolved)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("found only %d imports: is the pattern still right?", n)
	}
}

func cleanJoin(dir, rel string) string {
	parts := strings.Split(dir, "/")
	for _, seg := range strings.Split(rel, "/") {
		switch seg {
		case ".":
		case "..":
			parts = parts[:len(parts)-1]
		default:
			parts = append(parts, seg)
		}
	}
	return strings.Join(parts, "/")
}

func TestMount(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"code":"not_found"}`)
	})
	h := Mount(api)
	tests := []struct {
		name, path, accept string
		status             int
		location, ctype    string
	}{
		{"BrowserAtRoot", "/", "text/html,application/xhtml+xml,*/*;q=0.8", http.StatusFound, "/app/", ""},
		{"CurlAtRoot", "/", "*/*", http.StatusNotFound, "", "application/problem+json"},
		{"UnknownAPIPath", "/nope", "text/html", http.StatusNotFound, "", "application/problem+json"},
		{"AppPage", "/app/tickets", "text/html", http.StatusOK, "", "text/html; charset=utf-8"},
		{"NotTheApp", "/apple", "text/html", http.StatusNotFound, "", "application/problem+json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := get(t, h, tt.path, "Accept", tt.accept)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if tt.location != "" && res.Header.Get("Location") != tt.location {
				t.Errorf("Location %q, want %q", res.Header.Get("Location"), tt.location)
			}
			if tt.ctype != "" && res.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), tt.ctype)
			}
		})
	}
	r := httptest.NewRequest("POST", "/app/", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /app/: %d, want 405", w.Code)
	}
}

// The app's own errors are problems, as the API's are, and every answer
// says nosniff.
func TestAppErrorsAreProblems(t *testing.T) {
	ui := New()
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/app/assets/" + ui.Version() + "/no-such.js", http.StatusNotFound},
		{"POST", "/app/", http.StatusMethodNotAllowed},
	} {
		w := httptest.NewRecorder()
		ui.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		var p struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		}
		if w.Code != tc.status || w.Header().Get("Content-Type") != "application/problem+json" ||
			json.Unmarshal(w.Body.Bytes(), &p) != nil || p.Status != tc.status || p.Code == "" {
			t.Errorf("%s %s: %d %q %s", tc.method, tc.path, w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: no nosniff", tc.method, tc.path)
		}
	}
}
