package quicstack

import (
	"errors"
	"fmt"
	"testing"

	"github.com/quic-go/quic-go"
)

// A FIN refused because the server stopped reading after END is not the call's failure; a
// local cancellation or any other error is.
func TestStoppedIsOnlyThePeersStopSending(t *testing.T) {
	remote := &quic.StreamError{StreamID: 0, ErrorCode: 0, Remote: true}
	if !stopped(remote) || !stopped(fmt.Errorf("wrapped: %w", remote)) {
		t.Fatal("the peer's STOP_SENDING must count as stopped")
	}
	local := &quic.StreamError{StreamID: 0, ErrorCode: 0, Remote: false}
	for _, cause := range []error{nil, local, quic.ErrStreamClosed, errors.New("other")} {
		if stopped(cause) {
			t.Fatalf("%v must not count as the peer's STOP_SENDING", cause)
		}
	}
}
