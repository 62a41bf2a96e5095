package keyless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/qualkit/qualkit/schemas/evidence"
)

// ErrToken: no identity token could be obtained.
var ErrToken = errors.New("no OIDC identity token")

// MaxTokenBytes caps an identity token (a JWT of a few KiB).
const MaxTokenBytes = 64 << 10

// Environment variables the token comes from, in this order: SIGSTORE_ID_TOKEN (cosign's), then
// GitHub Actions' ID token request (the job needs `permissions: id-token: write`).
const (
	EnvSigstoreToken     = "SIGSTORE_ID_TOKEN"
	EnvGitHubRequestURL  = "ACTIONS_ID_TOKEN_REQUEST_URL"
	EnvGitHubRequestAuth = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// Token returns the identity token: from file when it is not "" (a regular file, bounded),
// otherwise from the CI environment (getenv), asking GitHub's token service for audience
// "sigstore" when its variables are set.
func Token(ctx context.Context, file string, getenv func(string) string) (string, error) {
	if file != "" {
		b, err := evidence.ReadFileLimited(file, MaxTokenBytes)
		if err != nil {
			return "", fmt.Errorf("%w: read %s: %v", ErrToken, file, err)
		}
		return nonEmpty(strings.TrimSpace(string(b)), file)
	}
	if t := strings.TrimSpace(getenv(EnvSigstoreToken)); t != "" {
		return t, nil
	}
	if u, auth := getenv(EnvGitHubRequestURL), getenv(EnvGitHubRequestAuth); u != "" && auth != "" {
		return githubToken(ctx, u, auth)
	}
	return "", fmt.Errorf("%w: give --identity-token FILE, or run where %s or %s and %s are set", ErrToken, EnvSigstoreToken, EnvGitHubRequestURL, EnvGitHubRequestAuth)
}

func nonEmpty(t, from string) (string, error) {
	if t == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrToken, from)
	}
	return t, nil
}

func githubToken(ctx context.Context, requestURL, auth string) (string, error) {
	u, err := url.Parse(requestURL)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrToken, EnvGitHubRequestURL, err)
	}
	q := u.Query()
	q.Set("audience", "sigstore")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrToken, err)
	}
	req.Header.Set("Authorization", "Bearer "+auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrToken, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxTokenBytes))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrToken, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: the token service answered %s", ErrToken, resp.Status)
	}
	var v struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("%w: the token service's answer: %v", ErrToken, err)
	}
	return nonEmpty(v.Value, "the token service's answer")
}
