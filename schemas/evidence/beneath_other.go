//go:build !linux

package evidence

import "os"

func openBeneath(dir *os.File, rel string) (*os.File, error) { return openWalk(dir, rel) }
