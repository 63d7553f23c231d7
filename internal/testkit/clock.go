package testkit

import (
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// JudgedClock is a fake clock that tells, on Judged, each time Since is
// called: a Lease's keeper calls it for nothing but judging a failed
// renewal, so a test steps the clock again only once that is done, and the
// judgement reads the step's time however slow the machine.
type JudgedClock struct {
	*clocktesting.FakeClock
	// Judged gets a value after each call of Since; it holds up to 100
	// that nobody read.
	Judged chan struct{}
}

// NewJudgedClock is a JudgedClock at t.
func NewJudgedClock(t time.Time) JudgedClock {
	return JudgedClock{clocktesting.NewFakeClock(t), make(chan struct{}, 100)}
}

// Since is the fake clock's, and tells Judged once it is done.
func (c JudgedClock) Since(t time.Time) time.Duration {
	defer func() { c.Judged <- struct{}{} }()
	return c.FakeClock.Since(t)
}
