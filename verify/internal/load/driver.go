package load

import (
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// DriverResult is a version-2 evidence result (next-token result, path attribution, layer
// attribution) as a receipt binds it for a driver case.
type DriverResult struct {
	// name is the contract name, e.g. "path-attribution.v2".
	Name   string
	Header contract.DriverResultHeader
	// body is the contract's section (schemas.NextTokenBody, PathBody or LayerBody).
	Body any
	// status and the contract-specific verdict members as recorded.
	Status          contract.DriverStatus
	ArgmaxCandidate string
	Complete        bool
	Attribution     string
}

// DecodeDriverResult decodes a driver result of the given schema id.
func DecodeDriverResult(schemaID string, raw []byte) (*DriverResult, error) {
	name := strings.TrimPrefix(schemaID, "qualkit.")
	dr := &DriverResult{Name: name}
	switch name {
	case contract.NextTokenResult:
		var d contract.NextTokenResultDoc
		if err := jsonstrict.DecodeInto(raw, &d); err != nil {
			return nil, err
		}
		dr.Header, dr.Body, dr.Status = d.DriverResultHeader, d.NextTokenBody, d.Verdict.Status
		dr.ArgmaxCandidate, dr.Complete = d.Verdict.ArgmaxCandidate, d.Verdict.CandidateAttributionComplete
	case contract.PathAttribution:
		var d contract.PathAttributionDoc
		if err := jsonstrict.DecodeInto(raw, &d); err != nil {
			return nil, err
		}
		dr.Header, dr.Body, dr.Status, dr.Attribution = d.DriverResultHeader, d.PathBody, d.Verdict.Status, d.Verdict.Attribution
	case contract.LayerAttribution:
		var d contract.LayerAttributionDoc
		if err := jsonstrict.DecodeInto(raw, &d); err != nil {
			return nil, err
		}
		dr.Header, dr.Body, dr.Status = d.DriverResultHeader, d.LayerBody, d.Verdict.Status
	default:
		return nil, fmt.Errorf("%s is not a driver result", schemaID)
	}
	return dr, nil
}
