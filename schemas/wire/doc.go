// Package wire is the request body qualkit sends to an OpenAI-compatible server: the chat,
// completions and Responses API bodies of a serving case (Body), their messages and image parts,
// and the per-request seed (RequestSeed). The runner sends these bytes and records their sha256;
// the verifier renders them again from the workload and the corpus to recompute that digest, so
// the encoding is defined here once.
package wire
