// Package trace is qualkit's timestamped request trace: JSONL, one request per line in timestamp
// order ({"timestamp": ms, "input_length": n, "output_length": n, "hash_ids"?: [...], "parent"?: k},
// the Mooncake trace's shape, with the parent links of agentic and multi-turn traces), read
// strictly and bounded by Read, written by Write, the scheduled offset of each request
// (Offsets), which the runner replays and the verifier recomputes, and the import of Alibaba
// Bailian traces (ImportBailian), whose parent_chat_id links become parents.
package trace
