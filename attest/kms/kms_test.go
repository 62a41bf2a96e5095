package kms_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/qualkit/qualkit/attest/kms"
)

// No vault binary is installed on this machine, so this is a test of the dispatch: which
// references are KMS keys, which providers are refused as not linked, and that a hashivault://
// reference reaches sigstore's Vault provider, which asks the Vault at $VAULT_ADDR (a loopback
// server here that refuses) for the key, and the refusal surfaces as ErrKMS.
func TestDispatch(t *testing.T) {
	var asked atomic.Int32
	vault := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, `{"errors":["permission denied"]}`, http.StatusForbidden)
	}))
	defer vault.Close()
	t.Setenv("VAULT_ADDR", vault.URL)
	t.Setenv("VAULT_TOKEN", "test-token")

	tests := []struct {
		ref  string
		isKM bool
		want error
	}{
		{"keys/qual.key", false, kms.ErrKMS},
		{"awskms:///arn:aws:kms:us-east-1:111122223333:key/abc", true, kms.ErrProviderNotLinked},
		{"gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k", true, kms.ErrProviderNotLinked},
		{"azurekms://vault.vault.azure.net/key", true, kms.ErrProviderNotLinked},
		{"hashivault://qual", true, kms.ErrKMS},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			if got := kms.IsReference(tt.ref); got != tt.isKM {
				t.Fatalf("IsReference = %v, want %v", got, tt.isKM)
			}
			_, err := kms.LoadSigner(context.Background(), tt.ref)
			if !errors.Is(err, tt.want) {
				t.Fatalf("LoadSigner: %v, want %v", err, tt.want)
			}
		})
	}
	if asked.Load() == 0 {
		t.Error("the hashivault reference never reached the Vault at VAULT_ADDR")
	}
}
