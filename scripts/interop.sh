#!/usr/bin/env bash
# make interop: qualrun's attestations against the real cosign CLI, offline, in both directions.
#
# Installs a pinned cosign into .tools/ (go install; several minutes the first time), runs a real
# serving campaign against qualsim in a throwaway git repository with `qualrun run --key`, then:
#   1. cosign verify-blob-attestation accepts our bundle and our plain envelope for the receipt
#      and for a case result, with the public key and no transparency log;
#   2. cosign rejects a tampered payload, a wrong key, a wrong subject file and a wrong type;
#   3. cosign reads qualrun's encrypted key and qualrun reads cosign's (qualrun attest --key cosign.key);
#   4. cosign attest-blob --statement signs our Statement, and our verifier (go test
#      ./attest -run TestCosignInterop) accepts cosign's envelope and bundle;
#   5. qualrun publish pushes the receipt to a loopback registry (qualsim registry); qualverify verifies
#      it by digest from there, cosign tree lists its bundle referrer, and the bundle fetched through the
#      referrers API verifies with cosign;
#   6. keyless: qualrun run --sign keyless against qualsim sigstore (loopback OIDC issuer, Fulcio-API
#      CA, Rekor log, TSA); stock cosign verify-blob-attestation accepts the bundle with
#      --certificate-identity/--certificate-oidc-issuer and the stand-ins' trusted root, and refuses
#      another identity and another issuer;
#   7. the stock `in-toto-golang verify` CLI (pinned, installed into .tools/; about a minute to
#      build) accepts the campaign's in-toto link under a layout from `qualrun layout`, its
#      inspection running qualverify verify, and refuses a tampered product.
# Not part of `make test`: building cosign takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
repo_root=$(pwd)

COSIGN_VERSION=v3.1.3 # the version docs/attestation.md and the reference note tested
INTOTO_VERSION=v0.11.0 # github.com/in-toto/in-toto-golang, as attest/go.mod requires it
PT=https://qualkit.dev/attestation/qualification/v1
cosign=$repo_root/.tools/cosign

if ! [ -x "$cosign" ] || ! "$cosign" version 2>/dev/null | grep -q "GitVersion: *$COSIGN_VERSION\$"; then
	echo "== installing cosign $COSIGN_VERSION into .tools/ (go install; several minutes the first time)"
	GOBIN=$repo_root/.tools go install "github.com/sigstore/cosign/v3/cmd/cosign@$COSIGN_VERSION"
fi
echo "== $("$cosign" version 2>/dev/null | grep -E '^(GitVersion|GoVersion)' | tr -s ' ' | paste -sd' ')"
intoto=$repo_root/.tools/in-toto-golang
if ! [ -x "$intoto" ] || ! go version -m "$intoto" | grep -q "mod.*github.com/in-toto/in-toto-golang.*$INTOTO_VERSION"; then
	echo "== installing in-toto-golang $INTOTO_VERSION into .tools/ (go install; about a minute the first time)"
	GOBIN=$repo_root/.tools GOWORK=off GOFLAGS= go install "github.com/in-toto/in-toto-golang@$INTOTO_VERSION"
fi
make --no-print-directory build >/dev/null
qualrun=$repo_root/bin/qualrun

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0
fail=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }
# expect_ok DESCRIPTION PATTERN CMD...: CMD must succeed and say PATTERN.
expect_ok() {
	local what=$1 pattern=$2
	shift 2
	if "$@" >"$work/out" 2>&1 && grep -qE "$pattern" "$work/out"; then
		ok "$what: $(grep -oE "$pattern" "$work/out" | head -1)"
	else
		bad "$what"
		sed 's/^/      /' "$work/out"
	fi
}
# expect_fail DESCRIPTION PATTERN CMD...: CMD must fail and say PATTERN.
expect_fail() {
	local what=$1 pattern=$2
	shift 2
	if "$@" >"$work/out" 2>&1; then
		bad "$what (accepted)"
	elif grep -qE "$pattern" "$work/out"; then
		ok "$what: $(grep -oE "$pattern" "$work/out" | head -1)"
	else
		bad "$what (failed without '$pattern')"
		sed 's/^/      /' "$work/out"
	fi
}
V='Verified OK'
verify() { # verify KEY SIGNATURE-FLAG FILE SUBJECT [TYPE]
	"$cosign" verify-blob-attestation --key "$1" "$2" "$3" --type "${5:-$PT}" --insecure-ignore-tlog "$4"
}

echo "== a qualification repository with a serving workload (qualsim), committed, origin/main = HEAD"
r=$work/repo
mkdir -p "$r/workloads/launch" "$r/bin"
sed 's/127.0.0.1:18080/127.0.0.1:18691/' workloads/demo.json >"$r/workloads/demo.json" # workload and recipe agree on the address
sed 's/127.0.0.1:18080/127.0.0.1:18691/' workloads/launch/qualsim.json >"$r/workloads/launch/qualsim.json"
cp bin/qualsim "$r/bin/qualsim"
printf 'bin/\n.qualification/\n' >"$r/.gitignore"
(
	cd "$r"
	export GIT_AUTHOR_NAME=qualkit GIT_AUTHOR_EMAIL=qualkit@example.invalid GIT_COMMITTER_NAME=qualkit \
		GIT_COMMITTER_EMAIL=qualkit@example.invalid GIT_CONFIG_GLOBAL=/dev/null
	git init -q -b main && git add -A && git commit -q -m interop
	git clone -q --bare . "$work/origin.git" && git remote add origin "$work/origin.git" && git fetch -q origin
)

echo "== keys: qualrun keygen (encrypted) and cosign generate-key-pair"
export QUALKIT_PASSWORD=interop-qualrun-password
"$qualrun" keygen --output-prefix "$work/qual" >/dev/null
(cd "$work" && COSIGN_PASSWORD=interop-cosign-password "$cosign" generate-key-pair >/dev/null 2>&1)

echo "== campaign 1: qualrun run --key (qualrun's key)"
(cd "$r" && "$qualrun" run workloads/demo.json --variant cpu-reference --host-id interop-host \
	--output .qualification/receipts/signed.json --key "$work/qual.key" >"$work/run1.txt")
grep -E '^(verdict|attestation|bundle) ' "$work/run1.txt" | sed 's/^/      /'
receipt=$r/.qualification/receipts/signed.json
bundle=$r/.qualification/receipts/signed.sigstore.json
envelope=$r/.qualification/receipts/signed.intoto.dsse.json
case_result=$r/$(grep -o '"path": "[^"]*case-result.json"' "$receipt" | head -1 | cut -d'"' -f4)
[ -f "$case_result" ] || { echo "no case result found in $receipt"; exit 1; }

echo "== cosign verifies what qualrun wrote"
expect_ok "bundle, receipt" "$V" verify "$work/qual.pub" --bundle "$bundle" "$receipt"
expect_ok "bundle, case result" "$V" verify "$work/qual.pub" --bundle "$bundle" "$case_result"
expect_ok "plain envelope (--signature), receipt" "$V" verify "$work/qual.pub" --signature "$envelope" "$receipt"
expect_ok "plain envelope (--signature), case result" "$V" verify "$work/qual.pub" --signature "$envelope" "$case_result"

echo "== cosign rejects"
# Tampering: flip the statement's source.clean claim inside the payload, keep the signature.
tamper() { # tamper FILE OUT
	local payload new
	payload=$(grep -oE '"payload":"[^"]*"' "$1" | cut -d'"' -f4)
	new=$(printf '%s' "$payload" | base64 -d | sed 's/"clean":true/"clean":false/' | base64 -w0)
	[ "$new" != "$payload" ] || { echo "nothing to tamper with in $1"; exit 1; }
	sed "s|$payload|$new|" "$1" >"$2"
}
tamper "$bundle" "$work/tampered.sigstore.json"
tamper "$envelope" "$work/tampered.intoto.dsse.json"
expect_fail "tampered payload (bundle)" 'accepted signatures do not match threshold, Found: 0, Expected 1' verify "$work/qual.pub" --bundle "$work/tampered.sigstore.json" "$receipt"
expect_fail "tampered payload (envelope)" 'accepted signatures do not match threshold, Found: 0, Expected 1' verify "$work/qual.pub" --signature "$work/tampered.intoto.dsse.json" "$receipt"
expect_fail "wrong key (bundle)" 'accepted signatures do not match threshold, Found: 0, Expected 1' verify "$work/cosign.pub" --bundle "$bundle" "$receipt"
expect_fail "wrong key (envelope)" 'accepted signatures do not match threshold, Found: 0, Expected 1' verify "$work/cosign.pub" --signature "$envelope" "$receipt"
expect_fail "wrong subject file (bundle)" 'provided artifact digests? do(es)? not match[a-z ]*|no matching subject digest found' verify "$work/qual.pub" --bundle "$bundle" "$r/workloads/demo.json"
expect_fail "wrong subject file (envelope)" 'provided artifact digests? do(es)? not match[a-z ]*|no matching subject digest found' verify "$work/qual.pub" --signature "$envelope" "$r/workloads/demo.json"
expect_fail "wrong predicate type" 'invalid predicate type, expected [^ ]+' verify "$work/qual.pub" --bundle "$bundle" "$receipt" https://example.invalid/other/v1

echo "== the stock in-toto-golang verify CLI: the campaign's link under a qualrun layout"
"$qualrun" keygen --unencrypted --output-prefix "$work/owner" >/dev/null
evidence=$(cd "$r" && ls -d .qualification/runs/*)
"$qualrun" layout --key "$work/owner.key" --functionary "$work/qual.pub" --output "$work/root.layout" \
	--param RECEIPT=.qualification/receipts/signed.json --param EVIDENCE="$evidence" --param PUBKEY="$work/qual.pub" >/dev/null
intoto_verify() { (cd "$r" && PATH=$repo_root/bin:$PATH "$intoto" verify -l "$work/root.layout" -k "$work/owner.pub" \
	-d .qualification/receipts/signed.in-toto 2>&1; status=$?; rm -f qualverify.link; [ $status != 0 ] || echo "in-toto-golang verify: exit 0"; exit $status); }
expect_ok "in-toto-golang verify accepts the campaign (layout, link, qualverify inspection)" 'in-toto-golang verify: exit 0' intoto_verify
cp "$r/$evidence/server.log" "$work/server.log.orig"
echo tampered >>"$r/$evidence/server.log"
expect_fail "in-toto-golang verify refuses a tampered product" "returned a non-zero value|disallowed by rule" intoto_verify
cp "$work/server.log.orig" "$r/$evidence/server.log"

echo "== campaign 2 without a key, then qualrun attest --key cosign.key (cosign's encrypted key)"
(cd "$r" && "$qualrun" run workloads/demo.json --variant cpu-reference --host-id interop-host \
	--output .qualification/receipts/later.json >/dev/null)
expect_ok "qualrun attest reads cosign.key (COSIGN_PASSWORD)" "^bundle .*" env -u QUALKIT_PASSWORD COSIGN_PASSWORD=interop-cosign-password \
	"$qualrun" attest "$r/.qualification/receipts/later.json" --key "$work/cosign.key"
expect_ok "cosign verifies it with cosign.pub" "$V" verify "$work/cosign.pub" --bundle "$r/.qualification/receipts/later.sigstore.json" "$r/.qualification/receipts/later.json"

echo "== cosign attest-blob --statement signs our Statement; our verifier checks cosign's output"
printf '%s' "$(grep -oE '"payload":"[^"]*"' "$envelope" | cut -d'"' -f4)" | base64 -d >"$work/statement.json"
attest_blob() { # attest_blob KEY PASSWORD OUT-PREFIX
	COSIGN_PASSWORD=$2 "$cosign" attest-blob --key "$1" --statement "$work/statement.json" \
		--use-signing-config=false --tlog-upload=false --yes --bundle "$3.sigstore.json" >/dev/null 2>"$work/out.err" &&
		COSIGN_PASSWORD=$2 "$cosign" attest-blob --key "$1" --statement "$work/statement.json" \
			--use-signing-config=false --tlog-upload=false --yes --new-bundle-format=false \
			--output-signature "$3.intoto.dsse.json" >/dev/null 2>>"$work/out.err" &&
		echo "wrote $(basename "$3").sigstore.json and $(basename "$3").intoto.dsse.json" ||
		{ cat "$work/out.err"; return 1; }
}
expect_ok "cosign attest-blob --statement with qualrun's key" "wrote .*" attest_blob "$work/qual.key" "$QUALKIT_PASSWORD" "$work/cosign-qualkey"
expect_ok "cosign attest-blob --statement with cosign's key" "wrote .*" attest_blob "$work/cosign.key" interop-cosign-password "$work/cosign-cosignkey"
expect_ok "cosign verifies its own bundle" "$V" verify "$work/qual.pub" --bundle "$work/cosign-qualkey.sigstore.json" "$case_result"
for key in qual cosign; do
	prefix=$work/cosign-${key}key
	[ "$key" = qual ] && prefix=$work/cosign-qualkey
	expect_ok "our verifier accepts cosign's envelope and bundle ($key key)" "[0-9]+ subjects match the files on disk" env \
		QUALKIT_INTEROP_PUB="$work/$key.pub" QUALKIT_INTEROP_ROOT="$r" \
		QUALKIT_INTEROP_ENVELOPES="$prefix.intoto.dsse.json" QUALKIT_INTEROP_BUNDLES="$prefix.sigstore.json" \
		go test -count=1 -v -run '^TestCosignInterop$' ./attest/
done
expect_fail "our verifier rejects cosign's envelope with the wrong key" 'signature does not verify' env \
	QUALKIT_INTEROP_PUB="$work/cosign.pub" QUALKIT_INTEROP_ROOT="$r" \
	QUALKIT_INTEROP_ENVELOPES="$work/cosign-qualkey.intoto.dsse.json" \
	go test -count=1 -run '^TestCosignInterop$' ./attest/

echo "== OCI: qualrun publish to a loopback registry (qualsim registry); the bundle is a referrer cosign reads"
"$repo_root/bin/qualsim" registry --listen 127.0.0.1:0 --addr-file "$work/registry.addr" >"$work/registry.log" 2>&1 &
registry_pid=$!
trap 'kill "$registry_pid" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 200); do [ -s "$work/registry.addr" ] && break; sleep 0.05; done
reg=$(cat "$work/registry.addr")
expect_ok "qualrun publish" 'oci://[^ ]+@sha256:[0-9a-f]{64}' "$qualrun" publish "$receipt" --to "oci://$reg/interop/receipt:signed"
artifact=$(grep -oE 'sha256:[0-9a-f]{64}' "$work/out" | head -1)
expect_ok "qualverify verify pulls the artifact by digest and verifies it" '^verdict +verified' \
	"$repo_root/bin/qualverify" verify "oci://$reg/interop/receipt@$artifact" --key "$work/qual.pub"
# cosign tree lists OCI 1.1 referrers with --experimental-oci11 (deprecated in v3.1.3, where it
# still works; referrers are to become the default), naming a bundle referrer by the predicate type
# of its dev.sigstore.bundle.predicateType annotation; plain HTTP for this loopback registry only.
expect_ok "cosign tree finds the bundle through the referrers API" 'https://qualkit.dev/attestation/qualification/v1 artifacts via OCI referrer: [^ ]+@sha256:[0-9a-f]{64}' \
	"$cosign" tree --experimental-oci11 --allow-http-registry "$reg/interop/receipt@$artifact"
# The referrer's bundle, fetched through the OCI referrers API (GET /v2/<name>/referrers/<digest>),
# verifies with cosign against the receipt.
fetch_bundle() { # fetch_bundle OUT: the bundle layer of the artifact's sigstore bundle referrer
	python3 - "$reg" interop/receipt "$artifact" "$1" <<'PY'
import json, sys, urllib.request
reg, repo, subject, out = sys.argv[1:]
get = lambda path, accept: urllib.request.urlopen(urllib.request.Request(f"http://{reg}/v2/{repo}/{path}", headers={"Accept": accept})).read()
index = json.loads(get(f"referrers/{subject}", "application/vnd.oci.image.index.v1+json"))
for d in index["manifests"]:
    m = json.loads(get(f"manifests/{d['digest']}", "application/vnd.oci.image.manifest.v1+json"))
    if m.get("artifactType") == "application/vnd.dev.sigstore.bundle.v0.3+json" and m["subject"]["digest"] == subject:
        open(out, "wb").write(get(f"blobs/{m['layers'][0]['digest']}", "*/*"))
        print("bundle referrer", d["digest"])
        break
else:
    sys.exit("no bundle referrer")
PY
}
expect_ok "the referrers API names the bundle" '^bundle referrer sha256:[0-9a-f]{64}' fetch_bundle "$work/referred.sigstore.json"
expect_ok "cosign verifies the referred bundle against the receipt" "$V" verify "$work/qual.pub" --bundle "$work/referred.sigstore.json" "$receipt"
kill "$registry_pid" 2>/dev/null || true

echo "== keyless: qualrun run --sign keyless against qualsim sigstore (loopback stand-ins); cosign checks the identity"
ss=$work/sigstore
mkdir -p "$ss"
"$repo_root/bin/qualsim" sigstore --dir "$ss" >"$work/sigstore.log" 2>&1 &
sigstore_pid=$!
trap 'kill "$sigstore_pid" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 400); do [ -e "$ss/ready" ] && break; sleep 0.05; done
ident=https://github.com/qualkit/qualkit/.github/workflows/release.yml@refs/heads/main
issuer=$(cat "$ss/issuer.url")
expect_ok "qualrun run --sign keyless (Fulcio certificate, Rekor entry, RFC 3161 timestamp)" "^identity .*" \
	bash -c 'cd "$1" && "$2" run workloads/demo.json --variant cpu-reference --host-id interop-host --output .qualification/receipts/keyless.json \
		--sign keyless --identity-token "$3/token" --fulcio-url "$(cat "$3/fulcio.url")" --rekor-url "$(cat "$3/rekor.url")" \
		--tsa-url "$(cat "$3/tsa.url")" --trusted-root "$3/trusted_root.json"' _ "$r" "$qualrun" "$ss"
kreceipt=$r/.qualification/receipts/keyless.json
kbundle=$r/.qualification/receipts/keyless.sigstore.json
kverify() { # kverify IDENTITY ISSUER TRUSTED-ROOT
	"$cosign" verify-blob-attestation --bundle "$kbundle" --trusted-root "$3" --certificate-identity "$1" \
		--certificate-oidc-issuer "$2" --type "$PT" "$kreceipt"
}
expect_ok "cosign verify-blob-attestation --certificate-identity --certificate-oidc-issuer (offline, trusted root)" "$V" kverify "$ident" "$issuer" "$ss/trusted_root.json"
expect_fail "cosign refuses another identity" 'expected SAN value "[^"]+", got "[^"]+"|none of the expected identities matched' kverify https://github.com/evil/fork/.github/workflows/release.yml@refs/heads/main "$issuer" "$ss/trusted_root.json"
expect_fail "cosign refuses another issuer" 'expected issuer value "[^"]+", got "[^"]+"|none of the expected identities matched' kverify "$ident" https://token.actions.githubusercontent.com "$ss/trusted_root.json"
expect_ok "qualverify verifies it with the same policy" '^verdict +verified' "$repo_root/bin/qualverify" verify "$kreceipt" --root "$r" \
	--trusted-root "$ss/trusted_root.json" --certificate-identity "$ident" --certificate-oidc-issuer "$issuer" --allow-unpublished-unsafe
kill "$sigstore_pid" 2>/dev/null || true

echo
echo "make interop: $pass passed, $fail failed (cosign $COSIGN_VERSION, in-toto-golang $INTOTO_VERSION)"
[ "$fail" -eq 0 ]
