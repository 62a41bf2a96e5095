// Package signflags is the one definition of the keyless signing flags that qualrun (a receipt)
// and qualverify fleet (a fleet manifest) share: --sign, --identity-token, --fulcio-url,
// --rekor-url and --tsa-url, and the options they give (docs/signing.md).
package signflags

import (
	"fmt"
	"os"
	"time"

	"github.com/qualkit/qualkit/attest/keyless"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// Flags are the signing flags; keyUsage says how the command signs with a key (e.g. "key (with
// --key)").
func Flags(keyUsage string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "sign", Usage: "`MODE`: " + keyUsage + " or keyless (Sigstore: OIDC token, Fulcio certificate, Rekor entry; docs/signing.md)"},
		&cli.StringFlag{Name: "identity-token", Usage: "keyless: read the OIDC identity token from `FILE` (default: $SIGSTORE_ID_TOKEN, then GitHub Actions' ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN)"},
		&cli.StringFlag{Name: "fulcio-url", Value: keyless.PublicFulcioURL, Usage: "keyless: the Fulcio certificate authority `URL`"},
		&cli.StringFlag{Name: "rekor-url", Value: keyless.PublicRekorURL, Usage: "keyless: the Rekor transparency log `URL`"},
		&cli.StringFlag{Name: "tsa-url", Usage: "keyless: also get an RFC 3161 timestamp from this `URL` (e.g. " + keyless.PublicTSAURL + ")"},
	}
}

// Keyless returns the keyless options when --sign keyless, nil when --sign is key or absent.
// keylessOnly are the flags refused without --sign keyless, keyFlags those refused with it. A
// --trusted-root, when the command has one, also checks a new bundle offline before it is
// written.
func Keyless(c *cli.Context, keylessOnly, keyFlags []string) (*keyless.Options, error) {
	switch c.String("sign") {
	case "", "key":
		for _, f := range keylessOnly {
			if c.IsSet(f) {
				return nil, fmt.Errorf("%w: --%s needs --sign keyless", exitcode.ErrUsage, f)
			}
		}
		return nil, nil
	case "keyless":
	default:
		return nil, fmt.Errorf("%w: --sign %q: key or keyless", exitcode.ErrUsage, c.String("sign"))
	}
	for _, f := range keyFlags {
		if c.String(f) != "" {
			return nil, fmt.Errorf("%w: --sign keyless signs without --%s", exitcode.ErrUsage, f)
		}
	}
	tok, err := keyless.Token(c.Context, c.String("identity-token"), os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	o := &keyless.Options{IDToken: tok, FulcioURL: c.String("fulcio-url"), RekorURL: c.String("rekor-url"), TSAURL: c.String("tsa-url"), Timeout: 30 * time.Second}
	if p := c.String("trusted-root"); p != "" {
		if o.Verify.TrustedRoot, err = keyless.LoadTrustedRoot(p); err != nil {
			return nil, fmt.Errorf("%w: --trusted-root: %v", exitcode.ErrUsage, err)
		}
	}
	return o, nil
}
