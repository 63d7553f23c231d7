package eviction

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/gpu"
)

// DevicePlugins returns the device plugin DaemonSets of every namespace
// (those gpu.DevicePluginVendor recognises, of the DaemonSets DaemonSets
// returns). gpu.Summarize picks them itself from all the DaemonSets; this
// list is the one it would pick. When the API server refuses to list
// DaemonSets (Forbidden), it logs so, through klog.FromContext(ctx), and
// returns none without an error: Summarize then reports the GPU nodes that
// do not advertise their resource without the device plugin's diagnosis.
// Other errors are DaemonSets's.
func (d *Drainer) DevicePlugins(ctx context.Context) ([]appsv1.DaemonSet, error) {
	all, err := d.DaemonSets(ctx)
	var denied *PermissionError
	if errors.As(err, &denied) && apierrors.IsForbidden(denied.Err) {
		klog.FromContext(ctx).Info("Cannot list DaemonSets; GPU nodes without their resource are reported without the device plugin's diagnosis (grant list on daemonsets.apps to get it)", "err", denied.Err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var plugins []appsv1.DaemonSet
	for i := range all {
		if _, ok := gpu.DevicePluginVendor(&all[i]); ok {
			plugins = append(plugins, all[i])
		}
	}
	return plugins, nil
}
