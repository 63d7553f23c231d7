package udrain

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Seconds is a duration that JSON carries as a number of seconds (1.5 for
// 1.5s, 0.0000015 for 1.5µs, 5400 for 90m): the form of every duration in
// udrain's results and reports, in fields whose name ends in "Seconds" (see
// eviction's result.go). The number reads back to the same nanosecond for durations
// under about 13 days (2^50ns; a float64's precision beyond). In Go it is a time.Duration under
// another name: s.Duration() or time.Duration(s) converts it, Seconds(d)
// back, and it prints (String) as a time.Duration does.
//
// udrain's fields of this type have no omitempty: they are written even
// when 0. Reading, JSON null leaves the value as it was, and a number out
// of time.Duration's range (about 292 years) is an error.
type Seconds time.Duration

// Duration returns s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) }

// String returns s as time.Duration.String does: "1.5s", "1h30m0s".
func (s Seconds) String() string { return time.Duration(s).String() }

// MarshalJSON writes s as a number of seconds in the fewest digits that
// read back the same (1.5, 0.0000015, 5400, -2).
func (s Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(s).Seconds(), 'f', -1, 64), nil
}

// UnmarshalJSON reads a number of seconds, rounded to the nanosecond.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("udrain.Seconds: %w", err)
	}
	ns := math.Round(f * float64(time.Second))
	// float64(math.MaxInt64) is 2^63, one past the largest Duration.
	if ns >= float64(math.MaxInt64) || ns < float64(math.MinInt64) {
		return fmt.Errorf("udrain.Seconds: %s seconds is out of a time.Duration's range", b)
	}
	*s = Seconds(ns)
	return nil
}
