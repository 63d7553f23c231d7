package eviction

import (
	"encoding/json"
	"time"

	"github.com/udrain/udrain"
)

// rolloutStatusJSON is RolloutStatus's JSON.
type rolloutStatusJSON struct {
	ID        string           `json:"id"`
	Time      time.Time        `json:"time"`
	Running   bool             `json:"running"`
	Lock      *rolloutLockJSON `json:"lock,omitempty"`
	Domains   []RolloutDomain  `json:"domains"`
	Done      int              `json:"done"`
	Completed bool             `json:"completed"`
	ETA       *rolloutETAJSON  `json:"eta,omitempty"`
}

type rolloutLockJSON struct {
	Namespace  string         `json:"namespace"`
	Name       string         `json:"name"`
	Holder     string         `json:"holder,omitempty"`
	Held       bool           `json:"held"`
	AcquiredAt *time.Time     `json:"acquiredAt,omitempty"`
	RenewedAt  *time.Time     `json:"renewedAt,omitempty"`
	Duration   udrain.Seconds `json:"durationSeconds"`
}

type rolloutETAJSON struct {
	Samples     int            `json:"samples"`
	DomainsLeft int            `json:"domainsLeft"`
	At          time.Time      `json:"at"`
	PerDomain   udrain.Seconds `json:"perDomainSeconds"`
	Remaining   udrain.Seconds `json:"remainingSeconds"`
}

// MarshalJSON writes the status with its Lease in "lock" and its ETA in
// "eta".
func (st RolloutStatus) MarshalJSON() ([]byte, error) {
	w := rolloutStatusJSON{ID: st.ID, Time: st.Time, Running: st.Running, Domains: st.Domains, Done: st.Done, Completed: st.Completed}
	if st.LockName != "" {
		w.Lock = &rolloutLockJSON{Namespace: st.LockNamespace, Name: st.LockName, Holder: st.LockHolder, Held: st.Running,
			AcquiredAt: st.LockAcquiredAt, RenewedAt: st.LockRenewedAt, Duration: st.LockDuration}
	}
	if st.ETA != nil {
		w.ETA = &rolloutETAJSON{Samples: st.ETASamples, DomainsLeft: st.ETADomainsLeft, At: *st.ETA, PerDomain: st.ETAPerDomain,
			Remaining: udrain.Seconds(st.ETAPerDomain.Duration() * time.Duration(st.ETADomainsLeft))}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (st *RolloutStatus) UnmarshalJSON(b []byte) error {
	var w rolloutStatusJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*st = RolloutStatus{ID: w.ID, Time: w.Time, Running: w.Running, Domains: w.Domains, Done: w.Done, Completed: w.Completed}
	if l := w.Lock; l != nil {
		st.LockNamespace, st.LockName, st.LockHolder = l.Namespace, l.Name, l.Holder
		st.LockAcquiredAt, st.LockRenewedAt, st.LockDuration = l.AcquiredAt, l.RenewedAt, l.Duration
	}
	if e := w.ETA; e != nil {
		st.ETA = &e.At
		st.ETAPerDomain, st.ETADomainsLeft, st.ETASamples = e.PerDomain, e.DomainsLeft, e.Samples
	}
	return nil
}
