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
	Unknown
)

// Input is a command and, for Unknown, the line as read.
type Input struct {
	Command Command
	Line    string
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
