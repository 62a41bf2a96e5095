// Package ocitest serves registries for tests: go-containerregistry's registry over real HTTP,
// behind a Hostile front that speaks enough of the distribution API to do what an adversary's
// registry does (redirect blobs elsewhere, demand a token from a realm of its choosing, serve
// bytes slowly, serve a manifest other than the one asked for), and records what reached it.
package ocitest

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Hostile is a registry front with the behaviours a test switches on. Its zero behaviour is an
// honest registry.
type Hostile struct {
	// Host is host:port of the registry.
	Host string
	// Inner is the honest registry it fronts (go-containerregistry's).
	Inner http.Handler

	mu sync.Mutex
	// RedirectBlobs, when set, answers a blob GET with 307 to RedirectBlobs + the request path.
	RedirectBlobs string
	// Realm, when set, demands "Authorization: Bearer " + Token on every /v2/ request and names
	// Realm in its WWW-Authenticate challenge.
	Realm, Token string
	// SlowBlobs, when > 0, serves every blob at one byte per SlowBlobs.
	SlowBlobs time.Duration
	// LieManifest, when set, is served for every manifest GET by digest in place of the manifest.
	LieManifest []byte
	// UploadLocation, when set, answers an upload's start (POST .../blobs/uploads/) with 202 and
	// this Location.
	UploadLocation string
	// TamperBlobs, when set, serves every blob with its last byte changed (its digest then lies).
	TamperBlobs bool
	// StallUploads, when set, answers no upload's PUT or PATCH until the client goes away.
	StallUploads bool
	// ErrorBody, when set, answers every manifest request with 400 and this body.
	ErrorBody []byte
	// Requests counts the requests that reached the front.
	Requests int
}

// Set changes behaviours under the lock.
func (h *Hostile) Set(f func(h *Hostile)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

func (h *Hostile) snapshot() Hostile {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Requests++
	return Hostile{RedirectBlobs: h.RedirectBlobs, Realm: h.Realm, Token: h.Token, SlowBlobs: h.SlowBlobs, LieManifest: h.LieManifest, UploadLocation: h.UploadLocation, TamperBlobs: h.TamperBlobs, StallUploads: h.StallUploads, ErrorBody: h.ErrorBody}
}

func (h *Hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b := h.snapshot()
	if b.Realm != "" && strings.HasPrefix(r.URL.Path, "/v2/") && r.Header.Get("Authorization") != "Bearer "+b.Token {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+b.Realm+`",service="hostile",scope="repository:x:pull"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	blob := strings.Contains(r.URL.Path, "/blobs/sha256:") && r.Method == http.MethodGet
	switch {
	case b.ErrorBody != nil && strings.Contains(r.URL.Path, "/manifests/"):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(b.ErrorBody)
		return
	case b.StallUploads && (r.Method == http.MethodPut || r.Method == http.MethodPatch) && strings.Contains(r.URL.Path, "/blobs/uploads/"):
		// The body read to its end, net/http notices the client going away (and cancels the context).
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return
	case b.UploadLocation != "" && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/blobs/uploads/"):
		w.Header().Set("Location", b.UploadLocation)
		w.WriteHeader(http.StatusAccepted)
		return
	case blob && b.RedirectBlobs != "":
		http.Redirect(w, r, b.RedirectBlobs+r.URL.Path, http.StatusTemporaryRedirect)
		return
	case b.LieManifest != nil && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/sha256:"):
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
		w.Write(b.LieManifest)
		return
	case blob && b.TamperBlobs:
		rec := httptest.NewRecorder()
		h.Inner.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if len(body) > 0 {
			body[len(body)-1] ^= 1
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(body)
		return
	case blob && b.SlowBlobs > 0:
		rec := httptest.NewRecorder()
		h.Inner.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		rc := http.NewResponseController(w)
		for _, c := range rec.Body.Bytes() {
			if _, err := w.Write([]byte{c}); err != nil {
				return
			}
			rc.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(b.SlowBlobs):
			}
		}
		return
	}
	h.Inner.ServeHTTP(w, r)
}

// Start serves a Hostile front of a fresh in-memory registry (referrers API on) on addr
// ("127.0.0.1:0" for any loopback port); the server is closed by the returned function.
func Start(addr string) (*Hostile, func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	h := &Hostile{Inner: registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0)))}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	h.Host = strings.TrimPrefix(srv.URL, "http://")
	return h, srv.Close, nil
}

// Recorder is a server that records every request (path and Authorization header) and answers
// each from Serve (a token realm's JSON, a redirected blob).
type Recorder struct {
	URL   string
	mu    sync.Mutex
	hits  []Hit
	Serve http.Handler
}

// Hit is one request a Recorder saw.
type Hit struct{ Path, Authorization string }

// StartRecorder serves a Recorder on addr; serve answers (nil: 404).
func StartRecorder(addr string, serve http.Handler) (*Recorder, func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	rec := &Recorder{Serve: serve}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.hits = append(rec.hits, Hit{Path: r.URL.Path, Authorization: r.Header.Get("Authorization")})
		rec.mu.Unlock()
		if rec.Serve == nil {
			http.NotFound(w, r)
			return
		}
		rec.Serve.ServeHTTP(w, r)
	})}}
	srv.Start()
	rec.URL = srv.URL
	return rec, srv.Close, nil
}

// Hits returns the requests seen so far.
func (r *Recorder) Hits() []Hit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Hit(nil), r.hits...)
}

// TokenRealm answers a token request with {"token": token}.
func TokenRealm(token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, bytes.NewReader([]byte(`{"token":"`+token+`"}`)))
	})
}
