package verify

import (
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// driverResult is a version-2 evidence result (next-token result, path attribution, layer
// attribution) as a receipt binds it for a driver case.
type driverResult struct {
	// name is the contract name, e.g. "path-attribution.v2".
	name   string
	header contract.DriverResultHeader
	// body is the contract's section (schemas.NextTokenBody, PathBody or LayerBody).
	body any
	// status and the contract-specific verdict members as recorded.
	status          contract.DriverStatus
	argmaxCandidate string
	complete        bool
	attribution     string
}

// decodeDriverResult decodes a driver result of the given schema id.
func decodeDriverResult(schemaID string, raw []byte) (*driverResult, error) {
	name := strings.TrimPrefix(schemaID, "qualkit.")
	dr := &driverResult{name: name}
	switch name {
	case contract.NextTokenResult:
		var d contract.NextTokenResultDoc
		if err := jsonstrict.DecodeInto(raw, &d); err != nil {
			return nil, err
		}
		dr.header, dr.body, dr.status = d.DriverResultHeader, d.NextTokenBody, d.Verdict.Status
		dr.argmaxCandidate, dr.complete = d.Verdict.ArgmaxCandidate, d.Verdict.CandidateAttributionComplete
	case contract.PathAttribution:
		var d contract.PathAttributionDoc
		if err := jsonstrict.DecodeInto(raw, &d); err != nil {
			return nil, err
		}
		dr.header, dr.body, dr.status, dr.attribution = d.DriverResultHeader, d.PathBody, d.Verdict.Status, d.Verdict.Attribution
	case contract.LayerAttribution:
		var d contract.LayerAttributionDoc
		if err := jsonstrict.DecodeInto(raw, &d); err != nil {
			return nil, err
		}
		dr.header, dr.body, dr.status = d.DriverResultHeader, d.LayerBody, d.Verdict.Status
	default:
		return nil, fmt.Errorf("%s is not a driver result", schemaID)
	}
	return dr, nil
}
