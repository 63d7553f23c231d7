package eviction

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// PlanRollout sends its events to RolloutOptions.OnEvent, as Rollout does,
// besides Options.OnEvent: from a Drainer and from a read-only one
// (NewReader). The cluster is TestPlanRollout's "given order": its plan
// has a finding, so that it sends a ContractFindings event.
func TestPlanRolloutSendsEventsToRolloutOnEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan func(ctx context.Context, fc *fakeCluster, opts Options, ro RolloutOptions) (*RolloutPlan, error)
	}{
		{"Drainer", func(ctx context.Context, fc *fakeCluster, opts Options, ro RolloutOptions) (*RolloutPlan, error) {
			d, err := New(fc.client, opts)
			if err != nil {
				return nil, err
			}
			return d.PlanRollout(ctx, ro)
		}},
		{"NewReader", func(ctx context.Context, fc *fakeCluster, opts Options, ro RolloutOptions) (*RolloutPlan, error) {
			r, err := NewReader(fc.client, opts)
			if err != nil {
				return nil, err
			}
			return r.PlanRollout(ctx, ro)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster(t, objects(destNode(1, 1, 6), destNode(2, 1, 8), destNode(3, 1, 8),
				destGroup(0, 2, 4, "node-1-1"), destGroup(1, 2, 4, "node-2-1"), leaderPDB(2))...)
			var mu sync.Mutex
			var fromOptions, fromRollout []EventType
			record := func(to *[]EventType) func(context.Context, Event) {
				return func(_ context.Context, e Event) {
					mu.Lock()
					defer mu.Unlock()
					*to = append(*to, e.Type)
				}
			}
			plan, err := tc.plan(testContext(t), fc, Options{Backoff: slowBackoff, OnEvent: record(&fromOptions)},
				RolloutOptions{ID: "r1", Domains: []string{"ud-1", "ud-2", "ud-3"}, OnEvent: record(&fromRollout)})
			if err != nil || plan == nil || len(plan.Findings) == 0 {
				t.Fatalf("PlanRollout: %v, %+v; want a plan with findings", err, plan)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Contains(fromOptions, EventContractFindings) {
				t.Fatalf("Options.OnEvent got %v, want a ContractFindings event", fromOptions)
			}
			if diff := cmp.Diff(fromOptions, fromRollout); diff != "" {
				t.Errorf("RolloutOptions.OnEvent's events (-Options.OnEvent's +RolloutOptions.OnEvent's):\n%s", diff)
			}
		})
	}
}
