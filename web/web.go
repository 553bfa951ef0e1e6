// Package web is the box office in a browser: a single-page front end
// (plain ES modules and CSS under static/, no framework, no build step)
// embedded in the binary and served at /app/.
//
// Caching: every asset is served under a versioned prefix,
// /app/assets/<version>/..., where the version is a hash of all the embedded
// files, so assets may be cached for a year (immutable) and a new binary
// changes every asset URL at once. Module imports are relative ("./api.js"),
// so they stay inside the prefix by themselves. index.html, which names the
// prefix, is revalidated on every load (no-cache). Any other /app/ path is
// a page of the app (the client routes on the path), answered with
// index.html.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// Prefix is where the app is served.
const Prefix = "/app/"

// assetsDir is the versioned asset path under Prefix.
const assetsDir = "assets/"

// UI serves the app: the pages under /app/ and their assets.
type UI struct {
	files   fs.FS
	version string
	index   []byte // index.html with the asset prefix filled in
	etags   map[string]string
}

// New returns the UI over the embedded files.
func New() *UI {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	return newUI(sub)
}

func newUI(files fs.FS) *UI {
	u := &UI{files: files, etags: map[string]string{}}
	all := sha256.New()
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		u.etags[p] = `"` + hex.EncodeToString(sum[:12]) + `"`
		all.Write([]byte(p))
		all.Write(sum[:])
		return nil
	})
	if err != nil {
		panic(err)
	}
	u.version = hex.EncodeToString(all.Sum(nil)[:6])
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		panic("web: static/index.html is missing")
	}
	u.index = bytes.ReplaceAll(index, []byte("{{ASSETS}}"), []byte(u.AssetPrefix()))
	sum := sha256.Sum256(u.index)
	u.etags["index.html"] = `"` + hex.EncodeToString(sum[:12]) + `"`
	return u
}

// Version names this build of the assets.
func (u *UI) Version() string { return u.version }

// AssetPrefix is the URL path under which the assets of this build are
// served, ending in a slash.
func (u *UI) AssetPrefix() string { return Prefix + assetsDir + u.version + "/" }

// ServeHTTP serves /app/ and everything under it.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		problem(w, r, http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed", "method_not_allowed", r.Method+" is not allowed here")
		return
	}
	p := r.URL.Path
	if p == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	rest, ok := strings.CutPrefix(p, Prefix+assetsDir)
	if !ok {
		// A page of the app: the client routes on the path.
		u.serveIndex(w, r)
		return
	}
	version, name, _ := strings.Cut(rest, "/")
	name = path.Clean("/" + name)[1:]
	if name == "" || name == "index.html" {
		notFound(w, r)
		return
	}
	b, err := fs.ReadFile(u.files, name)
	if err != nil {
		notFound(w, r)
		return
	}
	h := w.Header()
	if version == u.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		// A page loaded before this build asks for its assets: give it
		// today's, but let no cache keep them under the old name.
		h.Set("Cache-Control", "no-cache")
	}
	u.serveBytes(w, r, name, b)
}

// serveIndex answers with the app's shell, revalidated on every load so
// that a new build's asset prefix is seen at once.
func (u *UI) serveIndex(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	// The shell runs only our own scripts and talks only to this origin.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("Referrer-Policy", "no-referrer") // sign-in links carry the token in the fragment; keep URLs to ourselves
	u.serveBytes(w, r, "index.html", u.index)
}

func (u *UI) serveBytes(w http.ResponseWriter, r *http.Request, name string, b []byte) {
	h := w.Header()
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js":
		ctype = "text/javascript; charset=utf-8" // what module scripts need, whatever the system's mime table says
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	}
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", u.etags[name])
	// ServeContent answers If-None-Match with 304, HEAD and ranges. No
	// modification time: embedded files have none, the ETag does the work.
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

// Mount puts the UI in front of api: /app/ and below are the UI, a browser
// asking for / is sent to /app/, and everything else goes to api
// unchanged (so unknown API paths keep their problem+json 404).
func Mount(api http.Handler) http.Handler {
	ui := New()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == strings.TrimSuffix(Prefix, "/") || strings.HasPrefix(p, Prefix):
			ui.ServeHTTP(w, r)
		case p == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && wantsHTML(r):
			http.Redirect(w, r, Prefix, http.StatusFound)
		default:
			api.ServeHTTP(w, r)
		}
	})
}

// wantsHTML tells a browser's navigation (Accept: text/html, ...) from an
// API client (curl's */*, application/json).
func wantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
			return true
		}
	}
	return false
}

func notFound(w http.ResponseWriter, r *http.Request) {
	problem(w, r, http.StatusNotFound, "not-found", "Not found", "not_found", "no such file of the app")
}

// problem answers an error as the API does (httpapi.Problem:
// application/problem+json), so that a client sees one error format
// under /app/ too.
func problem(w http.ResponseWriter, r *http.Request, status int, slug, title, code, detail string) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "urn:boxoffice:problem:" + slug, "title": title,
		"status": status, "detail": detail, "instance": r.URL.Path, "code": code})
}
