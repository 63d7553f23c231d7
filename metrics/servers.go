package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/udrain/udrain"
)

// Metrics of udrain's two servers: serve-readiness (package readiness) and
// the readiness-gate controller (package readiness/gate). Neither package
// imports Prometheus; their callbacks feed these.
const (
	// ReadinessMemberHealthy is 1 while a member of the group that
	// serve-readiness checks is healthy, 0 while it is not, label member
	// (the members of one group: bounded by its size).
	ReadinessMemberHealthy = "udrain_readiness_member_healthy"
	// GateConditionsWritten counts the group-ready conditions the
	// readiness-gate controller wrote, label status (True, False).
	GateConditionsWritten = "udrain_gate_conditions_written_total"
)

// Members records the health of serve-readiness's members.
type Members struct{ healthy *prometheus.GaugeVec }

// NewMembers registers ReadinessMemberHealthy with reg; a nil reg is a
// *udrain.ConfigError.
func NewMembers(reg prometheus.Registerer) (*Members, error) {
	if reg == nil {
		return nil, &udrain.ConfigError{Field: "metrics.NewMembers(reg)", Problem: "nil; pass a prometheus.Registerer"}
	}
	m := &Members{healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ReadinessMemberHealthy,
		Help: "1 while a member of the checked group is healthy, 0 while it is not."}, []string{"member"})}
	if err := reg.Register(m.healthy); err != nil {
		return nil, err
	}
	return m, nil
}

// Record sets a member's health (from readiness.CheckerOptions.OnChange).
func (m *Members) Record(member string, healthy bool) {
	v := 0.0
	if healthy {
		v = 1
	}
	m.healthy.WithLabelValues(member).Set(v)
}

// GateWrites counts the conditions the readiness-gate controller writes.
type GateWrites struct{ written *prometheus.CounterVec }

// NewGateWrites registers GateConditionsWritten with reg; a nil reg is a
// *udrain.ConfigError.
func NewGateWrites(reg prometheus.Registerer) (*GateWrites, error) {
	if reg == nil {
		return nil, &udrain.ConfigError{Field: "metrics.NewGateWrites(reg)", Problem: "nil; pass a prometheus.Registerer"}
	}
	g := &GateWrites{written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: GateConditionsWritten,
		Help: "Group-ready conditions written on leaders, by status."}, []string{"status"})}
	if err := reg.Register(g.written); err != nil {
		return nil, err
	}
	for _, s := range []string{"True", "False"} {
		g.written.WithLabelValues(s)
	}
	return g, nil
}

// Record counts one condition written with status (gate.Options.OnChange:
// string(change.Condition.Status)).
func (g *GateWrites) Record(status string) { g.written.WithLabelValues(status).Inc() }
