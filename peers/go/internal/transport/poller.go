package transport

import (
	"sync"
	"time"

	"rpcarena/peers/go/internal/protocol"
)

// PollInterval is how often the gauges are polled during the window: well under one round trip
// of the emulated WANs (30 ms and more), so a loss recovery is rarely missed; a poll costs one
// getsockopt per TCP connection or a few atomic loads for QUIC. The Rust peer polls as often.
const PollInterval = 5 * time.Millisecond

// Probe reads every connection of a client stack.
type Probe interface {
	// Transport is the `transport` name of its figures: `tcp` or `quic`.
	Transport() string
	// Read is every connection now.
	Read() []ConnReading
}

// Poller polls a probe on one goroutine from START to the end of the window.
type Poller struct {
	probe   Probe
	tracker *Tracker
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// Start reads the start and begins polling; a nil probe gives a nil Poller (no statistics).
func Start(probe Probe) *Poller {
	if probe == nil {
		return nil
	}
	p := &Poller{probe: probe, tracker: NewTracker(probe.Transport(), probe.Read()),
		stop: make(chan struct{}), done: make(chan struct{})}
	go p.poll()
	return p
}

// poll observes the probe every PollInterval until stopped. A tick missed while a poll ran is
// dropped (time.Ticker), never made up in a burst. Only this goroutine touches the tracker
// until Finish, which waits for it to return.
func (p *Poller) poll() {
	defer close(p.done)
	ticker := time.NewTicker(PollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-ticker.C:
			p.tracker.Observe(p.probe.Read())
		}
	}
}

// Stop ends the polling (idempotent; nil-safe).
func (p *Poller) Stop() {
	if p == nil {
		return
	}
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

// Finish stops polling, reads the end and returns the window's statistics (nil for a nil
// Poller).
func (p *Poller) Finish() *protocol.Transport {
	if p == nil {
		return nil
	}
	p.Stop()
	stats := p.tracker.Finish(p.probe.Read())
	return &stats
}
