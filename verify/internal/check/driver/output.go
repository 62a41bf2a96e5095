package driver

import (
	"encoding/json"
	"path"
	"reflect"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// Outputs binds each driver result to what it was made from: the runner writes the
// result from the worker's own output (worker-output.json beside it: the body, the request id,
// the digest of the input token ids, the contract) and the bound request file. So the result's
// body members equal the output's body, its request id and token digest the output's, its
// contract the output's, and its request id and input token count the request file's; and the
// request, model and script the workload pins are listed among the artifacts with the pinned
// digests; the executable is a bound driver_executable, the model path the workload's (its id the
// path's base name), the origin_main and qualrun version the receipt's, and the duration the
// receipt's. On the mutation closure's driver shape an edited worker output, request file or
// request id verified (the result was checked only against itself and the workload).
func Outputs(s *load.Snapshot, c *finding.Collector) {
	rc := s.RC
	listed := map[string]string{}
	for _, a := range rc.Artifacts {
		if _, ok := listed[a.Path]; !ok {
			listed[a.Path] = a.Digest
		}
	}
	for _, r := range rc.Results {
		if r.CaseResult == nil || s.DriverResults[r.CaseResult.Path] == nil {
			continue
		}
		p := r.CaseResult.Path
		res := decodeTree(s, p)
		if res == nil {
			continue
		}
		req, _ := res["request"].(map[string]any)
		// The executable the result names is a driver_executable the receipt binds (the runner
		// lists the executable of every driver case), and its duration the receipt's result's.
		if impl, ok := res["implementation"].(map[string]any); ok {
			exe, _ := impl["executable"].(map[string]any)
			if exe != nil && !slices.ContainsFunc(rc.Artifacts, func(a contract.Artifact) bool {
				return a.Kind == contract.ArtifactKindDriverExecutable && a.Path == exe["path"] && a.Digest == exe["digest"]
			}) {
				c.Add(p, "/implementation/executable", reason.ErrReferenceMismatch, "case %s ran executable %v (%v), which is no driver_executable artifact of the receipt", r.ID, exe["path"], exe["digest"])
			}
		}
		// The runner forces a kill only after the deadline or an interrupt (runner/driver), and
		// either fails the case: a passed result was not forced.
		if ct, ok := res["containment"].(map[string]any); ok && ct["forced"] == true && ct["timed_out"] != true && r.Status == contract.StatusPassed {
			c.Add(p, "/containment/forced", reason.ErrResultMismatch, "case %s passed, but its worker was killed (forced) without timing out: the runner forces a kill only after the deadline or an interrupt, and either fails the case", r.ID)
		}
		if d, ok := res["duration_seconds"].(float64); ok {
			if d != r.DurationSeconds {
				c.Add(p, "/duration_seconds", reason.ErrResultMismatch, "case %s took %v s, the receipt's result says %v s", r.ID, d, r.DurationSeconds)
			}
		}
		// The result names the receipt's origin_main and qualrun version, and its model by the
		// model file's base name (the runner's driver.ModelID).
		if src, ok := res["source"].(map[string]any); ok {
			var om any
			if rc.Source.OriginMain != nil {
				om = *rc.Source.OriginMain
			}
			if !reflect.DeepEqual(src["origin_main"], om) {
				c.Add(p, "/source/origin_main", reason.ErrReferenceMismatch, "case %s ran with origin/main %v, the receipt's source says %v", r.ID, src["origin_main"], om)
			}
		}
		if impl, ok := res["implementation"].(map[string]any); ok {
			if q, ok := impl["qualrun"].(map[string]any); ok && q["version"] != rc.Qualification.Qualrun.Version {
				c.Add(p, "/implementation/qualrun/version", reason.ErrReferenceMismatch, "case %s was run by qualrun %v, the receipt was written by %s", r.ID, q["version"], rc.Qualification.Qualrun.Version)
			}
		}
		if m, ok := res["model"].(map[string]any); ok {
			if mp, ok := m["path"].(string); ok && m["id"] != path.Base(path.Clean(mp)) {
				c.Add(p, "/model/id", reason.ErrReferenceMismatch, "case %s names model %v, the base name of its path %s is %s", r.ID, m["id"], mp, path.Base(path.Clean(mp)))
			}
		}
		if wc := s.Case(r.ID); wc != nil && wc.Kind == contract.CaseKindDriver {
			if m, ok := res["model"].(map[string]any); ok && wc.Model != nil && m["path"] != wc.Model.Path {
				c.Add(p, "/model/path", reason.ErrReferenceMismatch, "case %s evaluated model %v, the workload declares %s", r.ID, m["path"], wc.Model.Path)
			}
			var pins []contract.FileRef
			if wc.Request != nil {
				pins = append(pins, *wc.Request)
			}
			if wc.Model != nil {
				pins = append(pins, *wc.Model)
			}
			if wc.Worker != nil {
				pins = append(pins, contract.FileRef{Path: wc.Worker.Script, Digest: wc.Worker.ScriptDigest})
			}
			for _, pin := range pins {
				if d, ok := listed[pin.Path]; ok && d != pin.Digest {
					c.Add(s.Receipt.Path, "/artifacts", reason.ErrReferenceMismatch, "case %s: the workload pins %s as %s, the receipt's artifacts bind it as %s", r.ID, pin.Path, pin.Digest, d)
				}
			}
			if wc.Request != nil {
				if rq := decodeTree(s, wc.Request.Path); rq != nil && req != nil {
					ids, _ := rq["input_token_ids"].([]any)
					if !reflect.DeepEqual(req["id"], rq["id"]) {
						c.Add(p, "/request/id", reason.ErrReferenceMismatch, "case %s: request id %v, the request file %s says %v", r.ID, req["id"], wc.Request.Path, rq["id"])
					}
					if n, ok := req["input_token_count"].(float64); ok && int(n) != len(ids) {
						c.Add(p, "/request/input_token_count", reason.ErrReferenceMismatch, "case %s: %v input tokens, the request file %s has %d", r.ID, n, wc.Request.Path, len(ids))
					}
				}
			}
		}
		// The worker output beside the result.
		out := ""
		for _, a := range rc.Artifacts {
			if a.Kind == contract.ArtifactKindDriverWorkerOutput && path.Dir(a.Path) == path.Dir(p) {
				out = a.Path
			}
		}
		wo := decodeTree(s, out)
		if wo == nil || req == nil {
			continue
		}
		if !reflect.DeepEqual(wo["request_id"], req["id"]) {
			c.Add(out, "/request_id", reason.ErrReferenceMismatch, "case %s: the worker answered request %v, the result names %v", r.ID, wo["request_id"], req["id"])
		}
		if !reflect.DeepEqual(wo["input_token_ids_sha256"], req["input_token_ids_sha256"]) {
			c.Add(out, "/input_token_ids_sha256", reason.ErrReferenceMismatch, "case %s: the worker's input tokens hash to %v, the result records %v", r.ID, wo["input_token_ids_sha256"], req["input_token_ids_sha256"])
		}
		if !reflect.DeepEqual(wo["contract"], res["schema"]) {
			c.Add(out, "/contract", reason.ErrReferenceMismatch, "case %s: the worker wrote a %v, the result is a %v", r.ID, wo["contract"], res["schema"])
		}
		body, _ := wo["body"].(map[string]any)
		keys := make([]string, 0, len(body))
		for k := range body {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !reflect.DeepEqual(body[k], res[k]) {
				c.Add(p, "/"+k, reason.ErrReferenceMismatch, "case %s: the result's %s is not the worker output's (%s)", r.ID, k, out)
			}
		}
	}
}

// decodeTree decodes a bound JSON file the loader read whole (nil when it did not, or it does not
// decode).
func decodeTree(s *load.Snapshot, p string) map[string]any {
	f := s.Files[p]
	if p == "" || f == nil || !f.Present || f.Raw == nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(f.Raw, &m) != nil {
		return nil
	}
	return m
}
