package protocol

import (
	"bufio"
	"io"
	"strings"
)

// Command is one line read on stdin.
type Command int

// The commands. Shutdown is the zero value: end of stdin (and a closed channel) reads as
// SHUTDOWN.
const (
	Shutdown Command = iota
	Start
	// Window is `WINDOW START` or `WINDOW END` (1.2, servers only); Edge says which.
	Window
	Unknown
)

// Window edges, as the `window` event spells them.
const (
	EdgeStart = "start"
	EdgeEnd   = "end"
)

// Input is a command, the line as read (for Unknown and Window) and, for Window, its edge.
type Input struct {
	Command Command
	Line    string
	Edge    string
}

// maxCommandLine bounds what is kept of one stdin line.
const maxCommandLine = 64 * 1024

// ReadCommands reads commands from r until its end, which it reports as Shutdown, then closes
// the channel. Surrounding whitespace is ignored and blank lines are skipped.
func ReadCommands(r io.Reader) <-chan Input {
	inputs := make(chan Input, 16)
	go func() {
		defer close(inputs)
		scanner := bufio.NewScanner(r)
		scanner.Buffer(make([]byte, 4096), maxCommandLine)
		for scanner.Scan() {
			line := strings.TrimSpace(scanner.Text())
			switch line {
			case "":
				continue
			case "START":
				inputs <- Input{Command: Start}
			case "SHUTDOWN":
				inputs <- Input{Command: Shutdown}
			case "WINDOW START":
				inputs <- Input{Command: Window, Line: line, Edge: EdgeStart}
			case "WINDOW END":
				inputs <- Input{Command: Window, Line: line, Edge: EdgeEnd}
			default:
				inputs <- Input{Command: Unknown, Line: line}
			}
		}
		if scanner.Err() != nil {
			// A line too long to be a command is a protocol error, not a shutdown.
			inputs <- Input{Command: Unknown, Line: "(a line longer than 64 KiB)"}
		}
		inputs <- Input{Command: Shutdown}
	}()
	return inputs
}
