package eviction

import "github.com/udrain/udrain/clusterinformers"

// validateInformers checks Options.Informers.
func validateInformers(i *clusterinformers.Set) error {
	for _, f := range []struct {
		name     string
		inf      clusterinformers.Informer
		required bool
	}{
		{"Nodes", i.Nodes, true},
		{"Pods", i.Pods, true},
		{"PodDisruptionBudgets", i.PodDisruptionBudgets, true},
		{"DaemonSets", i.DaemonSets, false},
		{"PodGroups", i.PodGroups, false},
	} {
		if f.inf == nil && f.required {
			return configError("Options.Informers."+f.name, "nil; give all of Nodes, Pods and PodDisruptionBudgets (clusterinformers.FromFactory or FromCache do), or leave Informers nil for udrain's own")
		}
	}
	return nil
}
