package qualsim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// maxProbeBody bounds the response body probe prints.
const maxProbeBody = 64 << 20

type probeSpec struct {
	addr, addrFile, path, data string
	hasData                    bool
	token                      string // sent as a bearer token when set; never printed
	wait, timeout              time.Duration
}

// probe sends one request (retrying until a 2xx answer within spec.wait) and prints the body of
// the last answer.
func probe(ctx context.Context, spec probeSpec, stdout io.Writer) error {
	deadline := time.Now().Add(spec.wait)
	client := &http.Client{Timeout: spec.timeout}
	defer client.CloseIdleConnections()
	var lastErr error
	for {
		status, body, err := probeOnce(ctx, client, spec)
		if err == nil && status/100 == 2 {
			_, err := stdout.Write(body)
			return err
		}
		if err == nil {
			lastErr = fmt.Errorf("%w: %s %s: HTTP %d", exitcode.ErrRejected, method(spec), spec.path, status)
			if time.Now().After(deadline) {
				stdout.Write(body)
				return lastErr
			}
		} else {
			if !isRetryable(err) {
				return err
			}
			lastErr = fmt.Errorf("%w: %s %s: %v", exitcode.ErrRejected, method(spec), spec.path, err)
			if time.Now().After(deadline) {
				return lastErr
			}
		}
		select {
		case <-ctx.Done():
			return lastErr
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type usageErr struct{ error }

func (e usageErr) Unwrap() error { return e.error }

func isRetryable(err error) bool {
	_, usage := err.(usageErr)
	return !usage
}

func method(spec probeSpec) string {
	if spec.hasData {
		return http.MethodPost
	}
	return http.MethodGet
}

func probeOnce(ctx context.Context, client *http.Client, spec probeSpec) (int, []byte, error) {
	addr := spec.addr
	if spec.addrFile != "" {
		b, err := os.ReadFile(spec.addrFile)
		if err != nil {
			return 0, nil, err // not written yet: retryable
		}
		addr = strings.TrimSpace(string(b))
	}
	if err := sim.CheckLoopback(addr); err != nil {
		return 0, nil, usageErr{fmt.Errorf("%w: %v", exitcode.ErrUsage, err)}
	}
	var body io.Reader
	if spec.hasData {
		body = strings.NewReader(spec.data)
	}
	req, err := http.NewRequestWithContext(ctx, method(spec), "http://"+addr+spec.path, body)
	if err != nil {
		return 0, nil, usageErr{fmt.Errorf("%w: %v", exitcode.ErrUsage, err)}
	}
	if spec.hasData {
		req.Header.Set("Content-Type", "application/json")
	}
	if spec.token != "" {
		req.Header.Set("Authorization", "Bearer "+spec.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}
