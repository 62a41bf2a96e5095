//go:build !linux

package schemas

import "os"

func openBeneath(dir *os.File, rel string) (*os.File, error) { return openWalk(dir, rel) }
