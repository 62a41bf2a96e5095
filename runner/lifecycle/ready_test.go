package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// authModes are test-server modes that need an API key, as vllm serve --api-key does: the key the
// server expects is the value of QK_SERVER_KEY in its environment.
var authModes = map[string]func() int{
	// auth: /v1/models needs "Authorization: Bearer <key>"; a refusal echoes the token it got
	// (as some servers do), so the client's redaction is tested.
	"auth": func() int {
		key := os.Getenv("QK_SERVER_KEY")
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
		if err != nil {
			fmt.Println(err)
			return 5
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
			if got := r.Header.Get("Authorization"); key == "" || got != "Bearer "+key {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, strings.TrimPrefix(got, "Bearer "))
				return
			}
			fmt.Fprint(w, `{"object":"list","data":[{"id":"tiny","object":"model"}]}`)
		})
		srv := &http.Server{Handler: mux}
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() { <-term; srv.Close() }()
		_ = srv.Serve(ln)
		return 0
	},
	// auth-leaks-and-exits prints its key to its log and exits before it is ready.
	"auth-leaks-and-exits": func() int {
		fmt.Println("starting with API key " + os.Getenv("QK_SERVER_KEY"))
		fmt.Println("fatal: cannot load model weights")
		return 3
	},
}

const (
	testToken = "qk-test-Tok3n-9fJ2xLw"
	wrongKey  = "qk-server-expects-another-Rk7"
)

// authRecipe is a recipe for an authAuth mode: qualrun's token comes from QK_BEARER (a name that
// does not look secret); the server's key from QK_SERVER_KEY, passed through.
func authRecipe(t *testing.T, mode string, withAuth bool) *contract.LaunchRecipeDoc {
	r := recipe(t, mode, freePort(t))
	r.EnvironmentPassthrough = []string{"QK_BEARER", "QK_SERVER_KEY"}
	if withAuth {
		r.Auth = &contract.Auth{Scheme: "bearer", TokenEnv: "QK_BEARER"}
	}
	return r
}

func launchEnv(t *testing.T, r *contract.LaunchRecipeDoc, env map[string]string) (*Server, error) {
	t.Helper()
	return Launch(context.Background(), r, Options{
		LogPath:      filepath.Join(t.TempDir(), "server.log"),
		RecipeDigest: "sha256:" + strings.Repeat("0", 64),
		LookupEnv:    func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
}

// TestBearerTokenSent: with auth the probe sends the token (the server lists the model only
// then), and the token variable is recorded redacted although its name does not look secret.
func TestBearerTokenSent(t *testing.T) {
	s, err := launchEnv(t, authRecipe(t, "auth", true), map[string]string{"QK_BEARER": testToken, "QK_SERVER_KEY": testToken})
	if err != nil {
		if s != nil {
			s.Shutdown(context.Background())
		}
		t.Fatal(err)
	}
	if err := s.WaitReady(context.Background()); err != nil {
		s.Shutdown(context.Background())
		t.Fatal(err)
	}
	if err := s.CheckListener(); err != nil {
		t.Fatal(err)
	}
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if rec.Verdict != "passed" {
		t.Fatalf("verdict %s: %v", rec.Verdict, rec.Failures)
	}
	seen := 0
	for _, e := range rec.Launch.Environment {
		if e.Name == "QK_BEARER" || e.Name == "QK_SERVER_KEY" {
			seen++
			if !e.Redacted || e.Value != nil || e.Digest != evidence.DigestOf([]byte(testToken)) {
				t.Errorf("token variable recorded as %+v", e)
			}
		}
	}
	if seen != 2 {
		t.Errorf("%d token variables in the record, want 2", seen)
	}
	if strings.Contains(string(mustJSON(t, rec)), testToken) {
		t.Error("the token entered the lifecycle record")
	}
}

// TestNoTokenWithoutAuth: the same server, the same environment, but a recipe without auth:
// nothing is sent, and the 401 fails readiness at once with a hint to declare auth.
func TestNoTokenWithoutAuth(t *testing.T) {
	s, err := launchEnv(t, authRecipe(t, "auth", false), map[string]string{"QK_BEARER": testToken, "QK_SERVER_KEY": testToken})
	if err != nil {
		t.Fatal(err)
	}
	err = s.WaitReady(context.Background())
	s.Fail(err)
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "HTTP 401 Unauthorized") || !strings.Contains(err.Error(), "declare auth") {
		t.Fatalf("WaitReady = %v", err)
	}
}

// TestWrongTokenFailsFast: a server that expects another key answers 401; readiness fails at
// the first probe, not at the deadline, shows the status and the server's message, names the
// variable, and never quotes the token (the server echoed it: it is redacted).
func TestWrongTokenFailsFast(t *testing.T) {
	r := authRecipe(t, "auth", true)
	r.StartupTimeoutSeconds = 10
	s, err := launchEnv(t, r, map[string]string{"QK_BEARER": testToken, "QK_SERVER_KEY": wrongKey})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.WaitReady(context.Background())
	took := time.Since(start)
	s.Fail(err)
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("WaitReady = %v", err)
	}
	if took > 3*time.Second {
		t.Errorf("took %s to fail on a 401 (deadline 10 s)", took)
	}
	msg := err.Error()
	for _, want := range []string{"HTTP 401 Unauthorized", `"Incorrect API key provided: [REDACTED]"`, "QK_BEARER"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, testToken) {
		t.Errorf("error quotes the token: %s", msg)
	}
	if b := string(mustJSON(t, rec)); strings.Contains(b, testToken) || strings.Contains(b, wrongKey) || !strings.Contains(b, "HTTP 401") {
		t.Errorf("record: %s", b)
	}
	if rec.Verdict != "failed" || rec.Readiness.Ready {
		t.Errorf("verdict %s ready %v", rec.Verdict, rec.Readiness.Ready)
	}
}

// TestTokenInLogTailRedacted: a server that prints the token and exits: the token is scrubbed
// from the log as it is captured, so the early-exit error quotes the log tail with a marker
// naming the variable, and the log file never holds the token.
func TestTokenInLogTailRedacted(t *testing.T) {
	s, err := launchEnv(t, authRecipe(t, "auth-leaks-and-exits", true), map[string]string{"QK_BEARER": testToken, "QK_SERVER_KEY": testToken})
	if err != nil {
		t.Fatal(err)
	}
	err = s.WaitReady(context.Background())
	s.Fail(err)
	rec := s.Shutdown(context.Background())
	if !errors.Is(err, ErrExitedEarly) || !strings.Contains(err.Error(), "starting with API key [redacted:QK_BEARER]") || strings.Contains(err.Error(), testToken) {
		t.Fatalf("WaitReady = %v", err)
	}
	if log, err := os.ReadFile(rec.Launch.Log.Path); err != nil || strings.Contains(string(log), testToken) || !strings.Contains(string(log), "[redacted:QK_BEARER]") {
		t.Errorf("server log (%v): %s", err, log)
	}
	if got := s.ScrubbedLog(); got["QK_BEARER"] != 1 {
		t.Errorf("ScrubbedLog = %v", got)
	}
	if strings.Contains(string(mustJSON(t, rec)), testToken) {
		t.Error("the token entered the lifecycle record")
	}
}

// TestMissingTokenRefusesLaunch: auth with the variable unset, empty or unusable: Launch starts
// nothing and names the variable, never its value.
func TestMissingTokenRefusesLaunch(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unset", map[string]string{}, "QK_BEARER, which is not set in qualrun's environment"},
		{"empty", map[string]string{"QK_BEARER": ""}, "QK_BEARER, which is empty in qualrun's environment"},
		{"space", map[string]string{"QK_BEARER": "two words"}, "value of QK_BEARER (9 bytes) has a byte that is not visible ASCII at offset 3"},
		{"crlf", map[string]string{"QK_BEARER": "tok\r\nX-Injected: 1"}, "not visible ASCII at offset 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := authRecipe(t, "auth", true)
			logPath := filepath.Join(t.TempDir(), "server.log")
			s, err := Launch(context.Background(), r, Options{LogPath: logPath, LookupEnv: func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }})
			if s != nil || !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Launch = %v, %v; want ErrToken with %q", s, err, tc.want)
			}
			if v := tc.env["QK_BEARER"]; v != "" && strings.Contains(err.Error(), v) || strings.Contains(err.Error(), "Injected") {
				t.Errorf("the error quotes the value: %v", err)
			}
			if _, err := os.Stat(logPath); !os.IsNotExist(err) {
				t.Errorf("a server log was created: %v", err)
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	r := &contract.LaunchRecipeDoc{}
	if tok, err := BearerToken(r, nil); tok != "" || err != nil {
		t.Fatalf("no auth: %q %v", tok, err)
	}
	r.Auth = &contract.Auth{Scheme: "bearer", TokenEnv: "QK_LIFECYCLE_TEST_TOKEN"}
	t.Setenv("QK_LIFECYCLE_TEST_TOKEN", testToken)
	if tok, err := BearerToken(r, nil); tok != testToken || err != nil {
		t.Fatalf("from the process environment: %q %v", tok, err)
	}
	r.Auth.Scheme = "basic"
	if _, err := BearerToken(r, nil); !errors.Is(err, ErrToken) {
		t.Fatalf("basic scheme: %v", err)
	}
}

func TestRedactAndQuote(t *testing.T) {
	if got := Redact("a tok b tok", "tok"); got != "a [REDACTED] b [REDACTED]" {
		t.Errorf("Redact = %q", got)
	}
	if got := Redact("unchanged", ""); got != "unchanged" {
		t.Errorf("Redact with no token = %q", got)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"error":{"message":"bad key","type":"x"}}`, "bad key"},
		{`{"error":"Unauthorized"}`, "Unauthorized"},
		{`{"message":"no"}`, "no"},
		{`{"detail":"Not authenticated"}`, "Not authenticated"},
		{"plain text\n", "plain text"},
		{"\xff\xfe", ""},
	} {
		if got := errorMessage([]byte(tc.body)); got != tc.want {
			t.Errorf("errorMessage(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
	if got := quote(strings.Repeat("é", 200), 5); got != `"éé..."` {
		t.Errorf("quote = %s", got)
	}
}
