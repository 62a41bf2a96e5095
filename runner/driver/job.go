package driver

import (
	"path/filepath"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

// JobOf builds the Job a driver spec declares (a workload's driver case gives its spec through
// schemas.DriverSpecOf). sub resolves a ${name} placeholder (a whole value) in the executable, the
// arguments, the environment and the model path; root is the repository the relative paths are in.
func JobOf(spec contract.DriverSpecDoc, root string, sub func(string) (string, error)) (Job, error) {
	job := Job{ID: spec.ID, Contract: string(spec.Contract), Timeout: time.Duration(spec.TimeoutSeconds) * time.Second, Environment: map[string]string{}}
	var err error
	if job.Executable, err = sub(spec.Worker.Executable); err != nil {
		return job, err
	}
	if spec.Worker.ExecutableDigest != nil {
		job.ExecutableDigest = *spec.Worker.ExecutableDigest
	}
	for _, a := range spec.Worker.Args {
		s, err := sub(a)
		if err != nil {
			return job, err
		}
		job.Args = append(job.Args, s)
	}
	for k, v := range spec.Environment {
		if job.Environment[k], err = sub(v); err != nil {
			return job, err
		}
	}
	model, err := sub(spec.Model.Path)
	if err != nil {
		return job, err
	}
	job.Script = InputAt(root, spec.Worker.Script, spec.Worker.ScriptDigest)
	job.Request = InputAt(root, spec.Request.Path, spec.Request.Digest)
	job.Model = InputAt(root, model, spec.Model.Digest)
	return job, nil
}

// InputAt is a file the worker reads: path is repository-relative (under root) or absolute.
func InputAt(root, path, digest string) Input {
	if filepath.IsAbs(path) {
		return Input{Path: filepath.Clean(path), Abs: filepath.Clean(path), Digest: digest}
	}
	return Input{Path: path, Abs: filepath.Join(root, path), Digest: digest}
}
