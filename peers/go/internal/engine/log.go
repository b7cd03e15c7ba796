package engine

import (
	"fmt"
	"os"
)

// logf writes a diagnostic line on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rpcarena-peer-go: "+format+"\n", args...)
}
