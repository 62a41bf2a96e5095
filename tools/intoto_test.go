package tools_test

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/in-toto/in-toto-golang/in_toto"
)

// inTotoVerify is the testscript program `intotoverify -l LAYOUT -k OWNER.pub -d LINKDIR [-P
// NAME=VALUE]...`: in-toto-golang's own final product verification (in_toto.InTotoVerify, as the
// stock `in-toto-golang verify` CLI runs it), in the current directory, where the layout's
// inspection runs qualverify. It exits 0 when the supply chain verifies, 1 with the reason.
func inTotoVerify(args []string) int {
	fs := flag.NewFlagSet("intotoverify", flag.ContinueOnError)
	layoutPath := fs.String("l", "", "layout")
	ownerPub := fs.String("k", "", "layout key")
	linkDir := fs.String("d", "", "link directory")
	params := map[string]string{}
	fs.Func("P", "parameter NAME=VALUE", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("-P %q: want NAME=VALUE", s)
		}
		params[k] = v
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var key in_toto.Key
	if err := key.LoadKeyDefaults(*ownerPub); err != nil {
		fmt.Fprintln(os.Stderr, "intotoverify: layout key:", err)
		return 2
	}
	layout, err := in_toto.LoadMetadata(*layoutPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "intotoverify: layout:", err)
		return 2
	}
	if _, err := in_toto.InTotoVerify(layout, map[string]in_toto.Key{key.KeyID: key}, *linkDir, "", params, nil, false); err != nil {
		fmt.Fprintln(os.Stderr, "intotoverify: refused:", err)
		return 1
	}
	fmt.Println("intotoverify: the supply chain verifies")
	return 0
}
