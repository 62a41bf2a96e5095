// Package jsonscan is the scanner core of qualkit's hand-written JSON readers: the request-record
// fast path (verify/internal/record), the completion-chunk scanner of the load generator
// (runner/load) and the strict decoder (schemas/jsonstrict). It holds the byte-level primitives
// they share (whitespace, the plain run of a string, strings with their escapes decoded and
// UTF-8 checked, numbers by the JSON grammar), each a small function over a byte slice or a
// string and an offset, so the readers keep their own shapes, limits and error messages while
// JSON's lexical rules are written once.
//
// The primitives are strict where encoding/json is lenient: invalid UTF-8, an encoded surrogate
// and a lone surrogate escape are problems, never U+FFFD. They never allocate except to append a
// decoded string to the caller's buffer. FuzzString and FuzzNumber check them against
// encoding/json.
package jsonscan
