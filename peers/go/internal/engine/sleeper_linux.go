package engine

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleeper sleeps with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) on the calling
// thread after setting that thread's timer slack to 1 ns (the default 50 us slack lets the
// kernel defer a wake-up to batch it). The open model's generator locks its goroutine to the
// thread first, so the slack applies to every sleep it takes.
type preciseSleeper struct {
	// offset converts a clock reading into CLOCK_MONOTONIC (-1: unknown, fall back).
	offset Nanos
}

func newPreciseSleeper(clock Clock) Sleeper {
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		logf("cannot set the generator's timer slack to 1 ns (%v); starts may be later", err)
	}
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return preciseSleeper{offset: -1}
	}
	return preciseSleeper{offset: now.Nano() - clock.Now()}
}

func (s preciseSleeper) SleepUntil(at Nanos) {
	if s.offset < 0 {
		time.Sleep(50 * time.Microsecond)
		return
	}
	target := unix.NsecToTimespec(at + s.offset)
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &target, nil) == unix.EINTR {
	}
}
