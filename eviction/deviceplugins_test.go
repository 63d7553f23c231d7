package eviction

import (
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
)

// A read-only Drainer's DevicePlugins are the DaemonSets package gpu takes for
// device plugins; a refusal to list DaemonSets is logged and leaves none,
// other errors are returned.
func TestReaderDevicePlugins(t *testing.T) {
	daemonSet := func(ns, name, image string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}}}
	}
	objects := []runtime.Object{
		daemonSet("kube-system", "kube-proxy", "registry.k8s.io/kube-proxy:v1.33.0"),
		daemonSet("gpu-operator", "nvidia-device-plugin-daemonset", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
		daemonSet("gpu-operator", "nvidia-device-plugin-mps-control-daemon", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
		daemonSet("kube-amd-gpu", "amdgpu-device-plugin", "rocm/k8s-device-plugin:1.31.0.6"),
	}
	fail := func(err error) k8stesting.ReactionFunc {
		return func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err }
	}
	daemonSets := schema.GroupResource{Group: "apps", Resource: "daemonsets"}
	type result struct {
		Plugins []string
		Err     string
		Logged  []string
	}
	const denied = `"level"=0 "msg"="Cannot list DaemonSets; GPU nodes without their resource are reported without the device plugin's diagnosis (grant list on daemonsets.apps to get it)" "err"="daemonsets.apps is forbidden: no"`
	for name, tc := range map[string]struct {
		list k8stesting.ReactionFunc // nil: the fake's objects
		want result
	}{
		"the plugins":   {want: result{Plugins: []string{"gpu-operator/nvidia-device-plugin-daemonset", "kube-amd-gpu/amdgpu-device-plugin"}}},
		"forbidden":     {list: fail(apierrors.NewForbidden(daemonSets, "", errors.New("no"))), want: result{Logged: []string{denied}}},
		"unauthorized":  {list: fail(apierrors.NewUnauthorized("who?")), want: result{Err: "Permission"}},
		"unreachable":   {list: fail(refused("Get")), want: result{Err: "Unreachable Refused https://10.0.0.1:6443"}},
		"another error": {list: fail(apierrors.NewBadRequest("odd")), want: result{Err: "other: listing DaemonSets: odd"}},
	} {
		t.Run(name, func(t *testing.T) {
			var got result
			ctx := klog.NewContext(testContext(t), funcr.New(func(_, args string) { got.Logged = append(got.Logged, args) }, funcr.Options{}))
			client := fake.NewClientset(objects...)
			if tc.list != nil {
				client.PrependReactor("list", "daemonsets", tc.list)
			}
			r, err := NewReader(client, Options{ConnectTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			plugins, err := r.DevicePlugins(ctx)
			for _, ds := range plugins {
				got.Plugins = append(got.Plugins, ds.Namespace+"/"+ds.Name)
			}
			got.Err = errorShape(err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
