package schemas

import (
	"errors"
	"testing"
)

// Every contract's embedded schema compiles (schemas compile on first use, so a schema no test
// validates against would otherwise fail only in the field).
func TestEveryContractSchemaCompiles(t *testing.T) {
	for _, ct := range Contracts() {
		if _, err := schemaOf(ct.Name); err != nil {
			t.Errorf("%s: %v", ct.Name, err)
		}
	}
	if _, err := schemaOf("no-such.v1"); !errors.Is(err, ErrUnknownContract) {
		t.Errorf("schemaOf(no-such.v1) = %v, want ErrUnknownContract", err)
	}
}

// A process compiles only the contracts it validates: compiling one (the launch recipe, which
// qualrun checks first) costs a fraction of compiling every contract, which every process that
// validated anything paid before. docs/performance.md states the ratio.
func BenchmarkCompileOneContract(b *testing.B) {
	ct := contractFor("launch-recipe.v1")
	for b.Loop() {
		if _, err := compile(ct); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompileEveryContract(b *testing.B) {
	for b.Loop() {
		for _, ct := range Contracts() {
			if _, err := compile(ct); err != nil {
				b.Fatal(err)
			}
		}
	}
}
