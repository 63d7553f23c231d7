package app

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// The commands that list nodes (and gpu, DaemonSets) through
// eviction.NewReader's Drainer report a refused list as the library's PermissionError
// (exit 1), except gpu's list of DaemonSets, which it does without: it
// logs why and reports the nodes without the device plugin's diagnosis.
func TestListsRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		resource string
		wantCode int
		want     string
	}{
		{"domains, nodes", []string{"domains"}, "nodes", ExitError, "udrain is not allowed to do its work (nothing was changed): nodes is forbidden"},
		{"gpu, nodes", []string{"gpu"}, "nodes", ExitError, "udrain is not allowed to do its work (nothing was changed): nodes is forbidden"},
		{"rollout status, nodes", []string{"rollout", "status"}, "nodes", ExitError, "udrain is not allowed to do its work (nothing was changed): nodes is forbidden"},
		{"gpu, DaemonSets", []string{"gpu"}, "daemonsets", ExitOK, "Cannot list DaemonSets; GPU nodes without their resource are reported without the device plugin's diagnosis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			c.client.PrependReactor("list", tc.resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: tc.resource}, "", errors.New("no"))
			})
			r := runOn(t, c, tc.args...)
			if r.code != tc.wantCode || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit code %d, want %d; stderr does not say %q:\n%s", r.code, tc.wantCode, tc.want, r.stderr)
			}
		})
	}
}
