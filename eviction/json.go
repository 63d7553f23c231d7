package eviction

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// Durations are seconds on the wire (see result.go). A type holding one
// tags it `json:"-"` and marshals through a copy of itself without
// methods (so that the encoder does not recurse), to which withSeconds
// adds its durations in seconds.

// secondsField is a duration and the wire name it has in seconds.
type secondsField struct {
	name string
	d    *time.Duration
}

// withSeconds marshals plain, a struct, and appends the fields in seconds.
func withSeconds(plain any, fields ...secondsField) ([]byte, error) {
	b, err := json.Marshal(plain)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("}"))
	for _, f := range fields {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, f.name)
		b = append(b, ':')
		b = strconv.AppendFloat(b, f.d.Seconds(), 'f', -1, 64)
	}
	return append(b, '}'), nil
}

// readSeconds unmarshals b into plain (a pointer to the method-less copy
// of the value) and the fields in seconds into their durations.
func readSeconds(b []byte, plain any, fields ...secondsField) error {
	if err := json.Unmarshal(b, plain); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for _, f := range fields {
		if v, ok := raw[f.name]; ok {
			var s float64
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			*f.d = time.Duration(s * float64(time.Second))
		}
	}
	return nil
}

// MarshalJSON writes Duration as durationSeconds.
func (r PhaseResult) MarshalJSON() ([]byte, error) {
	type plain PhaseResult
	return withSeconds(plain(r), secondsField{"durationSeconds", &r.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *PhaseResult) UnmarshalJSON(b []byte) error {
	type plain PhaseResult
	return readSeconds(b, (*plain)(r), secondsField{"durationSeconds", &r.Duration})
}

// MarshalJSON writes Duration as durationSeconds.
func (r BlockRecord) MarshalJSON() ([]byte, error) {
	type plain BlockRecord
	return withSeconds(plain(r), secondsField{"durationSeconds", &r.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *BlockRecord) UnmarshalJSON(b []byte) error {
	type plain BlockRecord
	return readSeconds(b, (*plain)(r), secondsField{"durationSeconds", &r.Duration})
}

// MarshalJSON writes Duration as durationSeconds.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return withSeconds(plain(r), secondsField{"durationSeconds", &r.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	return readSeconds(b, (*plain)(r), secondsField{"durationSeconds", &r.Duration})
}

// MarshalJSON writes Duration as durationSeconds.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	return withSeconds(plain(s), secondsField{"durationSeconds", &s.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(b []byte) error {
	type plain Summary
	return readSeconds(b, (*plain)(s), secondsField{"durationSeconds", &s.Duration})
}

// MarshalJSON writes Upgrade, Recovery and Duration as upgradeSeconds,
// recoverySeconds and durationSeconds.
func (o DomainOutcome) MarshalJSON() ([]byte, error) {
	type plain DomainOutcome
	return withSeconds(plain(o), o.secondsFields()...)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *DomainOutcome) UnmarshalJSON(b []byte) error {
	type plain DomainOutcome
	return readSeconds(b, (*plain)(o), o.secondsFields()...)
}

func (o *DomainOutcome) secondsFields() []secondsField {
	return []secondsField{{"upgradeSeconds", &o.Upgrade}, {"recoverySeconds", &o.Recovery}, {"durationSeconds", &o.Duration}}
}

// MarshalJSON writes Duration as durationSeconds.
func (r RolloutResult) MarshalJSON() ([]byte, error) {
	type plain RolloutResult
	return withSeconds(plain(r), secondsField{"durationSeconds", &r.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *RolloutResult) UnmarshalJSON(b []byte) error {
	type plain RolloutResult
	return readSeconds(b, (*plain)(r), secondsField{"durationSeconds", &r.Duration})
}

// MarshalJSON writes Duration as durationSeconds.
func (l RolloutLockStatus) MarshalJSON() ([]byte, error) {
	type plain RolloutLockStatus
	return withSeconds(plain(l), secondsField{"durationSeconds", &l.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *RolloutLockStatus) UnmarshalJSON(b []byte) error {
	type plain RolloutLockStatus
	return readSeconds(b, (*plain)(l), secondsField{"durationSeconds", &l.Duration})
}

// MarshalJSON writes PerDomain and Remaining as perDomainSeconds and
// remainingSeconds.
func (e RolloutETA) MarshalJSON() ([]byte, error) {
	type plain RolloutETA
	return withSeconds(plain(e), e.secondsFields()...)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *RolloutETA) UnmarshalJSON(b []byte) error {
	type plain RolloutETA
	return readSeconds(b, (*plain)(e), e.secondsFields()...)
}

func (e *RolloutETA) secondsFields() []secondsField {
	return []secondsField{{"perDomainSeconds", &e.PerDomain}, {"remainingSeconds", &e.Remaining}}
}
